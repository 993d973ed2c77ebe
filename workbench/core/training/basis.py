"""The search basis: the coordinates the optimizer searches head weights in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SearchBasis:
    """The coordinates the optimizer searches in, mapped to head weights by ``W = V M``.

    A backbone's features are strongly anisotropic: on SmolLM2-135M 98% of a unit-RMS
    feature's norm lies along one direction ``u`` shared by every input, so a head drawn
    around zero changes its choice between inputs ~4x less than its input-independent
    preference, and separable CMA-ES, which adapts axis-aligned scales only, cannot learn
    that rotation. ``M = (u u^T + alpha (I - u u^T)) / scale`` scales the rest up to the
    weight of ``u`` (``alpha`` = mean |f . u| / mean |f - (f . u) u| over calibration
    features) and ``scale`` brings the transformed feature back to unit RMS. ``u`` is
    kept, not removed: it acts as the bias-free head's implicit bias (the turn-0 role
    prior). Every vector maps to an ordinary head on the unit-RMS feature, so stored
    results, exports and evaluation never see the basis. ``identity`` is the paper's
    parametrisation.
    """

    direction: np.ndarray | None = None  # u, unit norm; None: the identity
    alpha: float = 1.0
    scale: float = 1.0

    @classmethod
    def fit(cls, features: np.ndarray) -> SearchBasis:
        """The balanced basis of calibration ``features`` (rows: unit-RMS features)."""
        mean = features.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if len(features) < 2 or norm == 0:
            return cls()
        u = mean / norm
        along = features @ u
        rest = features - np.outer(along, u)
        alpha = float(
            np.clip(
                np.abs(along).mean() / max(np.linalg.norm(rest, axis=1).mean(), 1e-12), 1.0, 100.0
            )
        )
        mapped = np.outer(along, u) + alpha * rest
        scale = float(np.sqrt((mapped**2).mean(axis=1)).mean())
        return cls(u, alpha, scale)

    def features(self, features: np.ndarray) -> np.ndarray:
        """Features as the search coordinates see them: ``f M`` (M is symmetric)."""
        if self.direction is None:
            return features
        along = features @ self.direction
        return (
            self.alpha * features + (1 - self.alpha) * np.multiply.outer(along, self.direction)
        ) / self.scale

    def head(self, vector: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        """Head weights (flat) of a search vector's head part (flat): ``V M``."""
        if self.direction is None:
            return vector
        return self.features(np.asarray(vector).reshape(shape)).reshape(-1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": None if self.direction is None else self.direction.tolist(),
            "alpha": self.alpha,
            "scale": self.scale,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchBasis:
        direction = data.get("direction")
        return cls(
            None if direction is None else np.asarray(direction, dtype=np.float64),
            float(data["alpha"]),
            float(data["scale"]),
        )


CALIBRATION_TASKS = 32  # training tasks whose opening transcripts fit the balanced basis
