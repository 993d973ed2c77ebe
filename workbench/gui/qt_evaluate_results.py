"""The Evaluate page's results: the evaluations stored in the workspace
(``EvaluationsList``), and one evaluation's ``Report`` in tabs (``EvaluationView``). Scores: the accuracy
table with 95% intervals over a bar chart with error bars. Against the best worker: each
system's paired difference from the best single worker, task by task. Usage and
categories: the turns per worker and role, the accuracy per category, and what the
coordinator played. The tables of a row per system fit their tab at 1280 x 800 without
scrolling sideways; those of a column per system do with a sandbox evaluation's seven
systems, and scroll sideways with more, their first column whole.

A view of ``evaluate_model``'s cells; ``add_view`` takes one more tab (another kind of
result of the same page)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.core.evaluate import Report
from workbench.core.jobs.evaluate import StoredEvaluation
from workbench.gui import tables
from workbench.gui.evaluate_model import (
    COLUMN_TIPS,
    COLUMNS,
    COST_COLUMN,
    EVALUATION_COLUMNS,
    EVALUATION_TIPS,
    TICK_CHARS,
    baseline_words,
    category_rows,
    cost_header,
    cost_tip,
    evaluation_cells,
    result_cells,
    system_headers,
    tick_name,
    usage_head,
    usage_rows,
)
from workbench.gui.plots import painted, palette_colors, set_title, themed
from workbench.gui.qt import (
    QFontMetrics,
    QGroupBox,
    QHeaderView,
    QSplitter,
    Qt,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
    pg,
    read_only_table,
)
from workbench.gui.qt_learned import LearnedView
from workbench.gui.runs_model import CellText


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


class BarNames:
    """Each bar's system name (``tick_name``) under ``chart``'s bars, each wrapped at the
    most characters a line (``TICK_CHARS`` at most) that fit the bars' spacing, again when
    the chart is resized or its range changes; the axis as high as the longest name's
    lines (a wrapped name's second line was cut off)."""

    def __init__(self, chart: pg.PlotWidget) -> None:
        self.chart = chart
        self.systems: list[str] = []
        self.names: list[str] = []
        view = chart.getViewBox()
        view.sigResized.connect(self.fit)
        view.sigXRangeChanged.connect(self.fit)

    def show(self, systems: Sequence[str]) -> None:
        """Name ``systems``' bars, one a unit apart from x = 0 (none: no names)."""
        self.systems = list(systems)
        self.names = []
        self.fit()

    def fit(self) -> None:
        axis = self.chart.getAxis("bottom")
        if not self.systems:
            axis.setTicks(None)
            axis.setHeight(None)
            return
        metrics = QFontMetrics(axis.style["tickFont"] or self.chart.font())
        low, high = self.chart.getViewBox().viewRange()[0]
        room = axis.width() / (high - low) - metrics.averageCharWidth()  # a unit of x apart

        def fitted(system: str) -> str:
            """The name wrapped at the most characters a line that fit ``room``; a word
            wider than that (nothing to break it at) on a line of its own."""
            for chars in range(TICK_CHARS, 1, -1):
                name = tick_name(system, chars)
                if max(metrics.horizontalAdvance(t) for t in name.split("\n")) <= room:
                    return name
            return tick_name(system, 1)

        names = [fitted(system) for system in self.systems]
        if names == self.names:  # the same lines: nothing to lay out again
            return
        self.names = names
        axis.setTicks([list(enumerate(names))])
        lines = max(name.count("\n") + 1 for name in names)
        axis.setHeight(metrics.height() * lines + 20 if lines > 1 else None)


def _box(title: str, widget: QWidget) -> QGroupBox:
    group = QGroupBox(title)
    QVBoxLayout(group).addWidget(widget)
    return group


def _cell(cell: CellText, number: bool) -> tables.Cell:
    item = tables.Cell(cell.text, cell.sort_key, cell.tooltip)
    if number:
        item.setTextAlignment(tables.NUMBER)
    return item


def fill_by_system(
    table: QTableWidget, head: str, report: Report, rows: Sequence[Sequence[CellText]]
) -> None:
    """A table of a row per ``rows`` and a column per system (headed by its short name,
    whole in the header's tooltip)."""
    headers = system_headers(report)
    table.setColumnCount(1 + len(headers))
    table.setHorizontalHeaderLabels([head, *(name for name, _ in headers)])
    for column, (_, tip) in enumerate(headers, start=1):
        tables.header_tip(table, column, tip)
    tables.fill(table, [[_cell(c, i > 0) for i, c in enumerate(row)] for row in rows])


class EvaluationView(QTabWidget):
    """One evaluation's report in tabs (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.report: Report | None = None
        self.results_table = read_only_table(COLUMNS)
        # the figures whole; the system's name takes the width left (elided, whole in its
        # tooltip), so that the table fits its tab at 1280 px without scrolling sideways
        tables.fit_width(self.results_table, [0], Qt.TextElideMode.ElideMiddle)
        # rows as high as their one line of text: seven to nine systems in view at once
        rows = self.results_table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.results_table.fontMetrics().height() + 8)
        for column, tip in enumerate(COLUMN_TIPS):
            tables.header_tip(self.results_table, column, tip)
        # a row per worker and role, or per category; a column per system
        self.usage_table = read_only_table(("Worker and role",))
        self.category_table = read_only_table(("Category",))
        # every column as wide as its content, the first (what a row is) never cut: more
        # systems than fit the tab (MMLU-Pro's six models, the coordinator, random and the
        # oracle at 1280 px) scroll sideways
        for table in (self.usage_table, self.category_table):
            tables.fit_width(table, [])
        self.learned_view = LearnedView("What the coordinator played: shown after an evaluation.")
        self.chart = themed(pg.PlotWidget(title="Accuracy with 95% intervals"))
        self.chart.setYRange(0, 1)
        self.chart.setMouseEnabled(x=False, y=False)
        self.chart.setMenuEnabled(False)
        self.bar_names = BarNames(self.chart)
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
        self.paired_names = BarNames(self.paired_chart)
        scores = QSplitter(Qt.Orientation.Vertical)
        scores.addWidget(_box("Accuracy", self.results_table))
        scores.addWidget(self.chart)
        # room for the table's seven to nine rows whole, and the chart below them (the
        # user's own sizes are remembered after that)
        scores.setSizes([330, 370])
        played = QSplitter(Qt.Orientation.Vertical)
        played.addWidget(_box("Usage: turns per worker and role", self.usage_table))
        played.addWidget(_box("Accuracy per category (questions)", self.category_table))
        played.addWidget(_box("What the coordinator played, by category", self.learned_view))
        self.add_view(scores, "Scores", "Accuracy of each system with 95% intervals")
        self.add_view(
            self.paired_chart,
            "Against the best worker",
            "Each system minus the best single worker, task by task, with 95% intervals",
        )
        self.add_view(
            played,
            "Usage and categories",
            "Which workers and roles were used, accuracy per category, what was played",
        )

    def add_view(self, widget: QWidget, title: str, tip: str) -> int:
        """One more tab (its index): another view of the page's results."""
        index = self.addTab(widget, title)
        self.setTabToolTip(index, tip)
        return index

    def clear_results(self) -> None:
        """Empty every view (an evaluation starts, another is chosen)."""
        self.report = None
        self.results_table.setRowCount(0)
        for table, head in (
            (self.usage_table, "Worker and role"),
            (self.category_table, "Category"),
        ):
            table.setRowCount(0)
            table.setColumnCount(1)
            table.setHorizontalHeaderLabels([head])
        self.learned_view.show_learned((), "")
        for item in (self.bars, self.error_bars):
            if item is not None:
                self.chart.removeItem(item)
        self.bars = self.error_bars = None
        self.bar_names.show(())
        for item in self.paired_items:
            self.paired_chart.removeItem(item)
        self.paired_items = []
        self.paired_names.show(())

    def show_report(self, report: Report, pool: Sequence[str] = ()) -> None:
        """Show ``report``: its table and chart, the paired differences, the usage (in
        ``pool``'s order of workers), the categories and what was played."""
        self.clear_results()
        self.report = report
        systems = report.systems
        header = tables.header_item(self.results_table, COST_COLUMN)
        header.setText(cost_header(report.spend))
        header.setToolTip(cost_tip(report.spend))
        self.results_table.setRowCount(len(systems))
        for row, system in enumerate(systems):
            # the system's cell: its words, then its whole id where the words differ
            whole = f"{system.name} ({system.kind})"
            for col, text in enumerate(result_cells(system)):
                item = QTableWidgetItem(text)
                item.setToolTip(
                    text if col else whole if text == system.name else f"{text}: {whole}"
                )
                if col:
                    item.setTextAlignment(tables.NUMBER)
                self.results_table.setItem(row, col, item)
        x = np.arange(len(systems), dtype=float)
        accuracy = np.array([s.accuracy for s in systems])
        low, high = np.array([s.ci_low for s in systems]), np.array([s.ci_high for s in systems])
        self.bars = bar_item(x, accuracy)
        self.error_bars = interval_item(x, accuracy, low, high)
        self.chart.addItem(self.bars)
        self.chart.addItem(self.error_bars)
        self.bar_names.show([s.name for s in systems])
        self.chart.setXRange(-0.6, len(systems) - 0.4)
        self._show_paired(report)
        fill_by_system(self.usage_table, usage_head(report, pool), report, usage_rows(report, pool))
        fill_by_system(self.category_table, "Category", report, category_rows(report))
        self.learned_view.show_learned(
            report.learned, f"On the {report.split} split (the oracle: the exact best plan):"
        )

    def _show_paired(self, report: Report) -> None:
        """Each system's paired difference from the best single worker, with its interval."""
        pairs = report.paired
        set_title(
            self.paired_chart,
            f"Difference from {baseline_words(report.best_single)},<br>task by task (95% bootstrap)"
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
        self.paired_names.show([p.system for p in pairs])
        self.paired_chart.setXRange(-0.6, len(pairs) - 0.4)
        self.paired_chart.setYRange(min(-0.1, float(low.min())), max(0.1, float(high.max())))

    def table_rows(self) -> list[tuple[str, ...]]:
        """The accuracy table's cells, row by row (what the user reads)."""
        return [
            tuple(
                tables.item(self.results_table, r, c).text()
                for c in range(self.results_table.columnCount())
            )
            for r in range(self.results_table.rowCount())
        ]


EVALUATION_ID = Qt.ItemDataRole.UserRole


class EvaluationsList(QGroupBox):
    """The evaluations stored in the workspace, newest first: what was evaluated, the
    split, the coordinator's accuracy and when (``evaluate_model.evaluation_cells``)."""

    def __init__(self) -> None:
        super().__init__("Evaluations in this workspace")
        self.table = read_only_table(EVALUATION_COLUMNS)
        tables.sortable(self.table)
        tables.fit_width(self.table, [0], wrap=True)
        for column, tip in EVALUATION_TIPS.items():
            tables.header_tip(self.table, EVALUATION_COLUMNS.index(column), tip)
        self.table.setToolTip("Click an evaluation to show its results")
        self.table.setMinimumHeight(110)
        QVBoxLayout(self).addWidget(self.table)

    def show_evaluations(self, evaluations: Sequence[StoredEvaluation], shown: str | None) -> None:
        """Fill the list (no selection signal), ``shown`` selected when listed."""
        rows = []
        for evaluation in evaluations:
            cells = [_cell(c, False) for c in evaluation_cells(evaluation)]
            for cell in cells:
                cell.setData(EVALUATION_ID, evaluation.id)
            rows.append(cells)
        self.table.blockSignals(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        tables.fill(self.table, rows)
        if shown is not None:
            self.select(shown)
        self.table.blockSignals(False)

    def ids(self) -> list[str]:
        """The evaluations' ids, in the list's order."""
        return [
            tables.item(self.table, r, 0).data(EVALUATION_ID) for r in range(self.table.rowCount())
        ]

    def select(self, eval_id: str) -> None:
        ids = self.ids()
        if eval_id in ids:
            self.table.selectRow(ids.index(eval_id))

    def selected(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return tables.item(self.table, rows[0].row(), 0).data(EVALUATION_ID) if rows else None
