"""The Compare page over two real training runs: ticked, their best, mean and validation
curves are overlaid on one plot with a legend (generations from 1), and the table lists
exactly the settings in which their configs differ."""

from __future__ import annotations

import pytest

from tests.core.test_training import config
from workbench.core.config import config_keys
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.core.workspace import Workspace
from workbench.gui.qt_compare import config_differences, differences_note, flat_settings
from workbench.gui.qt_run_form import tooltip


@pytest.fixture()
def two_runs(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    first = train(
        config(run={"name": "first", "seed": 0}, budget={"generations": 3}),
        ws,
        backbone=tiny_backbone,
    )
    second = train(
        config(
            run={"name": "second", "seed": 1},
            budget={"generations": 2},
            optimizer={"rollouts": 2},
        ),
        ws,
        backbone=tiny_backbone,
    )
    return ws, first, second


def test_two_runs_overlay_their_curves_and_list_only_the_settings_that_differ(qtbot, two_runs):
    from workbench.gui.qt_compare import QtCompare

    ws, first, second = two_runs
    page = QtCompare(ws)
    qtbot.addWidget(page)
    page.show()
    qtbot.waitUntil(lambda: page.run_list.count() == 2, timeout=20_000)
    with qtbot.waitSignal(page.compared, timeout=20_000):
        page.tick([first, second])
    assert page.ticked() == [second, first]  # the list is newest first

    with Store.open(ws) as store:
        stats = {run: store.generation_stats(run) for run in (first, second)}
    for run in (first, second):
        best = page.curves[(run, "best")].getData()
        assert list(best[0]) == [s.generation + 1 for s in stats[run]]  # from 1
        assert list(best[1]) == [s.best for s in stats[run]]
        assert list(page.curves[(run, "mean")].getData()[1]) == [s.mean for s in stats[run]]
        validated = [
            (s.generation + 1, s.validation) for s in stats[run] if s.validation is not None
        ]
        vx, vy = page.curves[(run, "validation")].getData()
        assert list(zip(vx, vy, strict=True)) == validated and validated
    with Store.open(ws) as store:
        names = {r.id: r.name for r in store.list_runs()}
    assert names[second].startswith("second, ")  # the config's name and the day
    labels = [label.text for _, label in page.legend.items]
    # each run once by its colour, then each curve once by its line
    assert labels == [names[second], names[first], "best", "mean", "validation"]
    assert page.plot.getPlotItem().getAxis("bottom").labelText == "generation"
    # the legend beside the curves, never over them
    view = page.plot.getPlotItem().getViewBox()

    def legend_beside() -> None:
        legend, curves = page.legend.sceneBoundingRect(), view.sceneBoundingRect()
        # (a pen's half pixel of overlap at most)
        assert legend.width() > 0 and legend.left() >= curves.right() - 1, (legend, curves)

    qtbot.waitUntil(legend_beside, timeout=5_000)

    # the table: only what differs, one column per run
    assert sorted(page.difference_keys()) == sorted(
        ["run.name", "run.seed", "budget.generations", "optimizer.rollouts"]
    )
    headers = [page.diff_table.horizontalHeaderItem(c).text() for c in range(3)]
    assert headers == ["Setting", names[second], names[first]]
    row = page.difference_keys().index("optimizer.rollouts")
    # in the config key's own words, the run form's label and tooltip (one source)
    (rollouts,) = [k for k in config_keys() if k.dotted == "optimizer.rollouts"]
    assert page.diff_table.item(row, 0).text() == rollouts.key.label == "Tasks per candidate"
    assert page.diff_table.item(row, 0).toolTip() == tooltip(rollouts)
    assert [page.diff_table.item(row, c).text() for c in (1, 2)] == ["2", "3"]
    assert "4 settings differ" in page.diff_note.text()

    # a curve kind switched off leaves the plot; one run alone asks for another
    page.series_boxes["mean"].setChecked(False)
    assert (first, "mean") not in page.curves and (first, "best") in page.curves
    with qtbot.waitSignal(page.compared, timeout=20_000):
        page.tick([first])
    assert page.diff_table.rowCount() == 0 and "one more run" in page.message_label.text()
    page.shutdown()


def test_the_differences_are_counted_in_the_singular_and_the_plural():
    assert differences_note(1, 43) == "1 setting differs; 43 are the same in every run ticked."
    assert differences_note(4, 40).startswith("4 settings differ; 40 are the same")
    assert differences_note(0, 44) == "Their settings are all the same."


def test_config_differences_are_the_keys_not_equal_in_every_config():
    a = flat_settings({"run": {"name": "a", "seed": 0}, "pool": {"workers": ["sandbox"]}})
    b = flat_settings({"run": {"name": "a", "seed": 1}, "pool": {"workers": ["sandbox"]}})
    c = flat_settings({"run": {"name": "a", "seed": 0}, "pool": {"workers": ["team"]}, "x": 1})
    assert config_differences([a, a]) == []
    assert config_differences([a, b]) == [("run.seed", [0, 1])]
    assert config_differences([a, b, c]) == [
        ("run.seed", [0, 1, 0]),
        ("pool.workers", [["sandbox"], ["sandbox"], ["team"]]),
        ("x", [None, None, 1]),  # missing from some: different
    ]


def test_runs_named_alike_are_shown_whole_in_the_list_at_1280_by_800(
    make_main_window, qtbot, gui_workspace
):
    """A cross-validation's fold runs are named alike and differ in the middle (the system)
    and at the end (the fold): each name wraps onto as many lines as it needs, never cut
    and never scrolled sideways, so two of them can be told apart in the list."""
    from tests.gui.test_start_page import stored_run
    from workbench.gui.qt import QApplication, QFontMetrics, Qt

    names = [
        f"mmlu-pro small-6-3000 (coordinator{system}, cv {fold}/5, seed 0)"
        for system in ("", " (paper settings)")
        for fold in (1, 2)
    ]
    for name in names:
        stored_run(gui_workspace, name, 2, "finished")
    window = make_main_window()
    window.resize(1280, 800)
    window.go("Compare")
    page = window.pages["Compare"]
    qtbot.waitUntil(lambda: page.run_list.count() == len(names), timeout=20_000)
    QApplication.processEvents()
    view = page.run_list
    assert not view.horizontalScrollBar().isVisible()
    line = QFontMetrics(view.font()).height()
    for row in range(view.count()):
        item = view.item(row)
        name = item.text().splitlines()[0]
        rect = view.visualItemRect(item)
        wide = QFontMetrics(view.font()).horizontalAdvance(name)
        assert wide > rect.width()  # too long for one line at this size ...
        assert rect.height() >= 3 * line, (name, rect)  # ... so it wraps, whole
    # ticked, each run is named once in the legend, whole, on lines that fit the plot
    # (the legend had a line per run and curve, each cut at the window's edge)
    ticked = [view.item(row).data(Qt.ItemDataRole.UserRole) for row in range(view.count())]
    with qtbot.waitSignal(page.compared, timeout=20_000):
        page.tick(ticked)
    labels = [label.text for _, label in page.legend.items]
    assert [text.replace("<br>", " ") for text in labels] == [*names[::-1], "best", "mean"]
    assert all("<br>" in text for text in labels[:-2])

    def legend_inside() -> None:
        QApplication.processEvents()
        legend = page.legend.sceneBoundingRect()
        assert 0 < legend.right() <= page.plot.width(), (legend, page.plot.width())

    qtbot.waitUntil(legend_inside, timeout=5_000)
