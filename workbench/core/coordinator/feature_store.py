"""Backbone features kept on disk, so a text is forwarded once per backbone, ever.

With a recorded pool and the Worker role alone, the transcript the coordinator reads for a
task (its query, nothing before) is the same for every candidate, generation, fold and
method, so its feature is computed once and kept in the workspace
(``features.sqlite3``). A row is keyed by the backbone's ``feature_namespace`` (its model
and that model's fingerprint, how it reads a transcript, the precision) and the text's
SHA-256: a changed model file, another precision or another input mode never answers for
the old one. Values are the backbone's own float64 unit-RMS rows, so a head applied to a
stored feature decides exactly as on a freshly computed one.

``stored_features(backbone, store, texts)`` is the one entry: stored rows are read, the
rest computed in chunks (``progress`` hears of each) and written, and every row is
primed into the backbone's in-memory cache so episodes played afterwards (an evaluation's,
a replay's) read them without a forward.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from workbench.core.coordinator.backbone import Backbone

CHUNK = 64  # texts forwarded (and written) at a time: progress and a kill lose little
_SCHEMA = """
CREATE TABLE IF NOT EXISTS features (
    namespace TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (namespace, text_sha256)
) WITHOUT ROWID
"""


class FeatureStore:
    """Features on disk: one SQLite file (WAL, so several processes may read and write),
    rows of float64 vectors keyed by (namespace, SHA-256 of the text)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        with contextlib.suppress(OSError):
            self.path.chmod(0o600)  # transcripts' features are the workspace's, private
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> FeatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, namespace: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """The stored rows of ``texts`` under ``namespace``, by the text's index."""
        keys = [_key(t) for t in texts]
        by_key: dict[bytes, np.ndarray] = {}
        with self._lock:
            for part in _parts(sorted(set(keys)), 500):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, dim, vector FROM features "
                    f"WHERE namespace = ? AND text_sha256 IN ({marks})",
                    (namespace, *part),
                ).fetchall()
                for key, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float64)
                    if len(vector) == dim:
                        by_key[bytes(key)] = vector
        return {i: by_key[k] for i, k in enumerate(keys) if k in by_key}

    def put(self, namespace: str, texts: Sequence[str], rows: np.ndarray) -> None:
        """Keep ``rows`` (one per text) under ``namespace``, in one transaction."""
        values = [
            (namespace, _key(t), int(r.shape[0]), np.ascontiguousarray(r, np.float64).tobytes())
            for t, r in zip(texts, rows, strict=True)
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO features VALUES (?, ?, ?, ?)", values)
            self._db.commit()

    def count(self, namespace: str | None = None) -> int:
        """Rows kept (under ``namespace``, or in all)."""
        with self._lock:
            if namespace is None:
                return int(self._db.execute("SELECT COUNT(*) FROM features").fetchone()[0])
            query = "SELECT COUNT(*) FROM features WHERE namespace = ?"
            return int(self._db.execute(query, (namespace,)).fetchone()[0])


def stored_features(
    backbone: Backbone,
    store: FeatureStore | None,
    texts: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    *,
    exact: bool = False,
) -> np.ndarray:
    """Features of ``texts`` (rows in order; ``exact``: in fp32, as a near tie's recheck
    asks), read from ``store`` where kept, the rest computed ``CHUNK`` at a time and kept;
    ``progress(done, total)`` after each read and chunk. Every row is primed into
    ``backbone``'s in-memory cache. Without a store, all are computed (and primed)."""
    total = len(texts)
    out = np.zeros((total, backbone.hidden_size))
    namespace = backbone.feature_namespace(exact)
    found = store.get(namespace, texts) if store is not None and namespace else {}
    for i, row in found.items():
        out[i] = row
    done = len(found)
    if progress is not None:
        progress(done, total)
    missing: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if i not in found:
            missing.setdefault(text, []).append(i)
    unique = list(missing)
    for start in range(0, len(unique), CHUNK):
        chunk = unique[start : start + CHUNK]
        rows = backbone.features(chunk, exact=exact)
        if store is not None and namespace:
            store.put(namespace, chunk, rows)
        for text, row in zip(chunk, rows, strict=True):
            for i in missing[text]:
                out[i] = row
            done += len(missing[text])
        if progress is not None:
            progress(done, total)
    backbone.prime(texts, out, exact)
    return out


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _parts(items: Sequence[bytes], size: int) -> Iterator[Sequence[bytes]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
