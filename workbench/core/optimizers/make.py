"""The optimizer a run's ``[optimizer]`` keys name: its class from the optimizers' table
(``registry.py``), built by the class's own ``from_config``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.core.coordinator import HeadConfig
from workbench.core.optimizers.base import Optimizer, OptimizerBuild, OptimizerSettings
from workbench.core.optimizers.registry import optimizer_entry
from workbench.core.tasks.model import Task


def make_optimizer(
    settings: OptimizerSettings,
    seed: int,
    n: int,
    head: HeadConfig,
    features: Callable[[list[str]], np.ndarray],
    tasks: dict[str, Task],
) -> Optimizer:
    """The optimizer ``settings`` name, seeded with ``seed``, for ``n`` parameters
    (``features`` and ``tasks`` let the gradient baselines recompute the features of
    recorded turns). Raises ``ValueError`` for a name the table does not hold."""
    build = OptimizerBuild(
        settings=settings, seed=seed, n=n, head=head, features=features, tasks=tasks
    )
    optimizer: Optimizer = optimizer_entry(settings.name).load().from_config(build)
    return optimizer
