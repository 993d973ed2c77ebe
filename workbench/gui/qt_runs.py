"""The Runs page: the runs list (status, stop reason, generations; resume, open), a compact
new-run form (load a config TOML or the sandbox example), Start / Pause / Resume / Stop,
and live plots (fitness, sigma, model x role usage heatmap), progress with ETA and a log.

The page holds no domain logic: configs, runs, statuses and which runs can resume all come
from core; training runs in a ``RunThread``. The form is ``qt_run_form.RunForm``, the plots
``qt_run_plots.RunPlots`` (redrawn from the page's timer).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from workbench.core.config import ConfigError, RunConfig
from workbench.core.jobs.learned import run_learned
from workbench.core.jobs.shared import RunSummary, effective_status, list_runs
from workbench.core.printable import shown_path
from workbench.core.records import RunStopReason
from workbench.core.settings import load_run_config
from workbench.core.spend import dollars, recorded_spend, spend_kind
from workbench.core.store import Store
from workbench.core.training.events import (
    GenerationStats,
    RunFailed,
    RunFinished,
    RunStarted,
    where_episodes_ran,
)
from workbench.core.workspace import Workspace, resources_dir
from workbench.gui import background, tables
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
    Signal,
    read_only_table,
)
from workbench.gui.qt_learned import LearnedView
from workbench.gui.qt_run_form import RunForm
from workbench.gui.qt_run_plots import RunPlots
from workbench.gui.run_thread import RunThread
from workbench.gui.words import status_words, stop_sentence

log = logging.getLogger(__name__)

SANDBOX_EXAMPLE = resources_dir() / "examples" / "sandbox.toml"
# the multi-turn example: Thinker / Worker / Verifier coordination on the team pool
TEAM_EXAMPLE = resources_dir() / "examples" / "team.toml"
REDRAW_MS = 200


def _choices(workspace: Workspace) -> tuple[list[str], list[str]]:
    """The workers a pool may name and the suites there are (read in the background)."""
    from workbench.core.tasks.suites import list_suites
    from workbench.core.workers.pool import builtin_workers
    from workbench.core.workers.recorded import imported_pool_names
    from workbench.core.workers.registry import Registry
    from workbench.core.workers.simulated import POOLS

    # each built-in sandbox pool as a whole ("sandbox", "team"), then its single workers,
    # then the recorded pools (CHAMP's built in, those imported into the workspace)
    workers = [*POOLS, *(w.id for w in builtin_workers())]
    workers += [f"recorded:{n}" for n in ("champ", *imported_pool_names(workspace))]
    try:
        workers += [spec.id for spec in Registry.open().list()]
    except Exception:  # a broken workers.toml is the Workers page's to report
        log.warning("cannot list registered workers", exc_info=True)
    return workers, [info.name for info in list_suites(workspace)]


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
        self.state = "idle"
        self._budget_generations = 0
        self._first_generation = 0
        self._started_at = 0.0
        self._done_live = 0
        self._refreshing = False
        self._refresh_again = False
        self.opened: str | None = None  # the run whose stored plots are shown
        self._run_name = ""  # the run in progress (or the one opened), for the strip
        self._generation = 0  # generations done (numbered from 1)
        self._best: float | None = None  # its best fitness so far
        self._spent = ""  # what it spent, in words
        self._log_entries: list[tuple[str, str]] = []  # (plain line, technical details)
        self._last_run_id: str | None = None  # the run that last ended here
        self.runs: dict[str, RunSummary] = {}  # the listed runs, as core summarised them
        self.listed = False  # read the runs list once yet? (the first listing opens the latest run)
        self._build()
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()
        self.load_config(SANDBOX_EXAMPLE, missing_ok=True)
        self.in_background(
            "run-form choices",
            lambda: _choices(workspace),
            self._on_choices,
            self.failed,
            context="list the workers and suites",
        )
        self.refresh_runs()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        # runs list
        self.runs_table = read_only_table(RUN_COLUMNS)
        tables.sortable(self.runs_table)
        self.runs_table.sortByColumn(RUN_COLUMNS.index("Started"), Qt.SortOrder.DescendingOrder)
        self.runs_table.setMinimumHeight(140)
        self.runs_table.itemSelectionChanged.connect(self._update_buttons)
        self.refresh_button = QPushButton("Refresh")
        self.open_button = QPushButton("Open")
        self.resume_run_button = QPushButton("Resume run")
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.open_button.clicked.connect(self.open_selected)
        self.resume_run_button.clicked.connect(self.resume_selected)
        runs_buttons = QHBoxLayout()
        for b in (self.refresh_button, self.open_button, self.resume_run_button):
            runs_buttons.addWidget(b)
        runs_buttons.addStretch(1)
        runs_box = QGroupBox("Runs in this workspace")
        runs_layout = QVBoxLayout(runs_box)
        runs_layout.addWidget(self.runs_table)
        runs_layout.addLayout(runs_buttons)

        # new run form
        self.form = RunForm()
        self.source_label = QLabel("defaults")
        self.source_label.setWordWrap(True)
        self.load_button = QPushButton("Open…")
        self.load_button.setToolTip("Load a run config file (TOML) into the form")
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip(
            "Save the form as a run config file (what trinity-workbench train reads)"
        )
        self.example_button = QPushButton("Sandbox example")
        self.example_button.setToolTip(
            "One turn per question on the simulated team (offline, free): it learns which "
            "simulated specialist answers which kind of question, in about 5 minutes"
        )
        self.load_button.clicked.connect(self._choose_config)
        self.save_button.clicked.connect(self._choose_save_path)
        self.example_button.clicked.connect(self.load_example)
        self.team_example_button = QPushButton("Team example")
        self.team_example_button.setToolTip(
            "Several turns per question on the simulated team (Thinker, Worker, Verifier): "
            "slower, it learns who plans, who answers and who checks"
        )
        self.team_example_button.clicked.connect(lambda: self.load_config(TEAM_EXAMPLE))
        source_row = QFormLayout()
        source_row.addRow("Settings from", self.source_label)
        load_row = QHBoxLayout()
        for b in (
            self.load_button,
            self.save_button,
            self.example_button,
            self.team_example_button,
        ):
            load_row.addWidget(b)
        load_row.addStretch(1)
        self.start_button = QPushButton("Start")
        self.pause_button = QPushButton("Pause")
        self.resume_button = QPushButton("Resume")
        self.stop_button = QPushButton("Stop")
        self.start_button.clicked.connect(self.start)
        self.pause_button.clicked.connect(self.pause)
        self.resume_button.clicked.connect(self.resume)
        self.stop_button.clicked.connect(self.stop)
        control_row = QHBoxLayout()
        for b in (self.start_button, self.pause_button, self.resume_button, self.stop_button):
            control_row.addWidget(b)
        self.status_label = QLabel(STATE_WORDS["idle"])
        self.message_label = message_label()
        self.progress = QProgressBar()
        self.progress.setFormat("generation %v of %m")
        self.eta_label = QLabel("")
        self.spend_label = QLabel("")
        self.executor_label = QLabel("")
        new_box = QGroupBox("New run")
        new_layout = QVBoxLayout(new_box)
        new_layout.addWidget(self.form, 1)
        new_layout.addLayout(source_row)
        new_layout.addLayout(load_row)
        new_layout.addLayout(control_row)
        status_row = QHBoxLayout()
        status_row.addWidget(QLabel("Status:"))
        status_row.addWidget(self.status_label, 1)
        status_row.addWidget(self.eta_label)
        new_layout.addLayout(status_row)
        new_layout.addWidget(self.progress)
        new_layout.addWidget(self.spend_label)
        new_layout.addWidget(self.executor_label)
        new_layout.addWidget(self.message_label)

        # plots: created once, fed with setData from the timer
        self.plots = RunPlots()
        # the buffers and plot items, named on the page too (tests and screenshots read them)
        # (``x`` hides QWidget.x(), which no code of ours calls)
        self.x, self.usage = self.plots.x, self.plots.usage  # type: ignore[method-assign,assignment]
        self.curves, self.heatmap = self.plots.curves, self.plots.heatmap
        self.validation_points = self.plots.validation_points
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

        # what the opened (or just ended) run learned
        self.learned_view = LearnedView("What it learned: shown once a run has been validated.")

        plots = QSplitter(Qt.Orientation.Vertical)
        for w in (*self.plots.widgets, self.learned_view, log_box):
            plots.addWidget(w)
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(new_box)
        left.addWidget(runs_box)
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
        self.run_thread = thread
        self._run_name = thread.config.run.name if thread.config is not None else ""
        self._generation, self._best, self._spent = 0, None, ""
        self.progress.setRange(0, 0)  # busy: nothing to count until the run has started
        thread.started_run.connect(self._on_started)
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
        self._budget_generations = int(event.budget.get("generations") or 0)
        self._first_generation = event.start_generation
        self._started_at = time.monotonic()
        self._done_live = 0
        self.progress.setRange(0, max(self._budget_generations, 1))
        self.progress.setValue(event.start_generation)
        self._run_name, self._generation = event.name, event.start_generation
        if self.state == "starting":
            self._set_state("running")
        # where the episodes run: this computer, or Ray actors on the cluster's nodes
        self.executor_label.setText(where_episodes_ran(event.executor, event.actors, event.nodes))
        self.log(
            f"run {event.run_id[:8]} '{event.name}' started: each generation tries "
            f"{event.popsize} candidate coordinators on {event.rollouts} questions each; "
            f"generation {event.start_generation + 1} is running (the first reads every "
            f"question once, the slowest){event.executor_note()}",
            f"{event.n_params} parameters, population {event.popsize} x {event.rollouts} "
            f"rollouts, from stored generation {event.start_generation}",
        )
        self.refresh_runs()

    def _on_generation(self, event: GenerationStats) -> None:
        self._add_generation(
            event.generation,
            event.best,
            event.mean,
            event.median,
            event.worst,
            event.sigma,
            event.validation,
            event.usage,
        )
        self._done_live += 1
        self.progress.setValue(event.generation + 1)
        remaining = self._budget_generations - (event.generation + 1)
        if remaining > 0 and self._done_live:
            per = (time.monotonic() - self._started_at) / self._done_live
            self.eta_label.setText(f"ETA {_duration(per * remaining)}")
        else:
            self.eta_label.setText("")
        t = event.totals
        spend = spend_kind(self.usage.workers)  # the workers called so far
        self._spent = dollars(t.get("dollars", 0.0), spend)
        self._generation = event.generation + 1
        self._best = event.best if self._best is None else max(self._best, event.best)
        self.spend_label.setText(
            f"Spent: {int(t.get('episodes', 0))} episodes, {int(t.get('calls', 0))} calls, "
            f"{self._spent}, {t.get('minutes', 0.0):.1f} min"
        )
        self._emit_strip()
        val = (
            ""
            if event.validation is None
            else f"; on the validation questions {event.validation:.0%} right"
        )
        of = f" of {self._budget_generations}" if self._budget_generations else ""
        self.log(
            f"generation {event.generation + 1}{of}: the best candidate answered "
            f"{event.best:.0%} right, the average {event.mean:.0%}{val}; {event.calls} "
            f"worker calls, {dollars(event.dollars, spend)}, {event.wall_s:.1f} s",
            f"best {event.best:.3f}, mean {event.mean:.3f}, median {event.median:.3f}, worst "
            f"{event.worst:.3f}, sigma {event.sigma:.4f}{event.opening_note()}; coordinator "
            f"{event.coordinator_s:.1f} s: {event.tokens_forwarded} tokens in {event.batches} "
            f"forwards of {event.mean_batch:.1f} transcripts{event.recheck_note()}; workers "
            f"{event.worker_s:.1f} s, {event.cache_hits} cached replies",
        )

    def _on_finished(self, event: RunFinished) -> None:
        self._set_state("stopped" if event.stop_reason == RunStopReason.STOPPED else "finished")
        self.eta_label.setText("")
        best = (
            ""
            if event.best_validation is None
            else f"; its best coordinator answered {event.best_validation:.0%} of the "
            "validation questions right"
        )
        self.log(
            f"run {event.run_id[:8]} ended after {event.generations} generations: "
            f"{stop_sentence(event.stop_reason).lower()}{best}",
            f"stop reason {event.stop_reason}",
        )

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
        if self.state not in ("finished", "stopped", "failed"):
            self._set_state("idle")
        self.redraw()
        self.refresh_runs()
        self._update_buttons()
        run_id = getattr(thread, "run_id", None)
        self._last_run_id = run_id
        if run_id is not None:
            self.show_learned_of(run_id)

    def _ended_run_id(self) -> str | None:
        return self._last_run_id

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

    def _on_learned(self, run_id: str, learned: list[Any]) -> None:
        if self.running or run_id not in (self.opened, self._ended_run_id()):
            return  # another run is shown by now
        self.learned_view.show_learned(learned, _LEARNED_HEADING.format(run=run_id[:8]))

    # ------------------------------------------------------------------ plots

    def clear_plots(self) -> None:
        self.spend_label.clear()
        self.plots.clear()

    def _add_generation(self, *args: Any) -> None:
        self.plots.add_generation(*args)

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
        self.runs = {run.id: run for run in runs}
        rows = []
        for run in runs:
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created_at))
            cells = (
                tables.Cell(run.name or "(no name)", tooltip=f"{run.name}\nrun id {run.id}"),
                tables.Cell(status_words(run.status), run.status, f"status: {run.status}"),
                tables.Cell(
                    stop_sentence(run.stop_reason) or "–",
                    tooltip=(run.error or "")
                    + (f"\nstop reason: {run.stop_reason}" if run.stop_reason else ""),
                ),
                tables.number(run.generations),
                tables.Cell(started, run.created_at),
            )
            for cell in cells:
                cell.setData(Qt.ItemDataRole.UserRole, run.id)
            rows.append(cells)
        self.runs_table.blockSignals(True)
        tables.fill(self.runs_table, rows)
        self.runs_table.blockSignals(False)
        self.select_run(selected or "")
        first_listing = not self.listed
        self.listed = True
        if first_listing and runs and selected is None and not self.running:
            # a newcomer's first look after training: the latest run with its plots
            self.runs_table.selectRow(0)
            self.open_selected()
        self._update_buttons()
        self.runs_listed.emit(len(runs))

    def row_of(self, run_id: str) -> int | None:
        """The row where run ``run_id`` is shown now (the table can be sorted)."""
        for row in range(self.runs_table.rowCount()):
            if tables.item(self.runs_table, row, 0).data(Qt.ItemDataRole.UserRole) == run_id:
                return row
        return None

    def status_of(self, run_id: str) -> str | None:
        """The run's effective status as core read it (never a table cell's text)."""
        run = self.runs.get(run_id)
        return None if run is None else run.status

    def select_run(self, run_id: str) -> None:
        row = self.row_of(run_id)
        if row is not None:
            self.runs_table.selectRow(row)

    def selected_run_id(self) -> str | None:
        items = self.runs_table.selectedItems()
        return items[0].data(Qt.ItemDataRole.UserRole) if items else None

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
            lambda: _read_run(self.workspace, run_id),
            self._on_opened,
            self._on_open_failed,
            context=run_id,
        )

    def _on_open_failed(self, run_id: str, exc: Exception) -> None:
        self.show_error(f"Cannot open run {run_id[:8]}: {exc}")

    def _on_opened(
        self, run_id: str, stored: tuple[Any, list[GenerationStats], int, dict[str, float]]
    ) -> None:
        if self.running:
            return
        record, generations, budget, spent = stored
        self.opened = run_id
        self.learned_view.clear_learned()
        self.show_learned_of(run_id)
        self.clear_plots()
        for s in generations:
            self._add_generation(
                s.generation,
                s.best,
                s.mean,
                s.median,
                s.worst,
                s.sigma,
                s.validation,
                s.usage,
            )
        self.progress.setRange(0, max(budget, 1))
        self.progress.setValue(len(generations))
        self.eta_label.setText("")
        workers = (record.config_data.get("pool") or {}).get("workers") or ()
        self._spent = dollars(spent["dollars"], spend_kind(workers))
        self.spend_label.setText(
            f"Spent: {int(spent['episodes'])} episodes, {int(spent['calls'])} calls, "
            f"{self._spent}, {spent['minutes']:.1f} min"
        )
        result = record.run_result()
        self.executor_label.setText(
            where_episodes_ran(result.executor, result.actors, result.nodes or ())
            if result is not None
            else ""
        )
        status = effective_status(record)
        self.log(
            f"opened run {run_id[:8]} '{record.name}': {len(generations)} generations, "
            f"{status_words(status)}"
        )
        self.redraw()
        self._run_name, self._generation = record.name, len(generations)
        self._best = max((s.best for s in generations), default=None)
        self._emit_strip(status)

    # ------------------------------------------------------------------ state

    def _set_state(self, state: str) -> None:
        self.state = state
        self.status_label.setText(STATE_WORDS.get(state, state))
        self._update_buttons()
        self._emit_strip()

    def strip_text(self, opened_status: str | None = None) -> str:
        """The current run in one line, for the window's status strip: what it is doing,
        its generation, its best fitness and its spend."""
        name = f"'{self._run_name}'" if self._run_name else "the run"
        of = f" of {self._budget_generations}" if self._budget_generations else ""
        figures = []
        if self._generation:
            figures.append(f"generation {self._generation}{of}")
        if self._best is not None:
            figures.append(f"best fitness {self._best:.3f}")
        if self._spent:
            figures.append(f"spent {self._spent}")
        tail = "".join(f" · {f}" for f in figures)
        if self.state == "starting":
            return f"Starting {name}: loading the language model…"
        if self.state in ("running", "paused", "stopping"):
            doing = {"running": "Training", "paused": "Paused", "stopping": "Stopping"}
            eta = self.eta_label.text()
            return f"{doing[self.state]} {name}{tail}" + (f" · {eta}" if eta else "")
        if self.state in ("finished", "stopped", "failed"):
            return f"{STATE_WORDS[self.state]}: {name}{tail}"
        if opened_status is not None or self.opened:
            shown = status_words(opened_status) if opened_status else "opened"
            return f"No run in progress · shown: {name} ({shown}){tail}"
        return "No run in progress"

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


RUN_COLUMNS = ("Name", "Status", "Why it ended", "Generations", "Started")
_LEARNED_HEADING = (
    "What run {run} learned: on the validation questions, per kind of question, the "
    "turns its coordinator played most often:"
)
STATE_WORDS = {
    "idle": "Ready to start",
    "starting": "Starting: loading the language model…",
    "running": "Training",
    "paused": "Paused",
    "stopping": "Stopping after the episodes in flight…",
    "finished": "Finished",
    "stopped": "Stopped (you can resume it)",
    "failed": "Failed",
}


def read_config(path: str | Path, *, missing_ok: bool = False) -> RunConfig | None:
    """The run config at ``path`` with the user's defaults (the Settings page's device and
    cache policy) for what it leaves out: the disk reads of loading a config, run in a
    background job. None when ``missing_ok`` and there is no file at ``path``."""
    if missing_ok and not Path(path).is_file():
        return None
    return load_run_config(path)


def write_config(path: str | Path, text: str) -> None:
    """Write a config TOML's ``text`` to ``path`` (a background job)."""
    Path(path).write_text(text, encoding="utf-8")


def _read_run(
    workspace: Workspace, run_id: str
) -> tuple[Any, list[GenerationStats], int, dict[str, float]]:
    """A stored run, its generations' stats, its budget of generations (0: none readable
    from its config) for the plots, and its spend from its stored records (a killed run's
    too): read in a background job."""
    with Store.open(workspace) as store:
        record, generations = store.get_run(run_id), store.generation_stats(run_id)
        spent = recorded_spend(
            store.generations(run_id),
            store.stored_spend(run_id),
            (record.result or {}).get("spend"),
        )
    try:
        budget = record.config().budget.generations
    except ConfigError:  # a config of long ago: the plots show, the progress bar has no end
        budget = 0
    return record, generations, budget, spent


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
