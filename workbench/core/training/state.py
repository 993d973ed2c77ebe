"""A training run's state between generations (what its checkpoints hold), its task
splits, and which budget ends it: the trainer's pure parts (``trainer.py`` runs the loop;
``plan.py`` holds its settings and the rules that read only them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from workbench.core.config import BudgetSection, TasksSection
from workbench.core.errors import InvalidInput
from workbench.core.records import RunStopReason, Spend
from workbench.core.tasks.model import Suite, Task
from workbench.core.training.basis import SearchBasis
from workbench.core.training.checkpoint import Checkpoint, TableChoice


@dataclass(kw_only=True)
class TrainState:
    generation: int = -1  # last completed generation
    spend: Spend = field(default_factory=Spend)
    best_validation: float | None = None
    best_vector: np.ndarray | None = None
    best_validation_generation: int | None = None
    best_choices: tuple[TableChoice, ...] | None = None  # the best validation's, on a table
    last_validation: float | None = None
    basis: SearchBasis | None = None  # fitted when the run starts, kept in its checkpoints

    def checkpoint(self, optimizer: bytes, center: np.ndarray, n_params: int, n_svf: int) -> bytes:
        """This state as a checkpoint, with the optimizer's own state (``dumps``) and the
        search's mean in head space (``center``)."""
        return Checkpoint(
            generation=self.generation,
            optimizer=optimizer,
            spend=self.spend,
            best_validation=self.best_validation,
            best_vector=self.best_vector,
            best_validation_generation=self.best_validation_generation,
            last_validation=self.last_validation,
            center=center,
            basis=self.basis or SearchBasis(),
            n_params=n_params,
            n_svf=n_svf,
            best_choices=self.best_choices,
        ).dumps()

    @classmethod
    def restored(cls, checkpoint: Checkpoint) -> TrainState:
        """The state a checkpoint holds."""
        return cls(
            generation=checkpoint.generation,
            spend=Spend(**asdict(checkpoint.spend)),
            best_validation=checkpoint.best_validation,
            best_vector=checkpoint.best_vector,
            best_validation_generation=checkpoint.best_validation_generation,
            best_choices=checkpoint.best_choices,
            last_validation=checkpoint.last_validation,
            basis=checkpoint.basis,
        )


def task_splits(tasks: TasksSection, suite: Suite) -> dict[str, tuple[Task, ...]]:
    """A run's train/validation/test tasks (its ``[tasks]`` settings): the suite's seeded
    splits, cut to the sizes."""
    splits = suite.splits(seed=tasks.split_seed)
    out = {}
    for name in ("train", "validation", "test"):
        size = getattr(tasks, name)
        out[name] = splits[name][:size] if size else splits[name]
    if not out["train"]:
        raise InvalidInput(
            f"suite '{suite.name}' has no training tasks: give it a train split or more tasks"
        )
    if not out["validation"]:
        raise InvalidInput(
            f"suite '{suite.name}' has no validation tasks: give it a validation split or more tasks"
        )
    return out


def lost_spend(paid: Mapping[str, Any], counted: Spend) -> Spend:
    """What a run's record says it ``paid`` (its spend totals) beyond what its last
    checkpoint ``counted``: the episodes of a generation in flight when its process was
    killed, which stored nothing."""
    return Spend(
        episodes=max(0, int(paid.get("episodes", 0)) - counted.episodes),
        calls=max(0, int(paid.get("calls", 0)) - counted.calls),
        dollars=max(0.0, float(paid.get("dollars", 0.0)) - counted.dollars),
        seconds=max(0.0, float(paid.get("minutes", 0.0)) * 60 - counted.seconds),
    )


def budget_reason(
    budget: BudgetSection, spend: Spend, done: int, next_episodes: int, *, stopped: bool
) -> RunStopReason | None:
    """Which budget ends a run that has ``done`` generations and ``spend``, or None;
    ``next_episodes``: the next generation's training episodes, counted against
    ``budget.episodes`` before it starts (0 after a generation); ``stopped``: its user
    stopped it."""
    b, s = budget, spend
    if done >= b.generations:
        return RunStopReason.GENERATIONS
    if b.episodes and s.episodes + next_episodes > b.episodes:
        return RunStopReason.EPISODES
    if b.calls and s.calls >= b.calls:
        return RunStopReason.CALLS
    if b.dollars and s.dollars >= b.dollars:
        return RunStopReason.DOLLARS
    if b.minutes and s.seconds >= b.minutes * 60:
        return RunStopReason.MINUTES
    if stopped:
        return RunStopReason.STOPPED
    return None


__all__ = [
    "TrainState",
    "budget_reason",
    "lost_spend",
    "task_splits",
]
