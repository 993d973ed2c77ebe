"""Tables that fit and speak the user's words, on the Runs page over real training runs:
every column as wide as its content (nothing cut) but the long texts, which share the width
left and wrap, whole, with the whole value also in their tooltips; why a run ended in a
sentence with the identifier in the tooltip; numbers right-aligned and sorted as numbers."""

from __future__ import annotations

from tests.core.test_training import config
from workbench.core.jobs.train import train
from workbench.core.records import ROLES, StopReason
from workbench.core.store import Store
from workbench.gui import tables
from workbench.gui.qt import QFontMetrics, Qt, QTableWidget
from workbench.gui.words import ROLE_NAMES, STOP_REASONS, stop_sentence

LONG_NAME = "a run with a long name that says everything about it " * 3  # 162 characters


def test_the_runs_table_fits_its_content_and_wraps_a_long_value(
    make_main_window, qtbot, gui_workspace, tiny_backbone
):
    """At 1280 x 800 the runs table fits its side of the page without scrolling sideways:
    generations and start time whole (the start time no longer cut), the name, the status
    and why it ended sharing the width left, the name the most of it, each text whole on
    as many lines as it needs (a name was cut to 'mmlu-pro small-6-…' for all twenty runs
    of a cross-validation), the whole of it also in its tooltip."""
    from tests.gui.fitting import assert_fits_sideways

    long_run = ""
    for name in ("short", LONG_NAME.strip()):
        long_run = train(
            config(run={"name": name}, budget={"generations": 1}),
            gui_workspace,
            backbone=tiny_backbone,
        )
    with Store.open(gui_workspace) as store:
        long_name = store.get_run(long_run).name  # the config's name and the day
    assert long_name.startswith(LONG_NAME.strip() + ", ")
    window = make_main_window()
    window.resize(1280, 800)
    page = window.pages["Runs"]
    window.go("Runs")
    table = page.runs_table
    qtbot.waitUntil(lambda: table.rowCount() == 2 and table.isVisible(), timeout=30_000)
    header = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    name_column, why = header.index("Name"), header.index("Why it ended")
    shared = [name_column, header.index("Status"), why]
    assert_fits_sideways(table, stretched=shared, readable=60)
    assert table.columnWidth(name_column) > max(table.columnWidth(c) for c in shared[1:])
    rows = {table.item(r, name_column).text(): r for r in range(2)}
    long_row = rows[long_name]
    assert long_name in table.item(long_row, name_column).toolTip()
    metrics = QFontMetrics(table.font())
    for row in range(2):
        for column in shared:
            text = table.item(row, column).text()
            room = table.columnWidth(column) - 8  # less the cell's margins
            wrapped = metrics.boundingRect(0, 0, room, 10_000, Qt.TextFlag.TextWordWrap, text)
            assert wrapped.height() <= table.rowHeight(row), (text, wrapped, table.rowHeight(row))
    long_lines = table.rowHeight(long_row) // metrics.lineSpacing()
    assert long_lines >= 4, table.rowHeight(long_row)  # the long name, whole, on its lines
    # when it started: today's runs by the time alone, the whole date in the tooltip
    started = table.item(long_row, header.index("Started"))
    assert started.text().startswith("today ") and started.toolTip()[:4].isdigit()
    # why it ended: a sentence, the identifier behind it
    cell = table.item(long_row, why)
    assert cell.text() == "It ran all its generations"
    assert "stop reason: budget.generations" in cell.toolTip()
    generations = table.item(long_row, header.index("Gen."))
    assert generations.textAlignment() & Qt.AlignmentFlag.AlignRight


def test_numbers_sort_as_numbers_and_a_missing_one_first(qtbot):
    table = QTableWidget(0, 1)
    qtbot.addWidget(table)
    tables.sortable(table)
    tables.fill(
        table,
        [[tables.number(9)], [tables.number(100)], [tables.number(None)], [tables.number(10)]],
    )
    table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert [table.item(r, 0).text() for r in range(4)] == ["–", "9", "10", "100"]
    assert table.item(1, 0).textAlignment() & Qt.AlignmentFlag.AlignRight


def test_every_episode_stop_reason_and_role_has_words():
    """A stop reason or role added to the core without words here fails this test (the
    GUI would show the identifier)."""
    for reason in StopReason:
        assert reason.value in STOP_REASONS and stop_sentence(reason) != reason.value
    for reason in ("budget.generations", "budget.episodes", "budget.calls", "stopped", "error"):
        assert stop_sentence(reason) != reason
    assert set(ROLES) <= set(ROLE_NAMES)
