"""The frozen backbone: transcripts in, unit-RMS feature vectors out."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.coordinator.svf import SVF

log = logging.getLogger(__name__)


@dataclass
class FeatureStats:
    """What the backbone did: forwards, cache hits, tokens forwarded and reused."""

    requests: int = 0
    cache_hits: int = 0
    forwards: int = 0  # transcripts forwarded (batched or not)
    tokens_forwarded: int = 0
    tokens_reused: int = 0  # prefix tokens whose KV cache was reused
    busy_s: float = 0.0  # time spent computing features


def _digest(vector: np.ndarray | None) -> str:
    if vector is None or not np.any(vector):
        return "none"
    return hashlib.sha256(np.ascontiguousarray(vector, dtype=np.float64).tobytes()).hexdigest()[:16]


class Backbone:
    """A frozen causal LM that turns transcripts into unit-RMS feature vectors."""

    def __init__(
        self,
        source: str = "offline",
        device: str = "auto",
        *,
        svf_layer: int = -2,
        feature_cache_size: int = 50_000,
        prefix_cache_bytes: int = 2 << 30,
        min_prefix_tokens: int = 8,
        model: Any = None,
        tokenizer: Any = None,
    ):
        if model is None:
            from workbench.core.models import load_causal_lm

            model, tokenizer, resolved = load_causal_lm(source, device)
            self.id = f"{resolved.kind}:{resolved.source}@{resolved.fingerprint}"
        else:  # an already loaded model (tests, or a caller that owns it)
            self.id = f"model:{source}"
        self.source = source
        self.model = model
        self.tokenizer = tokenizer
        self.hidden_size = int(model.config.hidden_size)
        self.stats = FeatureStats()
        self._feature_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._feature_cache_size = feature_cache_size
        # KV caches of earlier transcripts, keyed by (SVF digest, token ids), LRU within a
        # memory budget: a later turn of the same episode forwards its new tokens only.
        self._prefixes: OrderedDict[tuple[str, tuple[int, ...]], tuple[Any, int]] = OrderedDict()
        self._prefix_bytes = 0
        self._prefix_budget = prefix_cache_bytes
        self._min_prefix = min_prefix_tokens
        self.svf_layer = svf_layer
        self._svf: SVF | None = None
        self._svf_digest = "none"  # the SVF vector the weights hold now
        self._lock = threading.Lock()  # one forward at a time on this model
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="backbone")
        self._pending: list[tuple[str, np.ndarray | None, asyncio.Future]] = []
        self._draining = False

    # -- SVF ---------------------------------------------------------------

    def svf(self) -> SVF:
        """The SVF adapter of this backbone's ``svf_layer`` (built on first use)."""
        with self._lock:
            return self._svf_adapter()

    def _svf_adapter(self) -> SVF:
        if self._svf is None:
            self._svf = SVF(self.model, self.svf_layer)
        return self._svf

    def _use_svf(self, delta: np.ndarray | None) -> str:
        """Make the weights hold SVF offsets ``delta`` (None: the original weights);
        called under the lock, so concurrent requests with other vectors are safe."""
        digest = _digest(delta)
        if digest != self._svf_digest:
            adapter = self._svf_adapter()
            adapter.apply(np.zeros(adapter.n_params) if delta is None else delta)
            self._svf_digest = digest
        return digest

    # -- features ----------------------------------------------------------

    def encode(self, transcript: str) -> list[int]:
        """Token ids the coordinator reads: the transcript as one user message in the
        backbone's chat template (plain text if it has none), generation cue included."""
        tok = self.tokenizer
        if tok.chat_template:
            ids = tok.apply_chat_template(
                [{"role": "user", "content": transcript}], add_generation_prompt=True, tokenize=True
            )
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return list(ids)
        return list(tok(transcript)["input_ids"])

    def features(self, transcripts: Sequence[str], svf: np.ndarray | None = None) -> np.ndarray:
        """Unit-RMS features, one row per transcript, with SVF offsets ``svf`` applied;
        transcripts already seen (under the same SVF vector) cost nothing."""
        out: list[np.ndarray | None] = [None] * len(transcripts)
        todo: dict[str, list[int]] = {}
        with self._lock:
            digest = _digest(svf)
            for i, text in enumerate(transcripts):
                self.stats.requests += 1
                hit = self._feature_cache.get((digest, text))
                if hit is not None:
                    self._feature_cache.move_to_end((digest, text))
                    self.stats.cache_hits += 1
                    out[i] = hit
                else:
                    todo.setdefault(text, []).append(i)
            if todo:
                started = time.perf_counter()
                self._use_svf(svf)
                computed = self._compute(list(todo))
                self.stats.busy_s += time.perf_counter() - started
                for text, feature in zip(todo, computed, strict=True):
                    self._feature_cache[(digest, text)] = feature
                    for i in todo[text]:
                        out[i] = feature
                while len(self._feature_cache) > self._feature_cache_size:
                    self._feature_cache.popitem(last=False)
        return np.stack(out) if out else np.zeros((0, self.hidden_size))

    def feature(self, transcript: str, svf: np.ndarray | None = None) -> np.ndarray:
        return self.features([transcript], svf)[0]

    async def afeature(self, transcript: str, svf: np.ndarray | None = None) -> np.ndarray:
        """The feature, computed off the event loop. Requests that arrive while a forward
        is running are batched into the next one (grouped by SVF vector)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._pending.append((transcript, svf, future))
        if not self._draining:
            self._draining = True
            loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                pending, self._pending = self._pending, []
                groups: dict[str, list[tuple[str, np.ndarray | None, asyncio.Future]]] = {}
                for item in pending:
                    groups.setdefault(_digest(item[1]), []).append(item)
                for batch in groups.values():
                    try:
                        rows = await loop.run_in_executor(
                            self._executor, self.features, [t for t, _, _ in batch], batch[0][1]
                        )
                    except Exception as exc:  # hand the failure to every waiter
                        for _, _, fut in batch:
                            if not fut.done():
                                fut.set_exception(exc)
                        continue
                    for (_, _, fut), row in zip(batch, rows, strict=True):
                        if not fut.done():
                            fut.set_result(row)
        finally:
            self._draining = False

    def _longest_prefix(self, ids: list[int]) -> tuple[int, Any]:
        best_len, best_key = 0, None
        for key in self._prefixes:
            digest, cached = key
            n = min(len(cached), len(ids) - 2)  # keep >= 2 new tokens: the penultimate is read
            if digest != self._svf_digest or n <= best_len:
                continue
            common = 0
            while common < n and cached[common] == ids[common]:
                common += 1
            if common > best_len:
                best_len, best_key = common, key
        if best_key is None or best_len < self._min_prefix:
            return 0, None
        self._prefixes.move_to_end(best_key)
        return best_len, self._prefixes[best_key][0]

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        import torch

        encoded = [self.encode(t) for t in texts]
        for ids, text in zip(encoded, texts, strict=True):
            if len(ids) < 2:
                raise ValueError(f"transcript too short for a feature (needs 2 tokens): {text!r}")
        features: list[np.ndarray | None] = [None] * len(texts)
        fresh = []
        with torch.inference_mode():
            for i, ids in enumerate(encoded):
                reuse, cache = self._longest_prefix(ids)
                if cache is None:
                    fresh.append(i)
                    continue
                features[i] = self._forward_one(ids, reuse, _slice_cache(cache, reuse))
            if fresh:
                for i, feature in zip(
                    fresh, self._forward_batch([encoded[i] for i in fresh]), strict=True
                ):
                    features[i] = feature
        return features  # type: ignore[return-value]

    def _forward_one(self, ids: list[int], reuse: int, cache: Any) -> np.ndarray:
        import torch

        device = self.model.device
        new = torch.tensor([ids[reuse:]], device=device)
        out = self.model.base_model(
            input_ids=new,
            **{_cache_arg(): cache},
            use_cache=True,
            attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=device),
        )
        self.stats.forwards += 1
        self.stats.tokens_forwarded += len(ids) - reuse
        self.stats.tokens_reused += reuse
        self._keep_prefix(ids, getattr(out, _cache_arg()))
        return _unit_rms(out.last_hidden_state[0, -2])

    def _forward_batch(self, batch: list[list[int]]) -> list[np.ndarray]:
        """Forward transcripts with no reusable prefix together (right padding), and keep
        each row's KV cache for the next turn's prefix reuse."""
        import torch

        device = self.model.device
        longest = max(len(ids) for ids in batch)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(batch), longest), pad, dtype=torch.long, device=device)
        mask = torch.zeros((len(batch), longest), dtype=torch.long, device=device)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids, device=device)
            mask[row, : len(ids)] = 1
        out = self.model.base_model(input_ids=input_ids, attention_mask=mask, use_cache=True)
        self.stats.forwards += len(batch)
        self.stats.tokens_forwarded += sum(len(ids) for ids in batch)
        features = []
        for row, ids in enumerate(batch):
            n = len(ids)
            if self._prefix_budget > 0:
                self._keep_prefix(ids, _slice_cache(getattr(out, _cache_arg()), n, row, copy=True))
            features.append(_unit_rms(out.last_hidden_state[row, n - 2]))
        return features

    def _keep_prefix(self, ids: list[int], cache: Any) -> None:
        if self._prefix_budget <= 0:
            return
        size = sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)
        key = (self._svf_digest, tuple(ids))
        if key in self._prefixes:
            self._prefix_bytes -= self._prefixes.pop(key)[1]
        self._prefixes[key] = (cache, size)
        self._prefix_bytes += size
        while self._prefix_bytes > self._prefix_budget and self._prefixes:
            self._prefix_bytes -= self._prefixes.popitem(last=False)[1][1]

    def close(self) -> None:
        self._executor.shutdown(wait=True)


@functools.cache
def _cache_arg() -> str:
    """transformers 5 renamed ``past_key_values`` to ``cache`` (in inputs and outputs)."""
    import inspect

    from transformers import LlamaModel

    return (
        "cache"
        if "cache" in inspect.signature(LlamaModel.forward).parameters
        else "past_key_values"
    )


def _slice_cache(cache: Any, length: int, row: int = 0, copy: bool = False) -> Any:
    """A new KV cache holding the first ``length`` positions of one row of ``cache``.
    The forward that extends it concatenates into new tensors, so views are safe; a row
    of a batch is copied so that the batch's tensors can be freed."""
    from transformers import DynamicCache

    layers = []
    for layer in cache.layers:
        k, v = layer.keys[row : row + 1, :, :length], layer.values[row : row + 1, :, :length]
        layers.append((k.clone(), v.clone()) if copy else (k, v))
    return DynamicCache(layers)


def _unit_rms(h: Any) -> np.ndarray:
    v = h.detach().float().cpu().numpy().astype(np.float64)
    rms = float(np.sqrt(np.mean(v * v)))
    return v / rms if rms > 0 else v
