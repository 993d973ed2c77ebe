"""What one batched backbone forward runs on: the rows' KV cache, grouped-query attention
and the bf16 copies of the weights.

Imported by ``backbone`` inside its forward (torch and transformers load here, at first use):

- ``RowsCache``: the KV cache of a forward's rows, one buffer preallocated for the whole
  forward (every layer's keys and values, the rows' cached prefixes left-padded into it,
  room for the new tokens after them) in the dtype the attention reads: a layer writes
  its new keys and values in place instead of concatenating a grown copy, and each row's
  cache for its next turn is one slice of the buffer (``row``).
- ``GQA_ATTENTION``: scaled dot-product attention that reads the key/value heads as they
  are (``enable_gqa``) instead of repeating them for every query head (``repeat_kv``),
  registered with transformers' ``AttentionInterface`` under its own name and set on the
  backbone's model only (``use_gqa_attention``). Same kernel, same numbers: the keys and
  values repeated were identical copies.
- ``Bf16Weights``: bf16 copies of the linear layers' fp32 weights for bf16-mixed forwards.
  Under ``torch.autocast`` each linear layer casts its fp32 weight to bf16 on every call,
  reading and writing all weights again in every forward (a third of a short forward's
  time on a CPU); the copies hold the same bf16 values, cast once, and are swapped in for
  the forward's duration. A weight changed in place (SVF offsets) is cast again, found by
  its version counter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface, Cache
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import repeat_kv
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

log = logging.getLogger(__name__)

GQA_ATTENTION = "workbench_sdpa_gqa"
# scaled_dot_product_attention's enable_gqa came with torch 2.5
_SDPA_GQA = "enable_gqa" in (torch.nn.functional.scaled_dot_product_attention.__doc__ or "")
WORKSPACE_BYTES = 512 << 20  # a CPU forward of 8192 positions, its prefixes padded, in bf16


def gqa_sdpa_forward(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers' ``sdpa`` attention with the key/value heads read in place: query
    ``(rows, heads, q, dim)``, key and value ``(rows, kv_heads, kv, dim)``. On a CPU
    (flash attention takes grouped heads and a mask); elsewhere with a mask, or on a torch
    without ``enable_gqa``, the heads are repeated as transformers does (CUDA's kernels
    that take a mask do not take grouped heads and would fall back to the slow one)."""
    q_length = query.shape[2]
    grouped = key.shape[1] != query.shape[1]
    if grouped and not (_SDPA_GQA and (query.device.type == "cpu" or attention_mask is None)):
        repeats = query.shape[1] // key.shape[1]
        key, value = repeat_kv(key, repeats), repeat_kv(value, repeats)
        grouped = False
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(q_length > 1 and attention_mask is None and causal)
    if causal and key.shape[2] > q_length:  # as sdpa: an upper-left causal mask, cropped
        key, value = key[:, :, :q_length], value[:, :, :q_length]
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=causal,
        **({"enable_gqa": True} if grouped else {}),
    )
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(GQA_ATTENTION, gqa_sdpa_forward)
ALL_MASK_ATTENTION_FUNCTIONS.register(GQA_ATTENTION, sdpa_mask)


def use_gqa_attention(model: Any) -> str | None:
    """Have ``model`` (and only it) attend with ``gqa_sdpa_forward`` where it uses
    transformers' ``sdpa`` on a model with fewer key/value heads than query heads; any
    other attention (eager, flash) is left as it is. Returns the implementation it
    replaced (for ``restore_attention``), or None."""
    config = model.config
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    if config._attn_implementation != "sdpa" or not heads or kv_heads == heads:
        return None
    try:
        model.set_attn_implementation(GQA_ATTENTION)
    except (AttributeError, ValueError) as exc:  # an older transformers: sdpa as it is
        log.debug("attention left as sdpa: %s", exc)
        return None
    return "sdpa"


def restore_attention(model: Any, previous: str | None) -> None:
    """Undo ``use_gqa_attention`` (``previous``: what it returned)."""
    if previous is not None and model.config._attn_implementation == GQA_ATTENTION:
        model.set_attn_implementation(previous)


class _RowsLayer(DynamicLayer):
    """One layer of a ``RowsCache``: views of the shared buffer; ``update`` writes the new
    keys and values after the ``length`` positions already filled."""

    def __init__(self, keys: Any, values: Any, length: int):
        super().__init__()
        self.keys, self.values = keys, values
        self.length = length
        self.device = keys.device
        self.is_initialized = True

    def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
        pass  # preallocated

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
        end = self.length + key_states.shape[-2]
        self.keys[:, :, self.length : end] = key_states  # cast to the buffer's dtype
        self.values[:, :, self.length : end] = value_states
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]

    def get_seq_length(self) -> int:
        return self.length


class RowsCache(Cache):
    """The KV cache of one forward's rows: ``buffer`` of shape ``(layers, 2, rows,
    kv_heads, prefix + width, head_dim)``, each row's cached prefix ending at ``prefix``
    (left-padded) and its new tokens written after it by the forward."""

    def __init__(self, buffer: Any, prefix: int):
        super().__init__(layers=[_RowsLayer(b[0], b[1], prefix) for b in buffer])
        self.buffer = buffer
        self.prefix = prefix

    @classmethod
    def empty(
        cls,
        config: Any,
        rows: int,
        prefix: int,
        width: int,
        workspace: KVWorkspace,
    ) -> RowsCache:
        """A cache for ``rows`` rows of ``prefix`` cached and ``width`` new positions, its
        buffer taken from ``workspace``."""
        heads = config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        shape = (config.num_hidden_layers, 2, rows, kv_heads, prefix + width, head_dim)
        return cls(workspace.take(shape), prefix)

    def fill(self, i: int, kv: Any | None, reuse: int) -> None:
        """Row ``i``'s first ``reuse`` cached positions (of ``kv``, a ``row`` of an earlier
        forward), left-padded with zeros (masked; finite, so that they weigh nothing)."""
        start = self.prefix - reuse
        if start:
            self.buffer[:, :, i, :, :start] = 0
        if reuse:
            assert kv is not None  # a reused prefix has its cached keys and values
            self.buffer[:, :, i, :, start : self.prefix] = kv[:, :, :, :reuse]

    def row(self, i: int, reuse: int, new: int) -> Any:
        """Row ``i``'s keys and values after the forward, its prefix and its ``new``
        tokens: ``(layers, 2, kv_heads, reuse + new, head_dim)``, a copy (kept for the
        row's next turn, without the batch's padding)."""
        return self.buffer[:, :, i, :, self.prefix - reuse : self.prefix + new].clone()


class KVWorkspace:
    """Memory for one forward's ``RowsCache`` at a time, kept between forwards up to
    ``max_bytes``: a fresh buffer of tens of megabytes is new pages from the system, each
    faulted in and zeroed on first write, which cost more than the copies that fill it."""

    def __init__(self, dtype: Any, device: Any, max_bytes: int = WORKSPACE_BYTES):
        self.dtype, self.device, self.max_bytes = dtype, device, max_bytes
        self._buffer: Any = None

    def take(self, shape: tuple[int, ...]) -> Any:
        """An uninitialised tensor of ``shape``; the previous one's memory is reused."""
        n = 1
        for size in shape:
            n *= size
        if self._buffer is not None and self._buffer.numel() >= n:
            return self._buffer[:n].view(shape)
        buffer = torch.empty(n, dtype=self.dtype, device=self.device)
        if buffer.element_size() * n <= self.max_bytes:
            self._buffer = buffer
        return buffer.view(shape)


class Bf16Weights:
    """bf16 copies of the weights of ``model``'s linear layers, swapped in by ``swapped()``
    for a bf16-mixed forward (autocast would cast the same weights on every call). The
    swap holds for the forward, under the backbone's lock: like SVF offsets, it assumes
    no other backbone forwards the same model object at the same time."""

    def __init__(self, model: Any):
        # the base model's: the LM head (tied to the embeddings, or unused) reads no feature
        self.linears = [m for m in model.base_model.modules() if isinstance(m, torch.nn.Linear)]
        self._copies: dict[int, tuple[Any, int, Any]] = {}  # id -> (source, version, copy)

    @contextmanager
    def swapped(self) -> Iterator[None]:
        originals = []
        try:
            for m in self.linears:
                weight = m.weight
                if weight.dtype != torch.float32:
                    continue
                held = self._copies.get(id(m))
                if held is None or held[0] is not weight or held[1] != weight._version:
                    copy = torch.nn.Parameter(weight.detach().to(torch.bfloat16), False)
                    held = (weight, weight._version, copy)
                    self._copies[id(m)] = held
                originals.append((m, weight))
                m._parameters["weight"] = held[2]
            yield
        finally:
            for m, weight in originals:
                m._parameters["weight"] = weight
