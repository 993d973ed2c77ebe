"""Progress as data: the steps of a long job that no count measures (loading a model,
reading the tasks' features), told to its caller as they begin.

Counted work has its own typed events where it happens (a training run's
``training.events``, an evaluation's ``EvaluationProgress``, the headroom check's
``HeadroomProgress``); a ``Stage`` is what comes before or between them. Core never
prints: the CLI draws stages as a spinner with the time spent (workbench/cli/progress.py),
and a caller that wants none passes no listener.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """A step of a job that has begun, in plain words for a person waiting on it
    (``"loading the offline model"``)."""

    text: str


StageListener = Callable[[Stage], None]


def tell(listener: StageListener | None, text: str) -> None:
    """Tell ``listener`` (if any) that the step ``text`` begins."""
    if listener is not None:
        listener(Stage(text))
