"""The Runs page: the runs list (status, why it ended, generations; resume, open), a
compact new-run form (load a config TOML or the sandbox example), Start / Pause / Resume /
Stop, and live plots (training score and validation, step size, who answered), progress
with the time left and a log.

A view: configs, runs, statuses and which runs can resume come from core; the words, the
table's cells, the strip and the log's lines from ``runs_model``; training runs in a
``RunThread``. The form is ``qt_run_form.RunForm``, the list ``qt_runs_list.RunsList``,
the plots ``qt_run_plots.RunPlots`` (redrawn from the page's timer). A resumed run's plots
show its whole history: the stored generations, then the live ones.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from workbench.core.config import RunConfig
from workbench.core.jobs.learned import RunLearned, run_learned
from workbench.core.jobs.shared import RunSummary, StoredRun, list_runs, read_run
from workbench.core.printable import shown_path
from workbench.core.spend import Spend, dollars, spend_kind
from workbench.core.training.events import (
    GenerationStats,
    Preparing,
    RunFailed,
    RunFinished,
    RunStarted,
    where_episodes_ran,
)
from workbench.core.workspace import Workspace, resources_dir
from workbench.gui import background
from workbench.gui.page import Page
from workbench.gui.qt import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
    Signal,
)
from workbench.gui.qt_learned import LearnedView
from workbench.gui.qt_run_form import GENERATIONS_FORMAT, NewRunBox, choices
from workbench.gui.qt_run_plots import RunPlots
from workbench.gui.qt_runs_list import RunsList
from workbench.gui.run_thread import RunThread
from workbench.gui.runs_model import (
    ENDED_STATES,
    LEARNED_HEADING,
    LEARNED_NOT_PLAYED,
    STATE_WORDS,
    Eta,
    RunProgress,
    finished_lines,
    generation_lines,
    opened_line,
    read_config,
    spend_line,
    started_lines,
    state_after,
    strip_text,
    write_config,
)

log = logging.getLogger(__name__)

SANDBOX_EXAMPLE = resources_dir() / "examples" / "sandbox.toml"
# the multi-turn example: Thinker / Worker / Verifier coordination on the team pool
TEAM_EXAMPLE = resources_dir() / "examples" / "team.toml"
REDRAW_MS = 200


class QtRuns(Page):
    """The Runs page over a workspace; runs train in a child process (``RunThread``)."""

    runs_listed = Signal(int)  # after each runs-list read: how many runs there are
    config_done = Signal(bool)  # a config file was read or written (True) or not (False)
    strip_changed = Signal(str)  # the window's status strip: the current run in a line

    def __init__(self, workspace: Workspace, *, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.run_thread: RunThread | None = None
        self.config_file: str | None = None  # "reading" or "writing" a config file, or None
        self.progress_of = RunProgress()  # the run trained here, or the one opened
        self.eta = Eta()
        self._refreshing = False
        self._refresh_again = False
        self.opened: str | None = None  # the run whose stored plots are shown
        self._live: list[GenerationStats] = []  # this session's generations of the run
        self._history: list[GenerationStats] = []  # a resumed run's stored ones before
        self._log_entries: list[tuple[str, str]] = []  # (plain line, technical details)
        self._last_run_id: str | None = None  # the run that last ended here
        self.runs: dict[str, RunSummary] = {}  # the listed runs, as core summarised them
        self._listed: list[RunSummary] = []  # in the order core listed them
        self.listed = False  # read the runs list once yet? (the first listing opens the latest run)
        self._build()
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()
        self.load_config(SANDBOX_EXAMPLE, missing_ok=True)
        self.in_background(
            "run-form choices",
            lambda: choices(workspace),
            self._on_choices,
            self.failed,
            context="list the workers and suites",
        )
        self.refresh_runs()

    @property
    def state(self) -> str:
        """What the page does with its run (a key of ``runs_model.STATE_WORDS``)."""
        return self.progress_of.state

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        self.runs_list = RunsList()
        self.runs_table = self.runs_list.table
        self.refresh_button = self.runs_list.refresh_button
        self.open_button = self.runs_list.open_button
        self.resume_run_button = self.runs_list.resume_button
        self.runs_table.itemSelectionChanged.connect(self._update_buttons)
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.open_button.clicked.connect(self.open_selected)
        self.resume_run_button.clicked.connect(self.resume_selected)
        new_box = NewRunBox()
        # its widgets, named on the page (the page writes them, tests read them)
        self.form, self.source_label = new_box.form, new_box.source_label
        self.load_button, self.save_button = new_box.load_button, new_box.save_button
        self.example_button = new_box.example_button
        self.team_example_button = new_box.team_example_button
        self.start_button, self.pause_button = new_box.start_button, new_box.pause_button
        self.resume_button, self.stop_button = new_box.resume_button, new_box.stop_button
        self.status_label, self.message_label = new_box.status_label, new_box.message_label
        self.progress, self.eta_label = new_box.progress, new_box.eta_label
        self.spend_label, self.executor_label = new_box.spend_label, new_box.executor_label
        self.load_button.clicked.connect(self._choose_config)
        self.save_button.clicked.connect(self._choose_save_path)
        self.example_button.clicked.connect(self.load_example)
        self.team_example_button.clicked.connect(lambda: self.load_config(TEAM_EXAMPLE))
        self.start_button.clicked.connect(self.start)
        self.pause_button.clicked.connect(self.pause)
        self.resume_button.clicked.connect(self.resume)
        self.stop_button.clicked.connect(self.stop)
        # plots: created once, fed with setData from the timer
        self.plots = RunPlots()
        # the buffers and plot items, named on the page too (tests and screenshots read them)
        # (``x`` hides QWidget.x(), which no code of ours calls)
        self.x, self.usage = self.plots.x, self.plots.usage  # type: ignore[method-assign,assignment]
        self.curves, self.heatmap = self.plots.curves, self.plots.heatmap
        self.validation_points = self.plots.validation_points
        # what the opened (or just ended) run learned
        self.learned_view = LearnedView("What it learned: shown once a run has been validated.")
        plots = QSplitter(Qt.Orientation.Vertical)
        for w in (*self.plots.widgets, self.learned_view, self._build_log()):
            plots.addWidget(w)
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(new_box)
        left.addWidget(self.runs_list)
        left.setStretchFactor(0, 3)
        left.setStretchFactor(1, 2)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(plots)
        splitter.setStretchFactor(1, 2)
        # at first, room for the runs table's columns beside the plots (the user's own
        # sizes are remembered after that)
        splitter.setSizes([600, 660])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)
        self._update_buttons()

    def _build_log(self) -> QWidget:
        """The run's log in words; "Technical details" adds each line's figures."""
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.details_box = QCheckBox("Technical details")
        self.details_box.setToolTip(
            "Also show each generation's technical figures: the step size (sigma), where the "
            "coordinator's time went (tokens, forwards), fp32 rechecks"
        )
        self.details_box.toggled.connect(lambda _: self._show_log())
        log_box = QWidget()
        log_layout = QVBoxLayout(log_box)
        log_layout.setContentsMargins(0, 0, 0, 0)
        log_head = QHBoxLayout()
        log_head.addWidget(QLabel("What happened"))
        log_head.addStretch(1)
        log_head.addWidget(self.details_box)
        log_layout.addLayout(log_head)
        log_layout.addWidget(self.log_view)
        return log_box

    # ------------------------------------------------------------------ config

    def _choose_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Load a run config", str(Path.home()), "TOML (*.toml)"
        )
        if path:
            self.load_config(path)

    def load_example(self) -> None:
        """Load the sandbox example (the simulated team, offline and free) into the form."""
        self.load_config(SANDBOX_EXAMPLE)

    def load_config(self, path: str | Path, *, missing_ok: bool = False) -> None:
        """Load a run config TOML into the form, read in the background (the Settings
        page's device and cache policy fill what it leaves out); a bad file is reported on
        the page and the form keeps what it had. The latest file asked for wins.
        ``missing_ok``: a file that is not there leaves the form as it is, silently (the
        bundled example, in a build without it)."""
        self.config_file = "reading"
        self._update_buttons()
        self.in_background(
            "read config file",
            lambda: read_config(path, missing_ok=missing_ok),
            self._on_config_read,
            self._on_config_failed,
            context=str(path),
            latest=True,
        )

    def _on_config_read(self, path: str, config: RunConfig | None) -> None:
        self.config_file = None
        if config is not None:
            self.form.set_config(config)
            self._show_source(path)
            self.message_label.clear()
        self._update_buttons()
        self.config_done.emit(config is not None)

    def _show_source(self, path: str) -> None:
        """Where the form's settings came from: the example's name, or the file's path
        shortened (the whole path in the tooltip)."""
        examples = {
            str(SANDBOX_EXAMPLE): "the sandbox example",
            str(TEAM_EXAMPLE): "the team example",
        }
        self.source_label.setText(
            examples.get(str(path)) or shown_path(path, self.workspace.root, short=True)
        )
        self.source_label.setToolTip(str(path))

    def _on_config_failed(self, path: str, exc: Exception) -> None:
        self.config_file = None
        self._update_buttons()
        self.show_error(f"Cannot load {shown_path(path)}: {background.readable(exc)}")
        self.config_done.emit(False)

    def _choose_save_path(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the run config", str(Path.home() / "run.toml"), "TOML (*.toml)"
        )
        if path:
            self.save_config(path)

    def save_config(self, path: str | Path) -> bool:
        """Write the form as a config TOML (what ``trinity-workbench train`` reads), in the
        background. False (the wrong key named on the page) when the form is no config;
        a file that cannot be written is reported on the page once the write fails."""
        config = self.form_config()
        if config is None:
            return False
        text = config.to_toml()
        self.config_file = "writing"
        self._update_buttons()
        self.in_background(  # every write's outcome is reported (a failure is never dropped)
            "write config file",
            lambda: write_config(path, text),
            self._on_config_written,
            self._on_config_write_failed,
            context=str(path),
        )
        return True

    def _on_config_written(self, path: str, _result: Any) -> None:
        self.config_file = None
        self._show_source(path)
        self.log(f"saved the run config to {shown_path(path, self.workspace.root)}")
        self._update_buttons()
        self.config_done.emit(True)

    def _on_config_write_failed(self, path: str, exc: Exception) -> None:
        self.config_file = None
        self._update_buttons()
        self.show_error(f"Cannot write {shown_path(path)}: {background.readable(exc)}")
        self.config_done.emit(False)

    def form_config(self) -> RunConfig | None:
        """The form as a config, or None with the wrong key named on the page."""
        try:
            return self.form.config()
        except Exception as exc:  # ConfigError names the key and the fix
            self.show_error(str(exc))
            return None

    def _on_choices(self, _context: Any, choices: tuple[list[str], list[str]]) -> None:
        workers, suites = choices
        self.form.offer_workers(workers)
        self.form.offer_suites(suites)

    # ------------------------------------------------------------------ controls

    @property
    def running(self) -> bool:
        return self.run_thread is not None and self.run_thread.isRunning()

    def start(self) -> None:
        if self.running:
            return
        if self.config_file == "reading":  # Start would run the form, not the file coming in
            self.say("A config file is being read into the form: start once it shows.")
            return
        config = self.form_config()
        if config is not None:
            self._launch(RunThread(config, self.workspace, parent=self))

    def resume_selected(self) -> None:
        run_id = self.selected_run_id()
        if run_id is None or self.running:
            return
        self._launch(RunThread(None, self.workspace, resume=run_id, parent=self))

    def _launch(self, thread: RunThread) -> None:
        self.clear_plots()
        self.learned_view.clear_learned()  # the previous run's lesson is not this one's
        self.message_label.clear()
        self._live, self._history = [], []
        self.run_thread = thread
        self.progress_of = RunProgress(
            state="starting",
            run_id=thread.resume_id,
            name=thread.config.run.name if thread.config is not None else "",
        )
        self.progress.setRange(0, 0)  # busy: nothing to count until the run has started
        thread.started_run.connect(self._on_started)
        thread.preparing.connect(self._on_preparing)
        thread.generation.connect(self._on_generation)
        thread.finished_run.connect(self._on_finished)
        thread.failed.connect(self._on_failed)
        thread.finished.connect(self._on_thread_done)
        self._set_state("starting")
        if thread.resume_id:
            what = f"run {thread.resume_id[:8]}"
        else:
            assert thread.config is not None  # a new run starts from a config
            what = f"'{thread.config.run.name}'"
        self.log(
            "starting "
            + what
            + ": loading the language model the coordinator reads with (the first start on "
            "this computer also converts it once, a minute or more)"
        )
        thread.start()

    def pause(self) -> None:
        if self.run_thread is not None and self.running and self.state == "running":
            self.run_thread.pause()
            self._set_state("paused")
            self.log("paused (the current episodes finish first)")

    def resume(self) -> None:
        if self.run_thread is not None and self.running and self.state == "paused":
            self.run_thread.resume_run()
            self._set_state("running")
            self.log("resumed")

    def stop(self) -> None:
        if self.run_thread is not None and self.running:
            self.run_thread.stop()
            self._set_state("stopping")
            self.log("stopping: the run ends with a checkpoint")

    def stop_and_wait(self, timeout_ms: int = 120_000) -> bool:
        """Stop a running run (it checkpoints) and wait for its thread; used on close."""
        if self.run_thread is None:
            return True
        self.run_thread.stop()
        if self.run_thread.wait(timeout_ms):
            return True
        self.run_thread.kill()  # it resumes from its last completed generation
        return bool(self.run_thread.wait(10_000))

    # ------------------------------------------------------------------ events

    def _on_started(self, event: RunStarted) -> None:
        p = self.progress_of
        p.run_id, p.name = event.run_id, event.name
        p.budget, p.generation = event.budget_generations, event.start_generation
        self.eta.start()
        self.progress.setRange(0, max(p.budget, 1))
        self.progress.setValue(event.start_generation)
        if self.state == "starting":
            self._set_state("running")
        # where the episodes run: this computer, or Ray actors on the cluster's nodes
        self.executor_label.setText(where_episodes_ran(event.executor, event.actors, event.nodes))
        self.log(*started_lines(event))
        if event.start_generation:  # resumed: the generations before it, from the store
            self.in_background(
                "read the resumed run's history",
                lambda: read_run(self.workspace, event.run_id),
                self._on_history,
                self.failed,
                context="read the run's earlier generations",
            )
        self.refresh_runs()

    def _on_preparing(self, event: Preparing) -> None:
        """A step before the first generation (a routing table's answers graded, its
        questions read by the backbone) counted in the progress bar, in its words; the bar
        counts generations again once the step is done."""
        if event.done < event.total:
            self.progress.setFormat(f"{event.words}: %v of %m questions")
            self.progress.setRange(0, event.total)
            self.progress.setValue(event.done)
            return
        self._count_generations()

    def _count_generations(self) -> None:
        """The bar counts the run's generations again (after a step before the first)."""
        self.progress.setFormat(GENERATIONS_FORMAT)
        self.progress.setRange(0, max(self.progress_of.budget, 1))
        self.progress.setValue(self.progress_of.generation)

    def _on_history(self, _context: Any, stored: StoredRun) -> None:
        if stored.summary.id != self.progress_of.run_id:
            return  # another run by now
        first = self._live[0].generation if self._live else None
        self._history = [s for s in stored.generations if first is None or s.generation < first]
        self._replot()
        if self.progress_of.best is None and self._history:
            self.progress_of.best = max(s.best for s in self._history)
        self._emit_strip()

    def _on_generation(self, event: GenerationStats) -> None:
        self._live.append(event)
        self.plots.add_stats(event)
        p = self.progress_of
        p.generation = event.generation + 1
        p.best = event.best if p.best is None else max(p.best, event.best)
        kind = spend_kind(self.usage.workers)  # the workers called so far
        p.spent = dollars(Spend.of(event.totals).dollars, kind)
        p.eta = self.eta.left(p.generation, p.budget)
        self.progress.setValue(p.generation)
        self.eta_label.setText(p.eta)
        self.spend_label.setText(spend_line(Spend.of(event.totals), kind))
        self._emit_strip()
        self._show_runs()  # the live run's row: its generation and state
        self.log(*generation_lines(event, p.budget, kind))

    def _on_finished(self, event: RunFinished) -> None:
        self._set_state(state_after(event))
        self.progress_of.eta = ""
        self.eta_label.setText("")
        self.log(*finished_lines(event))

    def _on_failed(self, event: RunFailed) -> None:
        self._set_state("failed")
        self.show_error(
            f"The run failed: {event.error}. Details are in the log; resume it from the runs list."
        )

    def _on_thread_done(self) -> None:
        thread, self.run_thread = self.run_thread, None
        if self.progress.maximum() == 0:  # it ended before it started: no more busy bar
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
        if self.progress.format() != GENERATIONS_FORMAT:  # stopped while preparing
            self._count_generations()
        if self.state not in ENDED_STATES:
            self._set_state("idle")
        self.redraw()
        self.refresh_runs()
        self._update_buttons()
        run_id = getattr(thread, "run_id", None)
        self._last_run_id = run_id
        if run_id is not None:
            self.show_learned_of(run_id)

    def show_learned_of(self, run_id: str) -> None:
        """Show what run ``run_id`` learned, read in the background; a run whose result
        cannot be read (no checkpoint yet, a damaged one) says why in the log."""
        self.in_background(
            "read what the run learned",
            lambda: run_learned(self.workspace, run_id, gone_ok=True),
            self._on_learned,
            self._on_learned_failed,
            context=run_id,
        )

    def _on_learned_failed(self, run_id: str, exc: Exception) -> None:
        self.log(f"cannot read what run {run_id[:8]} learned: {background.readable(exc)}")

    def _on_learned(self, run_id: str, learned: RunLearned) -> None:
        if self.running or run_id not in (self.opened, self._last_run_id):
            return  # another run is shown by now
        self.learned_view.show_learned(
            learned.categories,
            LEARNED_HEADING.format(run=run_id[:8]),
            LEARNED_NOT_PLAYED.format(run=run_id[:8]) if learned.unplayed else None,
        )

    # ------------------------------------------------------------------ plots

    def clear_plots(self) -> None:
        self.spend_label.clear()
        self.plots.clear()

    def _replot(self) -> None:
        """The plots again from the stored history and the live generations."""
        self.plots.clear()
        for stats in (*self._history, *self._live):
            self.plots.add_stats(stats)

    def redraw(self) -> None:
        """Push the buffers to the plot items (from the timer, not per event)."""
        self.plots.redraw()

    # ------------------------------------------------------------------ runs list

    def refresh_runs(self) -> None:
        """Read the runs list in the background (at most one read in flight)."""
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self.in_background(
            "runs list",
            lambda: list_runs(self.workspace),
            self._on_runs,
            self._on_runs_failed,
        )

    def _on_runs_failed(self, _context: Any, exc: Exception) -> None:
        self._refreshing = False
        self.show_error(
            f"Cannot read the runs of workspace {shown_path(self.workspace.root)}: {exc}"
        )

    def _on_runs(self, _context: Any, runs: list[RunSummary]) -> None:
        self._refreshing = False
        if self._refresh_again:
            self._refresh_again = False
            self.refresh_runs()
        selected = self.selected_run_id()
        self._listed = runs
        self.runs = {run.id: run for run in runs}
        self._show_runs()
        first_listing = not self.listed
        self.listed = True
        if first_listing and runs and selected is None and not self.running:
            # a newcomer's first look after training: the latest run with its plots
            self.runs_table.selectRow(0)
            self.open_selected()
        self._update_buttons()
        self.runs_listed.emit(len(runs))

    def _show_runs(self) -> None:
        self.runs_list.show_runs(self._listed, self.progress_of if self.running else None)

    def row_of(self, run_id: str) -> int | None:
        """The row where run ``run_id`` is shown now (the table can be sorted)."""
        return self.runs_list.row_of(run_id)

    def status_of(self, run_id: str) -> str | None:
        """The run's effective status as core read it (never a table cell's text)."""
        run = self.runs.get(run_id)
        return None if run is None else run.status

    def select_run(self, run_id: str) -> None:
        self.runs_list.select(run_id)

    def selected_run_id(self) -> str | None:
        return self.runs_list.selected()

    def can_resume(self, run_id: str) -> bool:
        run = self.runs.get(run_id)
        return run is not None and run.resumable

    def open_selected(self) -> None:
        """Show a stored run's plots, read from the store in the background."""
        run_id = self.selected_run_id()
        if run_id is None or self.running:
            return
        self.in_background(
            "open run",
            lambda: read_run(self.workspace, run_id),
            self._on_opened,
            self._on_open_failed,
            context=run_id,
        )

    def _on_open_failed(self, run_id: str, exc: Exception) -> None:
        self.show_error(f"Cannot open run {run_id[:8]}: {background.readable(exc)}")

    def _on_opened(self, run_id: str, stored: StoredRun) -> None:
        if self.running:
            return
        self.opened = run_id
        self.learned_view.clear_learned()
        self.show_learned_of(run_id)
        self.clear_plots()
        self._history, self._live = list(stored.generations), []
        self._replot()
        generations = len(stored.generations)
        self.progress.setRange(0, max(stored.budget_generations, 1))
        self.progress.setValue(generations)
        self.eta_label.setText("")
        self.spend_label.setText(spend_line(stored.spend, stored.spend_kind))
        self.executor_label.setText(stored.where)
        self.log(opened_line(stored))
        self.redraw()
        self.progress_of = RunProgress(  # a stored run is shown: none is trained
            run_id=run_id,
            name=stored.summary.name,
            generation=generations,
            budget=stored.budget_generations,
            best=max((s.best for s in stored.generations), default=None),
            spent=dollars(stored.spend.dollars, stored.spend_kind),
        )
        self.status_label.setText(STATE_WORDS["idle"])
        self._emit_strip(stored.summary.status)

    # ------------------------------------------------------------------ state

    def _set_state(self, state: str) -> None:
        self.progress_of.state = state
        self.status_label.setText(STATE_WORDS.get(state, state))
        self._update_buttons()
        self._emit_strip()
        if self._listed:
            self._show_runs()

    def strip_text(self, opened_status: str | None = None) -> str:
        """The current run in one line, for the window's status strip."""
        return strip_text(self.progress_of, self.opened is not None, opened_status)

    def _emit_strip(self, opened_status: str | None = None) -> None:
        self.strip_changed.emit(self.strip_text(opened_status))

    def _update_buttons(self) -> None:
        running = self.running or self.state == "starting"
        # while a config file is read into the form (or the form written), the form is not
        # what Start would run nor what the file will hold: one thing at a time
        file_busy = self.config_file is not None
        self.start_button.setEnabled(not running and not file_busy)
        self.load_button.setEnabled(not running and not file_busy)
        self.save_button.setEnabled(not file_busy)
        self.example_button.setEnabled(not running and not file_busy)
        self.team_example_button.setEnabled(not running and not file_busy)
        self.pause_button.setEnabled(running and self.state == "running")
        self.resume_button.setEnabled(running and self.state == "paused")
        self.stop_button.setEnabled(running and self.state in ("running", "paused", "starting"))
        selected = self.selected_run_id()
        self.open_button.setEnabled(selected is not None and not running)
        self.resume_run_button.setEnabled(
            selected is not None and not running and self.can_resume(selected)
        )

    def show_error(self, message: str) -> None:
        super().show_error(message)
        self.log("error: " + message)

    def log(self, line: str, details: str = "") -> None:
        """A line of the run's log, in words; ``details`` (technical figures) show too
        when "Technical details" is checked."""
        entry = (time.strftime("%H:%M:%S ") + line, details)
        self._log_entries.append(entry)
        del self._log_entries[:-5000]
        self.log_view.appendPlainText(self._log_text(entry))

    def _log_text(self, entry: tuple[str, str]) -> str:
        line, details = entry
        return f"{line}\n    ({details})" if details and self.details_box.isChecked() else line

    def _show_log(self) -> None:
        self.log_view.setPlainText("\n".join(self._log_text(e) for e in self._log_entries))
        self.log_view.verticalScrollBar().setValue(self.log_view.verticalScrollBar().maximum())
