"""KV caches of earlier transcripts, so that a later turn forwards its new tokens only.

Transcripts only grow, so the KV cache of an earlier transcript that shares a token
prefix with a new one holds that prefix's keys and values. Entries are keyed by (SVF
digest, token ids): a cache computed under other SVF offsets is never reused. Lookups go
through an index of chained hashes of 16-token blocks (as vLLM's prefix caching does), so
finding the longest shared prefix costs one pass over the new ids, not one comparison per
stored transcript. Entries are kept LRU within a byte budget; an entry that was extended
by a later turn is dropped, since the extension holds its shared prefix too.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

BLOCK = 16  # tokens per hashed block of the index


@dataclass
class PrefixEntry:
    """One transcript's KV cache: every layer's keys and values in one tensor of shape
    ``(layers, 2, kv_heads, tokens, head_dim)``, in the dtype the attention reads."""

    digest: str
    ids: tuple[int, ...]
    kv: Any
    nbytes: int


def _block_hashes(digest: str, ids: tuple[int, ...] | list[int], limit: int) -> list[int]:
    """Chained hashes of the first ``limit // BLOCK`` whole blocks of ``ids``."""
    hashes, h = [], hash(digest)
    for end in range(BLOCK, limit + 1, BLOCK):
        h = hash((h, tuple(ids[end - BLOCK : end])))
        hashes.append(h)
    return hashes


class PrefixCache:
    """KV caches of earlier transcripts, LRU within ``budget_bytes``; only prefixes of at
    least ``min_tokens`` tokens are worth reusing."""

    def __init__(self, budget_bytes: int, min_tokens: int = 8):
        self.budget = budget_bytes
        self.min_tokens = min_tokens
        self.nbytes = 0
        self._entries: OrderedDict[tuple[str, tuple[int, ...]], PrefixEntry] = OrderedDict()
        self._index: dict[int, dict[tuple[str, tuple[int, ...]], None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()
        self._index.clear()
        self.nbytes = 0

    def lookup(self, digest: str, ids: list[int], limit: int) -> tuple[int, PrefixEntry | None]:
        """The longest prefix of ``ids`` (at most ``limit`` tokens; among recent entries when
        several share its last whole block) held under ``digest``, and the entry holding
        it; ``(0, None)`` when none of ``min_tokens`` is held."""
        if self.budget <= 0 or limit < self.min_tokens:
            return 0, None
        hashes = _block_hashes(digest, ids, limit)
        best, found = 0, None
        for blocks in range(len(hashes), 0, -1):
            # entries sharing a block share all before it too; they differ by < BLOCK
            # tokens after it, so the few most recent are enough
            for key in itertools.islice(reversed(self._index.get(hashes[blocks - 1], {})), 8):
                entry = self._entries[key]
                start = blocks * BLOCK
                if entry.ids[:start] != tuple(ids[:start]):  # a hash collision
                    continue
                n = min(len(entry.ids), limit)
                common = start
                while common < n and entry.ids[common] == ids[common]:
                    common += 1
                if common > best:
                    best, found = common, entry
            if found is not None:
                break
        if found is None:  # shorter than a block: compare with the recent entries
            for entry in itertools.islice(reversed(self._entries.values()), 64):
                if entry.digest != digest:
                    continue
                n, common = min(len(entry.ids), limit, BLOCK), 0
                while common < n and entry.ids[common] == ids[common]:
                    common += 1
                if common > best:
                    best, found = common, entry
        if found is None or best < self.min_tokens:
            return 0, None
        self._entries.move_to_end((found.digest, found.ids))
        return best, found

    def put(self, entry: PrefixEntry, replaces: PrefixEntry | None = None) -> None:
        """Keep ``entry``; drop ``replaces`` (the entry it extended), then the least recently
        used entries until the budget holds."""
        if self.budget <= 0:
            return
        if replaces is not None:
            self._drop((replaces.digest, replaces.ids))
        key = (entry.digest, entry.ids)
        self._drop(key)
        self._entries[key] = entry
        self.nbytes += entry.nbytes
        for h in _block_hashes(entry.digest, entry.ids, len(entry.ids)):
            self._index.setdefault(h, {})[key] = None
        while self.nbytes > self.budget and self._entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[str, tuple[int, ...]]) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self.nbytes -= entry.nbytes
        for h in _block_hashes(entry.digest, entry.ids, len(entry.ids)):
            keys = self._index.get(h)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del self._index[h]
