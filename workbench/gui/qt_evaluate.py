"""The Evaluate page: every evaluation stored in the workspace (made here, with
``trinity-workbench eval`` or by a cross-validation), any of them shown at a click; and a
new one: pick a trained coordinator (a finished or stopped run, or a coordinator file), a
suite, a split and the baselines, and evaluate in the background with progress and
Cancel. The results (``qt_evaluate_results.EvaluationView``): the accuracy table with 95%
intervals over a bar chart, each system's paired difference from the best single worker,
the usage per worker and role, the accuracy per category; the Report's own Markdown and
CSV exports. Two last tabs hold the headroom check and the cost-quality frontier
(``qt_headroom``), and the stored cross-validations (``qt_crossval``).

A view: what can be evaluated, which baselines exist, the figures and the export formats
come from core (``core.jobs.evaluate``: ``evaluate_run`` in an ``EvaluationThread``,
``stored_evaluations``, ``load_evaluation``); the cells from ``evaluate_model``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from workbench.core.evaluate import EvaluationProgress, Report
from workbench.core.jobs.evaluate import (
    EvaluationResult,
    EvaluationSource,
    StoredEvaluation,
    evaluable_runs,
    load_evaluation,
    stored_evaluations,
)
from workbench.core.jobs.shared import run_title
from workbench.core.printable import shown_path
from workbench.core.workspace import Workspace
from workbench.gui import background
from workbench.gui.evaluate_model import (
    SPLITS,
    baseline_words,
    read_source,
    source_words,
)
from workbench.gui.evaluation_thread import EvaluationThread
from workbench.gui.page import Page, combo_over_buttons, message_label
from workbench.gui.qt import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)
from workbench.gui.qt_crossval import CrossValView
from workbench.gui.qt_evaluate_results import EvaluationsList, EvaluationView
from workbench.gui.qt_headroom import HeadroomPanel
from workbench.gui.runs_model import started_text

log = logging.getLogger(__name__)
EVALUATION_ID = Qt.ItemDataRole.UserRole


def _evaluable(workspace: Workspace) -> list[tuple[str, str, str]]:
    """The runs an evaluation can take: (id, label, tooltip), newest first (a job)."""
    return [
        (
            r.id,
            f"{run_title(r)} · {started_text(r.created_at)}",
            f"{r.name} ({r.status})\nrun id {r.id}",
        )
        for r in evaluable_runs(workspace)
    ]


class QtEvaluate(Page):
    """The Evaluate page over a workspace. ``backbone``: an optional pre-built backbone for
    every evaluation started here (tests use the tiny one)."""

    exported = Signal(object)  # an export ended: the file written, or None (said on the page)
    evaluations_listed = Signal(int)  # the stored evaluations were read: how many

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
        self.evaluations: list[StoredEvaluation] = []
        self._listed_once = False  # the first listing shows the newest evaluation
        self._reads = 0  # the latest source read asked for: older ones are dropped
        self._build()
        self.refresh_runs()
        self.refresh_evaluations()
        self.headroom_panel.refresh_frontiers()
        self.crossval_view.refresh()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        self.stored = EvaluationsList()
        self.evaluations_table = self.stored.table
        self.evaluations_table.itemSelectionChanged.connect(self._evaluation_picked)
        self.shown_label = QLabel("")
        self.shown_label.setWordWrap(True)
        setup = self._build_setup()
        self.results = EvaluationView()
        # the results' widgets, named on the page too (tests and screenshots read them)
        self.results_table, self.chart = self.results.results_table, self.results.chart
        self.usage_table, self.category_table = (
            self.results.usage_table,
            self.results.category_table,
        )
        self.paired_chart, self.learned_view = self.results.paired_chart, self.results.learned_view
        self.result_tabs = self.results
        # before training and after it: the headroom check and the cost-quality frontier
        self.headroom_panel = HeadroomPanel(self, self.workspace)
        self.results.add_view(
            self.headroom_panel,
            "Headroom and cost",
            "Is there anything to learn (before training), and accuracy against dollars",
        )
        # the cross-validations made on the command line: every question tested once
        self.crossval_view = CrossValView(self, self.workspace)
        self.results.add_view(
            self.crossval_view,
            "Cross-validations",
            "Stored cross-validations: each system's accuracy with its interval, against "
            "the best single model overall and per category",
        )
        self.export_md_button = QPushButton("Export Markdown…")
        self.export_csv_button = QPushButton("Export CSV…")
        self.export_md_button.clicked.connect(lambda: self.export_markdown())
        self.export_csv_button.clicked.connect(lambda: self.export_csv())
        exports = QHBoxLayout()
        exports.addWidget(self.shown_label, 1)
        exports.addWidget(self.export_md_button)
        exports.addWidget(self.export_csv_button)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.results, 1)
        right_layout.addLayout(exports)
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.stored)
        left.addWidget(setup)
        left.setStretchFactor(1, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 2)
        # at first, room for the evaluations' names beside the results (the user's own
        # sizes are remembered after that)
        splitter.setSizes([360, 700])
        QVBoxLayout(self).addWidget(splitter)
        self._update_buttons()

    def _build_setup(self) -> QGroupBox:
        """A new evaluation: the coordinator, suite, split and baselines; Evaluate."""
        self.source_combo = QComboBox()
        # a long run name is cut in the closed box (whole in its list), not the page widened
        self.source_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.source_combo.setMinimumContentsLength(24)
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
        self.baselines_box = QGroupBox("Compare with")
        self.baselines_box.setToolTip(
            "The baselines: each worker alone, random routing and, on a simulated pool, "
            "the oracle (the best any worker could do)"
        )
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
        self.progress.setTextVisible(False)  # until an evaluation says how many
        self.progress.setValue(0)
        self.message_label = message_label()
        setup = QGroupBox("New evaluation")
        setup_layout = QVBoxLayout(setup)
        setup_layout.addLayout(form)
        setup_layout.addWidget(self.baselines_box)
        setup_layout.addLayout(controls)
        setup_layout.addWidget(self.status_label)
        setup_layout.addWidget(self.progress)
        setup_layout.addWidget(self.message_label)
        setup_layout.addStretch(1)
        return setup

    def show_headroom(self) -> None:
        """Show the Headroom and cost tab (the first-run guide's "Check the headroom")."""
        self.results.setCurrentWidget(self.headroom_panel)

    def show_crossvals(self) -> None:
        """Show the Cross-validations tab."""
        self.results.setCurrentWidget(self.crossval_view)

    # ------------------------------------------------------------------ stored evaluations

    def refresh_evaluations(self) -> None:
        """Read the stored evaluations in the background (the latest read wins)."""
        self.in_background(
            "stored evaluations",
            lambda: stored_evaluations(self.workspace),
            self._on_evaluations,
            self.failed,
            context="list the stored evaluations",
            latest=True,
        )

    def _on_evaluations(self, _context: Any, evaluations: list[StoredEvaluation]) -> None:
        self.evaluations = evaluations
        shown = self.result.run_id if self.result is not None else None
        self.stored.show_evaluations(evaluations, shown)
        first, self._listed_once = not self._listed_once, True
        newest = next((e.id for e in evaluations if e.has_report), None)
        if first and shown is None and newest is not None and self.eval_thread is None:
            self.stored.select(newest)  # the newest, whichever interface made it
        self.evaluations_listed.emit(len(evaluations))

    def evaluation_ids(self) -> list[str]:
        """The stored evaluations' ids, in the list's order."""
        return self.stored.ids()

    def _evaluation_picked(self) -> None:
        eval_id = self.stored.selected()
        if eval_id is None or self.eval_thread is not None:
            return
        if self.result is not None and self.result.run_id == eval_id:
            return
        picked = next((e for e in self.evaluations if e.id == eval_id), None)
        if picked is not None and not picked.has_report:
            self.clear_results()
            self.shown_label.setText(
                f"This evaluation {picked.status} before its end: it has no report (its "
                "episodes so far are on the Replay page)."
            )
            return
        self.in_background(
            "stored evaluation",
            lambda: load_evaluation(self.workspace, eval_id),
            self._on_evaluation_loaded,
            self.failed,
            context="show the evaluation",
            latest=True,
        )

    def _on_evaluation_loaded(self, _context: Any, result: EvaluationResult) -> None:
        if self.eval_thread is None:
            self.show_result(result)

    # ------------------------------------------------------------------ choosing

    def refresh_runs(self) -> None:
        """Reload the finished and stopped training runs in the background (a chosen
        coordinator file stays)."""
        self.listing = True
        self.in_background(
            "evaluable runs",
            lambda: _evaluable(self.workspace),
            self._on_runs,
            self._on_runs_failed,
        )

    def _on_runs_failed(self, _context: Any, exc: Exception) -> None:
        self.show_error(
            f"Cannot read the runs of workspace {shown_path(self.workspace.root)}: "
            f"{background.readable(exc)}"
        )
        self._on_runs(None, [])

    def _on_runs(self, _context: Any, runs: list[tuple[str, str, str]]) -> None:
        self.listing = False
        chosen = self.source_combo.currentData()
        files = [
            (self.source_combo.itemText(i), self.source_combo.itemData(i))
            for i in range(self.source_combo.count())
            if self.source_combo.itemData(i).startswith("file:")
        ]
        self.source_combo.blockSignals(True)
        self.source_combo.clear()
        for run_id, label, tip in runs:
            self.source_combo.addItem(label, f"run:{run_id}")
            self.source_combo.setItemData(
                self.source_combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole
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
        """Runs trained and evaluations made since the page was last shown (here or in
        a terminal) appear when it is shown again."""
        if self.eval_thread is None:
            self.refresh_runs()
            self.refresh_evaluations()
        self.headroom_panel.refresh_frontiers()
        self.crossval_view.refresh()
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
            box.hide()  # gone from view now; freed when the loop next runs
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
        self.source_label.setText(source_words(source))
        self.source_label.setToolTip(f"pool: {', '.join(source.pool)}")  # each id whole
        c = source.config
        names = list(suites)
        if c.tasks.suite not in names:
            names.insert(0, c.tasks.suite)
        self.suite_combo.addItems(names)
        self.suite_combo.setCurrentText(c.tasks.suite)
        for name in source.baselines:
            box = QCheckBox(baseline_words(name))
            box.setToolTip(name)
            box.setChecked(True)
            self.baselines_layout.addWidget(box)
            self.baseline_boxes[name] = box

    def chosen_baselines(self) -> list[str]:
        return [name for name, box in self.baseline_boxes.items() if box.isChecked()]

    # ------------------------------------------------------------------ running

    @property
    def running(self) -> bool:
        """An evaluation, or a frontier study, is in progress."""
        evaluating = self.eval_thread is not None and self.eval_thread.isRunning()
        return evaluating or self.headroom_panel.studying

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
        # busy until the first episode ends (the backbone may be loading)
        self.progress.setRange(0, 0)
        self._set_state("starting", "loading the coordinator and the tasks…")
        thread.start()

    def cancel(self) -> None:
        if self.eval_thread is not None and self.state in ("starting", "running"):
            self.eval_thread.cancel()
            self._set_state("cancelling", "cancelling: the episodes in flight end first…")

    def stop_and_wait(self, timeout_ms: int = 120_000) -> bool:
        """Cancel a running evaluation or frontier study and wait for it; used on close."""
        studied = self.headroom_panel.stop_and_wait(timeout_ms)
        if self.eval_thread is None:
            return studied
        self.eval_thread.cancel()
        return bool(self.eval_thread.wait(timeout_ms)) and studied

    def _on_progress(self, event: EvaluationProgress) -> None:
        self.progress.setTextVisible(True)
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
        """Show an evaluation, just made or stored: its tables and charts; exports enabled."""
        self.result = result
        pool = list(self.source.pool) if self.source is not None else []
        self.results.show_report(result.report, pool)
        title = next((e.title for e in self.evaluations if e.id == result.run_id), "")
        self.shown_label.setText(
            f"Shown: {title or 'evaluation ' + result.run_id[:8]} on {result.report.suite}, "
            f"{result.report.split} split. Its episodes are on the Replay page."
        )
        self.stored.select(result.run_id)
        self._update_buttons()

    def show_report(self, report: Report) -> None:
        """Show ``report`` (one not stored: a test's, a screenshot's)."""
        self.results.show_report(report, list(self.source.pool) if self.source else [])
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
        self.refresh_evaluations()  # the one just made (or stopped) is listed

    # ------------------------------------------------------------------ results

    @property
    def report(self) -> Report | None:
        return self.results.report

    @property
    def bars(self) -> Any:
        return self.results.bars

    @property
    def error_bars(self) -> Any:
        return self.results.error_bars

    @property
    def paired_items(self) -> list[Any]:
        return self.results.paired_items

    def clear_results(self) -> None:
        self.result = None
        self.results.clear_results()
        self.shown_label.clear()

    def table_rows(self) -> list[tuple[str, ...]]:
        """The accuracy table's cells, row by row (what the user reads)."""
        return self.results.table_rows()

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
            self.evaluations_table,
        ):
            w.setEnabled(not busy)
        has_report = self.report is not None
        self.export_md_button.setEnabled(has_report)
        self.export_csv_button.setEnabled(has_report)
