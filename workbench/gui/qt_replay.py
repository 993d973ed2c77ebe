"""The Replay page: an episode read as a conversation. Pick a run, narrow its episodes by
outcome, worker, generation, candidate, why they ended and question; the list shows the
best candidate's episodes first. The episode shows as cards: the question, one card per
turn (role, chosen worker, the coordinator's probabilities as small labelled bars, what the
worker was asked and answered, the grade), and the outcome, in one scrollable column.

Keys: Right / Left (or J / K) the next and previous turn, Home / End the first and last,
Page Down / Page Up (or N / P) the next and previous episode of the list.

``QtReplay`` is a view over core objects: the store's episode summaries for the list and
a ``workbench.core.replay.Replay`` (the cursor over a stored episode) for the episode
shown. The store is read in background jobs (the GUI thread never waits on the disk); the
page re-reads the runs whenever it is shown.
"""

from __future__ import annotations

import logging
from typing import Any

from workbench.core.printable import shown_path
from workbench.core.records import Episode
from workbench.core.replay import Replay, role_label
from workbench.core.store import EpisodeSummary
from workbench.core.tasks.model import Task
from workbench.core.workspace import Workspace
from workbench.gui import tables
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QKeySequence,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QShortcut,
    QSplitter,
    Qt,
    QVBoxLayout,
    QWidget,
    read_only_table,
)
from workbench.gui.qt_replay_cards import OutcomeCard, QuestionCard, TurnCard
from workbench.gui.replay_model import (
    EPISODE_COLUMNS,
    EPISODE_STOPS,
    OUTCOMES,
    EpisodeList,
    RunsOffered,
    best_first,
    candidate_word,
    candidate_words,
    ending_sentence,
    ending_word,
    episode_ending,
    episode_header,
    export_episode,
    list_note,
    read_episode,
    read_episodes,
    read_runs,
    result_words,
    runs_note,
)
from workbench.gui.words import stop_sentence

log = logging.getLogger(__name__)

SHOWN_AT_MOST = 2000  # rows of the episode list (the filters narrow the rest)
ANY = "any"


class QtReplay(Page):
    """The run and its episodes on the left; the episode as a conversation on the right."""

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.replay: Replay | None = None
        self.cards: list[TurnCard] = []  # the turns' cards of the episode shown
        self.listing: EpisodeList | None = None
        self.run_kinds: dict[str, str] = {}
        self._episodes_wanted = self._episodes_read = 0
        self._episode_wanted: str | None = None  # the episode shown, or being read
        self._run_fresh = False  # a run was just chosen: its best episode is shown
        self.exported: str | None = None
        self.message_label = message_label()
        self._build()
        self._set_enabled(False)
        self.refresh_runs()

    # -- layout ------------------------------------------------------------------

    def _build(self) -> None:
        self.runs = QComboBox()
        self.runs.setMinimumContentsLength(16)
        self.runs.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.outcome_filter = QComboBox()
        self.outcome_filter.addItems(list(OUTCOMES))
        self.worker_filter = QComboBox()
        self.generation_filter = QComboBox()
        self.candidate_filter = QComboBox()
        self.stop_filter = QComboBox()
        self.stop_filter.addItem("any reason", None)
        for reason in EPISODE_STOPS:
            self.stop_filter.addItem(stop_sentence(reason), reason)
            self.stop_filter.setItemData(
                self.stop_filter.count() - 1, f"stop reason: {reason}", Qt.ItemDataRole.ToolTipRole
            )
        self.task_filter = QLineEdit()
        self.task_filter.setPlaceholderText("question id contains…")
        for combo in (self.worker_filter, self.generation_filter, self.candidate_filter):
            combo.addItem(ANY, None)
        self.runs_note = QLabel("")
        self.runs_note.setWordWrap(True)
        self.runs_note.hide()
        form = QFormLayout()
        form.addRow("Run", self.runs)
        form.addRow("", self.runs_note)
        form.addRow("Result", self.outcome_filter)
        form.addRow("Worker", self.worker_filter)
        form.addRow("Generation", self.generation_filter)
        form.addRow("Candidate", self.candidate_filter)
        form.addRow("How it ended", self.stop_filter)
        form.addRow("Question", self.task_filter)
        self.episodes = read_only_table(EPISODE_COLUMNS)
        tables.sortable(self.episodes)
        # the question and why it ended share the width the figures leave (elided, whole in
        # their tooltips): the list fits its side of the page at 1280 px without scrolling
        tables.fit_width(self.episodes, [0, EPISODE_COLUMNS.index("How it ended")])
        tables.header_tip(self.episodes, 3, "Generation (numbered from 1)")
        tables.header_tip(
            self.episodes,
            4,
            "Candidate of its generation (numbered from 1), or the system an evaluation ran",
        )
        self.episodes.setToolTip("Page Down / Page Up: the next and previous episode")
        self.list_note = QLabel("")
        self.list_note.setWordWrap(True)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addLayout(form)
        left_layout.addWidget(self.episodes, 1)
        left_layout.addWidget(self.list_note)

        self.header = QLabel("Pick an episode in the list.")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.prev_episode_button = QPushButton("◀◀ Episode")
        self.prev_episode_button.setToolTip("The previous episode of the list (Page Up)")
        self.prev_button = QPushButton("◀ Turn")
        self.prev_button.setToolTip("The previous turn (Left)")
        self.position = QLabel("")
        self.next_button = QPushButton("Turn ▶")
        self.next_button.setToolTip("The next turn (Right)")
        self.next_episode_button = QPushButton("Episode ▶▶")
        self.next_episode_button.setToolTip("The next episode of the list (Page Down)")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Save the whole episode as a JSON file")
        steps = QHBoxLayout()
        for w in (
            self.prev_episode_button,
            self.prev_button,
            self.position,
            self.next_button,
            self.next_episode_button,
        ):
            steps.addWidget(w)
        steps.addStretch(1)
        steps.addWidget(self.export_button)
        self.conversation = QWidget()
        self.conversation_layout = QVBoxLayout(self.conversation)
        self.conversation_layout.addStretch(1)
        self.conversation_scroll = QScrollArea()
        self.conversation_scroll.setWidgetResizable(True)
        self.conversation_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.conversation_scroll.setWidget(self.conversation)
        self.conversation_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.message_label)
        right_layout.addWidget(self.header)
        right_layout.addLayout(steps)
        right_layout.addWidget(self.conversation_scroll, 1)

        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([508, 552])
        QVBoxLayout(self).addWidget(splitter)

        self.runs.currentIndexChanged.connect(lambda _: self._run_changed())
        for combo in (
            self.outcome_filter,
            self.worker_filter,
            self.generation_filter,
            self.candidate_filter,
            self.stop_filter,
        ):
            combo.currentIndexChanged.connect(lambda _: self.refresh_episodes())
        self.task_filter.editingFinished.connect(self.refresh_episodes)
        self.episodes.itemSelectionChanged.connect(self._episode_picked)
        self.prev_button.clicked.connect(self.previous_turn)
        self.next_button.clicked.connect(self.next_turn)
        self.prev_episode_button.clicked.connect(lambda: self.step_episode(-1))
        self.next_episode_button.clicked.connect(lambda: self.step_episode(1))
        self.export_button.clicked.connect(lambda: self.export_episode())
        keys = (
            ((Qt.Key.Key_Right, Qt.Key.Key_J), self.next_turn),
            ((Qt.Key.Key_Left, Qt.Key.Key_K), self.previous_turn),
            ((Qt.Key.Key_Home,), lambda: self.go_turn(0)),
            ((Qt.Key.Key_End,), lambda: self.go_turn(-1)),
            ((Qt.Key.Key_PageDown, Qt.Key.Key_N), lambda: self.step_episode(1)),
            ((Qt.Key.Key_PageUp, Qt.Key.Key_P), lambda: self.step_episode(-1)),
        )
        self.keys: dict[int, Any] = {}
        for sequence, slot in keys:
            for key in sequence:
                shortcut = QShortcut(QKeySequence(key), self)
                shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                shortcut.activated.connect(slot)
                self.keys[int(key.value)] = slot
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    # -- picking -----------------------------------------------------------------

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.refresh_runs()  # runs made on other pages since

    def refresh_runs(self) -> None:
        """Reload the runs that have episodes (training, evaluation, single episodes)."""
        self.in_background(
            "replay runs",
            lambda: read_runs(self.workspace),
            self._on_runs,
            self.failed,
            context="read the runs",
        )

    def _on_runs(self, _context: Any, offered: RunsOffered) -> None:
        """The runs offered, newest first; the run chosen stays chosen, and at first (or
        when it is gone) the newest run is: the one just trained or evaluated. The line
        under the list says which runs it leaves out."""
        note = runs_note(offered)
        self.runs_note.setText(note)
        self.runs_note.setVisible(bool(note))
        current = self.runs.currentData()
        self.runs.blockSignals(True)
        self.runs.clear()
        self.run_kinds = {}
        for run in offered.choices:
            self.runs.addItem(run.label, run.run_id)
            self.runs.setItemData(self.runs.count() - 1, run.label, Qt.ItemDataRole.ToolTipRole)
            self.run_kinds[run.run_id] = run.kind
        index = self.runs.findData(current) if current is not None else -1
        self.runs.setCurrentIndex(max(index, 0))
        self.runs.blockSignals(False)
        if self.runs.currentData() != current:
            self._run_changed()
        else:
            self.refresh_episodes()

    def _run_changed(self) -> None:
        """Another run: its filters from scratch, the last run's episode gone from the
        right, and its best episode shown once its list is read."""
        for combo in (self.worker_filter, self.generation_filter, self.candidate_filter):
            combo.blockSignals(True)
            combo.setCurrentIndex(0)
            combo.blockSignals(False)
        self.clear_episode()
        self._run_fresh = True
        self.refresh_episodes()

    def refresh_episodes(self) -> None:
        run_id = self.runs.currentData()
        if run_id is None:  # no run with episodes yet
            return
        low, high = OUTCOMES[self.outcome_filter.currentText()]
        query = {
            "stop_reason": self.stop_filter.currentData(),
            "min_reward": low,
            "max_reward": high,
            "worker": self.worker_filter.currentData(),
            "generation": self.generation_filter.currentData(),
            "candidate": self.candidate_filter.currentData(),
        }
        needle = self.task_filter.text().strip()
        self._episodes_wanted += 1
        self.in_background(
            "replay episodes",
            lambda: read_episodes(self.workspace, run_id, query, needle),
            self._on_episodes,
            self.failed,
            context="read the episodes",
        )

    def _on_episodes(self, _context: Any, listing: EpisodeList) -> None:
        self._episodes_read += 1
        if self._episodes_read < self._episodes_wanted:
            return  # a newer read is on its way
        self.listing = listing
        kind = self.run_kinds.get(self.runs.currentData() or "", "")
        self._offer(self.generation_filter, [(f"{g + 1}", g) for g in listing.generations])
        self._offer(
            self.candidate_filter,
            [(f"{candidate_word(kind)} {c + 1}", c) for c in listing.candidates],
        )
        self._offer(self.worker_filter, [(w, w) for w in listing.workers])
        rows = []
        for e in listing.episodes[:SHOWN_AT_MOST]:
            ended = ending_word(e.stop_reason, e.last_role)
            cells = (
                tables.Cell(e.task_id, tooltip=f"question {e.task_id} ({e.suite})\nepisode {e.id}"),
                tables.Cell(result_words(e.reward), e.reward, f"reward {e.reward:g}"),
                tables.number(e.n_turns),
                tables.number(
                    None if e.generation is None else e.generation + 1,
                    "–" if e.generation is None else None,
                ),
                tables.Cell(*_candidate_cell(e, kind)),
                tables.Cell(
                    ended,
                    tooltip=f"{ended}: {ending_sentence(e.stop_reason, e.last_role)}"
                    f"\nstop reason: {e.stop_reason}",
                ),
            )
            for cell in cells:
                cell.setData(Qt.ItemDataRole.UserRole, e.id)
            rows.append(cells)
        self.episodes.blockSignals(True)
        self.episodes.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        tables.fill(self.episodes, rows)
        self.episodes.blockSignals(False)
        self.list_note.setText(list_note(listing, min(listing.matched, SHOWN_AT_MOST), kind))
        self._follow_list()

    def _follow_list(self) -> None:
        """The right side follows the list: a run just chosen shows its first (best)
        episode; the episode shown stays selected while the filters keep it, and goes
        when they leave it out."""
        ids = self.episode_ids()
        shown, fresh = self._episode_wanted, self._run_fresh
        self._run_fresh = False
        chosen = shown if shown in ids else (ids[0] if fresh and ids else None)
        self.episodes.blockSignals(True)  # the list was refilled: its selection is set here
        self.episodes.clearSelection()
        if chosen is not None:
            self.episodes.selectRow(ids.index(chosen))
        self.episodes.blockSignals(False)
        if chosen is None and shown is not None:
            self.clear_episode()
        elif chosen is not None and chosen != shown:
            self.open_episode(chosen)

    @staticmethod
    def _offer(combo: QComboBox, choices: list[tuple[str, Any]]) -> None:
        """The filter's choices (``any`` first), keeping the one chosen."""
        chosen = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(ANY, None)
        for text, data in choices:
            combo.addItem(text, data)
        combo.setCurrentIndex(max(combo.findData(chosen), 0) if chosen is not None else 0)
        combo.blockSignals(False)

    def episode_ids(self) -> list[str]:
        """The episodes of the list, in the order shown."""
        return [
            tables.item(self.episodes, row, 0).data(Qt.ItemDataRole.UserRole)
            for row in range(self.episodes.rowCount())
        ]

    def _episode_picked(self) -> None:
        rows = self.episodes.selectionModel().selectedRows()
        if rows:
            self.open_episode(
                tables.item(self.episodes, rows[0].row(), 0).data(Qt.ItemDataRole.UserRole)
            )

    def step_episode(self, step: int) -> None:
        """Open the next (``step`` 1) or previous (-1) episode of the list."""
        count = self.episodes.rowCount()
        if not count:
            return
        rows = self.episodes.selectionModel().selectedRows()
        row = (rows[0].row() + step) if rows else (0 if step > 0 else count - 1)
        self.episodes.selectRow(max(0, min(count - 1, row)))

    @property
    def loading(self) -> bool:
        """A read of the store is in flight."""
        return self.jobs_running

    def open_episode(self, episode_id: str) -> None:
        """Read the episode (and its task) in the background, then show it."""
        self.message_label.clear()
        self._episode_wanted = episode_id
        self.in_background(
            "replay episode",
            lambda: read_episode(self.workspace, episode_id),
            self._on_episode,
            self.failed,
            context="open the episode",
        )

    def clear_episode(self) -> None:
        """Nothing on the right: no episode is chosen (another run was picked)."""
        self._episode_wanted = None
        self.replay = None
        self.cards = []
        self._clear_cards()
        self.header.setText("Pick an episode in the list.")
        self.header.setToolTip("")
        self.position.clear()
        self._set_enabled(False)

    def _clear_cards(self) -> None:
        layout = self.conversation_layout
        while layout.count() > 1:  # everything but the closing stretch
            item = layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:  # gone from view now; freed when the loop next runs
                widget.hide()
                widget.deleteLater()

    def _on_episode(self, _context: Any, found: tuple[Episode, Task | None]) -> None:
        episode, task = found
        if episode.id != self._episode_wanted:
            return  # another episode (or none) was asked for since
        try:
            replay = Replay(episode, task)
        except ValueError as exc:
            self.show_error(str(exc))
            self._set_enabled(False)
            return
        self.replay = replay
        replay.changed.append(lambda _: self.show_turn())
        self.header.setText(episode_header(episode, self.run_kinds.get(episode.run_id or "", "")))
        self.header.setToolTip(
            f"episode {episode.id}\nstop reason: {episode.stop_reason}\n"
            f"team: {', '.join(episode.pool)}"
        )
        self._show_cards(episode, task)
        self._set_enabled(True)
        self.show_turn()

    def _show_cards(self, episode: Episode, task: Task | None) -> None:
        assert self.replay is not None  # the episode's replay is set before its cards
        self._clear_cards()
        prompt = task.full_prompt() if task is not None else None
        widgets: list[QWidget] = [QuestionCard(episode, prompt)]
        self.cards = [
            TurnCard(episode, i, role_label(episode, i)) for i in range(len(episode.turns))
        ]
        widgets += self.cards
        self.outcome_card = OutcomeCard(self.replay.outcome(), episode_ending(episode)[1])
        widgets.append(self.outcome_card)
        for index, widget in enumerate(widgets):
            self.conversation_layout.insertWidget(index, widget)

    # -- showing -----------------------------------------------------------------

    def next_turn(self) -> None:
        if self.replay is not None:
            self.replay.next()

    def previous_turn(self) -> None:
        if self.replay is not None:
            self.replay.previous()

    def go_turn(self, index: int) -> None:
        """Go to turn ``index`` (from 0; -1: the last)."""
        if self.replay is not None:
            self.replay.go(index if index >= 0 else self.replay.n_turns - 1)

    def show_turn(self) -> None:
        """Mark the current turn's card and bring it into view (the outcome, at the last)."""
        replay = self.replay
        if replay is None:
            return
        for card in self.cards:
            card.set_current(card.index == replay.index)
        self.position.setText(f"turn {replay.index + 1} of {replay.n_turns}")
        self.prev_button.setEnabled(replay.index > 0)
        self.next_button.setEnabled(not replay.at_end)
        current = self.cards[replay.index]
        self.conversation_scroll.ensureWidgetVisible(current, 0, 20)
        if replay.at_end:
            self.conversation_scroll.ensureWidgetVisible(self.outcome_card, 0, 20)

    def current_card(self) -> TurnCard | None:
        return next((c for c in self.cards if c.current), None)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """The page's keys when it has the focus itself (the shortcuts cover its children)."""
        slot = self.keys.get(int(event.key()))
        if slot is not None:
            slot()
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
        episode_id = self.replay.episode.id
        self.in_background(
            "export episode",
            lambda: export_episode(self.workspace, episode_id, path),
            self._on_exported,
            self._on_export_failed,
            context=path,
        )

    def _on_exported(self, path: str, _result: Any) -> None:
        self.exported = path

    def _on_export_failed(self, path: str, exc: Exception) -> None:
        self.show_error(f"Cannot write {shown_path(path)}: {getattr(exc, 'strerror', None) or exc}")

    def _set_enabled(self, enabled: bool) -> None:
        for w in (
            self.prev_button,
            self.next_button,
            self.export_button,
            self.prev_episode_button,
            self.next_episode_button,
        ):
            w.setEnabled(enabled)


def _candidate_cell(summary: EpisodeSummary, kind: str) -> tuple[str, Any, str]:
    text, tip = candidate_words(summary, kind)
    return text, summary.candidate if summary.candidate is not None else -1, tip


__all__ = ["EPISODE_COLUMNS", "QtReplay", "best_first"]
