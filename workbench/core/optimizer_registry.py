"""The optimizers a run can name, and what each can do: one table.

Adding an optimizer is one class (``ask``/``tell``/``center``/``sigma``/``dumps``/``loads``
and a ``from_config`` classmethod, as in ``optimizers/baselines.py``) and one row here.
The config's choices and checks (``config.py``: ``optimizer.name``, the smallest
``popsize``, which optimizers may use ``exploring_starts`` and ``svf``) and the builder
(``optimizers/make.py``) read this table; nothing else names optimizers.

The table sits below the config in the layers (the config reads it), so it names each
class by its import path: the class, and numpy or pycma with it, is imported only when a
run builds its optimizer (``OptimizerEntry.load``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class OptimizerEntry:
    """One optimizer: ``name`` (the config's ``optimizer.name``), ``cls`` (``module:Class``),
    and its traits.

    - ``ranks_candidates``: it evaluates a population of different candidates and ranks
      them by fitness (so common random numbers help, and it can search SVF offsets); the
      gradient baselines instead follow their own policy's gradient.
    - ``min_population``: the smallest ``optimizer.popsize`` it accepts (0 = its default).
    - ``exploring_starts``: widened openings (``optimizer.exploring_starts``) apply; they
      would bias a policy-gradient learner.
    - ``summary``: one line for a person choosing.
    """

    name: str
    cls: str
    ranks_candidates: bool
    min_population: int
    exploring_starts: bool
    summary: str

    def load(self) -> type[Any]:
        """The optimizer's class (imported now): it has ``from_config(OptimizerBuild)``."""
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


_ENTRIES = (
    OptimizerEntry(
        name="sep-cma-es",
        cls="workbench.core.optimizers.sep_cma_es:SepCMAES",
        ranks_candidates=True,
        # pycma's sep-CMA-ES fails with 2 candidates ("unused injected direction") on heads
        # of a few hundred parameters or more; 3 is the smallest population it runs with
        # (the others run with 2, as before, so runs stored with 2 still load)
        min_population=3,
        exploring_starts=True,
        summary="separable CMA-ES (the paper's optimizer, the default)",
    ),
    OptimizerEntry(
        name="random-search",
        cls="workbench.core.optimizers.baselines:RandomSearch",
        ranks_candidates=True,
        min_population=2,
        exploring_starts=True,
        summary="the best of random candidates around the current head",
    ),
    OptimizerEntry(
        name="reinforce",
        cls="workbench.core.optimizers.baselines:Reinforce",
        ranks_candidates=False,
        min_population=2,
        exploring_starts=False,
        summary="REINFORCE policy gradient on the head (a baseline)",
    ),
    OptimizerEntry(
        name="imitation",
        cls="workbench.core.optimizers.baselines:Imitation",
        ranks_candidates=False,
        min_population=2,
        exploring_starts=False,
        summary="imitation of the best worker per task (a baseline)",
    ),
)

OPTIMIZER_REGISTRY: dict[str, OptimizerEntry] = {entry.name: entry for entry in _ENTRIES}


def optimizer_entry(name: str) -> OptimizerEntry:
    """The entry of optimizer ``name``; raises ``ValueError`` naming the known ones."""
    try:
        return OPTIMIZER_REGISTRY[name]
    except KeyError:
        known = ", ".join(OPTIMIZER_REGISTRY)
        raise ValueError(f"unknown optimizer '{name}': choose one of {known}") from None
