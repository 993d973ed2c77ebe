"""The bridge between a core training job and the GUI: ``RunThread`` runs
``workbench.core.runs.train`` in a QThread with a ``StopToken`` and re-emits each core
event as a Qt signal carrying the same frozen dataclass. The thread never touches widgets;
signals cross to the GUI thread through Qt's queued connections."""

from __future__ import annotations

import logging
from typing import Any

from workbench.core.config import RunConfig
from workbench.core.evolution import (
    EpisodeDone,
    GenerationStats,
    RunFailed,
    RunFinished,
    RunStarted,
    StopToken,
)
from workbench.core.workspace import Workspace
from workbench.gui.qt import QThread, Signal

log = logging.getLogger(__name__)


class RunThread(QThread):
    """Trains a new run from ``config`` (or resumes run ``resume``) in the background.

    ``backbone`` is an optional pre-built backbone (tests pass the tiny one); otherwise
    core loads the config's backbone inside this thread, never in the GUI thread.
    """

    started_run = Signal(object)  # RunStarted
    generation = Signal(object)  # GenerationStats
    episode = Signal(object)  # EpisodeDone
    finished_run = Signal(object)  # RunFinished
    failed = Signal(object)  # RunFailed (also for errors before the run record exists)

    def __init__(self, config: RunConfig | None, workspace: Workspace, *, resume: str | None = None,
                 backbone: Any = None, parent: Any = None):
        super().__init__(parent)
        self.config = config
        self.workspace = workspace
        self.resume_id = resume
        self.backbone = backbone
        self.token = StopToken()
        self.run_id: str | None = resume
        self._failed = False

    # -- control, from the GUI thread (the token is thread-safe) ---------------

    def pause(self) -> None:
        self.token.pause()

    def resume_run(self) -> None:
        self.token.resume()

    def stop(self) -> None:
        """Stop at the next episode boundary; the trainer checkpoints before it ends."""
        self.token.stop()

    @property
    def paused(self) -> bool:
        return self.token.paused

    # -- the thread --------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if isinstance(event, RunStarted):
            self.run_id = event.run_id
            self.started_run.emit(event)
        elif isinstance(event, GenerationStats):
            self.generation.emit(event)
        elif isinstance(event, EpisodeDone):
            self.episode.emit(event)
        elif isinstance(event, RunFinished):
            self.finished_run.emit(event)
        elif isinstance(event, RunFailed):
            self._failed = True
            self.failed.emit(event)

    def run(self) -> None:  # runs in the worker thread
        from workbench.core.runs import train

        try:
            train(self.config, self.workspace, resume=self.resume_id, listeners=[self._on_event],
                  stop=self.token, backbone=self.backbone)
        except Exception as exc:  # reported to the page as a readable message, details to the log
            log.exception("training failed")
            if not self._failed:
                self.failed.emit(RunFailed(self.run_id or "", f"{type(exc).__name__}: {exc}"))
