"""Tables that fit: columns sized to their content (a long value elided, its whole text in
the cell's tooltip), sortable by clicking a header, numbers right-aligned and sorted as
numbers. ``fill(table, rows)`` writes rows with sorting paused (a sorted table moves rows
while they are being written) and sizes the columns afterwards."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from workbench.gui.qt import QEvent, QHeaderView, QObject, Qt, QTableWidget, QTableWidgetItem

WIDEST_COLUMN = 320  # pixels: a longer value is elided (the tooltip has all of it)
NUMBER = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


class Cell(QTableWidgetItem):
    """A cell with its full text as tooltip; ``sort_key`` orders it (a number sorts as a
    number, right-aligned)."""

    def __init__(self, text: str, sort_key: Any = None, tooltip: str | None = None):
        super().__init__(text)
        self.sort_key = text.lower() if sort_key is None else sort_key
        self.setToolTip(text if tooltip is None else tooltip)
        if isinstance(sort_key, int | float) and not isinstance(sort_key, bool):
            self.setTextAlignment(NUMBER)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.sort_key, getattr(other, "sort_key", other.text())
        try:
            return bool(mine < theirs)
        except TypeError:  # a number beside a text ("–"): numbers first
            return isinstance(mine, int | float)


def number(value: float | int | None, text: str | None = None, tooltip: str | None = None) -> Cell:
    """A right-aligned number cell: ``text`` as shown (default: the value), sorted by value
    (a missing value sorts first)."""
    shown = ("–" if value is None else str(value)) if text is None else text
    return Cell(shown, float("-inf") if value is None else value, tooltip)


def sortable(table: QTableWidget) -> None:
    """Sort by a click on a header (until then the rows keep the order they were written
    in); columns sized to content by ``fit``."""
    table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    table.setSortingEnabled(True)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    table.horizontalHeader().setStretchLastSection(True)


@contextmanager
def filling(table: QTableWidget) -> Iterator[None]:
    """Write cells with sorting paused; then sort again and size the columns."""
    sorting = table.isSortingEnabled()
    table.setSortingEnabled(False)
    try:
        yield
    finally:
        table.setSortingEnabled(sorting)
        fit(table)


def fill(table: QTableWidget, rows: Sequence[Sequence[QTableWidgetItem | str]]) -> None:
    """Replace the table's rows (text cells become ``Cell``s)."""
    with filling(table):
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                table.setItem(r, c, value if isinstance(value, QTableWidgetItem) else Cell(value))


def item(table: QTableWidget, row: int, column: int) -> QTableWidgetItem:
    """The table's item at ``row``, ``column``; ``LookupError`` where there is none (every
    cell of a filled table has one)."""
    found = table.item(row, column)
    if found is None:
        raise LookupError(f"no item at row {row}, column {column}")
    return found


def fit(table: QTableWidget, widest: int = WIDEST_COLUMN) -> None:
    """Each column the user may resize as wide as its content (and header), at most
    ``widest`` pixels (the header sizes the others: ``fit_width``)."""
    header = table.horizontalHeader()
    for column in range(table.columnCount()):
        if header.sectionResizeMode(column) != QHeaderView.ResizeMode.Interactive:
            continue
        table.resizeColumnToContents(column)
        if table.columnWidth(column) > widest:
            table.setColumnWidth(column, widest)


def fit_width(
    table: QTableWidget,
    stretch: Sequence[int],
    elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
    *,
    wrap: bool = False,
    shares: Sequence[float] | None = None,
) -> None:
    """Fit the table to its width, never scrolling sideways: every column as wide as its
    content and header, except the ``stretch`` columns (long texts), which share the width
    left (in equal parts, or in ``shares``, one for each), a value too long for it elided
    (its cell's tooltip has the whole of it), or with ``wrap`` broken onto as many lines
    as it needs, each row as tall as its longest text."""
    header = table.horizontalHeader()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.setWordWrap(wrap)
    table.setTextElideMode(elide)
    if wrap:
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    if shares is None:
        for column in stretch:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        return
    if len(shares) != len(stretch):
        raise ValueError(f"one share for each stretched column: {stretch} and {shares}")
    _Shares(table, dict(zip(stretch, shares, strict=True)))


class _Shares(QObject):
    """Gives a table's stretched columns their shares of the width its other columns
    leave, again whenever the view or one of those columns changes width."""

    def __init__(self, table: QTableWidget, shares: dict[int, float]):
        super().__init__(table)
        self.table, self.shares = table, shares
        header = table.horizontalHeader()
        for column in shares:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
        header.sectionResized.connect(self._resized)
        table.viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.share()
        return False

    def _resized(self, column: int, _old: int, _new: int) -> None:
        if column not in self.shares:
            self.share()

    def share(self) -> None:
        table = self.table
        others = sum(
            table.columnWidth(c) for c in range(table.columnCount()) if c not in self.shares
        )
        left = max(0, table.viewport().width() - others)
        whole = sum(self.shares.values())
        for column, share in self.shares.items():
            table.setColumnWidth(column, int(left * share / whole))


def header_item(table: QTableWidget, column: int) -> QTableWidgetItem:
    """The header item of ``column``; ``LookupError`` where there is none (a table made
    with its header labels has one for each column)."""
    found = table.horizontalHeaderItem(column)
    if found is None:
        raise LookupError(f"no header item at column {column}")
    return found


def header_tip(table: QTableWidget, column: int, tip: str) -> None:
    """Say what a column means in its header's tooltip."""
    header_item(table, column).setToolTip(tip)
