"""The Evaluate page's evaluation in the background: ``EvaluationThread`` runs core's
``evaluate_run`` in a QThread with a ``StopToken`` (Cancel), its progress and outcome sent
to the page as signals carrying core's dataclasses."""

from __future__ import annotations

import logging
from typing import Any

from workbench.core.evaluate import EvaluationStopped
from workbench.core.jobs.evaluate import EvaluationSource, evaluate_run
from workbench.core.training.events import StopToken
from workbench.core.workspace import Workspace
from workbench.gui import background
from workbench.gui.qt import QThread, Signal

log = logging.getLogger(__name__)


class EvaluationThread(QThread):
    """Runs ``evaluate_run`` in the background with a ``StopToken``; core loads the backbone
    here (unless one is given), never in the GUI thread. Signals carry core's dataclasses."""

    progress = Signal(object)  # EvaluationProgress
    finished_evaluation = Signal(object)  # EvaluationResult
    failed = Signal(str)  # a readable message
    cancelled = Signal()

    def __init__(
        self,
        workspace: Workspace,
        source: EvaluationSource,
        *,
        suite: str,
        split: str,
        baselines: list[str],
        backbone: Any = None,
        parent: Any = None,
    ):
        super().__init__(parent)
        self.workspace = workspace
        self.source = source
        self.suite = suite
        self.split = split
        self.baselines = baselines
        self.backbone = backbone
        self.token = StopToken()

    def cancel(self) -> None:
        """No episode starts after this; those in flight end first (thread-safe)."""
        self.token.stop()

    def run(self) -> None:  # runs in the worker thread
        try:
            result = evaluate_run(
                self.workspace,
                run=self.source.run_id,
                coordinator_file=self.source.coordinator_file,
                suite=self.suite,
                split=self.split,
                baselines=self.baselines,
                backbone=self.backbone,
                progress=self.progress.emit,
                stop=self.token,
            )
        except EvaluationStopped:
            self.cancelled.emit()
        except Exception as exc:  # reported on the page as a readable message, details to the log
            log.exception("evaluation of %s failed", self.source.reference)
            self.failed.emit(background.readable(exc))
        else:
            self.finished_evaluation.emit(result)
