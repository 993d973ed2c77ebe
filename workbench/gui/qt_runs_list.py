"""The Runs page's list of runs: a table (name, status, why it ended, generations,
started) that fits its side of the page at 1280 x 800 without scrolling sideways (the
name, the status and the sentence share the width the others leave, each on as many
lines as it needs: runs named alike, a cross-validation's folds, differ at the end), and
its buttons. A view only: the cells are ``runs_model.run_cells``."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.jobs.shared import RunSummary
from workbench.gui import tables
from workbench.gui.qt import QGroupBox, QHBoxLayout, QPushButton, Qt, QVBoxLayout, read_only_table
from workbench.gui.runs_model import RUN_COLUMN_TIPS, RUN_COLUMNS, RunProgress, run_cells

RUN_ID = Qt.ItemDataRole.UserRole


class RunsList(QGroupBox):
    """The runs of the workspace, newest first, with Refresh, Open and Resume run."""

    def __init__(self) -> None:
        super().__init__("Runs in this workspace")
        self.table = read_only_table(RUN_COLUMNS)
        tables.sortable(self.table)
        tables.fit_width(
            self.table,
            [RUN_COLUMNS.index(c) for c in ("Name", "Status", "Why it ended")],
            wrap=True,
            shares=[5, 2, 3],
        )
        for column, tip in RUN_COLUMN_TIPS.items():
            tables.header_tip(self.table, RUN_COLUMNS.index(column), tip)
        self.table.sortByColumn(RUN_COLUMNS.index("Started"), Qt.SortOrder.DescendingOrder)
        self.table.setMinimumHeight(140)
        self.refresh_button = QPushButton("Refresh")
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Show the selected run's plots and what it learned")
        self.resume_button = QPushButton("Resume run")
        self.resume_button.setToolTip(
            "Continue the selected stopped or interrupted run from its last checkpoint"
        )
        buttons = QHBoxLayout()
        for button in (self.refresh_button, self.open_button, self.resume_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addLayout(buttons)

    def show_runs(self, runs: Sequence[RunSummary], live: RunProgress | None) -> None:
        """Fill the table (the selection kept, no selection signal meanwhile)."""
        selected = self.selected()
        rows = []
        for run in runs:
            cells = [tables.Cell(c.text, c.sort_key, c.tooltip) for c in run_cells(run, live)]
            for cell in cells:
                cell.setData(RUN_ID, run.id)
            rows.append(cells)
        self.table.blockSignals(True)
        tables.fill(self.table, rows)
        if selected is not None:
            self.select(selected)
        self.table.blockSignals(False)

    def row_of(self, run_id: str) -> int | None:
        """The row where run ``run_id`` is shown now (the table can be sorted)."""
        for row in range(self.table.rowCount()):
            if tables.item(self.table, row, 0).data(RUN_ID) == run_id:
                return row
        return None

    def select(self, run_id: str) -> None:
        row = self.row_of(run_id)
        if row is not None:
            self.table.selectRow(row)

    def selected(self) -> str | None:
        items = self.table.selectedItems()
        return items[0].data(RUN_ID) if items else None

    def cell_text(self, run_id: str, column: str) -> str:
        """The text shown for run ``run_id`` in ``column`` (one of ``RUN_COLUMNS``)."""
        row = self.row_of(run_id)
        if row is None:
            raise LookupError(f"run {run_id} is not listed")
        return tables.item(self.table, row, RUN_COLUMNS.index(column)).text()
