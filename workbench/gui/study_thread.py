"""The cost-quality frontier study, started from the Evaluate page's "Headroom and cost"
tab: ``trinity-workbench study frontier CONFIG --penalties P --json`` as a child process
(one training run and one evaluation per penalty: minutes of work whose trainer would hold
the GUI's interpreter, as a run's would), read in a QThread. Each penalty done is a line
``cost_penalty P: ...`` that core's ``study_frontier`` reports (the command prints it on
stderr); the study, stored as a ``frontier`` run, comes back on stdout as JSON.

Stop ends the child at once: the training runs and evaluations it finished stay stored
(Runs, Evaluate), the study itself is not, and a new one starts again from its first
penalty (the response cache keeps the workers' answers).
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.core.jobs.frontier_report import Frontier
from workbench.core.workspace import Workspace
from workbench.gui.qt import QThread, Signal
from workbench.gui.run_thread import own_command

log = logging.getLogger(__name__)


def study_command(
    workspace: Workspace, config: str | Path, penalties: Sequence[float]
) -> list[str]:
    """The child's command line (this program's own ``study frontier``)."""
    return own_command(
        "study",
        "frontier",
        str(config),
        "--penalties",
        ",".join(f"{p:g}" for p in penalties),
        "--json",
        "--workspace",
        str(workspace.root),
    )


def penalty_done(line: str, penalties: Sequence[float]) -> float | None:
    """The penalty a progress line of the study reports done, or None."""
    for penalty in penalties:
        if line.strip().startswith(f"cost_penalty {penalty:g}:"):
            return penalty
    return None


class StudyThread(QThread):
    """Runs a frontier study in a child process; signals carry what it said."""

    penalty_finished = Signal(int, str)  # penalties done so far, the study's line for it
    finished_study = Signal(object)  # the Frontier
    failed = Signal(str)  # a readable message (also when stopped)

    def __init__(
        self,
        workspace: Workspace,
        config: str | Path,
        penalties: Sequence[float],
        parent: Any = None,
    ):
        super().__init__(parent)
        self.command = study_command(workspace, config, penalties)
        self.penalties = tuple(penalties)
        self._process: subprocess.Popen | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def stop(self) -> None:
        """End the child now (thread-safe); ``failed`` says it was stopped."""
        with self._lock:
            self._stopped = True
            if self._process is not None and self._process.poll() is None:
                self._process.kill()

    def run(self) -> None:  # runs in the worker thread
        tail: deque[str] = deque(maxlen=20)
        done: set[float] = set()
        try:
            with self._lock:
                if self._stopped:
                    self.failed.emit("stopped before it started")
                    return
                log.info("starting %s", " ".join(self.command))
                self._process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    encoding="utf-8",
                    bufsize=1,
                )
            process = self._process
            stdout, stderr = process.stdout, process.stderr
            assert stdout is not None and stderr is not None
            output: list[str] = []  # the study's JSON, read while stderr is
            reader = threading.Thread(target=lambda: output.append(stdout.read()))
            reader.start()
            for line in stderr:
                line = line.rstrip()
                if not line:
                    continue
                tail.append(line)
                log.info("frontier study: %s", line)
                penalty = penalty_done(line, self.penalties)
                if penalty is not None and penalty not in done:
                    done.add(penalty)
                    self.penalty_finished.emit(len(done), line.strip())
            code = process.wait()
            reader.join()
            if self._stopped:
                self.failed.emit(
                    f"stopped after {len(done)} of {len(self.penalties)} penalties: their runs "
                    "are stored, the study is not"
                )
            elif code != 0:
                said = [ln for ln in tail if ln.lower().startswith("error")]
                detail = (said or list(tail) or [f"exit status {code}"])[-1]
                self.failed.emit(detail.removeprefix("error: "))
            else:
                self.finished_study.emit(Frontier.from_dict(json.loads("".join(output))))
        except Exception as exc:  # reported on the page as a readable message
            log.exception("frontier study failed")
            self.failed.emit(f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                if self._process is not None and self._process.poll() is None:
                    self._process.kill()
                    self._process.wait()
