"""The Playground page: ask a trained team a question and watch the episode live, each turn
as it happens (role, worker, both probabilities, reply, verdict, tokens, cost), then the
answer and its cost; Stop; "Open in Replay". The same page starts and stops the
OpenAI-compatible server for the chosen coordinator and shows its URL and a client snippet.

The page holds no domain logic: ``workbench.core.serving`` loads the team, runs and stores
the episode and tells each turn; the page shows what it hears.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from workbench.core.runs import evaluable_runs
from workbench.core.serving.team import TurnDecided, TurnReplied, load_team
from workbench.core.workspace import Workspace
from workbench.gui import background
from workbench.gui.qt import (
    ERROR_STYLE,
    QApplication,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QObject,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    Qt,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
    Signal,
    read_only_table,
    text_view,
)

log = logging.getLogger(__name__)

COLUMNS = ("Turn", "Role", "Worker", "p(worker)", "p(role)", "Verdict", "Tokens", "Cost", "Reply")


class _Events(QObject):
    """Carries the episode's turn events from its thread into the GUI thread."""

    turn = Signal(object)


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


class QtPlayground(QWidget):
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
        self._build()
        self.refresh_runs()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        self.source_combo = QComboBox()
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.file_button = QPushButton("Coordinator file…")
        self.file_button.clicked.connect(self._choose_file)
        source_row = QHBoxLayout()
        source_row.addWidget(self.source_combo, 1)
        source_row.addWidget(self.refresh_button)
        source_row.addWidget(self.file_button)
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
        self.status_label = QLabel("idle")
        self.message_label = QLabel("")
        self.message_label.setWordWrap(True)
        self.message_label.setStyleSheet(ERROR_STYLE)
        form = QFormLayout()
        form.addRow("Coordinator", source_row)
        form.addRow("Question", self.question)
        ask_box = QGroupBox("Ask the team")
        ask_layout = QVBoxLayout(ask_box)
        ask_layout.addLayout(form)
        ask_layout.addLayout(buttons)
        ask_layout.addWidget(self.status_label)
        ask_layout.addWidget(self.message_label)

        self.turns = read_only_table(COLUMNS)
        self.turns.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.turns.horizontalHeader().setStretchLastSection(True)
        self.answer_view = text_view()
        self.total_label = QLabel("")
        answer_box = QGroupBox("Answer")
        answer_layout = QVBoxLayout(answer_box)
        answer_layout.addWidget(self.answer_view)
        answer_layout.addWidget(self.total_label)
        episode = QSplitter(Qt.Orientation.Vertical)
        turns_box = QGroupBox("Turns, as they happen")
        QVBoxLayout(turns_box).addWidget(self.turns)
        episode.addWidget(turns_box)
        episode.addWidget(answer_box)

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
        QVBoxLayout(self).addWidget(splitter)
        self._update_buttons()

    # ------------------------------------------------------------------ choosing

    def refresh_runs(self) -> None:
        """Reload the trained runs (finished or stopped) in the background."""
        background.start(
            self,
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
            self.source_combo.addItem(f"run {record.id[:8]}  {record.name}", f"run:{record.id}")
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
        """Use the coordinator file at ``path`` (checked when the team loads)."""
        data = f"file:{path}"
        if self.source_combo.findData(data) < 0:
            self.source_combo.addItem(f"file {Path(path).name}", data)
        self.source_combo.setCurrentIndex(self.source_combo.findData(data))
        self._update_buttons()

    def _source(self) -> dict[str, str]:
        kind, _, value = str(self.source_combo.currentData()).partition(":")
        return {"run": value} if kind == "run" else {"coordinator_file": value}

    def _load_team(self) -> Any:
        return load_team(self.workspace, backbone=self.backbone, **self._source())

    # ------------------------------------------------------------------ asking

    @property
    def running(self) -> bool:
        """An episode is running."""
        return self._job is not None

    def ask(self) -> None:
        """Run one episode on the question in the background, showing each turn."""
        question = self.question.toPlainText().strip()
        if not question or self.running or self.source_combo.currentData() is None:
            self.message_label.setText(
                "type a question first" if not question else self.message_label.text()
            )
            return
        self.message_label.clear()
        self.turns.setRowCount(0)
        self.answer_view.clear()
        self.total_label.clear()
        self.episode = None
        emit = self._events.turn.emit

        async def episode() -> Any:
            import asyncio

            team = await asyncio.to_thread(self._load_team)
            try:  # aclose() also releases what a start() that failed halfway opened
                await team.start()
                return await team.answer([{"role": "user", "content": question}], listener=emit)
            finally:
                await team.aclose()

        self._job = background.start(
            self, "playground episode", episode, self._on_episode, self._on_failed, "ask"
        )
        if self._job is not None:
            self._job.finished.connect(self._on_job_done)
        self.status_label.setText("running: loading the team…")
        self._update_buttons()

    def stop(self) -> None:
        """Stop the running episode (it is not stored)."""
        if self._job is not None:
            self._job.cancel()
            self.status_label.setText("stopping…")

    def show_event(self, event: TurnDecided | TurnReplied) -> None:
        """A turn as it happens: a new row when decided, filled in when the worker replied."""
        if isinstance(event, TurnDecided):
            row = self.turns.rowCount()
            self.turns.insertRow(row)
            # argmax acting: the chosen worker and role are the most probable ones
            w, r = max(event.worker_probs), max(event.role_probs)
            cells = (str(event.index), str(event.role), event.worker, f"{w:.2f}", f"{r:.2f}")
            for column, text in enumerate(cells):
                self.turns.setItem(row, column, QTableWidgetItem(text))
            self.turns.setItem(row, 8, QTableWidgetItem("…"))
            self.status_label.setText(f"running: turn {event.index} ({event.role}, {event.worker})")
            return
        row = event.index
        if row >= self.turns.rowCount():
            return
        reply = f"error: {event.error}" if event.error else " ".join(event.text.split())
        cells = {
            5: event.verdict or "",
            6: f"{event.tokens_in}/{event.tokens_out}",
            7: f"${event.cost:.6f}",
            8: reply[:300],
        }
        for column, text in cells.items():
            self.turns.setItem(row, column, QTableWidgetItem(text))

    def _on_episode(self, _context: Any, episode: Any) -> None:
        self.episode = episode
        self.answer_view.setPlainText(episode.answer or "(the team gave no answer)")
        self.total_label.setText(
            f"{len(episode.turns)} turns · stop {episode.stop_reason} · tokens "
            f"{episode.tokens_in}/{episode.tokens_out} · total cost ${episode.cost:.6f} · "
            f"episode {episode.id[:12]}"
        )
        self.status_label.setText("done")

    def _on_failed(self, context: Any, exc: Exception) -> None:
        self.message_label.setText(f"Cannot {context}: {background.readable(exc)}")
        if context == "ask":
            self.status_label.setText("failed")

    def _on_job_done(self) -> None:
        if self.episode is None and self.status_label.text().startswith("stopping"):
            self.status_label.setText("stopped (not stored)")
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
            background.start(
                self,
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
            from workbench.core.serving.server import Server

            server = Server(self._load_team(), port=0)
            server.start()
            return server

        self.serve_button.setEnabled(False)
        self.url_label.setText("starting…")
        background.start(
            self,
            "start server",
            start,
            self._on_server_started,
            self._on_server_failed,
            "start the server",
        )

    def _on_server_started(self, _context: Any, server: Any) -> None:
        self.server = server
        self.url_label.setText(server.url)
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
        background.shutdown(self)
        if self.server is not None:
            self.server.stop(60)
            self.server = None
