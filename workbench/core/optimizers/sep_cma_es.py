"""The default optimizer: separable CMA-ES (pycma with a diagonal covariance); head weights
explored at sigma0 (the paper) or, as a named option, at sigma0 scaled to the backbone's
width (``head_step_scale``)."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import numpy as np

from workbench.core.optimizers.base import OptimizerBuild, Proposal

REFERENCE_WIDTH = 1024  # the paper's backbone width (Qwen3-0.6B), for which sigma0 is given


def head_step_scale(hidden_size: int) -> float:
    """The factor on sigma0 for head weights of a ``hidden_size``-wide unit-RMS feature.

    A head perturbation of per-weight scale s changes a logit by about ``s * ||f||`` =
    ``s * sqrt(d)`` on a unit-RMS feature, so one sigma0 would explore less on a narrower
    backbone (0.72 logits on SmolLM2's d = 576 vs 0.96 at the paper's d = 1024). Scaling by
    ``sqrt(1024 / d)`` gives every width the paper's exploration in logit space.
    """
    return float(np.sqrt(REFERENCE_WIDTH / hidden_size))


def head_sigma_factor(sigma0_scale: str, hidden_size: int) -> float:
    """The factor on sigma0 for head weights under ``optimizer.sigma0_scale``: 1 for
    ``literal`` (the paper), ``head_step_scale`` for ``width``."""
    return head_step_scale(hidden_size) if sigma0_scale == "width" else 1.0


class SepCMAES:
    """Separable CMA-ES (pycma with a diagonal covariance). ``stds`` (optional, one per
    coordinate) multiplies sigma0 coordinate-wise: the head's width scale, 1 for SVF."""

    @classmethod
    def from_config(cls, build: OptimizerBuild) -> SepCMAES:
        """The optimizer ``build.settings`` ask for; ``stds``: [SVF offsets || head], the
        SVF offsets relative (sigma0), the head's weights at ``optimizer.sigma0_scale``."""
        o, n = build.settings, build.n
        stds = np.ones(n)
        stds[n - build.head.n_params :] = head_sigma_factor(o.sigma0_scale, build.head.hidden_size)
        return cls(
            n,
            sigma0=o.sigma0,
            popsize=o.popsize,
            rollouts=o.rollouts,
            seed=build.seed,
            stds=stds,
        )

    def __init__(
        self,
        n: int,
        *,
        sigma0: float,
        popsize: int,
        rollouts: int,
        seed: int,
        stds: np.ndarray | None = None,
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pycma warns when matplotlib is absent
            import cma
        # the strategy samples from its own generator (seeded as pycma seeds the global
        # one), pickled with it: numpy's global generator, which pycma uses by default, is
        # shared by the process, and a pickled bound ``np.random.randn`` unpickles as a
        # detached copy of it, so a restored strategy would drift from an uninterrupted one
        # after a resume
        self._random = np.random.RandomState(seed + 1)
        options: dict[str, Any] = {
            "CMA_diagonal": True,
            "randn": self._random.randn,
            "verbose": -9,
            "verb_log": 0,
            "verb_disp": 0,
        }
        if popsize:
            options["popsize"] = popsize
        if stds is not None:
            options["CMA_stds"] = np.asarray(stds, dtype=np.float64)
        self._es = cma.CMAEvolutionStrategy(np.zeros(n), sigma0, options)
        self.popsize = int(self._es.popsize)
        self.rollouts = rollouts

    def ask(self) -> list[Proposal]:
        return [Proposal(np.asarray(x)) for x in self._es.ask()]

    def tell(self, proposals, fitness, episodes) -> None:
        # pycma minimises: the cost of a candidate is its negated fitness
        self._es.tell([p.vector for p in proposals], [-f for f in fitness])

    def center(self) -> np.ndarray:
        return np.asarray(self._es.mean).copy()

    @property
    def sigma(self) -> float:
        return float(self._es.sigma)

    def dumps(self) -> bytes:
        # the strategy pickles with its generator: everything random is in this blob
        return pickle.dumps({"es": self._es.pickle_dumps()})

    def loads(self, state: bytes) -> None:
        data = pickle.loads(state)
        self._es = pickle.loads(data["es"])
