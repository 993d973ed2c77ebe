"""Singular-value fine-tuning (SVF) of a backbone's embeddings and one late layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(kw_only=True)
class _SVFTarget:
    name: str
    param: Any  # torch.nn.Parameter, adapted in place
    original: Any  # a copy of the original weight
    u: Any
    s: Any
    vh: Any


class SVF:
    """Singular-value fine-tuning of a backbone (docs/METHOD.md).

    For each adapted matrix ``W = U diag(S) V^T`` and offsets ``delta`` (one per singular
    value, 0 = unchanged): ``W' = U diag(S (1 + delta)) V^T * sum(S) / sum(S (1 + delta))``.
    Adapted: the input embeddings and the q, k, v, o, gate, up, down matrices of layer
    ``layer`` (default: the second-to-last). A tied LM head shares the embedding tensor
    and is adapted once, with it; an untied LM head is not adapted, since the feature is
    read before the LM head and its offsets would have no effect.
    """

    LAYER_MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

    def __init__(self, model: Any, layer: int = -2):
        import torch

        self.layer = layer
        self.targets: list[_SVFTarget] = []
        seen: set[int] = set()
        for name, param in self._find(model, layer):
            if param.data_ptr() in seen:  # tied embeddings: one tensor, adapted once
                continue
            seen.add(param.data_ptr())
            w = param.detach().to(torch.float64)
            u, s, vh = torch.linalg.svd(w, full_matrices=False)
            self.targets.append(
                _SVFTarget(name=name, param=param, original=param.detach().clone(), u=u, s=s, vh=vh)
            )
        self.sizes = [int(t.s.shape[0]) for t in self.targets]
        self.n_params = sum(self.sizes)
        self._delta = np.zeros(self.n_params)

    @classmethod
    def _find(cls, model: Any, layer: int) -> list[tuple[str, Any]]:
        base = model.base_model
        layers = getattr(base, "layers", None)
        if layers is None:
            raise ValueError(f"SVF: cannot find the decoder layers of {type(model).__name__}")
        try:
            block = layers[layer]
        except IndexError:
            raise ValueError(
                f"SVF layer {layer} is out of range: the backbone has {len(layers)} layers"
            ) from None
        found = [("embed_tokens", model.get_input_embeddings().weight)]
        for name, module in block.named_modules():
            if name.rsplit(".", 1)[-1] in cls.LAYER_MATRICES and hasattr(module, "weight"):
                found.append((f"layers.{layer}.{name}", module.weight))
        if len(found) == 1:
            raise ValueError(
                f"SVF: layer {layer} of {type(model).__name__} has none of {cls.LAYER_MATRICES}"
            )
        return found

    @property
    def delta(self) -> np.ndarray:
        return self._delta.copy()

    def apply(self, delta: np.ndarray) -> None:
        """Set the offsets; ``delta = 0`` restores the original weights bit for bit."""
        import torch

        delta = np.asarray(delta, dtype=np.float64)
        if delta.shape != (self.n_params,):
            raise ValueError(f"SVF vector has shape {delta.shape}, expected ({self.n_params},)")
        offset = 0
        with torch.no_grad():
            for target, size in zip(self.targets, self.sizes, strict=True):
                d = delta[offset : offset + size]
                offset += size
                if not np.any(d):
                    target.param.copy_(target.original)
                    continue
                target.param.copy_(self.reconstruct(target, d).to(target.param.dtype))
        self._delta = delta.copy()

    @staticmethod
    def reconstruct(target: _SVFTarget, d: np.ndarray) -> Any:
        import torch

        scale = 1.0 + torch.as_tensor(d, dtype=torch.float64, device=target.s.device)
        s = target.s * scale
        return (target.u * s) @ target.vh * (target.s.sum() / s.sum())
