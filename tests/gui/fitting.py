"""The check that a table fits its place without scrolling sideways (Evaluate's accuracy
table, Replay's episode list, the Playground's turns): no horizontal scrollbar, the columns
together no wider than the view, every column but the ``stretched`` ones as wide as its
content and its header (nothing elided), each stretched one still wide enough to read and
its cells' tooltips holding their whole text."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.gui.qt import QApplication, QTableWidget


def assert_fits_sideways(table: QTableWidget, stretched: Sequence[int], readable: int = 80) -> None:
    QApplication.processEvents()
    widths = [table.columnWidth(c) for c in range(table.columnCount())]
    bar = table.horizontalScrollBar()
    assert not bar.isVisible() and bar.maximum() == 0, (widths, table.viewport().width())
    assert sum(widths) <= table.viewport().width(), (widths, table.viewport().width())
    header = table.horizontalHeader()
    for c in range(table.columnCount()):
        if c in stretched:
            assert widths[c] >= readable, (c, widths)
            continue
        whole = max(table.sizeHintForColumn(c), header.sectionSizeHint(c))
        assert widths[c] >= whole, (c, widths[c], whole)
    for c in stretched:
        for r in range(table.rowCount()):
            cell = table.item(r, c)
            assert cell is not None and cell.text() in cell.toolTip(), (r, c)
