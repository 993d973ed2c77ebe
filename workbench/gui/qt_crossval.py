"""The Evaluate page's "Cross-validations" tab: the cross-validations stored in the
workspace (``trinity-workbench crossval``), and the chosen one: each system's accuracy as a
bar with its 95% interval (the coordinator, the routers, each model alone, the oracle), its
paired difference from the best single model with that difference's interval, and, for a
system picked below, the questions it won and lost against that model in each category.
The bars lie in rows, a system's name left of its row: a cross-validation compares a dozen
systems or more, whose names would overlap side by side under upright bars.

A view of ``crossval_model``'s cells; the reads (``list_crossvals``, ``load_crossval``) run
in the page's background jobs. docs/guides/desktop.md, "Evaluate".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.jobs.crossval_report import (
    CrossValReport,
    StoredCrossVal,
    list_crossvals,
    load_crossval,
)
from workbench.core.workspace import Workspace
from workbench.gui import tables
from workbench.gui.crossval_model import (
    CATEGORY_COLUMNS,
    LIST_COLUMNS,
    LIST_TIPS,
    SYSTEM_COLUMNS,
    SYSTEM_TIPS,
    category_rows,
    category_title,
    crossval_cells,
    summary_line,
    system_name,
    system_rows,
)
from workbench.gui.plots import painted, palette_colors, set_title, themed
from workbench.gui.qt import (
    QComboBox,
    QFontMetrics,
    QFormLayout,
    QGroupBox,
    QLabel,
    QSplitter,
    Qt,
    QTableWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
    pg,
    read_only_table,
)
from workbench.gui.runs_model import CellText

RUN_ID = Qt.ItemDataRole.UserRole
ROW_GAP = 4  # pixels between two rows' names
CHART_FRAME = 80  # pixels of a chart's title, bottom axis and margins
NO_CROSSVAL = (
    "No cross-validation in this workspace yet. Make one on the command line: "
    "trinity-workbench crossval CONFIG --folds 5 (docs: Evaluating)."
)


def _cells(row: list[CellText], numbers: bool = True) -> list[tables.Cell]:
    cells = []
    for column, cell in enumerate(row):
        item = tables.Cell(cell.text, cell.sort_key, cell.tooltip)
        if numbers and column:
            item.setTextAlignment(tables.NUMBER)
        cells.append(item)
    return cells


def _chart(title: str) -> pg.PlotWidget:
    chart = themed(pg.PlotWidget(title=title))
    chart.setMouseEnabled(x=False, y=False)
    chart.setMenuEnabled(False)
    return chart


def row_items(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[Any]:
    """One bar a row from 0 to each value (the first row on top), in the theme's bar
    colour, and each value's interval from ``low`` to ``high`` in its text colour."""
    y = np.arange(len(values), dtype=float)[::-1]
    bars = pg.BarGraphItem(x0=np.minimum(values, 0.0), y=y, width=np.abs(values), height=0.6)
    errors = pg.ErrorBarItem(x=values, y=y, left=values - low, right=high - values, beam=0.25)
    return [
        painted(bars, lambda palette: bars.setOpts(brush=pg.mkBrush(palette.colour("bar")))),
        painted(errors, lambda palette: errors.setData(pen=pg.mkPen(palette.foreground, width=2))),
    ]


def name_rows(chart: pg.PlotWidget, names: list[str]) -> None:
    """Each row's name left of it (the first on top), the axis as wide as the widest name
    and the chart at least as high as a line of text a row, with its title and axis."""
    axis = chart.getAxis("left")
    axis.setTicks([[(len(names) - 1 - i, name) for i, name in enumerate(names)]])
    metrics = QFontMetrics(axis.style["tickFont"] or chart.font())
    axis.setWidth(max((metrics.horizontalAdvance(n) for n in names), default=0) + 16)
    chart.setMinimumHeight(len(names) * (metrics.height() + ROW_GAP) + CHART_FRAME)
    chart.setYRange(-0.6, len(names) - 0.4, padding=0)


class CrossValView(QWidget):
    """The tab; ``page`` (a ``Page``) runs its reads and shows their failures."""

    def __init__(self, page: Any, workspace: Workspace):
        super().__init__()
        self.page = page
        self.workspace = workspace
        self.crossvals: list[StoredCrossVal] = []
        self.report: CrossValReport | None = None
        self.listing = False
        self.loading = False
        # what each chart shows of the report (taken off when another is shown)
        self._drawn: dict[Any, list[Any]] = {}

        self.list_table = read_only_table(LIST_COLUMNS)
        tables.fit_width(self.list_table, [0])
        for name, tip in LIST_TIPS.items():
            tables.header_tip(self.list_table, LIST_COLUMNS.index(name), tip)
        self.list_table.setToolTip("Click a cross-validation to show its results")
        self.list_table.setMaximumHeight(110)  # a few rows: the results below need the room
        self.list_table.itemSelectionChanged.connect(self._picked)
        self.summary_label = QLabel(NO_CROSSVAL)
        self.summary_label.setWordWrap(True)

        self.systems_table = read_only_table(SYSTEM_COLUMNS)
        tables.fit_width(self.systems_table, [0], Qt.TextElideMode.ElideMiddle)
        for column, tip in enumerate(SYSTEM_TIPS):
            tables.header_tip(self.systems_table, column, tip)
        self.accuracy_chart = _chart("Accuracy with 95% intervals")
        self.accuracy_chart.setXRange(0, 1)
        self.paired_chart = _chart("Difference from the best single model (95% intervals)")
        zero = pg.InfiniteLine(pos=0, angle=90)
        self.paired_chart.addItem(
            painted(zero, lambda palette: zero.setPen(pg.mkPen(palette.colour("grey"))))
        )
        self.system_combo = QComboBox()
        self.system_combo.setToolTip("The system compared with the best single model below")
        self.system_combo.currentIndexChanged.connect(lambda _: self._show_categories())
        self.category_table = read_only_table(CATEGORY_COLUMNS)
        tables.fit_width(self.category_table, [0])
        self.category_box = QGroupBox("Per category")
        category_layout = QVBoxLayout(self.category_box)
        chooser = QFormLayout()
        chooser.addRow("System", self.system_combo)
        category_layout.addLayout(chooser)
        category_layout.addWidget(self.category_table)

        accuracy = QSplitter(Qt.Orientation.Vertical)
        accuracy.addWidget(self.systems_table)
        accuracy.addWidget(self.accuracy_chart)
        versus = QSplitter(Qt.Orientation.Vertical)
        versus.addWidget(self.paired_chart)
        versus.addWidget(self.category_box)
        self.views = QTabWidget()
        self.views.addTab(accuracy, "Accuracy")
        self.views.setTabToolTip(0, "Each system's accuracy with its 95% interval")
        self.views.addTab(versus, "Against the best model")
        self.views.setTabToolTip(
            1, "Each system minus the best single model, question by question, and per category"
        )
        layout = QVBoxLayout(self)
        layout.addWidget(self.list_table)
        layout.addWidget(self.summary_label)
        layout.addWidget(self.views, 1)

    # ------------------------------------------------------------------ reading

    def refresh(self) -> None:
        """Read the stored cross-validations in the background (the latest read wins)."""
        self.listing = True
        job = self.page.in_background(
            "cross-validations",
            lambda: list_crossvals(self.workspace),
            self._on_listed,
            self._on_failed,
            "list the cross-validations",
            latest=True,
        )
        if job is None:
            self.listing = False

    def _on_listed(self, _context: Any, crossvals: list[StoredCrossVal]) -> None:
        self.listing = False
        self.crossvals = crossvals
        shown = self.report.run_id if self.report is not None else None
        self.list_table.blockSignals(True)
        rows = []
        for stored in crossvals:
            cells = _cells(crossval_cells(stored), numbers=False)
            for cell in cells:
                cell.setData(RUN_ID, stored.run_id)
            rows.append(cells)
        tables.fill(self.list_table, rows)
        self.list_table.blockSignals(False)
        if not crossvals:
            self.summary_label.setText(NO_CROSSVAL)
            return
        self.select(shown if shown in self.ids() else crossvals[0].run_id)

    def ids(self) -> list[str]:
        """The listed cross-validations' run ids, in the list's order."""
        return [
            tables.item(self.list_table, r, 0).data(RUN_ID)
            for r in range(self.list_table.rowCount())
        ]

    def select(self, run_id: str) -> None:
        """Choose ``run_id`` in the list (its results are read and shown)."""
        ids = self.ids()
        if run_id in ids:
            self.list_table.selectRow(ids.index(run_id))

    def _picked(self) -> None:
        rows = self.list_table.selectionModel().selectedRows()
        if not rows:
            return
        run_id = tables.item(self.list_table, rows[0].row(), 0).data(RUN_ID)
        if self.report is not None and self.report.run_id == run_id:
            return
        self.loading = True
        job = self.page.in_background(
            "cross-validation",
            lambda: load_crossval(self.workspace, run_id),
            self._on_loaded,
            self._on_failed,
            "show the cross-validation",
            latest=True,
        )
        if job is None:
            self.loading = False

    def _on_loaded(self, _context: Any, report: CrossValReport) -> None:
        self.loading = False
        self.show_report(report)

    def _on_failed(self, what: str, exc: Exception) -> None:
        self.listing = self.loading = False
        self.page.failed(what, exc)

    # ------------------------------------------------------------------ showing

    def show_report(self, report: CrossValReport) -> None:
        """Show ``report``: the systems' table, both charts and the categories."""
        self.report = report
        self.summary_label.setText(summary_line(report))
        tables.fill(self.systems_table, [_cells(row) for row in system_rows(report)])
        for chart, items in self._drawn.items():
            for item in items:
                chart.removeItem(item)
        self._drawn = {self.accuracy_chart: [], self.paired_chart: []}
        systems = report.systems
        accuracy = np.array([s.accuracy for s in systems])
        low, high = np.array([s.ci_low for s in systems]), np.array([s.ci_high for s in systems])
        for item in row_items(accuracy, low, high):
            self.accuracy_chart.addItem(item)
            self._drawn[self.accuracy_chart].append(item)
        name_rows(self.accuracy_chart, [system_name(s.name) for s in systems])
        self._show_paired(report)
        self.system_combo.blockSignals(True)
        self.system_combo.clear()
        for pair in report.paired:
            self.system_combo.addItem(system_name(pair.system), pair.system)
        self.system_combo.blockSignals(False)
        self._show_categories()

    def _show_paired(self, report: CrossValReport) -> None:
        pairs = report.paired
        set_title(  # two lines: a model's name is long beside a 1280-pixel window's plot
            self.paired_chart,
            f"Difference from {system_name(report.best_single)},<br>question by question "
            "(95% intervals)",
            color=palette_colors()[1],
        )
        if not pairs:
            return
        diff = np.array([p.difference for p in pairs])
        low, high = np.array([p.ci_low for p in pairs]), np.array([p.ci_high for p in pairs])
        for item in row_items(diff, low, high):
            self.paired_chart.addItem(item)
            self._drawn[self.paired_chart].append(item)
        name_rows(self.paired_chart, [system_name(p.system) for p in pairs])
        self.paired_chart.setXRange(min(-0.1, float(low.min())), max(0.1, float(high.max())))

    def _show_categories(self) -> None:
        system = self.system_combo.currentData()
        if self.report is None or system is None:
            tables.fill(self.category_table, [])
            return
        self.category_box.setTitle(category_title(self.report, system))
        rows = category_rows(self.report, system)
        tables.fill(self.category_table, [_cells(row) for row in rows])

    def choose_system(self, system: str) -> None:
        """Compare ``system`` (its full name) with the best single model per category."""
        index = self.system_combo.findData(system)
        if index >= 0:
            self.system_combo.setCurrentIndex(index)

    def table_rows(self, table: QTableWidget) -> list[tuple[str, ...]]:
        """A table's cells, row by row (what the user reads)."""
        return [
            tuple(tables.item(table, r, c).text() for c in range(table.columnCount()))
            for r in range(table.rowCount())
        ]
