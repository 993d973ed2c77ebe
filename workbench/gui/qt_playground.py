"""The Playground page: ask a trained team a question and watch the episode live, each turn
as it happens (role, worker, the chosen worker's and role's probabilities as bars, then the
worker's reply as it arrives, verdict, tokens, cost), then the answer and its cost; Stop;
"Open in Replay". A turn's row, selected, shows both whole distributions as bar charts and
the full reply. The same page starts and stops the OpenAI-compatible server for the chosen
coordinator and shows its URL and a copyable client snippet.

The page holds no domain logic: ``workbench.core.serving`` loads the team, runs and stores
the episode and tells each turn (from the episode's background job, by queued signal); the
page shows what it hears.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.core.jobs.evaluate import evaluable_runs, evaluation_source
from workbench.core.jobs.shared import run_title
from workbench.core.printable import shown_path
from workbench.core.records import ROLES, RunStopReason
from workbench.core.replay import turn_cost, turn_verdict
from workbench.core.serving.standin import stand_in
from workbench.core.serving.team import TurnDecided, TurnReplied, load_team
from workbench.core.spend import dollars, is_recorded, is_simulated, spend_kind
from workbench.core.workers.local import SMOLLM2_ID
from workbench.core.workspace import Workspace
from workbench.gui import background, tables
from workbench.gui.page import Page, combo_over_buttons, message_label
from workbench.gui.qt import (
    QApplication,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QObject,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
    read_only_table,
    text_view,
)
from workbench.gui.qt_probabilities import ProbabilityBars, ProbabilityCell
from workbench.gui.runs_model import started_text
from workbench.gui.words import plural, pool_words, role_name, stop_sentence

log = logging.getLogger(__name__)

# two-line headers where one line would make the table wider than its side of the page; a
# turn's tokens and latency are in its reply's tooltip and under the table when selected (as
# columns they made the table scroll sideways at 1280 px)
COLUMNS = (
    "Turn",
    "Role",
    "Worker",
    "Worker's\nchance",
    "Role's\nchance",
    "Verdict",
    "Cost",
    "Reply",
)
P_WORKER, P_ROLE, VERDICT, COST, REPLY = range(3, 8)
REPLY_CHARS = 300  # a reply in the table; the whole of it shows below when its turn is selected


def waiting_text(worker: str) -> str:
    """A turn's reply cell while its worker has not answered yet."""
    return f"waiting for {worker}…"


def turn_figures(replied: TurnReplied) -> str:
    """A replied turn's tokens and latency, in words."""
    return (
        f"tokens in/out {replied.tokens_in}/{replied.tokens_out} · "
        f"latency {replied.latency_s:.2f} s"
    )


class _Events(QObject):
    """Carries the episode's events from its job thread into the GUI thread (queued)."""

    team = Signal(object)  # the loaded team's description (Team.describe() and model id)
    turn = Signal(object)  # TurnDecided / TurnReplied


def _which(some: Sequence[str], pool: Sequence[str]) -> str:
    """The subject of a sentence about ``some`` of a team's workers: ``Every worker of this
    team is``, ``a is``, ``a, b are``."""
    if len(some) == len(pool):
        return "Every worker of this team is"
    return f"{', '.join(some)} {'is' if len(some) == 1 else 'are'}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def client_snippet(url: str, model: str, key_required: bool) -> str:
    """Python that calls the served team with the official ``openai`` client."""
    key = 'os.environ["TRINITY_SERVER_KEY"]' if key_required else '"unused on loopback"'
    return (
        "import os\n"
        "from openai import OpenAI\n\n"
        f'client = OpenAI(base_url="{url}", api_key={key})\n'
        "reply = client.chat.completions.create(\n"
        f'    model="{model}",\n'
        '    messages=[{"role": "user", "content": "What is 12 + 30?"}],\n'
        ")\n"
        "print(reply.choices[0].message.content)\n"
    )


class QtPlayground(Page):
    """The Playground over a workspace. ``backbone``: an optional pre-built backbone for the
    teams loaded here (tests use the tiny one). ``open_in_replay(episode_id)`` asks the
    window to show an episode on the Replay page."""

    open_in_replay = Signal(str)

    def __init__(
        self, workspace: Workspace, *, backbone: Any = None, parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.workspace = workspace
        self.backbone = backbone
        self.episode: Any = None  # the last finished episode
        self.server: Any = None  # the running workbench.core.serving.server.Server
        self._job: background.Job | None = None
        self._events = _Events()
        self._events.turn.connect(self.show_event)
        self._events.team.connect(self._on_team_loaded)
        # per row: the decision and, once the worker answered, its reply
        self.turn_events: list[list[Any]] = []
        self._build()
        self.refresh_runs()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        self.source_combo = QComboBox()
        self.source_combo.setMinimumContentsLength(16)
        self.pool_label = QLabel("")  # the chosen coordinator's pool
        self.pool_label.setWordWrap(True)
        # which workers are simulated and what they can answer; the real local model offered
        self.simulated_label = QLabel("")
        self.simulated_label.setWordWrap(True)
        # short: a longer line made this side too wide for the turns table at 1280 px (the
        # tooltip says what it does)
        self.local_box = QCheckBox("Let the offline model answer")
        self.local_box.setToolTip(
            "The coordinator still picks which worker and which role, as it learned; the "
            f"offline language model ({SMOLLM2_ID}, SmolLM2-135M) writes each simulated or "
            "recorded worker's reply. Small and slow on a CPU, but a real model."
        )
        self.local_box.hide()
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.file_button = QPushButton("Coordinator file…")
        self.file_button.clicked.connect(self._choose_file)
        source_row = combo_over_buttons(self.source_combo, self.refresh_button, self.file_button)
        self.question = QPlainTextEdit()
        self.question.setPlaceholderText("Ask the team a question…")
        self.question.setMaximumHeight(100)
        self.ask_button = QPushButton("Ask")
        self.stop_button = QPushButton("Stop")
        self.replay_button = QPushButton("Open in Replay")
        self.ask_button.clicked.connect(self.ask)
        self.stop_button.clicked.connect(self.stop)
        self.replay_button.clicked.connect(self._open_in_replay)
        buttons = QHBoxLayout()
        for button in (self.ask_button, self.stop_button, self.replay_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.status_label = QLabel("Ready")
        self.status_label.setWordWrap(True)
        self.message_label = message_label()
        form = QFormLayout()
        form.addRow("Coordinator", source_row)
        form.addRow("Team", self.pool_label)
        form.addRow("", self.simulated_label)
        form.addRow("", self.local_box)
        form.addRow("Question", self.question)
        ask_box = QGroupBox("Ask the team")
        ask_layout = QVBoxLayout(ask_box)
        ask_layout.addLayout(form)
        ask_layout.addLayout(buttons)
        ask_layout.addWidget(self.status_label)
        ask_layout.addWidget(self.message_label)

        self.turns = read_only_table(COLUMNS)
        for column, tip in (
            (P_WORKER, "The probability the coordinator gave the worker it chose"),
            (P_ROLE, "The probability the coordinator gave the role it chose"),
        ):
            header_item = self.turns.horizontalHeaderItem(column)
            if header_item is not None:
                header_item.setToolTip(tip)
        # the figures whole; the verdict and the reply share the width left (elided, whole in
        # their tooltips): the table fits its side of the page at 1280 px without scrolling
        tables.fit_width(self.turns, [VERDICT, REPLY])
        self.turns.itemSelectionChanged.connect(self.show_selected_turn)
        # short headings: the two charts side by side fit beside the question at 1280 px
        self.worker_bars = ProbabilityBars("Which worker")
        self.role_bars = ProbabilityBars("Which role")
        for bars in (self.worker_bars, self.role_bars):
            bars.setToolTip(
                "The coordinator's probabilities for this turn: the longer the bar, the "
                "likelier it was to pick that one; the chosen one is in bold"
            )
        self.reply_view = text_view()
        self.turn_label = QLabel("")
        self.turn_label.setWordWrap(True)
        # one above the other: side by side, the two charts' labels made the page wider
        # than a 1280-pixel window
        charts = QVBoxLayout()
        charts.addWidget(self.worker_bars)
        charts.addWidget(self.role_bars)
        turn_box = QGroupBox("The selected turn (the latest while the episode runs)")
        turn_layout = QVBoxLayout(turn_box)
        turn_layout.addLayout(charts, 1)
        turn_layout.addWidget(self.turn_label)
        turn_layout.addWidget(self.reply_view, 1)
        self.answer_view = text_view()
        self.total_label = QLabel("")
        self.total_label.setWordWrap(True)
        answer_box = QGroupBox("Answer")
        answer_layout = QVBoxLayout(answer_box)
        answer_layout.addWidget(self.answer_view)
        answer_layout.addWidget(self.total_label)
        episode = QSplitter(Qt.Orientation.Vertical)
        turns_box = QGroupBox("Turns, as they happen")
        turns_layout = QVBoxLayout(turns_box)
        turns_layout.addWidget(self.turns)
        episode.addWidget(turns_box)
        episode.addWidget(turn_box)
        episode.addWidget(answer_box)
        for index, stretch in enumerate((3, 3, 2)):
            episode.setStretchFactor(index, stretch)

        self.serve_button = QPushButton("Start server")
        self.serve_button.clicked.connect(self.toggle_server)
        self.url_label = QLabel("not serving")
        self.url_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.snippet = text_view()
        self.snippet.setMaximumHeight(170)
        self.copy_button = QPushButton("Copy snippet")
        self.copy_button.clicked.connect(
            lambda: QApplication.clipboard().setText(self.snippet.toPlainText())
        )
        serve_box = QGroupBox("OpenAI-compatible server")
        serve_layout = QVBoxLayout(serve_box)
        serve_row = QHBoxLayout()
        serve_row.addWidget(self.serve_button)
        serve_row.addWidget(self.url_label, 1)
        serve_row.addWidget(self.copy_button)
        serve_layout.addLayout(serve_row)
        serve_layout.addWidget(self.snippet)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(ask_box)
        left_layout.addWidget(serve_box)
        left_layout.addStretch(1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(episode)
        splitter.setStretchFactor(1, 2)
        # the episode's side the wider: its turns table fits without scrolling sideways at
        # 1280 px (the user's own sizes are remembered after that)
        splitter.setSizes([320, 960])
        self.splitter = splitter
        QVBoxLayout(self).addWidget(splitter)
        self.source_combo.currentIndexChanged.connect(self.describe_source)
        self._update_buttons()

    # ------------------------------------------------------------------ choosing

    def refresh_runs(self) -> None:
        """Reload the trained runs (finished or stopped) in the background."""
        self.in_background(
            "playground runs",
            lambda: evaluable_runs(self.workspace),
            self._on_runs,
            self._on_failed,
            context="read the runs",
        )

    def _on_runs(self, _context: Any, runs: list[Any]) -> None:
        chosen = self.source_combo.currentData()
        files = [
            (self.source_combo.itemText(i), self.source_combo.itemData(i))
            for i in range(self.source_combo.count())
            if str(self.source_combo.itemData(i)).startswith("file:")
        ]
        self.source_combo.clear()
        for record in runs:
            self.source_combo.addItem(
                f"{run_title(record)} · {started_text(record.created_at)}", f"run:{record.id}"
            )
            self.source_combo.setItemData(
                self.source_combo.count() - 1,
                f"{record.name}\nrun id {record.id}",
                Qt.ItemDataRole.ToolTipRole,
            )
        for text, data in files:
            self.source_combo.addItem(text, data)
        index = self.source_combo.findData(chosen) if chosen is not None else 0
        self.source_combo.setCurrentIndex(max(index, 0))
        self._update_buttons()

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a coordinator file", str(Path.home()), "Coordinator (*.safetensors)"
        )
        if path:
            self.choose_coordinator_file(path)

    def choose_coordinator_file(self, path: str | Path) -> None:
        """Use the coordinator file at ``path`` (read at once: its pool shows, or why not)."""
        data = f"file:{path}"
        if self.source_combo.findData(data) < 0:
            self.source_combo.addItem(f"file {Path(path).name}", data)
        self.source_combo.setCurrentIndex(self.source_combo.findData(data))
        self._update_buttons()

    def describe_source(self) -> None:
        """Show the chosen coordinator's pool (read in the background, no backbone loaded);
        a file that is no coordinator says so here, before anything is asked."""
        if self.source_combo.currentData() is None:
            self.pool_label.clear()
            return
        run, coordinator_file = self._source()
        self.message_label.clear()
        self.pool_label.setText("reading the coordinator…")
        self.in_background(
            "playground source",
            lambda: evaluation_source(self.workspace, run=run, coordinator_file=coordinator_file),
            self._on_source,
            self._on_source_failed,
            context=str(self.source_combo.currentData()),
        )

    def _on_source(self, chosen: str, source: Any) -> None:
        if chosen == str(self.source_combo.currentData()) and not self.running:
            self.pool_label.setText(
                f"pool: {pool_words(source.pool)} · "
                f"backbone {shown_path(source.backbone_model, short=True)} · "
                f"up to {plural(source.config.protocol.max_turns, 'turn')}"
            )
            self.pool_label.setToolTip(  # whole
                f"pool: {', '.join(source.pool)}\nbackbone: {source.backbone_model}"
            )
            self._describe_stand_ins(source.pool)

    def _describe_stand_ins(self, pool: Sequence[str]) -> None:
        """Say which of the team's workers cannot answer a question of your own (simulated
        or recorded) and why; offer the offline model in their place."""
        simulated = [w for w in pool if is_simulated(w)]
        recorded = [w for w in pool if is_recorded(w)]
        self.local_box.setVisible(bool(simulated or recorded))
        if not (simulated or recorded):
            self.simulated_label.setText("Every worker of this team is a real model.")
            return
        said = []
        if simulated:
            said.append(
                f"{_which(simulated, pool)} simulated: made-up specialists that answer only "
                'the bundled suites\' questions (a question of your own gets "I am not sure.").'
            )
        if recorded:
            said.append(
                f"{_which(recorded, pool)} recorded: real models' answers to the questions of "
                "a suite, so a question of your own has none."
            )
        self.simulated_label.setText(
            " ".join(said) + " For real answers, let the offline model answer in their place:"
        )

    def _on_source_failed(self, chosen: str, exc: Exception) -> None:
        if chosen == str(self.source_combo.currentData()):
            self.pool_label.setText("")
            self.show_error(f"Cannot read the coordinator: {background.readable(exc)}")

    def _source(self) -> tuple[str | None, str | None]:
        """The chosen coordinator: (a run's id, None) or (None, a coordinator file)."""
        kind, _, value = str(self.source_combo.currentData()).partition(":")
        return (value, None) if kind == "run" else (None, value)

    def _load_team(self) -> Any:
        run, coordinator_file = self._source()
        return load_team(
            self.workspace, run=run, coordinator_file=coordinator_file, backbone=self.backbone
        )

    # ------------------------------------------------------------------ asking

    @property
    def running(self) -> bool:
        """An episode is running."""
        return self._job is not None

    def ask(self) -> None:
        """Run one episode on the question in the background, showing each turn."""
        question = self.question.toPlainText().strip()
        if not question or self.running or self.source_combo.currentData() is None:
            if not question:
                self.show_error("Type a question first.")
            return
        self.message_label.clear()
        self.turns.setRowCount(0)
        self.turn_events = []
        self._cost_header()
        self._clear_turn_detail()
        self.answer_view.clear()
        self.total_label.clear()
        self.episode = None
        emit, loaded = self._events.turn.emit, self._events.team.emit
        local = not self.local_box.isHidden() and self.local_box.isChecked()

        async def episode() -> Any:
            import asyncio

            team = await asyncio.to_thread(self._load_team)
            loaded({**team.describe(), "model": team.model_id})
            reason = RunStopReason.ERROR  # how the question's `serve` run ended (Runs page)
            answerer = None
            try:  # aclose() also releases what a start() that failed halfway opened
                await team.start()
                if local:  # the offline model answers in the simulated workers' place
                    from workbench.core.workers.pool import build_pool

                    (answerer,) = build_pool([SMOLLM2_ID])
                    await asyncio.to_thread(answerer.prepare)
                    team.pool = stand_in(team.pool, answerer)
                answered = await team.answer([{"role": "user", "content": question}], listener=emit)
                reason = RunStopReason.DONE
                return answered
            except asyncio.CancelledError:
                reason = RunStopReason.STOPPED
                raise
            finally:
                await team.aclose(stop_reason=reason)
                if answerer is not None:
                    await answerer.aclose()

        self._job = background.start(
            self, "playground episode", episode, self._on_episode, self._on_failed, "ask"
        )
        if self._job is not None:
            self._job.finished.connect(self._on_job_done)
        self.status_label.setText(
            "Loading the coordinator and its language model"
            + (" and the offline model that answers" if local else "")
            + "… (the first time takes a minute)"
        )
        self._update_buttons()

    def stop(self) -> None:
        """Stop the running episode: the turns it played are stored, stop reason
        ``cancelled`` (none played: nothing is stored)."""
        if self._job is not None:
            self._job.cancel()
            self.status_label.setText("Stopping…")

    def _on_team_loaded(self, team: dict[str, Any]) -> None:
        self.pool_label.setText(f"{team['model']} · pool: {', '.join(team['pool'])}")
        if self.running:
            self.status_label.setText("The coordinator reads the question…")

    def show_event(self, event: TurnDecided | TurnReplied) -> None:
        """A turn as it happens: a new row with both probability bars when decided, its
        verdict, tokens, cost and reply filled in when the worker replied."""
        if isinstance(event, TurnDecided):
            row = self.turns.rowCount()
            self.turns.insertRow(row)
            self.turn_events.append([event, None])
            cells = {0: str(event.index + 1), 1: role_name(str(event.role)), 2: event.worker}
            cells[REPLY] = waiting_text(event.worker)
            for column, text in cells.items():
                self.turns.setItem(row, column, tables.Cell(text))
            self.turns.setCellWidget(row, P_WORKER, ProbabilityCell(event.worker_prob))
            self.turns.setCellWidget(row, P_ROLE, ProbabilityCell(event.role_prob))
            self.turns.selectRow(row)  # follow the episode: the newest turn is shown below
            self.status_label.setText(
                f"Turn {event.index + 1}: {event.worker} as {role_name(str(event.role))}, "
                "waiting for the reply…"
            )
            return
        row = event.index
        if not 0 <= row < self.turns.rowCount():
            return
        self.turn_events[row][1] = event
        kind = "simulated" if is_simulated(event.worker) else ""
        reply = _one_line(event.text)[:REPLY_CHARS]
        answered = {
            VERDICT: tables.Cell(f"error: {event.error}" if event.error else (event.verdict or "")),
            COST: tables.Cell(dollars(event.cost, "", 6), tooltip=dollars(event.cost, kind, 6)),
            REPLY: tables.Cell(reply, tooltip=f"{reply}\n\n{turn_figures(event)}"),
        }
        for column, cell in answered.items():
            self.turns.setItem(row, column, cell)
        self._cost_header()
        if self.running:
            self.status_label.setText(f"Turn {row + 1} answered")
        if self._selected_row() == row:
            self.show_selected_turn()

    def _cost_header(self) -> None:
        """The cost column's header says when its dollars are not real (as on Evaluate: once
        there, not on every cell; each cell's tooltip says it for its own turn)."""
        kind = spend_kind(decided.worker for decided, _ in self.turn_events)
        tables.header_item(self.turns, COST).setText("Cost" + (f"\n({kind})" if kind else ""))

    def _selected_row(self) -> int:
        rows = self.turns.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def show_selected_turn(self) -> None:
        """The selected turn below the table: both distributions as bars, the whole reply."""
        row = self._selected_row()
        if not 0 <= row < len(self.turn_events):
            self._clear_turn_detail()
            return
        decided, replied = self.turn_events[row]
        roles = [str(r) for r in ROLES]
        self.worker_bars.show_distribution(
            decided.pool, decided.worker_probs, decided.pool.index(decided.worker)
        )
        self.role_bars.show_distribution(
            [role_name(r) for r in roles], decided.role_probs, roles.index(str(decided.role))
        )
        head = (
            f"turn {row + 1}: {decided.role} by {decided.worker} · p(worker) "
            f"{decided.worker_prob:.2f} · p(role) {decided.role_prob:.2f}"
        )
        if replied is None:
            self.turn_label.setText(head)
            self.reply_view.setPlainText(tables.item(self.turns, row, REPLY).text())
            return
        self.turn_label.setText(f"{head} · {turn_figures(replied)}")
        self.reply_view.setPlainText(f"error: {replied.error}" if replied.error else replied.text)

    def _clear_turn_detail(self) -> None:
        self.worker_bars.clear_distribution()
        self.role_bars.clear_distribution()
        self.turn_label.clear()
        self.reply_view.clear()

    def _on_episode(self, _context: Any, episode: Any) -> None:
        self.episode = episode
        # the stored turns are the record: what the live rows could not hear (a Verifier
        # before any answer is never called) is filled in from them
        for row, turn in enumerate(episode.turns[: self.turns.rowCount()]):
            cells = {
                VERDICT: tables.Cell(turn_verdict(turn)),
                COST: tables.Cell(dollars(turn.cost, "", 6), tooltip=turn_cost(turn)),
            }
            if not turn.messages and not turn.error:
                cells[REPLY] = tables.Cell("(not called)")
            for column, cell in cells.items():
                self.turns.setItem(row, column, cell)
        self.answer_view.setPlainText(episode.answer or "(the team gave no answer)")
        spend = spend_kind(t.worker for t in episode.turns)
        self.total_label.setText(
            f"{len(episode.turns)} turns · {stop_sentence(str(episode.stop_reason))} · tokens "
            f"{episode.tokens_in}/{episode.tokens_out} · total cost "
            f"{dollars(episode.cost, spend, 6)} · episode {episode.id[:12]}"
        )
        self.status_label.setText("Done")

    def _on_failed(self, context: Any, exc: Exception) -> None:
        self.show_error(f"Cannot {context}: {background.readable(exc)}")
        if context == "ask":
            self.status_label.setText("Failed")

    def _on_job_done(self) -> None:
        if self.episode is None and self.status_label.text().startswith("Stopping"):
            played = sum(replied is not None for _, replied in self.turn_events)
            self.status_label.setText(
                f"Stopped ({played} played turn(s) stored, cancelled)"
                if played
                else "Stopped (not stored)"
            )
        self._job = None
        self._update_buttons()

    def _open_in_replay(self) -> None:
        if self.episode is not None:
            self.open_in_replay.emit(self.episode.id)

    # ------------------------------------------------------------------ serving

    def toggle_server(self) -> None:
        """Start the server for the chosen coordinator, or stop the running one."""
        if self.server is not None:
            server, self.server = self.server, None
            self.serve_button.setEnabled(False)
            self.in_background(
                "stop server",
                lambda: server.stop(60),
                self._on_server_stopped,
                self._on_failed,
                "stop the server",
            )
            return
        if self.source_combo.currentData() is None:
            return

        def start() -> Any:
            from workbench.core.serving.api import ServeSettings
            from workbench.core.serving.server import Server, loopback_key

            # on loopback, as `serve` does: the stored server key is required when there is one
            settings = ServeSettings(api_key=loopback_key())
            server = Server(self._load_team(), settings, port=0)
            server.start()
            return server

        self.serve_button.setEnabled(False)
        self.url_label.setText("starting…")
        self.in_background(
            "start server",
            start,
            self._on_server_started,
            self._on_server_failed,
            "start the server",
        )

    def _on_server_started(self, _context: Any, server: Any) -> None:
        self.server = server
        self.url_label.setText(server.url)
        self.url_label.setToolTip(
            "the stored server API key is required (Authorization: Bearer KEY)"
            if server.settings.api_key
            else "no API key needed on loopback"
        )
        self.pool_label.setText(
            f"{server.team.model_id} · pool: {', '.join(server.team.source.pool)}"
        )
        self.snippet.setPlainText(
            client_snippet(server.url, server.team.model_id, bool(server.settings.api_key))
        )
        self._update_buttons()

    def _on_server_failed(self, context: Any, exc: Exception) -> None:
        self.url_label.setText("not serving")
        self._on_failed(context, exc)
        self._update_buttons()

    def _on_server_stopped(self, _context: Any, _result: Any) -> None:
        self.url_label.setText("not serving")
        self.snippet.clear()
        self._update_buttons()

    # ------------------------------------------------------------------ state

    def _update_buttons(self) -> None:
        has_source = self.source_combo.currentData() is not None
        self.ask_button.setEnabled(has_source and not self.running)
        self.stop_button.setEnabled(self.running)
        self.replay_button.setEnabled(self.episode is not None and not self.running)
        self.serve_button.setEnabled(has_source or self.server is not None)
        self.serve_button.setText("Stop server" if self.server is not None else "Start server")
        self.copy_button.setEnabled(self.server is not None)

    def shutdown(self) -> None:
        """Stop the episode and the server; wait for every background job."""
        super().shutdown()
        if self.server is not None:
            self.server.stop(60)
            self.server = None
