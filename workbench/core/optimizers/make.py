"""The optimizer a run config names: its class from the optimizers' table
(``workbench/core/optimizer_registry.py``), built by the class's own ``from_config``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.core.config import RunConfig
from workbench.core.coordinator import HeadConfig
from workbench.core.optimizer_registry import optimizer_entry
from workbench.core.optimizers.base import Optimizer, OptimizerBuild
from workbench.core.tasks.model import Task


def make_optimizer(
    config: RunConfig,
    n: int,
    head: HeadConfig,
    features: Callable[[list[str]], np.ndarray],
    tasks: dict[str, Task],
) -> Optimizer:
    """The optimizer a config names, for ``n`` parameters (``features`` and ``tasks`` let
    the gradient baselines recompute the features of recorded turns). Raises
    ``ValueError`` for a name the table does not hold."""
    build = OptimizerBuild(config=config, n=n, head=head, features=features, tasks=tasks)
    optimizer: Optimizer = optimizer_entry(config.optimizer.name).load().from_config(build)
    return optimizer
