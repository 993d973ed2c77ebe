"""The frozen backbone: transcripts in, unit-RMS feature vectors out."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from workbench.core.coordinator.prefix_cache import PrefixCache, PrefixEntry
from workbench.core.coordinator.svf import SVF

log = logging.getLogger(__name__)

# how the backbone reads a transcript: its text as is, or as one user message in its chat
# template (a run's ``backbone.input``)
INPUTS = ("raw", "chat")


@dataclass(kw_only=True)
class FeatureStats:
    """What the backbone did: forwards, cache hits, tokens forwarded and reused."""

    requests: int = 0
    cache_hits: int = 0
    forwards: int = 0  # transcripts forwarded (batched or not)
    batches: int = 0  # backbone forwards (each of one or more transcripts)
    tokens_forwarded: int = 0  # new tokens, the work that was needed
    tokens_padded: int = 0  # positions the forwards computed, padding included
    tokens_reused: int = 0  # prefix tokens whose KV cache was reused
    busy_s: float = 0.0  # time spent computing features
    exact: int = 0  # features recomputed in fp32 on request (near-tie decisions, bf16-mixed)
    exact_tokens: int = 0  # new tokens those fp32 recomputations forwarded


_Request = tuple[str, "np.ndarray | None", bool, "asyncio.Future[np.ndarray]"]


def _digest(vector: np.ndarray | None) -> str:
    if vector is None or not np.any(vector):
        return "none"
    return hashlib.sha256(np.ascontiguousarray(vector, dtype=np.float64).tobytes()).hexdigest()[:16]


class Backbone:
    """A frozen causal LM that turns transcripts into unit-RMS feature vectors.

    ``precision`` (``models.pick_precision``): ``fp32``, ``bf16-mixed`` (fp32 weights,
    matrix products in bf16 under ``torch.autocast``), ``bf16`` (bf16 weights) or ``auto``
    (bf16-mixed on a GPU and on a CPU with native bf16, else fp32). With an already
    loaded ``model``, ``auto`` is the model's own dtype (fp32 or bf16), so tests that hand
    in a model compute exactly; ``bf16-mixed`` over an fp32 model turns the autocast on.
    ``self.precision`` is what the features were computed in, recorded in the run.
    """

    def __init__(
        self,
        source: str = "offline",
        device: str = "auto",
        precision: str = "auto",
        *,
        input: str = "raw",
        svf_layer: int = -2,
        feature_cache_size: int = 50_000,
        prefix_cache_bytes: int = 2 << 30,
        min_prefix_tokens: int = 8,
        max_batch_tokens: int | None = None,
        model: Any = None,
        tokenizer: Any = None,
    ):
        from workbench.core.models import (
            PRECISIONS,
            load_causal_lm,
            pick_device,
            pick_precision,
        )

        # what a stored feature of this backbone is keyed by (feature_namespace): None
        # for a model handed in, whose weights nothing here can fingerprint
        self._fingerprinted = model is None
        if model is None:
            precision = pick_precision(pick_device(device), precision)
            model, tokenizer, resolved = load_causal_lm(source, device, precision)
            self.id = f"{resolved.kind}:{resolved.source}@{resolved.fingerprint}"
        else:  # an already loaded model (tests, or a caller that owns it)
            self.id = f"model:{source}"
            if precision not in PRECISIONS:
                raise ValueError(
                    f"unknown precision '{precision}': choose one of {', '.join(PRECISIONS)}"
                )
            own = {"torch.float32": "fp32", "torch.bfloat16": "bf16"}.get(str(model.dtype))
            if precision == "auto":
                precision = own or str(model.dtype)
            elif precision != own and not (precision == "bf16-mixed" and own == "fp32"):
                raise ValueError(
                    f"precision '{precision}' asked for a model whose weights are "
                    f"{model.dtype}: load it in that precision, or pass precision='auto'"
                )
        if input not in INPUTS:
            raise ValueError(f"unknown backbone input '{input}': choose one of {', '.join(INPUTS)}")
        from workbench.core.coordinator.rows import Bf16Weights, use_gqa_attention

        self.input = input
        self.source = source
        # the same attention, without repeating key/value heads (undone by close())
        self._attention_was = use_gqa_attention(model)
        self.model = model
        self._bf16_weights = Bf16Weights(model)  # cast once for bf16-mixed, not per forward
        self._workspaces: dict[str, Any] = {}  # per precision: KV buffers reused by forwards
        self.tokenizer = tokenizer
        self.hidden_size = int(model.config.hidden_size)
        self.context_tokens = int(getattr(model.config, "max_position_embeddings", 0) or 1 << 20)
        # what the features were computed in, for the run's record
        self.device = str(model.device)
        self.precision: str = precision
        self.stats = FeatureStats()
        # keyed by (precision, SVF digest, text), the prefix cache by (precision-qualified
        # SVF digest, token ids): features of one precision never answer for another
        self._feature_cache: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._feature_cache_size = feature_cache_size
        # KV caches of earlier transcripts, keyed by (SVF digest, token ids), LRU within a
        # memory budget: a later turn of the same episode forwards its new tokens only.
        # fp32 recomputations of a bf16-mixed backbone (near-tie rechecks) keep theirs
        # apart, in a quarter of that budget: they never evict the generation's own, and a
        # later recheck in the same episode forwards only the tokens since the last one.
        self._prefixes = PrefixCache(prefix_cache_bytes, min_prefix_tokens)
        self._exact_prefixes = PrefixCache(prefix_cache_bytes // 4, min_prefix_tokens)
        self.max_batch_tokens = max_batch_tokens or default_batch_tokens(model)
        self.forward_cost = default_forward_cost(model)
        self.svf_layer = svf_layer
        self._svf: SVF | None = None
        self._svf_digest = "none"  # the SVF vector the weights hold now
        self._lock = threading.Lock()  # one forward at a time on this model
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="backbone")
        self._pending: list[_Request] = []
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
        """Token ids the coordinator reads: with input ``raw`` the transcript's text, as the
        paper's released code feeds it; with ``chat`` the transcript as one user message in
        the backbone's chat template (plain text if it has none), generation cue included."""
        tok = self.tokenizer
        if self.input == "chat" and tok.chat_template:
            ids = tok.apply_chat_template(
                [{"role": "user", "content": transcript}], add_generation_prompt=True, tokenize=True
            )
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return list(ids)
        return list(tok(transcript)["input_ids"])

    def fits(self, transcript: str) -> bool:
        """Whether ``transcript`` fits the backbone's context (its position embeddings):
        a text shorter in characters than the context, less the template's tokens, fits
        without being tokenized (a token covers at least one character)."""
        if len(transcript) + CONTEXT_MARGIN <= self.context_tokens:
            return True
        return len(self.encode(transcript)) <= self.context_tokens

    @property
    def approximate(self) -> bool:
        """Whether features are computed in a lower precision than fp32 with the fp32
        weights at hand (bf16-mixed), so that ``exact=True`` can recompute one in fp32."""
        return self.precision == "bf16-mixed"

    @property
    def feature_error(self) -> float:
        """A bound on the projection, on any unit direction, of the error of a feature
        computed in this backbone's precision against fp32, where an fp32 recomputation is
        at hand (bf16-mixed: ``BF16_MIXED_FEATURE_ERROR``); else 0. The coordinator
        recomputes an argmax decision in fp32 when a logit lies within this error of the
        best one (``Head.near_tie``)."""
        return BF16_MIXED_FEATURE_ERROR if self.approximate else 0.0

    def feature_namespace(self, exact: bool = False) -> str | None:
        """What this backbone's features (``exact``: its fp32 ones) are kept under on disk
        (``feature_store``): the model and its fingerprint, how it reads a transcript, the
        precision and what the feature is; None for a model handed in (nothing
        fingerprints its weights)."""
        if not self._fingerprinted:
            return None
        return f"{self.id}|{self.input}|{self._precision_for(exact)}|{FEATURE_KIND}"

    def prime(self, transcripts: Sequence[str], rows: np.ndarray, exact: bool = False) -> None:
        """Put features computed earlier (``feature_store``) into the in-memory cache, as
        this backbone's own (``exact``: fp32) without SVF offsets; kept until ``forget``."""
        precision = self._precision_for(exact)
        with self._lock:
            for text, row in zip(transcripts, rows, strict=True):
                self._feature_cache[(precision, "none", text)] = np.asarray(row)
            while len(self._feature_cache) > self._feature_cache_size:
                self._feature_cache.popitem(last=False)

    def forget(self) -> None:
        """Empty the feature and KV-prefix caches. A feature computed in a batch (or over a
        cached prefix) can differ in its last bits from the same transcript's feature
        computed in another batch, and in bf16-mixed by far more; a trainer calls this at
        every generation's start, so that a generation's features depend on that
        generation's own requests only and a resumed run computes the ones an uninterrupted
        run computed (docs/guides/resume.md)."""
        with self._lock:
            self._feature_cache.clear()
            self._prefixes.clear()
            self._exact_prefixes.clear()

    def features(
        self, transcripts: Sequence[str], svf: np.ndarray | None = None, *, exact: bool = False
    ) -> np.ndarray:
        """Unit-RMS features, one row per transcript, with SVF offsets ``svf`` applied;
        transcripts already seen (under the same SVF vector) cost nothing. ``exact``: in
        fp32 whatever the backbone's precision (bf16-mixed turns its autocast off; a
        backbone with bf16 weights has no fp32 and refuses)."""
        precision = self._precision_for(exact)
        out: list[np.ndarray | None] = [None] * len(transcripts)
        todo: dict[str, list[int]] = {}
        with self._lock:
            digest = _digest(svf)
            for i, text in enumerate(transcripts):
                self.stats.requests += 1
                hit = self._feature_cache.get((precision, digest, text))
                if hit is not None:
                    self._feature_cache.move_to_end((precision, digest, text))
                    self.stats.cache_hits += 1
                    out[i] = hit
                else:
                    todo.setdefault(text, []).append(i)
            if todo:
                started = time.perf_counter()
                self._use_svf(svf)
                tokens = self.stats.tokens_forwarded
                computed = self._compute(list(todo), precision)
                if exact and precision != self.precision:
                    self.stats.exact += len(todo)
                    self.stats.exact_tokens += self.stats.tokens_forwarded - tokens
                self.stats.busy_s += time.perf_counter() - started
                for text, feature in zip(todo, computed, strict=True):
                    self._feature_cache[(precision, digest, text)] = feature
                    for i in todo[text]:
                        out[i] = feature
                while len(self._feature_cache) > self._feature_cache_size:
                    self._feature_cache.popitem(last=False)
        rows = cast(list[np.ndarray], out)  # every index was filled above
        return np.stack(rows) if rows else np.zeros((0, self.hidden_size))

    def feature(
        self, transcript: str, svf: np.ndarray | None = None, *, exact: bool = False
    ) -> np.ndarray:
        return self.features([transcript], svf, exact=exact)[0]

    async def afeature(
        self, transcript: str, svf: np.ndarray | None = None, *, exact: bool = False
    ) -> np.ndarray:
        """The feature, computed off the event loop. Requests that arrive while a forward
        is running are batched into the next one (grouped by SVF vector and precision)."""
        self._precision_for(exact)  # refuse before queueing
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._pending.append((transcript, svf, exact, future))
        if not self._draining:
            self._draining = True
            loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                # let every episode woken by the last batch ask for its next decision
                # before forwarding: one large batch beats several small ones
                for _ in range(DRAIN_ROUNDS):
                    waiting = len(self._pending)
                    await asyncio.sleep(0)
                    if len(self._pending) == waiting:
                        break
                pending, self._pending = self._pending, []
                groups: dict[tuple[str, str], list[_Request]] = {}
                for item in pending:
                    key = (_digest(item[1]), self._precision_for(item[2]))
                    groups.setdefault(key, []).append(item)
                # fp32 rechecks (near ties) first and alone: the episodes they answer then
                # ask their next decision in time to join the other requests' forward,
                # rather than trail one forward behind them for the rest of the episode
                rechecks = {k: b for k, b in groups.items() if k[1] != self.precision}
                if rechecks and len(rechecks) < len(groups):
                    later = [item for k, b in groups.items() if k not in rechecks for item in b]
                    self._pending = later + self._pending
                    groups = rechecks
                for (_, precision), batch in groups.items():
                    compute = functools.partial(self.features, exact=precision != self.precision)
                    try:
                        rows = await loop.run_in_executor(
                            self._executor, compute, [t for t, *_ in batch], batch[0][1]
                        )
                    except Exception as exc:  # hand the failure to every waiter
                        for *_, fut in batch:
                            if not fut.done():
                                fut.set_exception(exc)
                        continue
                    for (*_, fut), row in zip(batch, rows, strict=True):
                        if not fut.done():
                            fut.set_result(row)
        finally:
            self._draining = False

    def _precision_for(self, exact: bool) -> str:
        if not exact or self.precision == "fp32":
            return self.precision
        if self.approximate:
            return "fp32"
        raise ValueError(
            f"an exact (fp32) feature asked of a backbone whose weights are {self.precision}: "
            "load it with precision 'bf16-mixed' or 'fp32'"
        )

    def _prefix_cache(self, precision: str) -> PrefixCache:
        """The KV prefixes of forwards in ``precision``: the backbone's own, or the fp32
        recomputations' (``exact``) of a lower-precision backbone."""
        return self._prefixes if precision == self.precision else self._exact_prefixes

    def _prefix_key(self, precision: str) -> str:
        """What a cached KV prefix was computed under: the precision and the SVF vector."""
        return f"{precision}/{self._svf_digest}"

    def _compute(self, texts: list[str], precision: str) -> list[np.ndarray]:
        """Features of ``texts`` (none in the feature cache) in as few forwards as the
        token budget allows: each row forwards only what its longest cached prefix lacks."""
        import torch

        encoded = [self.encode(t) for t in texts]
        for ids, text in zip(encoded, texts, strict=True):
            if len(ids) < 2:
                raise ValueError(f"transcript too short for a feature (needs 2 tokens): {text!r}")
        rows = []
        for i, ids in enumerate(encoded):
            # keep >= 2 new tokens: the penultimate token's state is the feature
            reuse, entry = self._prefix_cache(precision).lookup(
                self._prefix_key(precision), ids, len(ids) - 2
            )
            rows.append(_Row(i, ids, reuse, entry))
        features: list[np.ndarray | None] = [None] * len(texts)
        with torch.inference_mode():
            for batch in _batches(rows, self.max_batch_tokens, self.forward_cost):
                for row, feature in zip(batch, self._forward_rows(batch, precision), strict=True):
                    features[row.index] = feature
        return features  # type: ignore[return-value]

    def _forward_rows(self, batch: list[_Row], precision: str) -> list[np.ndarray]:
        """One forward of rows, each its new tokens over its own cached prefix.

        The prefixes are left-padded into one KV cache of the longest prefix's length P
        and the new tokens right-padded after it, so every row's prefix ends where its new
        tokens begin; the attention mask hides both paddings, and explicit position ids
        continue each row from its own prefix length (cached keys carry their positions
        already, rotated when they were computed). Fresh transcripts are rows with an
        empty prefix. The cache is one buffer for the whole forward, in the dtype the
        attention reads (bf16 under bf16-mixed: autocast's attention casts keys and values
        to bf16 anyway), that each layer writes its new keys and values into (``rows``);
        each row's slice of it is kept for its next turn.
        """
        import torch

        from workbench.core.coordinator.rows import RowsCache

        device = self.model.device
        n_rows = len(batch)
        prefix = max(r.reuse for r in batch)
        width = max(len(r.ids) - r.reuse for r in batch)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((n_rows, width), pad, dtype=torch.long)
        positions = torch.zeros((n_rows, width), dtype=torch.long)
        mask = torch.zeros((n_rows, prefix + width), dtype=torch.long)
        for i, r in enumerate(batch):
            new = len(r.ids) - r.reuse
            input_ids[i, :new] = torch.tensor(r.ids[r.reuse :])
            positions[i] = torch.arange(r.reuse, r.reuse + width)
            mask[i, prefix - r.reuse : prefix + new] = 1
        prefixes = self._prefix_cache(precision)
        keep = prefixes.budget > 0
        kwargs: dict[str, Any] = {}
        cache = None
        if prefix or keep:  # else nothing to read from or keep: no cache at all
            cache = RowsCache.empty(
                self.model.config, n_rows, prefix, width, self._workspace(precision)
            )
            for i, r in enumerate(batch):
                cache.fill(i, r.entry.kv if r.entry is not None else None, r.reuse)
            kwargs[_cache_arg()] = cache
        mixed = precision == "bf16-mixed"
        # bf16-mixed: the matrix products (linear layers, attention) in bf16, the rest fp32
        with (
            torch.autocast(device.type, dtype=torch.bfloat16, enabled=mixed),
            self._bf16_weights.swapped() if mixed else contextlib.nullcontext(),
        ):
            out = self.model.base_model(
                input_ids=input_ids.to(device),
                attention_mask=mask.to(device),
                position_ids=positions.to(device),
                use_cache=cache is not None,
                **kwargs,
            )
        self.stats.forwards += n_rows
        self.stats.batches += 1
        self.stats.tokens_forwarded += sum(len(r.ids) - r.reuse for r in batch)
        self.stats.tokens_padded += n_rows * width
        self.stats.tokens_reused += sum(r.reuse for r in batch)
        # every row's penultimate token in one gather and one copy to the host (on a GPU
        # a copy per row waits for the device once per row)
        hidden = out.last_hidden_state
        at = torch.tensor([len(r.ids) - r.reuse - 2 for r in batch], device=hidden.device)
        states = hidden[torch.arange(n_rows, device=hidden.device), at].detach().float().cpu()
        features = [_unit_rms(v) for v in states.numpy().astype(np.float64)]
        for i, r in enumerate(batch):
            new = len(r.ids) - r.reuse
            if keep:
                assert cache is not None
                kv = cache.row(i, r.reuse, new)
                entry = PrefixEntry(self._prefix_key(precision), tuple(r.ids), kv, kv.nbytes)
                prefixes.put(entry, replaces=r.entry)
        return features

    def _workspace(self, precision: str) -> Any:
        """The KV workspace of ``precision``'s forwards (fp32, else bf16: the dtype the
        attention reads), kept between forwards."""
        import torch

        from workbench.core.coordinator.rows import KVWorkspace

        dtype = torch.float32 if precision == "fp32" else torch.bfloat16
        if precision not in self._workspaces:
            self._workspaces[precision] = KVWorkspace(dtype, self.model.device)
        return self._workspaces[precision]

    def close(self) -> None:
        """Stop the forward thread and give the model back as it came: SVF offsets this
        backbone applied are undone (another Backbone over the same model assumes the
        original weights), and so is its attention implementation."""
        from workbench.core.coordinator.rows import restore_attention

        self._executor.shutdown(wait=True)
        with self._lock:
            if self._svf_digest != "none":
                self._use_svf(None)
            restore_attention(self.model, self._attention_was)


# bf16-mixed against fp32 on the offline SmolLM2-135M (docs/results/figures.md, "Precision"): on 537
# held-out decision transcripts of a trained team head (tests/core/test_precision.py), the
# error of a unit-RMS feature is 0.008 RMS per coordinate, and projected on the unit
# directions w_i - w_j of that head and of 16 random heads at most 0.056 (median 0.005).
# The bound keeps a third over that maximum: argmax decisions within it of a tie (15% of
# the trained head's, 18% of the random heads') are recomputed in fp32, and all 9,129
# decisions then equal fp32's (66 flipped without the recheck, every one a near tie).
BF16_MIXED_FEATURE_ERROR = 0.075
# what a feature is (docs/METHOD.md): part of the stored features' key, so a change of
# definition never reads features of the old one
FEATURE_KIND = "final-norm@penultimate/unit-rms"
CONTEXT_MARGIN = 64  # tokens a chat template may add around a transcript
DRAIN_ROUNDS = 16  # event-loop turns a batch waits at most for more requests to arrive
CPU_BATCH_TOKENS = 8192  # padded positions per forward on a CPU: larger batches gain little


def default_batch_tokens(model: Any) -> int:
    """Padded positions per forward: on a CPU ``CPU_BATCH_TOKENS``; on a GPU what half its
    free memory holds, counting per position the KV cache three times (the padded prefix
    going in, the grown cache coming out, the row kept for the next turn), the layer's
    activations and an SDPA workspace."""
    import torch

    device = model.device
    if device.type != "cuda":
        return CPU_BATCH_TOKENS
    free, _ = torch.cuda.mem_get_info(device)
    cfg = model.config
    elem = torch.finfo(model.dtype).bits // 8
    heads = cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv = 2 * cfg.num_hidden_layers * kv_heads * head_dim * elem
    activations = (6 * cfg.hidden_size + 3 * cfg.intermediate_size) * elem
    workspace = heads * 2048 * 4  # attention scores of one query over a long context
    per_position = 3 * kv + activations + workspace
    return int(min(max(free // 2 // per_position, 1024), 1 << 18))


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


@dataclass
class _Row:
    """One transcript to forward: its ids and the cached prefix (``reuse`` tokens of
    ``entry``) it continues."""

    index: int
    ids: list[int]
    reuse: int
    entry: PrefixEntry | None


PREFIX_FACTOR = 4  # a forward's padded prefix positions cost attention only, not the MLP
# A forward's fixed cost (one pass through every layer, whatever the batch), counted in
# new-token positions. On a 2-core CPU, 16 later turns each forwarded alone took 6.1 ms per
# new token against 2.5 ms as one padded batch (about 40 new tokens each), which puts a
# forward's overhead near 60 positions; a least-squares fit of 72 bf16-mixed forwards of a
# K = 5 generation (one thread, machine under load) gives 36 ms per forward, 0.51 ms per
# padded new position (70 positions), 0.016 ms per padded prefix position (copying it in
# and out, attending to it).
# On a GPU a forward's kernel launches outweigh thousands of positions (an estimate).
CPU_FORWARD_COST = 64
GPU_FORWARD_COST = 4096
PREFIX_COST = 1 / 256  # a padded prefix position (its attention and its KV copy), in the same units


def default_forward_cost(model: Any) -> float:
    """A forward's fixed cost in new-token positions on the model's device (``_batches``)."""
    return GPU_FORWARD_COST if model.device.type == "cuda" else CPU_FORWARD_COST


def _batches(rows: list[_Row], max_tokens: int, forward_cost: float) -> list[list[_Row]]:
    """Rows grouped into forwards at the least modelled cost. Sorted by new length, the
    rows are cut into runs (a dynamic programme over the cut points), each forward costing
    ``forward_cost`` plus its padded new-token positions (rows x longest new part) plus
    ``PREFIX_COST`` per padded prefix position: rows of like length share a forward, and
    a few short rows join longer ones when their padding costs less than a forward of
    their own. Each forward holds at most ``max_tokens`` new-token positions and at most
    ``PREFIX_FACTOR`` times that with the left-padded prefixes counted (a row longer than
    that goes alone)."""
    ordered = sorted(rows, key=lambda r: (len(r.ids) - r.reuse, r.reuse))
    n = len(ordered)
    best = [0.0] + [float("inf")] * n  # best[i]: the least cost of the first i rows
    cut = [0] * (n + 1)
    for i in range(1, n + 1):
        width = len(ordered[i - 1].ids) - ordered[i - 1].reuse  # the longest of rows j..i-1
        prefix = 0
        for j in range(i - 1, -1, -1):
            prefix = max(prefix, ordered[j].reuse)
            k = i - j
            if k > 1 and (
                k * width > max_tokens or k * (prefix + width) > PREFIX_FACTOR * max_tokens
            ):
                break  # more rows only grow both
            cost = best[j] + forward_cost + k * width + PREFIX_COST * k * prefix
            if cost < best[i]:
                best[i], cut[i] = cost, j
    batches: list[list[_Row]] = []
    i = n
    while i > 0:
        batches.append(ordered[cut[i] : i])
        i = cut[i]
    return batches[::-1]


def _unit_rms(v: np.ndarray) -> np.ndarray:
    rms = float(np.sqrt(np.mean(v * v)))
    return v / rms if rms > 0 else v
