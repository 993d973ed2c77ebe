"""The Evaluate page: pick a trained coordinator (a finished or stopped run, or a coordinator
file), a suite, a split and the baselines; evaluate in the background with progress and
Cancel; then the accuracy table with 95% intervals, a bar chart with error bars, each
system's paired difference from the best single worker (a second chart), the usage
per worker and role, and the Report's own Markdown and CSV exports.

The page holds no domain logic: what can be evaluated, which baselines exist, the figures
and the export formats all come from core (``core.jobs.evaluate.evaluate_run`` and its
``Report``), run in an ``EvaluationThread``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.evaluate import EvaluationProgress, EvaluationStopped, Report
from workbench.core.jobs.evaluate import (
    EvaluationResult,
    EvaluationSource,
    evaluable_runs,
    evaluate_run,
    evaluation_source,
)
from workbench.core.printable import shown_path
from workbench.core.records import ROLES
from workbench.core.spend import dollars
from workbench.core.tasks.suites import list_suites
from workbench.core.training.events import StopToken
from workbench.core.workspace import Workspace
from workbench.gui import background, tables
from workbench.gui.page import Page, combo_over_buttons, message_label
from workbench.gui.plots import painted, palette_colors, themed
from workbench.gui.qt import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFontMetrics,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    Qt,
    QTableWidgetItem,
    QTabWidget,
    QThread,
    QVBoxLayout,
    QWidget,
    Signal,
    pg,
    read_only_table,
)
from workbench.gui.qt_headroom import HeadroomPanel
from workbench.gui.qt_learned import LearnedView

log = logging.getLogger(__name__)

SPLITS = ("test", "validation", "train")
# the accuracy table: short headers with their unit (two lines where one would make the
# table wider than its tab at 1280 px), what each means in its tooltip
COLUMNS = (
    "System",
    "Accuracy",
    "95% interval",
    "Turns\nper question",
    "$ per question",
    "Tokens\nper question",
)
COLUMN_TIPS = (
    "What answered: the trained coordinator, one worker alone (single:…), random routing "
    "or the oracle (the best any worker could do)",
    "The share of the questions answered right, from 0 to 1",
    "The accuracy's 95% confidence interval (Wilson): the true accuracy lies between these "
    "two values with 95% confidence",
    "The average number of turns (worker calls) per question",
    "The average cost of one question, in dollars",
    "The average number of tokens (in and out) per question",
)
COST_COLUMN = 4


def result_cells(system: Any) -> tuple[str, ...]:
    """One row of the accuracy table (a ``SystemResult``), as shown (the cost column's
    header says when its dollars are simulated: ``cost_header``)."""
    return (
        system.name,
        f"{system.accuracy:.3f}",
        f"{system.ci_low:.3f}–{system.ci_high:.3f}",
        f"{system.avg_turns:.2f}",
        dollars(system.avg_cost, "", 6),
        f"{system.avg_tokens:.0f}",
    )


def cost_header(spend: str) -> str:
    """The cost column's header: its unit, and on a second line what kind of dollars they
    are when not real (``Report.spend``: "simulated", "recorded", ...)."""
    return COLUMNS[COST_COLUMN] + (f"\n({spend})" if spend else "")


def bar_item(x: np.ndarray, height: np.ndarray) -> pg.BarGraphItem:
    """Bars in the theme's bar colour (recoloured when the theme changes)."""
    bars = pg.BarGraphItem(x=x, height=height, width=0.6)
    return painted(bars, lambda palette: bars.setOpts(brush=pg.mkBrush(palette.colour("bar"))))


def interval_item(x: np.ndarray, y: np.ndarray, low: np.ndarray, high: np.ndarray) -> Any:
    """Error bars from ``low`` to ``high`` in the theme's text colour (read on either theme)."""
    errors = pg.ErrorBarItem(x=x, y=y, top=high - y, bottom=y - low, beam=0.25)
    return painted(
        errors, lambda palette: errors.setData(pen=pg.mkPen(palette.foreground, width=2))
    )


def name_bars(chart: pg.PlotWidget, systems: list[str]) -> None:
    """Each bar's system name (``tick_name``) under it, the axis as high as the longest
    name's lines (a wrapped name's second line was cut off)."""
    names = [tick_name(system) for system in systems]
    axis = chart.getAxis("bottom")
    axis.setTicks([list(enumerate(names))])
    lines = max((name.count("\n") + 1 for name in names), default=1)
    line = QFontMetrics(axis.style["tickFont"] or chart.font()).height()
    axis.setHeight(line * lines + 20 if lines > 1 else None)


class EvaluationThread(QThread):
    """Runs ``evaluate_run`` in the background with a ``StopToken``; core loads the backbone
    here (unless one is given), never in the GUI thread. Signals carry core's dataclasses."""

    progress = Signal(object)  # EvaluationProgress
    finished_evaluation = Signal(object)  # EvaluationResult
    failed = Signal(str)  # a readable message
    cancelled = Signal()

    def __init__(
        self,
        workspace: Workspace,
        source: EvaluationSource,
        *,
        suite: str,
        split: str,
        baselines: list[str],
        backbone: Any = None,
        parent: Any = None,
    ):
        super().__init__(parent)
        self.workspace = workspace
        self.source = source
        self.suite = suite
        self.split = split
        self.baselines = baselines
        self.backbone = backbone
        self.token = StopToken()

    def cancel(self) -> None:
        """No episode starts after this; those in flight end first (thread-safe)."""
        self.token.stop()

    def run(self) -> None:  # runs in the worker thread
        try:
            result = evaluate_run(
                self.workspace,
                run=self.source.run_id,
                coordinator_file=self.source.coordinator_file,
                suite=self.suite,
                split=self.split,
                baselines=self.baselines,
                backbone=self.backbone,
                progress=self.progress.emit,
                stop=self.token,
            )
        except EvaluationStopped:
            self.cancelled.emit()
        except Exception as exc:  # reported on the page as a readable message, details to the log
            log.exception("evaluation of %s failed", self.source.reference)
            self.failed.emit(background.readable(exc))
        else:
            self.finished_evaluation.emit(result)


def read_source(workspace: Workspace, data: str) -> tuple[EvaluationSource, list[str]]:
    """The evaluation source ``data`` names ("run:ID" or "file:PATH") and the workspace's
    suite names: the disk reads of choosing a source, run in a background job."""
    kind, _, value = data.partition(":")
    source = evaluation_source(workspace, **{"run" if kind == "run" else "coordinator_file": value})
    return source, [info.name for info in list_suites(workspace)]


TICK_CHARS = 12  # a longer name under a bar is written on two or more lines


def tick_name(system: str) -> str:
    """A system's name under its bar: a single worker by its own name (``mathlete`` for
    ``single:sandbox:mathlete``, ``gpt-4`` for ``single:recorded:champ/gpt-4``), a long
    name wrapped after its hyphens or spaces (``gpt-4-turbo-`` over ``5shot``), so that
    eight names fit side by side at 1280 px; the table above the chart has each whole."""
    name = system.rsplit(":", 1)[-1] if system.startswith("single:") else system
    name = name.rsplit("/", 1)[-1]  # a recorded pool's worker: by its model
    lines: list[str] = []
    for piece in re.findall(r"[^\s-]*-|[^\s-]+\s*", name):  # break after a hyphen or space
        if lines and len(lines[-1]) + len(piece.rstrip()) <= TICK_CHARS:
            lines[-1] += piece
        else:
            lines.append(piece)
    return "\n".join(line.rstrip() for line in lines) or name


class QtEvaluate(Page):
    """The Evaluate page over a workspace. ``backbone``: an optional pre-built backbone for
    every evaluation started here (tests use the tiny one)."""

    exported = Signal(object)  # an export ended: the file written, or None (said on the page)

    def __init__(
        self, workspace: Workspace, *, backbone: Any = None, parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.workspace = workspace
        self.backbone = backbone
        self.source: EvaluationSource | None = None
        self._source_key: str | None = None  # the combo's data of the source shown
        self.eval_thread: EvaluationThread | None = None
        self.result: EvaluationResult | None = None
        self.state = "idle"
        self.baseline_boxes: dict[str, QCheckBox] = {}
        self.listing = False  # the runs are being read
        self.reading = False  # a coordinator (and the suites) is being read
        self._reads = 0  # the latest source read asked for: older ones are dropped
        self._build()
        self.refresh_runs()
        self.headroom_panel.refresh_frontiers()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        self.source_combo = QComboBox()
        self.source_combo.currentIndexChanged.connect(lambda _: self._on_source_changed())
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.file_button = QPushButton("Coordinator file…")
        self.file_button.clicked.connect(self._choose_file)
        source_row = combo_over_buttons(self.source_combo, self.refresh_button, self.file_button)
        self.source_label = QLabel("–")
        self.source_label.setWordWrap(True)
        self.suite_combo = QComboBox()
        self.split_combo = QComboBox()
        self.split_combo.addItems(SPLITS)
        self.baselines_box = QGroupBox("Baselines")
        self.baselines_layout = QVBoxLayout(self.baselines_box)
        form = QFormLayout()
        form.addRow("Coordinator", source_row)
        form.addRow("", self.source_label)
        form.addRow("Suite", self.suite_combo)
        form.addRow("Split", self.split_combo)

        self.evaluate_button = QPushButton("Evaluate")
        self.cancel_button = QPushButton("Cancel")
        self.evaluate_button.clicked.connect(self.evaluate)
        self.cancel_button.clicked.connect(self.cancel)
        controls = QHBoxLayout()
        controls.addWidget(self.evaluate_button)
        controls.addWidget(self.cancel_button)
        controls.addStretch(1)
        self.status_label = QLabel("idle")
        self.progress = QProgressBar()
        self.progress.setFormat("%v of %m episodes")
        self.progress.setValue(0)
        self.message_label = message_label()
        self.stored_label = QLabel("")
        self.stored_label.setWordWrap(True)

        setup = QGroupBox("Evaluate a trained coordinator")
        setup_layout = QVBoxLayout(setup)
        setup_layout.addLayout(form)
        setup_layout.addWidget(self.baselines_box)
        setup_layout.addLayout(controls)
        setup_layout.addWidget(self.status_label)
        setup_layout.addWidget(self.progress)
        setup_layout.addWidget(self.message_label)
        setup_layout.addWidget(self.stored_label)
        setup_layout.addStretch(1)

        self.results_table = read_only_table(COLUMNS)
        self.usage_table = read_only_table(("System",))
        self.category_table = read_only_table(("System",))  # accuracy per category (benchmark)
        # the coordinator's sequences beside the oracle's plan
        self.learned_view = LearnedView("What the coordinator played: shown after an evaluation.")
        for table in (self.results_table, self.usage_table, self.category_table):
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the figures whole; the system's name takes the width left (elided, whole in its
        # tooltip), so that the table fits its tab at 1280 px without scrolling sideways
        tables.fit_width(self.results_table, [0], Qt.TextElideMode.ElideMiddle)
        # rows as high as their one line of text: seven to nine systems in view at once
        rows = self.results_table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.results_table.fontMetrics().height() + 8)
        for column, tip in enumerate(COLUMN_TIPS):
            tables.header_tip(self.results_table, column, tip)
        self.chart = themed(pg.PlotWidget(title="Accuracy with 95% intervals"))
        self.chart.setYRange(0, 1)
        self.chart.setMouseEnabled(x=False, y=False)
        self.chart.setMenuEnabled(False)
        self.bars: pg.BarGraphItem | None = None
        self.error_bars: pg.ErrorBarItem | None = None
        # every other system minus the best single worker, task by task (``Report.paired``)
        self.paired_chart = themed(
            pg.PlotWidget(
                title="Difference from the best single worker, task by task (95% bootstrap)"
            )
        )
        self.paired_chart.setMouseEnabled(x=False, y=False)
        self.paired_chart.setMenuEnabled(False)
        zero = pg.InfiniteLine(pos=0, angle=0)
        self.paired_chart.addItem(
            painted(zero, lambda palette: zero.setPen(pg.mkPen(palette.colour("grey"))))
        )
        self.paired_items: list[Any] = []
        self.export_md_button = QPushButton("Export Markdown…")
        self.export_csv_button = QPushButton("Export CSV…")
        self.export_md_button.clicked.connect(lambda: self.export_markdown())
        self.export_csv_button.clicked.connect(lambda: self.export_csv())
        exports = QHBoxLayout()
        exports.addStretch(1)
        exports.addWidget(self.export_md_button)
        exports.addWidget(self.export_csv_button)

        # three tabs, so that the page fits a laptop's screen: the scores, how they were
        # reached, and the headroom check with the cost-quality frontier
        def box(title: str, widget: QWidget) -> QGroupBox:
            group = QGroupBox(title)
            QVBoxLayout(group).addWidget(widget)
            return group

        scores = QSplitter(Qt.Orientation.Vertical)
        scores.addWidget(box("Accuracy", self.results_table))
        scores.addWidget(self.chart)
        # room for the table's seven to nine rows whole, and the chart below them (the
        # user's own sizes are remembered after that)
        scores.setSizes([330, 370])
        played = QSplitter(Qt.Orientation.Vertical)
        played.addWidget(box("Usage: turns per worker and role", self.usage_table))
        played.addWidget(box("Accuracy per category (n tasks)", self.category_table))
        played.addWidget(box("What the coordinator played, by category", self.learned_view))
        # before training and after it: the headroom check and the cost-quality frontier
        self.headroom_panel = HeadroomPanel(self, self.workspace)
        self.result_tabs = QTabWidget()
        self.result_tabs.addTab(scores, "Scores")
        self.result_tabs.setTabToolTip(0, "Accuracy of each system with 95% intervals")
        self.result_tabs.addTab(self.paired_chart, "Against the best worker")
        self.result_tabs.setTabToolTip(
            1, "Each system minus the best single worker, task by task, with 95% intervals"
        )
        self.result_tabs.addTab(played, "Usage and categories")
        self.result_tabs.setTabToolTip(
            2, "Which workers and roles were used, accuracy per category, what was played"
        )
        self.result_tabs.addTab(self.headroom_panel, "Headroom and cost")
        self.result_tabs.setTabToolTip(
            3, "Is there anything to learn (before training), and accuracy against dollars"
        )
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.result_tabs, 1)
        right_layout.addLayout(exports)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(setup)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 2)
        QVBoxLayout(self).addWidget(splitter)
        self._update_buttons()

    def show_headroom(self) -> None:
        """Show the Headroom and cost tab (the first-run guide's "Check the headroom")."""
        self.result_tabs.setCurrentWidget(self.headroom_panel)

    # ------------------------------------------------------------------ choosing

    def refresh_runs(self) -> None:
        """Reload the finished and stopped training runs in the background (a chosen
        coordinator file stays)."""
        self.listing = True
        self.in_background(
            "evaluable runs",
            lambda: evaluable_runs(self.workspace),
            self._on_runs,
            self._on_runs_failed,
        )

    def _on_runs_failed(self, _context: Any, exc: Exception) -> None:
        self.show_error(
            f"Cannot read the runs of workspace {shown_path(self.workspace.root)}: "
            f"{background.readable(exc)}"
        )
        self._on_runs(None, [])

    def _on_runs(self, _context: Any, runs: list[Any]) -> None:
        self.listing = False
        chosen = self.source_combo.currentData()
        files = [
            (self.source_combo.itemText(i), self.source_combo.itemData(i))
            for i in range(self.source_combo.count())
            if self.source_combo.itemData(i).startswith("file:")
        ]
        self.source_combo.blockSignals(True)
        self.source_combo.clear()
        for record in runs:
            self.source_combo.addItem(
                f"run {record.id[:8]}  {record.name}  ({record.status})", f"run:{record.id}"
            )
        for text, data in files:
            self.source_combo.addItem(text, data)
        index = self.source_combo.findData(chosen) if chosen is not None else 0
        self.source_combo.setCurrentIndex(max(index, 0))
        self.source_combo.blockSignals(False)
        if self.source_combo.currentData() != self._source_key or (
            self.source is None and not self.reading
        ):
            self._on_source_changed()  # the same source keeps the user's choices

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        """Runs trained since the page was last shown appear when it is shown again."""
        if self.eval_thread is None:
            self.refresh_runs()
        self.headroom_panel.refresh_frontiers()  # a study made since, in the CLI
        super().showEvent(event)

    def select_run(self, run_id: str) -> bool:
        index = self.source_combo.findData(f"run:{run_id}")
        if index >= 0:
            self.source_combo.setCurrentIndex(index)
        return index >= 0

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a coordinator file", str(Path.home()), "Coordinator (*.safetensors)"
        )
        if path:
            self.choose_coordinator_file(path)

    def choose_coordinator_file(self, path: str | Path) -> None:
        """Evaluate the coordinator file at ``path``: it is read in the background, then
        offered and chosen; an unusable file is reported on the page (and not offered)."""
        self._read_source(f"file:{path}", new_file=True)

    def _on_source_changed(self) -> None:
        self._read_source(self.source_combo.currentData())

    def _read_source(self, data: str | None, *, new_file: bool = False) -> None:
        """Read the source ``data`` ("run:ID" or "file:PATH") and the workspace's suites in
        the background (never on the GUI thread); the latest read asked for wins."""
        self.message_label.clear()
        self._reads += 1
        self.reading = data is not None
        if not new_file:  # a new file replaces the chosen source only once it reads well
            self.source, self._source_key = None, data
            self._show_source([])
            if data is not None:
                self.source_label.setText("reading the coordinator…")
        self._update_buttons()
        if data is None:
            return
        workspace = self.workspace
        self.in_background(
            "evaluation source",
            lambda: read_source(workspace, data),
            self._on_source_read,
            self._on_source_failed,
            context=(self._reads, data, new_file),
        )

    def _on_source_read(
        self, context: tuple[int, str, bool], found: tuple[EvaluationSource, list[str]]
    ) -> None:
        read, data, new_file = context
        if read != self._reads:
            return  # a newer read is on its way
        self.reading = False
        if new_file:
            index = self.source_combo.findData(data)
            if index < 0:
                self.source_combo.addItem(f"file {Path(data.partition(':')[2]).name}", data)
                index = self.source_combo.count() - 1
            self.source_combo.blockSignals(True)
            self.source_combo.setCurrentIndex(index)
            self.source_combo.blockSignals(False)
            self._source_key = data
        self.source, names = found
        self._show_source(names)
        self._update_buttons()

    def _on_source_failed(self, context: tuple[int, str, bool], exc: Exception) -> None:
        read, data, new_file = context
        if read != self._reads:
            return
        self.reading = False
        value = data.partition(":")[2]
        if new_file:  # the source chosen before stays chosen
            self.show_error(f"Cannot use {value}: {background.readable(exc)}")
            log.info("coordinator file %s rejected: %s", value, exc)
            self._update_buttons()
            return
        self.show_error(f"Cannot evaluate {value}: {background.readable(exc)}")
        log.info("evaluation source %s rejected: %s", value, exc)
        self._show_source([])
        self._update_buttons()

    def _show_source(self, suites: list[str]) -> None:
        source = self.source
        for box in self.baseline_boxes.values():
            self.baselines_layout.removeWidget(box)
            box.deleteLater()
        self.baseline_boxes = {}
        self.suite_combo.clear()
        if source is None:
            self.source_label.setText(
                "no finished or stopped run: train one on the Runs page, or open a coordinator file"
                if self.source_combo.count() == 0
                else "–"
            )
            return
        c = source.config
        self.source_label.setText(
            f"pool {', '.join(source.pool)} · backbone {source.backbone_model} · "
            f"suite {c.tasks.suite} (test {c.tasks.test or 'all'}) · up to {c.protocol.max_turns} turns"
        )
        names = list(suites)
        if c.tasks.suite not in names:
            names.insert(0, c.tasks.suite)
        self.suite_combo.addItems(names)
        self.suite_combo.setCurrentText(c.tasks.suite)
        for name in source.baselines:
            box = QCheckBox(name)
            box.setChecked(True)
            self.baselines_layout.addWidget(box)
            self.baseline_boxes[name] = box

    def chosen_baselines(self) -> list[str]:
        return [name for name, box in self.baseline_boxes.items() if box.isChecked()]

    # ------------------------------------------------------------------ running

    @property
    def running(self) -> bool:
        return self.eval_thread is not None and self.eval_thread.isRunning()

    def evaluate(self) -> None:
        if self.source is None or self.eval_thread is not None:
            return
        thread = EvaluationThread(
            self.workspace,
            self.source,
            suite=self.suite_combo.currentText(),
            split=self.split_combo.currentText(),
            baselines=self.chosen_baselines(),
            backbone=self.backbone,
            parent=self,
        )
        thread.progress.connect(self._on_progress)
        thread.finished_evaluation.connect(self._on_finished)
        thread.failed.connect(self._on_failed)
        thread.cancelled.connect(self._on_cancelled)
        thread.finished.connect(self._on_thread_done)
        self.eval_thread = thread
        self.clear_results()
        self.message_label.clear()
        self.progress.setRange(
            0, 0
        )  # busy until the first episode ends (the backbone may be loading)
        self._set_state("starting", "loading the coordinator and the tasks…")
        thread.start()

    def cancel(self) -> None:
        if self.eval_thread is not None and self.state in ("starting", "running"):
            self.eval_thread.cancel()
            self._set_state("cancelling", "cancelling: the episodes in flight end first…")

    def stop_and_wait(self, timeout_ms: int = 120_000) -> bool:
        """Cancel a running evaluation and wait for its thread; used on close."""
        if self.eval_thread is None:
            return True
        self.eval_thread.cancel()
        return bool(self.eval_thread.wait(timeout_ms))

    def _on_progress(self, event: EvaluationProgress) -> None:
        self.progress.setRange(0, event.total)
        self.progress.setValue(event.done)
        if self.state == "starting":
            self._set_state("running", "")
        if self.state == "running":
            self.status_label.setText(f"running: {event.system}")

    def _on_finished(self, result: EvaluationResult) -> None:
        self.show_result(result)
        self._set_state("finished", "")

    def show_result(self, result: EvaluationResult) -> None:
        """Show a finished evaluation: its table, chart and usage; exports enabled."""
        self.result = result
        self.show_report(result.report)
        self.stored_label.setText(
            f"The evaluation's episodes are stored as run {result.run_id[:8]}: "
            "step through them on the Replay page."
        )
        self._update_buttons()

    def _on_failed(self, message: str) -> None:
        self._set_state("failed", "")
        self.show_error(f"The evaluation failed: {message}. Details are in the log.")

    def _on_cancelled(self) -> None:
        self._set_state("cancelled", "")

    def _on_thread_done(self) -> None:
        thread, self.eval_thread = self.eval_thread, None
        if thread is not None:
            thread.deleteLater()
        if self.state not in ("finished", "failed", "cancelled"):
            self._set_state("idle", "")
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
        self._update_buttons()

    # ------------------------------------------------------------------ results

    @property
    def report(self) -> Report | None:
        return self.result.report if self.result is not None else None

    def clear_results(self) -> None:
        self.result = None
        self.results_table.setRowCount(0)
        self.usage_table.setRowCount(0)
        self.usage_table.setColumnCount(1)
        self.category_table.setRowCount(0)
        self.category_table.setColumnCount(1)
        self.learned_view.show_learned((), "")
        self.stored_label.clear()
        for item in (self.bars, self.error_bars):
            if item is not None:
                self.chart.removeItem(item)
        self.bars = self.error_bars = None
        self.chart.getAxis("bottom").setTicks(None)
        for item in self.paired_items:
            self.paired_chart.removeItem(item)
        self.paired_items = []
        self.paired_chart.getAxis("bottom").setTicks(None)

    def show_report(self, report: Report) -> None:
        """Fill the accuracy table, the bar chart and the usage table from ``report``."""
        systems = report.systems
        header = tables.header_item(self.results_table, COST_COLUMN)
        header.setText(cost_header(report.spend))
        header.setToolTip(
            COLUMN_TIPS[COST_COLUMN]
            + (f" ({report.spend}: not money spent)" if report.spend else "")
        )
        self.results_table.setRowCount(len(systems))
        for row, system in enumerate(systems):
            for col, text in enumerate(result_cells(system)):
                item = QTableWidgetItem(text)
                item.setToolTip(text if col else f"{text} ({system.kind})")
                if col:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.results_table.setItem(row, col, item)

        x = np.arange(len(systems), dtype=float)
        accuracy = np.array([s.accuracy for s in systems])
        low, high = np.array([s.ci_low for s in systems]), np.array([s.ci_high for s in systems])
        self.bars = bar_item(x, accuracy)
        self.error_bars = interval_item(x, accuracy, low, high)
        self.chart.addItem(self.bars)
        self.chart.addItem(self.error_bars)
        name_bars(self.chart, [s.name for s in systems])
        self.chart.setXRange(-0.6, len(systems) - 0.4)
        self._show_paired(report)

        keys = self._usage_columns(report)
        self.usage_table.setColumnCount(1 + len(keys))
        self.usage_table.setHorizontalHeaderLabels(
            ["System", *(k.replace("/", " / ") for k in keys)]
        )
        self.usage_table.setRowCount(len(systems))
        for row, system in enumerate(systems):
            self.usage_table.setItem(row, 0, QTableWidgetItem(system.name))
            for col, key in enumerate(keys, start=1):
                item = QTableWidgetItem(str(system.usage.get(key, 0)))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.usage_table.setItem(row, col, item)
        self._show_categories(report)
        self.learned_view.show_learned(
            report.learned, f"On the {report.split} split (the oracle: the exact best plan):"
        )
        self._update_buttons()

    def _show_paired(self, report: Report) -> None:
        """Each system's paired difference from the best single worker, with its interval."""
        pairs = report.paired
        self.paired_chart.setTitle(
            f"Difference from {report.best_single}, task by task (95% bootstrap)"
            if pairs
            else "Difference from the best single worker: no single worker evaluated",
            color=palette_colors()[1],
        )
        if not pairs:
            return
        x = np.arange(len(pairs), dtype=float)
        diff = np.array([p.difference for p in pairs])
        low, high = np.array([p.ci_low for p in pairs]), np.array([p.ci_high for p in pairs])
        self.paired_items = [bar_item(x, diff), interval_item(x, diff, low, high)]
        for item in self.paired_items:
            self.paired_chart.addItem(item)
        name_bars(self.paired_chart, [p.system for p in pairs])
        self.paired_chart.setXRange(-0.6, len(pairs) - 0.4)
        self.paired_chart.setYRange(min(-0.1, float(low.min())), max(0.1, float(high.max())))

    def _show_categories(self, report: Report) -> None:
        """Each system's accuracy per category of the tasks, and the total (``all``)."""
        groups = report.groups
        self.category_table.setColumnCount(2 + len(groups))
        self.category_table.setHorizontalHeaderLabels(["System", *groups, "all"])
        self.category_table.setRowCount(len(report.systems))
        for row, system in enumerate(report.systems):
            self.category_table.setItem(row, 0, QTableWidgetItem(system.name))
            cells = [system.by_group.get(g) for g in groups] + [system]
            for col, result in enumerate(cells, start=1):
                text = "" if result is None else f"{result.accuracy:.3f} ({result.n})"
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.category_table.setItem(row, col, item)

    def _usage_columns(self, report: Report) -> list[str]:
        """Every used "worker/role", in pool order and role order."""
        used = {key for s in report.systems for key in s.usage}
        pool = list(self.source.pool) if self.source is not None else []
        pool += sorted({k.rpartition("/")[0] for k in used} - set(pool))
        return [f"{w}/{r}" for w in pool for r in ROLES if f"{w}/{r}" in used]

    def table_rows(self) -> list[tuple[str, ...]]:
        """The accuracy table's cells, row by row (what the user reads)."""
        return [
            tuple(
                tables.item(self.results_table, r, c).text()
                for c in range(self.results_table.columnCount())
            )
            for r in range(self.results_table.rowCount())
        ]

    def export_markdown(self, path: str | Path | None = None) -> bool:
        return self._export("Markdown", "md", "Markdown (*.md)", path)

    def export_csv(self, path: str | Path | None = None) -> bool:
        return self._export("CSV", "csv", "CSV (*.csv)", path)

    def _export(self, kind: str, ext: str, pattern: str, path: str | Path | None) -> bool:
        """Write the report as Markdown or CSV to ``path`` (asked for when None) in the
        background; ``exported`` says how it ended. False when nothing was started."""
        report = self.report
        if report is None:
            return False
        if not path:
            path, _ = QFileDialog.getSaveFileName(
                self,
                f"Export the evaluation as {kind}",
                str(Path.home() / f"evaluation.{ext}"),
                pattern,
            )
        if not path:
            return False
        text = report.to_markdown() if ext == "md" else report.to_csv()
        target = Path(path)
        self.status_label.setText(f"writing {shown_path(target)}…")
        return (
            self.in_background(
                f"export the evaluation as {kind}",
                lambda: target.write_text(text, encoding="utf-8"),
                self._on_exported,
                self._on_export_failed,
                context=target,
            )
            is not None
        )

    def _on_exported(self, path: Path, _written: Any) -> None:
        self.status_label.setText(f"wrote {shown_path(path)}")
        self.exported.emit(path)

    def _on_export_failed(self, path: Path, exc: Exception) -> None:
        self.status_label.setText(self.state)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        self.show_error(f"Could not write {shown_path(path)}: {reason}")
        self.exported.emit(None)

    # ------------------------------------------------------------------ state

    def _set_state(self, state: str, detail: str) -> None:
        self.state = state
        self.status_label.setText(f"{state}: {detail}" if detail else state)
        self._update_buttons()

    def _update_buttons(self) -> None:
        busy = self.eval_thread is not None
        self.evaluate_button.setEnabled(self.source is not None and not busy)
        self.cancel_button.setEnabled(busy and self.state in ("starting", "running"))
        for w in (
            self.source_combo,
            self.refresh_button,
            self.file_button,
            self.suite_combo,
            self.split_combo,
            self.baselines_box,
        ):
            w.setEnabled(not busy)
        has_report = self.report is not None
        self.export_md_button.setEnabled(has_report)
        self.export_csv_button.setEnabled(has_report)
