"""What the training loop needs from an optimizer: proposals in, fitness out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from workbench.core.records import Episode

if TYPE_CHECKING:
    from workbench.core.coordinator import HeadConfig
    from workbench.core.tasks.model import Task

Features = Callable[[list[str]], np.ndarray]  # transcripts -> features in the search basis


class OptimizerSettings(Protocol):
    """The ``[optimizer]`` keys an optimizer reads (the config's ``OptimizerSection`` has
    them, among others): the optimizers sit below the config, which reads their table
    (``registry.py``), and know its section by this shape alone."""

    @property
    def name(self) -> str: ...
    @property
    def popsize(self) -> int: ...
    @property
    def rollouts(self) -> int: ...
    @property
    def sigma0(self) -> float: ...
    @property
    def sigma0_scale(self) -> str: ...
    @property
    def learning_rate(self) -> float: ...


@dataclass(frozen=True)
class Proposal:
    """One candidate of a generation: a parameter vector, or a fixed single-worker
    policy (worker index, one Worker turn) for optimizers that collect labels."""

    vector: np.ndarray | None = None
    fixed_worker: int | None = None


class Optimizer(Protocol):
    """What the training loop needs from an optimizer."""

    popsize: int  # proposals per generation
    rollouts: int  # tasks per proposal (the shared minibatch)

    def ask(self) -> list[Proposal]: ...

    def tell(
        self,
        proposals: Sequence[Proposal],
        fitness: Sequence[float],
        episodes: Sequence[Sequence[Episode]],
    ) -> None: ...

    def center(self) -> np.ndarray:
        """The vector that represents the optimizer's current belief (validated)."""

    @property
    def sigma(self) -> float: ...

    def dumps(self) -> bytes: ...

    def loads(self, state: bytes) -> None: ...


def default_popsize(n: int) -> int:
    """pycma's default population for ``n`` parameters: 4 + floor(3 ln n)."""
    return 4 + int(3 * np.log(n))


@dataclass(frozen=True, kw_only=True)
class OptimizerBuild:
    """What every optimizer class's ``from_config`` gets (``make.make_optimizer``): the
    run's ``[optimizer]`` keys and the seed the optimizer draws from, ``n`` parameters, the
    head's shape, and for the gradient baselines the features of recorded turns
    (``features``) and the tasks they were played on."""

    settings: OptimizerSettings
    seed: int
    n: int
    head: HeadConfig
    features: Features
    tasks: dict[str, Task]

    @property
    def popsize(self) -> int:
        """``optimizer.popsize``, or pycma's default for ``n`` when it is 0."""
        return self.settings.popsize or default_popsize(self.n)
