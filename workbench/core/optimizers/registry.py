"""The optimizers a run can name, and what each needs and does: one table.

Adding an optimizer is one class (``ask``/``tell``/``center``/``sigma``/``dumps``/``loads``
and a ``from_config`` classmethod, as in ``baselines.py``) and one row here. The config's
choices and checks (``config.py``: ``optimizer.name``, the smallest ``popsize``, which
optimizers may use ``exploring_starts`` and ``svf``), the builder (``make.py``) and the
trainer read the row's traits; nothing else names optimizers.

The table sits below the config in the layers (the config reads it) while the optimizers'
classes sit above it, so it imports nothing of the project and names each class by its
import path: the class, and numpy or pycma with it, is imported only when a run builds
its optimizer (``OptimizerEntry.load``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class OptimizerEntry:
    """One optimizer: ``name`` (the config's ``optimizer.name``), ``cls`` (``module:Class``),
    a one-line ``summary`` for a person choosing, and what it needs and does:

    - ``ranks_candidates``: it ranks a population of different candidates by fitness, so
      they get the same random numbers per task (``training.executors.episode_seeds``)
      and it can search SVF offsets; otherwise it follows its own policy's gradient
      (REINFORCE, imitation), whose repeated plays must differ.
    - ``min_population``: the smallest ``optimizer.popsize`` it accepts (0 = its default).
    - ``exploring_starts``: widened openings (``optimizer.exploring_starts``) apply; they
      would bias a policy-gradient learner.
    - ``searches_basis``: its candidates are drawn in the run's search basis
      (``optimizer.search_basis``); random search draws head weights themselves.
    - ``scales_head_sigma``: it explores head weights at sigma0 times
      ``optimizer.sigma0_scale``'s factor (the run records the factor).

    Every optimizer is seeded by the run's seed (``OptimizerBuild.seed``).
    """

    name: str
    cls: str
    summary: str
    ranks_candidates: bool
    min_population: int
    exploring_starts: bool
    searches_basis: bool
    scales_head_sigma: bool

    def load(self) -> type[Any]:
        """The optimizer's class (imported now): it has ``from_config(OptimizerBuild)``."""
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


_ENTRIES = (
    OptimizerEntry(
        name="sep-cma-es",
        cls="workbench.core.optimizers.sep_cma_es:SepCMAES",
        summary="separable CMA-ES (the paper's optimizer, the default)",
        ranks_candidates=True,
        # pycma's sep-CMA-ES fails with 2 candidates ("unused injected direction") on heads
        # of a few hundred parameters or more; 3 is the smallest population it runs with
        min_population=3,
        exploring_starts=True,
        searches_basis=True,
        scales_head_sigma=True,
    ),
    OptimizerEntry(
        name="random-search",
        cls="workbench.core.optimizers.baselines:RandomSearch",
        summary="the best of random candidates around the current head",
        ranks_candidates=True,
        min_population=2,
        exploring_starts=True,
        # the paper's random search draws head weights from U[-0.5, 0.5] themselves
        searches_basis=False,
        scales_head_sigma=False,
    ),
    OptimizerEntry(
        name="reinforce",
        cls="workbench.core.optimizers.baselines:Reinforce",
        summary="REINFORCE policy gradient on the head (a baseline)",
        ranks_candidates=False,
        min_population=2,
        exploring_starts=False,
        searches_basis=True,
        scales_head_sigma=False,
    ),
    OptimizerEntry(
        name="imitation",
        cls="workbench.core.optimizers.baselines:Imitation",
        summary="imitation of the best worker per task (a baseline)",
        ranks_candidates=False,
        min_population=2,
        exploring_starts=False,
        searches_basis=True,
        scales_head_sigma=False,
    ),
)

OPTIMIZER_REGISTRY: dict[str, OptimizerEntry] = {entry.name: entry for entry in _ENTRIES}
OPTIMIZERS: tuple[str, ...] = tuple(OPTIMIZER_REGISTRY)


def optimizer_entry(name: str) -> OptimizerEntry:
    """The entry of optimizer ``name``; raises ``ValueError`` naming the known ones."""
    try:
        return OPTIMIZER_REGISTRY[name]
    except KeyError:
        known = ", ".join(OPTIMIZER_REGISTRY)
        raise ValueError(f"unknown optimizer '{name}': choose one of {known}") from None


def optimizers_where(trait: Callable[[OptimizerEntry], bool]) -> tuple[str, ...]:
    """The names of the optimizers whose entry has ``trait``, in the table's order:
    ``optimizers_where(lambda e: e.ranks_candidates)``."""
    return tuple(entry.name for entry in _ENTRIES if trait(entry))
