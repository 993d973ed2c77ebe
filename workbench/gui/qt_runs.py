"""The Runs page: the runs list (status, stop reason, generations; resume, open), a compact
new-run form (load a config TOML or the sandbox example), Start / Pause / Resume / Stop,
and live plots (fitness, sigma, model x role usage heatmap), progress with ETA and a log.

The page holds no domain logic: configs, runs, statuses and figures all come from core;
training runs in a ``RunThread``. Plots are created once and redrawn from a timer with
``setData`` on preallocated arrays that grow by doubling (CONVENTIONS.md).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import typing
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.config import CHOICES, RunConfig
from workbench.core.evolution import GenerationStats, RunFailed, RunFinished, RunStarted
from workbench.core.records import ROLES
from workbench.core.runs import RunSummary, effective_status, list_runs
from workbench.core.store import Store
from workbench.core.workspace import Workspace, resources_dir
from workbench.gui import background
from workbench.gui.qt import (
    ERROR_STYLE,
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    Qt,
    QTableWidgetItem,
    QTabWidget,
    QTimer,
    QVBoxLayout,
    QWidget,
    Signal,
    pg,
    read_only_table,
)
from workbench.gui.run_thread import RunThread

log = logging.getLogger(__name__)

SANDBOX_EXAMPLE = resources_dir() / "examples" / "sandbox.toml"
REDRAW_MS = 200


class Series:
    """A growing float array: preallocated, doubled when full; ``view`` is the filled part."""

    def __init__(self, capacity: int = 64):
        self._data = np.full(capacity, np.nan)
        self.size = 0

    def append(self, value: float) -> None:
        if self.size == len(self._data):
            grown = np.full(2 * len(self._data), np.nan)
            grown[: self.size] = self._data
            self._data = grown
        self._data[self.size] = value
        self.size += 1

    def clear(self) -> None:
        self.size = 0

    @property
    def view(self) -> np.ndarray:
        return self._data[: self.size]


class UsageGrid:
    """Turns per (worker, role) row and generation column; rows come in threes per worker
    (thinker, worker, verifier) in order of first appearance. Grows by doubling."""

    def __init__(self, rows: int = 6, cols: int = 64):
        self._data = np.zeros((rows, cols))
        self.workers: list[str] = []
        self.cols = 0

    def clear(self) -> None:
        self._data[:] = 0
        self.workers = []
        self.cols = 0

    def add(self, column: int, usage: dict[str, int]) -> None:
        for key, turns in usage.items():
            worker, _, role = key.rpartition("/")
            if worker not in self.workers:
                self.workers.append(worker)
            row = 3 * self.workers.index(worker) + [str(r) for r in ROLES].index(role)
            self._grow(row + 1, column + 1)
            self._data[row, column] += turns
        self._grow(3 * len(self.workers), column + 1)
        self.cols = max(self.cols, column + 1)

    def _grow(self, rows: int, cols: int) -> None:
        r, c = self._data.shape
        if rows <= r and cols <= c:
            return
        while r < rows:
            r *= 2
        while c < cols:
            c *= 2
        grown = np.zeros((r, c))
        grown[: self._data.shape[0], : self._data.shape[1]] = self._data
        self._data = grown

    @property
    def view(self) -> np.ndarray:
        return self._data[: 3 * len(self.workers), : self.cols]

    @property
    def labels(self) -> list[str]:
        return [f"{w} / {r}" for w in self.workers for r in ROLES]


# the tabs of the new-run form: the config sections each shows
FORM_TABS = (
    ("Run", ("run", "backbone", "cache")),
    ("Pool", ("pool",)),
    ("Tasks", ("tasks",)),
    ("Optimizer", ("optimizer",)),
    ("Budget", ("budget", "protocol")),
)
BACKBONES = ("offline", "Qwen/Qwen3-0.6B")


class RunForm(QTabWidget):
    """Every key of a ``RunConfig``, editable: built from the config's own sections and
    types, so the form and the TOML file (and the CLI) can never disagree. The pool is a
    checkable list in head-row order, reordered by drag and drop."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.fields: dict[str, QWidget] = {}
        self.pool = QListWidget()
        self.pool.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.pool.setToolTip(
            "Check the workers of the pool; drag to set their order (the head's rows)"
        )
        hints = typing.get_type_hints(RunConfig)
        for title, sections in FORM_TABS:
            tab = QWidget()
            form = QFormLayout(tab)
            for section in sections:
                for f in dataclasses.fields(hints[section]):
                    key = f"{section}.{f.name}"
                    if key == "pool.workers":
                        form.addRow(QLabel("Workers (checked, in order)"))
                        form.addRow(self.pool)
                        continue
                    widget = self._editor(key, typing.get_type_hints(hints[section])[f.name])
                    self.fields[key] = widget
                    form.addRow(key if len(sections) > 1 else f.name, widget)
            self.addTab(tab, title)
        self.set_config(RunConfig())

    @staticmethod
    def _editor(key: str, hint: Any) -> QWidget:
        if hint is bool:
            return QCheckBox()
        if hint is int:
            box = QSpinBox()
            box.setRange(-1000, 1_000_000_000)
            return box
        if hint is float:
            box = QDoubleSpinBox()
            box.setDecimals(4)
            box.setRange(0.0, 1e9)
            box.setSingleStep(0.01)
            return box
        if key in CHOICES or key in ("backbone.model", "tasks.suite"):
            combo = QComboBox()
            combo.addItems(CHOICES.get(key) or (BACKBONES if key == "backbone.model" else ()))
            combo.setEditable(key in ("backbone.model", "tasks.suite", "backbone.device"))
            return combo
        return QLineEdit()

    def set_config(self, config: RunConfig) -> None:
        data = config.to_dict()
        for key, widget in self.fields.items():
            section, name = key.split(".")
            value = data[section][name]
            if isinstance(widget, QCheckBox):
                widget.setChecked(bool(value))
            elif isinstance(widget, QSpinBox | QDoubleSpinBox):
                widget.setValue(value)
            elif isinstance(widget, QComboBox):
                if widget.findText(str(value)) < 0:
                    widget.addItem(str(value))
                widget.setCurrentText(str(value))
            else:
                widget.setText(str(value))
        available = [self.pool.item(i).text() for i in range(self.pool.count())]
        self.pool.clear()
        for wid in config.pool.workers:
            self._add_worker(wid, checked=True)
        self.offer_workers(available)

    def offer_workers(self, worker_ids: list[str]) -> None:
        """Add workers the pool may use (unchecked, after the others) if not listed yet."""
        listed = {self.pool.item(i).text() for i in range(self.pool.count())}
        for wid in worker_ids:
            if wid not in listed:
                self._add_worker(wid, checked=False)
                listed.add(wid)

    def offer_suites(self, names: list[str]) -> None:
        combo = self.fields["tasks.suite"]
        current = combo.currentText()
        for name in names:
            if combo.findText(name) < 0:
                combo.addItem(name)
        combo.setCurrentText(current)

    def _add_worker(self, wid: str, checked: bool) -> None:
        item = QListWidgetItem(wid)
        item.setFlags(
            item.flags() | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsDragEnabled
        )
        item.setFlags(
            item.flags() & ~Qt.ItemFlag.ItemIsDropEnabled
        )  # drop between items, not onto one
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.pool.addItem(item)

    def pool_workers(self) -> list[str]:
        items = [self.pool.item(i) for i in range(self.pool.count())]
        return [i.text() for i in items if i.checkState() == Qt.CheckState.Checked]

    def config(self) -> RunConfig:
        """The form as a config; raises ``ConfigError`` naming the key that is wrong."""
        data: dict[str, dict[str, Any]] = {"pool": {"workers": self.pool_workers()}}
        for key, widget in self.fields.items():
            section, name = key.split(".")
            if isinstance(widget, QCheckBox):
                value: Any = widget.isChecked()
            elif isinstance(widget, QSpinBox | QDoubleSpinBox):
                value = widget.value()
            elif isinstance(widget, QComboBox):
                value = widget.currentText().strip()
            else:
                value = widget.text().strip()
            data.setdefault(section, {})[name] = value
        return RunConfig.from_dict(data, "the new-run form")


def _choices(workspace: Workspace) -> tuple[list[str], list[str]]:
    """The workers a pool may name and the suites there are (read in the background)."""
    from workbench.core.registry import Registry
    from workbench.core.tasks.suites import list_suites
    from workbench.core.workers.base import builtin_workers

    workers = ["sandbox", *(w.id for w in builtin_workers())]
    try:
        workers += [spec.id for spec in Registry.open().list()]
    except Exception:  # a broken workers.toml is the Workers page's to report
        log.warning("cannot list registered workers", exc_info=True)
    return workers, [info.name for info in list_suites(workspace)]


class QtRuns(QWidget):
    """The Runs page over a workspace; runs train in a child process (``RunThread``)."""

    CURVES = ("best", "mean", "median", "worst")
    runs_listed = Signal(int)  # after each runs-list read: how many runs there are

    def __init__(self, workspace: Workspace, *, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.run_thread: RunThread | None = None
        self.state = "idle"
        self._budget_generations = 0
        self._first_generation = 0
        self._started_at = 0.0
        self._done_live = 0
        self._dirty = False
        self._refreshing = False
        self._refresh_again = False
        self.opened: str | None = None  # the run whose stored plots are shown
        self.runs: dict[str, RunSummary] = {}  # the listed runs, as core summarised them
        self._listed = False  # the first listing opens the latest run
        self.x = Series()
        self.series = {name: Series() for name in (*self.CURVES, "sigma")}
        self.validation_x = Series()
        self.validation = Series()
        self.usage = UsageGrid()
        self._build()
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()
        if SANDBOX_EXAMPLE.is_file():
            self.load_config(SANDBOX_EXAMPLE)
        background.start(
            self,
            "run-form choices",
            lambda: _choices(workspace),
            self._on_choices,
            self._on_choices_failed,
        )
        self.refresh_runs()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        # runs list
        self.runs_table = read_only_table(("Run", "Name", "Status", "Stop reason", "Generations"))
        self.runs_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
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
        runs_box = QGroupBox("Runs")
        runs_layout = QVBoxLayout(runs_box)
        runs_layout.addWidget(self.runs_table)
        runs_layout.addLayout(runs_buttons)

        # new run form
        self.form = RunForm()
        self.source_label = QLabel("defaults")
        self.source_label.setWordWrap(True)
        self.load_button = QPushButton("Load config…")
        self.save_button = QPushButton("Save config…")
        self.example_button = QPushButton("Sandbox example")
        self.load_button.clicked.connect(self._choose_config)
        self.save_button.clicked.connect(self._choose_save_path)
        self.example_button.clicked.connect(lambda: self.load_config(SANDBOX_EXAMPLE))
        source_row = QFormLayout()
        source_row.addRow("Loaded from", self.source_label)
        load_row = QHBoxLayout()
        for b in (self.load_button, self.save_button, self.example_button):
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
        self.status_label = QLabel("idle")
        self.message_label = QLabel("")
        self.message_label.setWordWrap(True)
        self.message_label.setStyleSheet(ERROR_STYLE)
        self.progress = QProgressBar()
        self.progress.setFormat("generation %v of %m")
        self.eta_label = QLabel("")
        self.spend_label = QLabel("")
        new_box = QGroupBox("New run")
        new_layout = QVBoxLayout(new_box)
        new_layout.addWidget(self.form)
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
        new_layout.addWidget(self.message_label)

        # plots: created once, fed with setData from the timer
        self.fitness_plot = pg.PlotWidget(title="Fitness per generation")
        self.fitness_plot.addLegend(offset=(5, 5))
        self.fitness_plot.setLabel("bottom", "generation")
        colors = {"best": "#2e7d32", "mean": "#1565c0", "median": "#6a1b9a", "worst": "#c62828"}
        self.curves = {}
        for name in self.CURVES:
            curve = self.fitness_plot.plot(name=name, pen=pg.mkPen(colors[name], width=2))
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
            self.curves[name] = curve
        self.validation_points = self.fitness_plot.plot(
            name="validation",
            pen=pg.mkPen("#ef6c00", width=2, style=Qt.PenStyle.DashLine),
            symbol="o",
            symbolSize=7,
            symbolBrush="#ef6c00",
        )
        self.sigma_plot = pg.PlotWidget(title="Sigma")
        self.sigma_plot.setLabel("bottom", "generation")
        self.curves["sigma"] = self.sigma_plot.plot(pen=pg.mkPen("#455a64", width=2))
        self.curves["sigma"].setDownsampling(auto=True, method="peak")
        self.curves["sigma"].setClipToView(True)
        self.usage_plot = pg.PlotWidget(title="Usage: worker x role per generation")
        self.usage_plot.setLabel("bottom", "generation")
        self.usage_plot.invertY(True)
        self.heatmap = pg.ImageItem(axisOrder="row-major")
        self.heatmap.setColorMap(pg.colormap.get("viridis"))
        self.usage_plot.addItem(self.heatmap)
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)

        plots = QSplitter(Qt.Orientation.Vertical)
        for w in (self.fitness_plot, self.sigma_plot, self.usage_plot, self.log_view):
            plots.addWidget(w)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(new_box)
        left_layout.addWidget(runs_box, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(plots)
        splitter.setStretchFactor(1, 2)
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

    def load_config(self, path: str | Path) -> bool:
        """Load a run config TOML into the form (the Settings page's device and cache
        policy fill what it leaves out); a bad file is reported on the page."""
        from workbench.core.settings import load_run_config, load_settings_or_defaults

        try:  # the user's default device and cache policy fill what the file leaves out
            config = load_run_config(path, load_settings_or_defaults()[0])
        except Exception as exc:  # ConfigError, OSError, TOML errors: readable, on the page
            self.show_error(f"Cannot load {path}: {exc}")
            return False
        self.form.set_config(config)
        self.source_label.setText(str(path))
        self.message_label.clear()
        self._update_buttons()
        return True

    def _choose_save_path(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the run config", str(Path.home() / "run.toml"), "TOML (*.toml)"
        )
        if path:
            self.save_config(path)

    def save_config(self, path: str | Path) -> bool:
        """Write the form as a config TOML (what ``trinity-workbench train`` reads)."""
        config = self.form_config()
        if config is None:
            return False
        try:
            Path(path).write_text(config.to_toml(), encoding="utf-8")
        except OSError as exc:
            self.show_error(f"Cannot write {path}: {exc}")
            return False
        self.source_label.setText(str(path))
        self.log(f"saved the run config to {path}")
        return True

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

    def _on_choices_failed(self, _context: Any, exc: Exception) -> None:
        self.show_error(f"Cannot list the workers and suites: {exc}")

    # ------------------------------------------------------------------ controls

    @property
    def running(self) -> bool:
        return self.run_thread is not None and self.run_thread.isRunning()

    def start(self) -> None:
        if self.running:
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
        self.message_label.clear()
        self.run_thread = thread
        thread.started_run.connect(self._on_started)
        thread.generation.connect(self._on_generation)
        thread.finished_run.connect(self._on_finished)
        thread.failed.connect(self._on_failed)
        thread.finished.connect(self._on_thread_done)
        self._set_state("starting")
        self.log(
            "starting "
            + (f"run {thread.resume_id[:8]}" if thread.resume_id else f"'{thread.config.run.name}'")
        )
        thread.start()

    def pause(self) -> None:
        if self.running and self.state == "running":
            self.run_thread.pause()
            self._set_state("paused")
            self.log("paused (the current episodes finish first)")

    def resume(self) -> None:
        if self.running and self.state == "paused":
            self.run_thread.resume_run()
            self._set_state("running")
            self.log("resumed")

    def stop(self) -> None:
        if self.running:
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
        if self.state == "starting":
            self._set_state("running")
        self.log(
            f"run {event.run_id[:8]} '{event.name}': {event.n_params} parameters, population "
            f"{event.popsize} x {event.rollouts} rollouts, from generation {event.start_generation}"
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
        self.spend_label.setText(
            f"Spent: {int(t.get('episodes', 0))} episodes, {int(t.get('calls', 0))} calls, "
            f"${t.get('dollars', 0.0):.4f}, {t.get('minutes', 0.0):.1f} min"
        )
        val = "" if event.validation is None else f", validation {event.validation:.3f}"
        self.log(
            f"generation {event.generation}: best {event.best:.3f}, mean {event.mean:.3f}, "
            f"sigma {event.sigma:.4f}{val}; {event.calls} calls, ${event.dollars:.4f}, {event.wall_s:.1f} s"
        )

    def _on_finished(self, event: RunFinished) -> None:
        self._set_state("stopped" if event.stop_reason == "stopped" else "finished")
        self.eta_label.setText("")
        best = "–" if event.best_validation is None else f"{event.best_validation:.3f}"
        self.log(
            f"run {event.run_id[:8]} ended ({event.stop_reason}) after {event.generations} "
            f"generations; best validation {best}"
        )

    def _on_failed(self, event: RunFailed) -> None:
        self._set_state("failed")
        self.show_error(
            f"The run failed: {event.error}. Details are in the log; resume it from the runs list."
        )

    def _on_thread_done(self) -> None:
        self.run_thread = None
        if self.state not in ("finished", "stopped", "failed"):
            self._set_state("idle")
        self.redraw()
        self.refresh_runs()
        self._update_buttons()

    # ------------------------------------------------------------------ plots

    def clear_plots(self) -> None:
        self.spend_label.clear()
        self.x.clear()
        for s in self.series.values():
            s.clear()
        self.validation_x.clear()
        self.validation.clear()
        self.usage.clear()
        self._dirty = True

    def _add_generation(
        self,
        g: int,
        best: float,
        mean: float,
        median: float,
        worst: float,
        sigma: float,
        validation: float | None,
        usage: dict[str, int],
    ) -> None:
        self.x.append(g)
        for name, value in zip(
            (*self.CURVES, "sigma"), (best, mean, median, worst, sigma), strict=True
        ):
            self.series[name].append(value)
        if validation is not None:
            self.validation_x.append(g)
            self.validation.append(validation)
        self.usage.add(g, usage)
        self._dirty = True

    def redraw(self) -> None:
        """Push the buffers to the plot items (from the timer, not per event)."""
        if not self._dirty:
            return
        self._dirty = False
        x = self.x.view
        for name, curve in self.curves.items():
            curve.setData(x, self.series[name].view)
        self.validation_points.setData(self.validation_x.view, self.validation.view)
        grid = self.usage.view
        if grid.size:
            self.heatmap.setImage(grid, autoLevels=True)
            self.heatmap.setRect(0, 0, grid.shape[1], grid.shape[0])
            axis = self.usage_plot.getAxis("left")
            axis.setTicks([[(i + 0.5, label) for i, label in enumerate(self.usage.labels)]])
        else:
            self.heatmap.clear()

    # ------------------------------------------------------------------ runs list

    def refresh_runs(self) -> None:
        """Read the runs list in the background (at most one read in flight)."""
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        background.start(
            self,
            "runs list",
            lambda: list_runs(self.workspace),
            self._on_runs,
            self._on_runs_failed,
        )

    def _on_runs_failed(self, _context: Any, exc: Exception) -> None:
        self._refreshing = False
        self.show_error(f"Cannot read the runs of workspace {self.workspace.root}: {exc}")

    def _on_runs(self, _context: Any, runs: list[RunSummary]) -> None:
        self._refreshing = False
        if self._refresh_again:
            self._refresh_again = False
            self.refresh_runs()
        selected = self.selected_run_id()
        self.runs = {run.id: run for run in runs}
        self.runs_table.setRowCount(len(runs))
        for row, run in enumerate(runs):
            generations = "" if run.generations is None else str(run.generations)
            cells = (run.id[:8], run.name, run.status, run.stop_reason, generations)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, run.id)
                self.runs_table.setItem(row, col, item)
            if run.id == selected:
                self.runs_table.selectRow(row)
        first_listing = not self._listed
        self._listed = True
        if first_listing and runs and selected is None and not self.running:
            # a newcomer's first look after training: the latest run with its plots
            self.runs_table.selectRow(0)
            self.open_selected()
        self._update_buttons()
        self.runs_listed.emit(len(runs))

    def row_of(self, run_id: str) -> int | None:
        for row in range(self.runs_table.rowCount()):
            if self.runs_table.item(row, 0).data(Qt.ItemDataRole.UserRole) == run_id:
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
        background.start(
            self,
            "open run",
            lambda: _read_run(self.workspace, run_id),
            self._on_opened,
            self._on_open_failed,
            context=run_id,
        )

    def _on_open_failed(self, run_id: str, exc: Exception) -> None:
        self.show_error(f"Cannot open run {run_id[:8]}: {exc}")

    def _on_opened(self, run_id: str, stored: tuple[Any, list[dict[str, Any]]]) -> None:
        if self.running:
            return
        record, generations = stored
        self.clear_plots()
        for s in generations:
            self._add_generation(
                s["generation"],
                s["best"],
                s["mean"],
                s["median"],
                s["worst"],
                s["sigma"],
                s.get("validation"),
                s.get("usage") or {},
            )
        budget = int((record.config.get("budget") or {}).get("generations") or 0)
        self.progress.setRange(0, max(budget, 1))
        self.progress.setValue(len(generations))
        self.eta_label.setText("")
        self.log(
            f"opened run {run_id[:8]} '{record.name}': {len(generations)} generations, "
            f"{effective_status(record)}"
        )
        self.redraw()
        self.opened = run_id

    def shutdown(self) -> None:
        """Wait for the page's background reads (the window is closing)."""
        background.shutdown(self)

    # ------------------------------------------------------------------ state

    def _set_state(self, state: str) -> None:
        self.state = state
        self.status_label.setText(state)
        self._update_buttons()

    def _update_buttons(self) -> None:
        running = self.running or self.state == "starting"
        self.start_button.setEnabled(not running)
        self.load_button.setEnabled(not running)
        self.example_button.setEnabled(not running)
        self.pause_button.setEnabled(running and self.state == "running")
        self.resume_button.setEnabled(running and self.state == "paused")
        self.stop_button.setEnabled(running and self.state in ("running", "paused", "starting"))
        selected = self.selected_run_id()
        self.open_button.setEnabled(selected is not None and not running)
        self.resume_run_button.setEnabled(
            selected is not None and not running and self.can_resume(selected)
        )

    def show_error(self, message: str) -> None:
        self.message_label.setText(message)
        self.log("error: " + message)
        log.warning("%s", message)

    def log(self, line: str) -> None:
        self.log_view.appendPlainText(time.strftime("%H:%M:%S ") + line)


def _read_run(workspace: Workspace, run_id: str) -> tuple[Any, list[dict[str, Any]]]:
    with Store.open(workspace) as store:
        return store.get_run(run_id), store.generations(run_id)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
