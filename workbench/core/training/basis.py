"""The search basis: the coordinates the optimizer searches head weights in."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.optimizers.registry import optimizer_entry
from workbench.core.records import Role

MAX_GAIN = 100.0  # no direction is scaled up more than this against the strongest


@dataclass(frozen=True, kw_only=True)
class SearchBasis:
    """The coordinates the optimizer searches in, mapped to head weights by ``W = V M``.

    A backbone's features are strongly anisotropic: on SmolLM2-135M 98% of a unit-RMS
    feature's norm lies along one direction ``u`` shared by every input, so a head drawn
    around zero changes its choice between inputs ~4x less than its input-independent
    preference, and separable CMA-ES, which adapts axis-aligned scales only, cannot learn
    that rotation. ``M`` is symmetric: ``M = (sum_i g_i c_i c_i^T + alpha (I - C^T C)) /
    scale`` for orthonormal ``components`` ``c_i`` (the rows of ``C``) with ``gains``
    ``g_i``; ``scale`` brings the transformed feature back to unit RMS.

    - ``balanced`` (``fit``): one component, ``u`` (the mean feature's direction), gain 1;
      ``alpha`` = mean |f . u| / mean |f - (f . u) u| scales the rest up to the weight of
      ``u``. ``u`` is kept, not removed: it acts as the bias-free head's implicit bias (the
      turn-0 role prior).
    - ``whitened`` (``fit_whitened``): the top ``rank`` right singular vectors of the
      (uncentered) calibration features, each scaled to the same second moment (gain
      ``sqrt(lambda_1 / lambda_i)``, at most ``MAX_GAIN``); the rest of the space moves
      like the last of them. Every direction the calibration features vary along, not
      only the shared one, then moves a logit as much per unit step; fitted on the
      transcripts of every turn, it evens out what a later turn adds (a Thinker's
      guidance) against what the opening already says.
    - ``subspace`` (``fit_whitened(..., rest=False)``): the whitened basis with the rest of
      the space removed (``alpha`` 0): the head reads the feature only through the top
      ``rank`` directions, so the search moves ``(L + 3) x rank`` effective coordinates
      instead of ``(L + 3) x d``. In the whitened basis the rest, each direction weaker
      than the last component but ``d - rank`` of them, carries most of a perturbed
      head's logit change (SmolLM2, the team's openings, rank 8: 1.4x the norm of the
      top 8 together). Measured, it is no better: on the team at two turns the top 8
      directions hold the oracle's plan (a linear fit on them separates it on every
      training task), but the search without the rest settles sooner in the one-turn
      plan (``bench_multiturn.py --basis subspace``: 0.66 and 0.71 against the whitened
      basis's 0.76 and 0.72 at 128 x 16 x 100, two seeds); a bench option, not a
      config one.

    - ``projection`` (``fit_projection``): a smaller search. The head reads the feature
      through ``rank`` + 1 fixed directions only (``projection``, rows): the leading
      principal directions of the training tasks' standardised features, each scaled to
      unit variance, and the mean feature's direction scaled to about 1 (the bias-free
      head's bias). A search vector holds ``(L + 3) x (rank + 1)`` weights ``A`` and the
      head is ``W = A P``. On a recorded pool, where every query's feature is at hand, it
      is what separates the workers best per evaluation (docs/guides/recorded-pools.md).

    Every vector maps to an ordinary head on the unit-RMS feature, so stored results,
    exports and evaluation never see the basis. ``identity`` is the paper's
    parametrisation.
    """

    components: np.ndarray | None = None  # (k, d) orthonormal rows; None: the identity
    gains: np.ndarray | None = None  # (k,)
    alpha: float = 1.0  # the gain of the rest of the space
    scale: float = 1.0
    projection: np.ndarray | None = None  # (rank + 1, d): the projection basis's rows

    @staticmethod
    def fitted(search_basis: str, optimizer: str) -> bool:
        """Whether a new run fits its search basis on a sample of its tasks before its
        first generation (a forward of the backbone over them): not with the identity
        basis, nor for an optimizer that draws head weights itself (its registry entry's
        ``searches_basis`` is false: random search, the paper's U[-0.5, 0.5])."""
        return search_basis != "identity" and optimizer_entry(optimizer).searches_basis

    @property
    def direction(self) -> np.ndarray | None:
        """The first component (the balanced basis's shared direction ``u``)."""
        return None if self.components is None else self.components[0]

    @property
    def kind(self) -> str:
        if self.projection is not None:
            return "projection"
        if self.components is None:
            return "identity"
        if self.alpha == 0:
            return "subspace"
        return "balanced" if len(self.components) == 1 else "whitened"

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
                np.abs(along).mean() / max(np.linalg.norm(rest, axis=1).mean(), 1e-12),
                1.0,
                MAX_GAIN,
            )
        )
        return cls(components=u[None, :], gains=np.ones(1), alpha=alpha)._rescaled(features)

    @classmethod
    def fit_whitened(cls, features: np.ndarray, rank: int, *, rest: bool = True) -> SearchBasis:
        """The whitened basis of calibration ``features`` (rows: unit-RMS features): their
        top ``rank`` directions (a run's ``optimizer.search_rank``) by second moment,
        evened out; without ``rest`` the subspace basis (the rest of the space removed)."""
        features = np.asarray(features, dtype=np.float64)
        if len(features) < 2 or not np.any(features):
            return cls()
        _, s, vt = np.linalg.svd(features, full_matrices=False)
        k = int(min(rank, int(np.sum(s > s[0] * 1e-6)), features.shape[1] - 1))
        if k < 2:
            return cls.fit(features)
        gains = np.minimum(s[0] / s[:k], MAX_GAIN)
        if not rest:
            return cls(components=vt[:k].copy(), gains=gains, alpha=0.0)._rescaled(features)
        others = float(min(s[0] / s[k], MAX_GAIN)) if k < len(s) and s[k] > 0 else gains[-1]
        alpha = float(min(others, gains[-1]))
        return cls(components=vt[:k].copy(), gains=gains, alpha=alpha)._rescaled(features)

    @classmethod
    def fit_projection(cls, features: np.ndarray, rank: int) -> SearchBasis:
        """The projection basis of the training tasks' ``features`` (rows: unit-RMS
        features): their ``rank`` leading principal directions after standardising each
        dimension, scaled so each coordinate has unit variance, and the mean direction
        scaled so its coordinate is about 1."""
        features = np.asarray(features, dtype=np.float64)
        n, d = features.shape
        mean = features.mean(axis=0)
        spread = features.std(axis=0)
        spread = np.where(spread > 0, spread, 1.0)
        z = (features - mean) / spread
        _, s, vt = np.linalg.svd(z, full_matrices=False)
        # fewer tasks (or directions) than the rank: the missing rows stay 0, so a search
        # vector has the same size whatever the sample
        k = int(min(rank, int(np.sum(s > s[0] * 1e-6)) if len(s) else 0, n - 1, d - 1))
        rows = np.zeros((rank, d))
        rows[:k] = vt[:k] / spread / (s[:k, None] / np.sqrt(n))  # unit-variance coordinates
        norm = float(np.linalg.norm(mean))
        u = mean / norm if norm > 0 else np.full(d, 1 / np.sqrt(d))
        along = float(np.mean(features @ u))
        bias = u / (along if abs(along) > 1e-12 else 1.0)
        return cls(projection=np.vstack([rows, bias[None, :]]))

    def search_size(self, shape: tuple[int, int]) -> int:
        """How many weights a search vector holds for a head of ``shape``."""
        if self.projection is not None:
            return shape[0] * len(self.projection)
        return shape[0] * shape[1]

    def _rescaled(self, features: np.ndarray) -> SearchBasis:
        """This basis with ``scale`` set so the mapped calibration features have unit RMS."""
        mapped = replace_scale(self, 1.0).features(features)
        scale = float(np.sqrt((mapped**2).mean(axis=1)).mean())
        return replace_scale(self, scale if scale > 0 else 1.0)

    def features(self, features: np.ndarray) -> np.ndarray:
        """Features as the search coordinates see them: ``f M`` (M is symmetric), or
        ``f P^T`` for the projection basis."""
        if self.projection is not None:
            return features @ self.projection.T
        if self.components is None:
            return features
        assert self.gains is not None
        along = features @ self.components.T  # (..., k)
        return (
            self.alpha * features + (along * (self.gains - self.alpha)) @ self.components
        ) / self.scale

    def head(self, vector: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        """Head weights (flat) of a search vector's head part (flat): ``V M`` (``A P``)."""
        if self.projection is not None:
            return (np.asarray(vector).reshape(shape[0], -1) @ self.projection).reshape(-1)
        if self.components is None:
            return vector
        return self.features(np.asarray(vector).reshape(shape)).reshape(-1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "components": None if self.components is None else self.components.tolist(),
            "gains": None if self.gains is None else self.gains.tolist(),
            "alpha": self.alpha,
            "scale": self.scale,
            "projection": None if self.projection is None else self.projection.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchBasis:
        if "direction" in data:  # a checkpoint from before the whitened basis: balanced
            direction = data["direction"]
            if direction is None:
                return cls(alpha=float(data["alpha"]), scale=float(data["scale"]))
            return cls(
                components=np.asarray(direction, dtype=np.float64)[None, :],
                gains=np.ones(1),
                alpha=float(data["alpha"]),
                scale=float(data["scale"]),
            )
        components = data.get("components")
        projection = data.get("projection")
        return cls(
            components=None if components is None else np.asarray(components, dtype=np.float64),
            gains=None
            if data.get("gains") is None
            else np.asarray(data["gains"], dtype=np.float64),
            alpha=float(data["alpha"]),
            scale=float(data["scale"]),
            projection=None if projection is None else np.asarray(projection, dtype=np.float64),
        )


def replace_scale(basis: SearchBasis, scale: float) -> SearchBasis:
    return dataclasses.replace(basis, scale=scale)


CALIBRATION_TASKS = 32  # training tasks whose opening transcripts fit the search basis
# with two or more turns the whitened basis is also fitted on the transcripts after one
# turn of each worker in each of these roles on each calibration task
CALIBRATION_ROLES = (Role.THINKER, Role.WORKER)
