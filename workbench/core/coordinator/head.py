"""The coordinator's head: one bias-free linear map from a feature to worker and role
logits, and the policy that turns logits into an Action (sample or argmax)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.core.records import ROLES

N_ROLES = len(ROLES)


@dataclass(frozen=True)
class HeadConfig:
    """Shape of the head: ``n_workers`` (L) rows for workers, 3 for roles, ``hidden_size`` (d) columns."""

    n_workers: int
    hidden_size: int

    def __post_init__(self) -> None:
        if self.n_workers < 1:
            raise ValueError("a head needs at least one worker in the pool")
        if self.hidden_size < 1:
            raise ValueError("hidden_size must be positive")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_workers + N_ROLES, self.hidden_size)

    @property
    def n_params(self) -> int:
        return self.shape[0] * self.shape[1]


@dataclass(frozen=True)
class Action:
    """One decision: the chosen worker and role indices with both full distributions."""

    worker: int
    role: int
    worker_probs: tuple[float, ...]
    role_probs: tuple[float, ...]


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in float64 (a head's worker or role distribution)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def apply_heads(weights: np.ndarray, feature: np.ndarray) -> np.ndarray:
    """Logits of many heads on one feature in one product: ``(k, L+3, d) @ (d,) -> (k, L+3)``."""
    return np.einsum("kod,d->ko", weights, feature, optimize=True)


def act(logits: np.ndarray, n_workers: int, rng: np.random.Generator | None = None) -> Action:
    """Turn one head's logits into an Action: sample with ``rng``, argmax without."""
    return choose(softmax(logits[:n_workers]), softmax(logits[n_workers:]), rng)


def choose(
    worker_p: np.ndarray, role_p: np.ndarray, rng: np.random.Generator | None = None
) -> Action:
    """The Action of two distributions: sampled with ``rng`` (one draw each, by inverse
    CDF, so equal distributions and equal generators give equal choices), argmax without."""
    if rng is None:
        w, r = int(np.argmax(worker_p)), int(np.argmax(role_p))
    else:
        w, r = int(rng.choice(len(worker_p), p=worker_p)), int(rng.choice(N_ROLES, p=role_p))
    return Action(w, r, tuple(float(p) for p in worker_p), tuple(float(p) for p in role_p))


def explore(action: Action, share: float, rng: np.random.Generator) -> Action:
    """``action``'s two distributions mixed with the uniform ones (``share`` of uniform)
    and sampled again with ``rng``: the exploring start of a training episode
    (``policies.ExploringStart``). The Action carries the mixed distributions, the ones
    its choice was drawn from."""
    worker_p, role_p = np.asarray(action.worker_probs), np.asarray(action.role_probs)
    return choose(
        (1 - share) * worker_p + share / len(worker_p),
        (1 - share) * role_p + share / len(role_p),
        rng,
    )


def near_tie(weights: np.ndarray, feature: np.ndarray, n_workers: int, error: float) -> bool:
    """Whether an argmax decision of head ``weights`` on ``feature`` could change if the
    feature moved by an error whose projection on any unit direction is at most ``error``:
    in either softmax, some logit within ``error * ||w_best - w_j||`` of the best one (the
    most that error moves the difference of the two logits)."""
    logits = weights @ feature
    for block in (slice(0, n_workers), slice(n_workers, None)):
        rows, values = weights[block], logits[block]
        best = int(np.argmax(values))
        gaps = values[best] - values
        gaps[best] = np.inf
        if np.any(gaps <= error * np.linalg.norm(rows - rows[best], axis=1)):
            return True
    return False


class Head:
    """The bias-free linear head, with its parameters as one flat vector for the optimizer."""

    def __init__(self, config: HeadConfig, weights: np.ndarray | None = None):
        self.config = config
        self.weights = np.zeros(config.shape, dtype=np.float64)
        if weights is not None:
            self.set_flat(np.asarray(weights).reshape(-1))

    @classmethod
    def random(cls, config: HeadConfig, seed: int, scale: float = 0.03) -> Head:
        """An untrained head drawn N(0, scale^2) from ``seed``: what CMA-ES starts around."""
        rng = np.random.default_rng(seed)
        return cls(config, rng.normal(0.0, scale, size=config.shape))

    @property
    def n_params(self) -> int:
        return self.config.n_params

    def get_flat(self) -> np.ndarray:
        return self.weights.reshape(-1).copy()

    def set_flat(self, vector: np.ndarray) -> None:
        vector = np.asarray(vector, dtype=np.float64)
        if vector.ndim != 1 or vector.shape[0] != self.n_params:
            L, d = self.config.n_workers, self.config.hidden_size
            raise ValueError(
                f"head vector has shape {vector.shape}, expected ({self.n_params},) = "
                f"({L} workers + {N_ROLES} roles) x {d} hidden size; was it trained "
                "for another pool or backbone?"
            )
        if not np.all(np.isfinite(vector)):
            raise ValueError("head vector contains NaN or infinity")
        self.weights = vector.reshape(self.config.shape).copy()

    def decide(self, feature: np.ndarray, rng: np.random.Generator | None = None) -> Action:
        return act(self.weights @ feature, self.config.n_workers, rng)

    def near_tie(self, feature: np.ndarray, error: float) -> bool:
        """``near_tie`` of this head's argmax decision on ``feature``."""
        return near_tie(self.weights, feature, self.config.n_workers, error)
