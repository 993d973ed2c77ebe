"""The bridge between a training run and the GUI: ``RunThread`` is a QThread that runs
``trinity-workbench train --events`` as a child process and re-emits each event it
prints as a Qt signal carrying the same frozen dataclass.

Why a process: the trainer is Python (episode loop, pycma, asyncio) and holds the GIL
for long stretches; in the GUI's process it stalled the event loop by 60-100 ms (p99).
In a child process the GUI thread only receives events, and a crash of either side
cannot take the other down: the child stops with a checkpoint when its stdin closes.
Pause, resume and stop are lines written to the child's stdin. The thread never
touches widgets; signals cross to the GUI thread through queued connections.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

from workbench.core.config import RunConfig
from workbench.core.training.events import (
    EpisodeDone,
    GenerationStats,
    Preparing,
    RunFailed,
    RunFinished,
    RunStarted,
    event_from_json,
)
from workbench.core.workspace import Workspace
from workbench.gui.qt import QThread, Signal

log = logging.getLogger(__name__)

STDERR_TAIL = 20  # lines of the child's stderr kept for the error message


def own_command(*args: str) -> list[str]:
    """A command line of this program's own (the frozen app, or Python with the package):
    the GUI's child processes run its commands."""
    program = (
        [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "workbench"]
    )
    return [*program, *args]


def train_command(workspace: Workspace, config_path: Path | None, resume: str | None) -> list[str]:
    """The child's command line: this program's own ``train`` (frozen app or Python)."""
    command = own_command("train", "--events", "--workspace", str(workspace.root))
    if config_path is not None:
        command.append(str(config_path))
    if resume is not None:
        command += ["--resume", resume]
    return command


class RunThread(QThread):
    """Trains a new run from ``config`` (or resumes run ``resume``) in a child process."""

    started_run = Signal(object)  # RunStarted
    preparing = Signal(object)  # Preparing: counted work before the first generation
    generation = Signal(object)  # GenerationStats
    episode = Signal(object)  # EpisodeDone
    finished_run = Signal(object)  # RunFinished
    failed = Signal(object)  # RunFailed (also for errors before the run record exists)

    def __init__(
        self,
        config: RunConfig | None,
        workspace: Workspace,
        *,
        resume: str | None = None,
        parent: Any = None,
    ):
        super().__init__(parent)
        self.config = config
        self.workspace = workspace
        self.resume_id = resume
        self.run_id: str | None = resume
        self.paused = False
        self._process: subprocess.Popen | None = None
        self._stopping = False
        self._ended = False  # RunFinished or RunFailed seen
        self._lock = threading.Lock()

    # -- control, from the GUI thread ----------------------------------------

    def pause(self) -> None:
        self._send("pause")
        self.paused = True

    def resume_run(self) -> None:
        self._send("resume")
        self.paused = False

    def stop(self) -> None:
        """Stop at the next episode boundary; the child checkpoints before it ends."""
        self._stopping = True
        self._send("stop")

    def kill(self) -> None:
        """End the child at once (it resumes from its last completed generation)."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                self._process.kill()

    def _send(self, command: str) -> None:
        with self._lock:
            process = self._process
            if process is None or process.poll() is not None or process.stdin is None:
                return
            try:
                process.stdin.write(command + "\n")
                process.stdin.flush()
            except OSError:  # the child is gone; run() reports how it ended
                pass

    # -- the thread --------------------------------------------------------------

    def _dispatch(self, event: Any) -> None:
        if isinstance(event, RunStarted):
            self.run_id = event.run_id
            self.started_run.emit(event)
        elif isinstance(event, Preparing):
            self.preparing.emit(event)
        elif isinstance(event, GenerationStats):
            self.generation.emit(event)
        elif isinstance(event, EpisodeDone):
            self.episode.emit(event)
        elif isinstance(event, RunFinished):
            self._ended = True
            self.finished_run.emit(event)
        elif isinstance(event, RunFailed):
            self._ended = True
            self.failed.emit(event)

    def run(self) -> None:  # runs in the worker thread
        config_path = None
        stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        try:
            if self.config is not None:
                fd, name = tempfile.mkstemp(prefix="run-", suffix=".toml", dir=self.workspace.root)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(self.config.to_toml())
                config_path = Path(name)
            command = train_command(self.workspace, config_path, self.resume_id)
            log.info("starting %s", " ".join(command))
            with self._lock:
                self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    encoding="utf-8",
                    bufsize=1,
                )
                assert self._process.stdin and self._process.stdout and self._process.stderr
                if self._stopping:  # stopped before the child existed
                    self._process.stdin.write("stop\n")
                    self._process.stdin.flush()
            errors = threading.Thread(
                target=_drain, args=(self._process.stderr, stderr_tail), daemon=True
            )
            errors.start()
            for line in self._process.stdout:
                try:
                    event = event_from_json(line)
                except ValueError:
                    log.info("run output: %s", line.rstrip())
                    continue
                self._dispatch(event)
            code = self._process.wait()
            errors.join(timeout=5)
            if not self._ended:
                said = [line for line in stderr_tail if line.lower().startswith("error")]
                detail = (said or list(stderr_tail) or [f"exit status {code}"])[-1]
                self.failed.emit(
                    RunFailed(self.run_id or "", f"the training process ended early: {detail}")
                )
        except Exception as exc:  # reported to the page as a readable message, details to the log
            log.exception("training process failed")
            if not self._ended:
                self.failed.emit(RunFailed(self.run_id or "", f"{type(exc).__name__}: {exc}"))
        finally:
            with self._lock:
                if self._process is not None and self._process.poll() is None:
                    self._process.kill()
                    self._process.wait()
            if config_path is not None:
                config_path.unlink(missing_ok=True)


def _drain(stream: Any, tail: deque[str]) -> None:
    """Keep the child's stderr flowing: every line to the log, the last few for errors."""
    for line in stream:
        line = line.rstrip()
        if line:
            tail.append(line)
            log.info("run stderr: %s", line)
