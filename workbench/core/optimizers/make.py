"""The optimizer a run config names."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.core.config import RunConfig
from workbench.core.coordinator import HeadConfig
from workbench.core.optimizers.base import Optimizer, default_popsize
from workbench.core.optimizers.baselines import Imitation, RandomSearch, Reinforce
from workbench.core.optimizers.sep_cma_es import SepCMAES, head_sigma_factor
from workbench.core.tasks.model import Task


def make_optimizer(
    config: RunConfig,
    n: int,
    head: HeadConfig,
    features: Callable[[list[str]], np.ndarray],
    tasks: dict[str, Task],
) -> Optimizer:
    """The optimizer a config names, for ``n`` parameters (``features`` and ``tasks`` let
    the gradient baselines recompute the features of recorded turns)."""
    o = config.optimizer
    if o.name == "sep-cma-es":
        stds = np.ones(n)
        # [SVF offsets || head]: SVF offsets are relative and keep sigma0
        stds[n - head.n_params :] = head_sigma_factor(o.sigma0_scale, head.hidden_size)
        return SepCMAES(
            n,
            sigma0=o.sigma0,
            popsize=o.popsize,
            rollouts=o.rollouts,
            seed=config.run.seed,
            stds=stds,
        )
    popsize = o.popsize or default_popsize(n)
    if o.name == "random-search":
        return RandomSearch(n, popsize=popsize, rollouts=o.rollouts, seed=config.run.seed)
    if o.name == "reinforce":
        return Reinforce(
            head,
            features,
            popsize=popsize,
            rollouts=o.rollouts,
            lr=o.learning_rate,
            tasks=tasks or {},
        )
    if o.name == "imitation":
        return Imitation(
            head,
            features,
            popsize=popsize,
            rollouts=o.rollouts,
            lr=o.learning_rate,
            tasks=tasks or {},
        )
    raise ValueError(f"unknown optimizer '{o.name}'")
