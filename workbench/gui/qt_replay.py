"""The Replay page: pick a run and an episode, then step through it turn by turn.

``QtReplay`` is a view over core objects: the store's episode summaries for the picker and
a ``workbench.core.replay.Replay`` for the episode shown; it holds no domain logic. The
store is read in background jobs (the GUI thread never waits on the disk); the page
re-reads the runs whenever it is shown.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from workbench.core.printable import shown_path
from workbench.core.records import StopReason
from workbench.core.replay import (
    THINKER_CHOSE,
    TIMELINE,
    Replay,
    role_label,
    timeline_rows,
    turn_cost,
)
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.workspace import Workspace
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSlider,
    QSplitter,
    Qt,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
    read_only_table,
    text_view,
)
from workbench.gui.qt_probabilities import ProbabilityBars

log = logging.getLogger(__name__)


class QtReplay(Page):
    """Runs and episodes on the left; the current turn on the right."""

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.replay: Replay | None = None
        self._episodes_wanted = self._episodes_read = 0
        self.exported: str | None = None
        self.error = self.message_label = message_label()

        self.runs = QComboBox()
        self.task_filter = QLineEdit()
        self.task_filter.setPlaceholderText("task id contains")
        self.stop_filter = QComboBox()
        # every stop reason (a served episode cancelled by its client or a stop included)
        self.stop_filter.addItems(["any stop", *(str(reason) for reason in StopReason)])
        self.reward_filter = QComboBox()
        self.reward_filter.addItems(["any reward", "reward 1", "reward 0"])
        self.worker_filter = QLineEdit()
        self.worker_filter.setPlaceholderText("worker id")
        self.episodes = QListWidget()
        picker = QVBoxLayout()
        form = QFormLayout()
        form.addRow("Run", self.runs)
        form.addRow("Task", self.task_filter)
        form.addRow("Stop", self.stop_filter)
        form.addRow("Reward", self.reward_filter)
        form.addRow("Worker", self.worker_filter)
        picker.addLayout(form)
        picker.addWidget(self.episodes)
        left = QWidget()
        left.setLayout(picker)

        self.header = QLabel("Pick an episode")
        self.header.setWordWrap(True)
        self.first_button, self.prev_button = QPushButton("|<"), QPushButton("<")
        self.next_button, self.last_button = QPushButton(">"), QPushButton(">|")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.position = QLabel()
        self.export_button = QPushButton("Export JSON...")
        steps = QHBoxLayout()
        for w in (
            self.first_button,
            self.prev_button,
            self.slider,
            self.next_button,
            self.last_button,
            self.position,
            self.export_button,
        ):
            steps.addWidget(w)
        # the episode at a glance: every turn, clickable to jump to it
        self.timeline = read_only_table(TIMELINE)
        self.timeline.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        self.timeline.setMaximumHeight(170)
        self.timeline.itemSelectionChanged.connect(self._on_timeline_selected)
        self.worker_bars, self.role_bars = ProbabilityBars("p(worker)"), ProbabilityBars("p(role)")
        charts = QHBoxLayout()
        charts.addWidget(self.worker_bars, 3)
        charts.addWidget(self.role_bars, 2)
        self.meta = QLabel()
        self.meta.setWordWrap(True)
        self.transcript, self.prompt, self.response = text_view(), text_view(), text_view()
        self.outcome = text_view()
        texts = QSplitter(Qt.Orientation.Vertical)
        for title, view in (
            ("Transcript the coordinator read", self.transcript),
            ("Prompt the worker received", self.prompt),
            ("Response", self.response),
            ("Outcome (final answer, reference, grader)", self.outcome),
        ):
            box = QWidget()
            layout = QVBoxLayout(box)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.addWidget(QLabel(title))
            layout.addWidget(view)
            texts.addWidget(box)
        right_layout = QVBoxLayout()
        right_layout.addWidget(self.error)
        right_layout.addWidget(self.header)
        right_layout.addLayout(steps)
        right_layout.addWidget(self.timeline, 1)
        right_layout.addLayout(charts, 2)
        right_layout.addWidget(self.meta)
        right_layout.addWidget(texts, 5)
        right = QWidget()
        right.setLayout(right_layout)

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 3)
        outer = QVBoxLayout(self)
        outer.addWidget(splitter)

        self.runs.currentIndexChanged.connect(lambda _: self.refresh_episodes())
        for widget in (self.task_filter, self.worker_filter):
            widget.editingFinished.connect(self.refresh_episodes)
        for widget in (self.stop_filter, self.reward_filter):
            widget.currentIndexChanged.connect(lambda _: self.refresh_episodes())
        self.episodes.currentItemChanged.connect(
            lambda item, _: item and self.open_episode(item.data(Qt.ItemDataRole.UserRole))
        )
        self.first_button.clicked.connect(lambda: self.replay and self.replay.go(0))
        self.prev_button.clicked.connect(lambda: self.replay and self.replay.previous())
        self.next_button.clicked.connect(lambda: self.replay and self.replay.next())
        self.last_button.clicked.connect(
            lambda: self.replay and self.replay.go(self.replay.n_turns - 1)
        )
        self.slider.valueChanged.connect(lambda v: self.replay and self.replay.go(v))
        self.export_button.clicked.connect(self.export_episode)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._set_enabled(False)
        self.refresh_runs()

    # -- picking ---------------------------------------------------------------

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.refresh_runs()  # runs made on other pages since

    def refresh_runs(self) -> None:
        """Reload the runs that have episodes (training, evaluation, single episodes)."""
        self.in_background(
            "replay runs",
            lambda: _read_runs(self.workspace),
            self._on_runs,
            self._on_failed,
            context="read the runs",
        )

    def _on_failed(self, what: str, exc: Exception) -> None:
        self.error.setText(f"Cannot {what}: {exc}")

    def _on_runs(self, _context: Any, found: tuple[list[tuple[str, str]], bool]) -> None:
        runs, loose = found
        current = self.runs.currentData()
        self.runs.blockSignals(True)
        self.runs.clear()
        for run_id, label in runs:
            self.runs.addItem(label, run_id)
        if loose:
            self.runs.addItem("episodes outside runs (run-episode)", None)
        if self.runs.findData(current) >= 0:
            self.runs.setCurrentIndex(self.runs.findData(current))
        self.runs.blockSignals(False)
        self.refresh_episodes()

    def refresh_episodes(self) -> None:
        run_id = self.runs.currentData()
        stop = self.stop_filter.currentText()
        reward = self.reward_filter.currentText()
        query = {
            "stop_reason": None if stop == "any stop" else stop,
            "min_reward": 1.0 if reward == "reward 1" else None,
            "max_reward": 0.0 if reward == "reward 0" else None,
            "worker": self.worker_filter.text().strip() or None,
        }
        self._episodes_wanted += 1
        self.in_background(
            "replay episodes",
            lambda: _read_episodes(self.workspace, run_id, query),
            self._on_episodes,
            self._on_failed,
            context="read the episodes",
        )

    def _on_episodes(self, _context: Any, found: list[Any]) -> None:
        self._episodes_read += 1
        if self._episodes_read < self._episodes_wanted:
            return  # a newer read is on its way
        needle = self.task_filter.text().strip()
        self.episodes.clear()
        for e in found:
            if needle and needle not in e.task_id:
                continue
            where = (
                f"gen {e.generation} cand {e.candidate}"
                if e.generation is not None
                else (f"system {e.candidate}" if e.candidate is not None else "")
            )
            item = QListWidgetItem(
                f"{e.task_id}  r={e.reward:g}  {e.stop_reason}  {e.n_turns} turns  {where}"
            )
            item.setData(Qt.ItemDataRole.UserRole, e.id)
            self.episodes.addItem(item)

    @property
    def loading(self) -> bool:
        """A read of the store is in flight."""
        return self.jobs_running

    def open_episode(self, episode_id: str) -> None:
        """Read the episode (and its task) in the background, then show its first turn."""
        self.error.clear()
        self.in_background(
            "replay episode",
            lambda: _read_episode(self.workspace, episode_id),
            self._on_episode,
            self._on_failed,
            context="open the episode",
        )

    def _on_episode(self, _context: Any, found: tuple[Any, Any]) -> None:
        episode, task = found
        try:
            self.replay = Replay(episode, task)
        except ValueError as exc:
            self.error.setText(str(exc))
            self._set_enabled(False)
            return
        self.replay.changed.append(lambda _: self.show_turn())
        self.header.setText(
            f"Episode {episode.id[:12]} · task {episode.task_id} · reward {episode.reward:g} · "
            f"stop {episode.stop_reason} · pool {', '.join(episode.pool)}"
        )
        self.timeline.blockSignals(True)
        self.timeline.clearSelection()
        rows = timeline_rows(episode)
        self.timeline.setRowCount(len(rows))
        for row, cells in enumerate(rows):
            for col, text in enumerate(cells):
                self.timeline.setItem(row, col, QTableWidgetItem(text))
        self.timeline.blockSignals(False)
        self.slider.blockSignals(True)
        self.slider.setRange(0, self.replay.n_turns - 1)
        self.slider.setValue(0)
        self.slider.blockSignals(False)
        self._set_enabled(True)
        self.show_turn()

    # -- showing -----------------------------------------------------------------

    def show_turn(self) -> None:
        replay = self.replay
        if replay is None:
            return
        turn, decision = replay.turn, replay.decision()
        self.slider.blockSignals(True)
        self.slider.setValue(replay.index)
        self.slider.blockSignals(False)
        self.position.setText(f"turn {replay.index + 1} / {replay.n_turns}")
        self.timeline.blockSignals(True)
        self.timeline.selectRow(replay.index)
        self.timeline.blockSignals(False)
        self.worker_bars.show_distribution(
            decision.workers, decision.worker_probs, decision.chosen_worker
        )
        self.role_bars.show_distribution(decision.roles, decision.role_probs, decision.chosen_role)
        status = (
            turn.error
            and f"error: {turn.error}"
            or (f"verdict {turn.verdict}" if turn.verdict else "")
        )
        if not turn.messages and not turn.error:
            status = "not called (a Verifier before any answer ends the episode)"
        if turn.verdict and not turn.verdict_parsed:
            status += " (no readable verdict: counted as REVISE)"
        role = role_label(replay.episode, replay.index)
        if role != str(turn.role):
            role = f"{turn.role} ({THINKER_CHOSE})"
        self.meta.setText(
            f"{role} by {turn.worker} · {status} · tokens {turn.tokens_in}/{turn.tokens_out} · "
            f"latency {turn.latency_s:.2f} s · cost {turn_cost(turn)}"
        )
        self.transcript.setPlainText(replay.transcript_before())
        self.prompt.setPlainText(replay.prompt())
        self.response.setPlainText(turn.response or turn.error or "")
        if replay.at_end:
            out = replay.outcome()
            self.outcome.setPlainText(
                f"reward {out['reward']:g} · stop {out['stop_reason']}\n\nfinal answer:\n{out['answer'] or '(none)'}\n\n"
                f"reference:\n{out['reference'] or '(unknown)'}\n\ngrader:\n{json.dumps(out['grader'], indent=2)}"
            )
        else:
            self.outcome.setPlainText("(shown at the last turn)")

    def _on_timeline_selected(self) -> None:
        rows = self.timeline.selectionModel().selectedRows()
        if self.replay is not None and rows:
            self.replay.go(rows[0].row())

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if self.replay is not None and event.key() == Qt.Key.Key_Right:
            self.replay.next()
        elif self.replay is not None and event.key() == Qt.Key.Key_Left:
            self.replay.previous()
        else:
            super().keyPressEvent(event)

    def export_episode(self, path: str | None = None) -> None:
        if self.replay is None:
            return
        if not path:
            path, _ = QFileDialog.getSaveFileName(
                self,
                "Export episode",
                f"episode-{self.replay.episode.id[:12]}.json",
                "JSON (*.json)",
            )
        if not path:
            return
        self.in_background(
            "export episode",
            lambda: _export(self.workspace, self.replay.episode.id, path),
            self._on_exported,
            self._on_export_failed,
            context=path,
        )

    def _on_exported(self, path: str, _result: Any) -> None:
        self.exported = path

    def _on_export_failed(self, path: str, exc: Exception) -> None:
        self.error.setText(
            f"Cannot write {shown_path(path)}: {getattr(exc, 'strerror', None) or exc}"
        )

    def _set_enabled(self, enabled: bool) -> None:
        for w in (
            self.first_button,
            self.prev_button,
            self.next_button,
            self.last_button,
            self.slider,
            self.export_button,
        ):
            w.setEnabled(enabled)


def _read_runs(workspace: Workspace) -> tuple[list[tuple[str, str]], bool]:
    with Store.open(workspace) as store:
        runs = store.list_runs()
        loose = any(e.run_id is None for e in store.list_episodes())
    return [(r.id, f"{r.id[:8]}  {r.kind}  {r.name}") for r in reversed(runs)], loose


def _read_episodes(workspace: Workspace, run_id: str | None, query: dict[str, Any]) -> list[Any]:
    with Store.open(workspace) as store:
        found = store.list_episodes(run_id, **query)
    return [e for e in found if e.run_id is None] if run_id is None else found


def _read_episode(workspace: Workspace, episode_id: str) -> tuple[Any, Any]:
    with Store.open(workspace) as store:
        episode = store.get_episode(episode_id)
    try:
        task = load_suite(episode.suite, workspace).get(episode.task_id)
    except (LookupError, ValueError, OSError) as exc:  # the suite may be gone
        log.info("task of episode %s unavailable: %s", episode_id, exc)
        task = None
    return episode, task


def _export(workspace: Workspace, episode_id: str, path: str) -> str:
    with Store.open(workspace) as store:
        text = store.export_episode_json(episode_id)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
