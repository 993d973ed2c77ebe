"""The Evaluate page's Cross-validations tab over a real cross-validation: three folds of
the tiny coordinator on a recorded pool of two models, each right on one category of a
12-question suite (so the oracle is right everywhere, each model alone on half, and the
oracle beats the best model on exactly the other category's six questions). The tab lists
it, shows every system's accuracy as a bar with its interval, the paired differences and
the wins and losses per category, and its tables fit at 1280 x 800."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.core.test_crossval import _parity, _parity_config
from tests.gui.fitting import assert_fits_sideways
from workbench.core.jobs.crossval import cross_validate
from workbench.gui.crossval_model import system_name
from workbench.gui.qt import QApplication, QFontMetrics, pg


@pytest.fixture()
def crossval(tmp_path, tiny_backbone):
    ws, _ = _parity(tmp_path)  # the same folder as the window's workspace (gui_workspace)
    return cross_validate(_parity_config(max_turns=1), ws, folds=3, seed=1, backbone=tiny_backbone)


def items_of(chart: pg.PlotWidget, kind: type) -> list:
    return [item for item in chart.getPlotItem().items if isinstance(item, kind)]


def shown_tab(make_main_window, qtbot):
    """The Cross-validations tab of a 1280 x 800 window, its stored cross-validation shown."""
    window = make_main_window()
    window.resize(1280, 800)
    window.go("Evaluate")
    page = window.pages["Evaluate"]
    page.show_crossvals()
    view = page.crossval_view
    qtbot.waitUntil(lambda: view.report is not None, timeout=30_000)
    return view


def test_the_tab_shows_a_stored_cross_validation(make_main_window, qtbot, crossval):
    view = shown_tab(make_main_window, qtbot)
    assert view.ids() == [crossval.run_id]
    assert view.list_table.item(0, 0).text().startswith("cross-validation of cv")
    assert view.report.run_id == crossval.run_id
    assert "3-fold" in view.summary_label.text()
    assert (
        "Best single model: even alone." in view.summary_label.text()
    )  # the best model (a tie: first)

    rows = view.table_rows(view.systems_table)
    assert [r[0] for r in rows] == [system_name(s.name) for s in crossval.systems]
    by_name = {r[0]: r for r in rows}
    # by the pool's construction: the oracle right everywhere, each model on its half
    assert by_name["recorded oracle"][1] == "1.000"
    assert by_name["odd alone"][1] == "0.500"
    assert by_name["best model per category"][1] == "1.000"
    assert by_name["even alone"][3] == "reference"
    assert by_name["recorded oracle"][3].startswith("+0.500 (")
    assert by_name["recorded oracle"][4] == "6 / 0"

    # a row a system, the first on top, its bar from 0 to its accuracy
    (bars,) = items_of(view.accuracy_chart, pg.BarGraphItem)
    lengths = np.asarray(bars.opts["width"])
    assert lengths.tolist() == [s.accuracy for s in crossval.systems]
    assert np.asarray(bars.opts["y"]).tolist() == list(range(len(crossval.systems)))[::-1]
    (errors,) = items_of(view.accuracy_chart, pg.ErrorBarItem)
    assert np.allclose(lengths + errors.opts["right"], [s.ci_high for s in crossval.systems])
    assert np.allclose(lengths - errors.opts["left"], [s.ci_low for s in crossval.systems])
    (ticks,) = view.accuracy_chart.getAxis("left")._tickLevels
    assert [name for _, name in sorted(ticks, reverse=True)] == [r[0] for r in rows]
    (paired,) = items_of(view.paired_chart, pg.BarGraphItem)
    starts, widths = np.asarray(paired.opts["x0"]), np.asarray(paired.opts["width"])
    ends = np.where(starts < 0, starts, starts + widths)  # a loss's bar runs left of 0
    assert ends.tolist() == [p.difference for p in crossval.paired]
    assert len(items_of(view.paired_chart, pg.ErrorBarItem)) == 1
    assert "even alone" in view.paired_chart.getPlotItem().titleLabel.text

    # per category: the oracle wins the six questions of the category the best model misses
    view.choose_system("recorded oracle")
    cats = view.table_rows(view.category_table)
    assert [(r[0], r[1], r[3]) for r in cats] == [("a", "6", "0 / 0"), ("b", "6", "6 / 0")]
    assert "recorded oracle against even alone" in view.category_box.title()
    view.choose_system("coordinator")
    assert [r[0] for r in view.table_rows(view.category_table)] == ["a", "b"]

    view.views.setCurrentIndex(0)
    QApplication.processEvents()
    assert_fits_sideways(view.systems_table, [0])
    view.views.setCurrentIndex(1)
    QApplication.processEvents()
    assert_fits_sideways(view.category_table, [0])


def test_with_no_cross_validation_the_tab_says_how_to_make_one(make_main_window, qtbot):
    window = make_main_window()
    page = window.pages["Evaluate"]
    page.show_crossvals()
    qtbot.waitUntil(lambda: not page.crossval_view.listing, timeout=30_000)
    assert page.crossval_view.ids() == []
    assert "trinity-workbench crossval" in page.crossval_view.summary_label.text()


def test_a_dozen_systems_keep_their_names_apart(make_main_window, qtbot, crossval):
    """A cross-validation on a real pool compares a dozen systems or more (the routers,
    each model, the coordinators, the oracle): at 1280 x 800 each name stands left of its
    own row, whole, a line of text or more from the next, in both charts, even with the
    pane beside the chart dragged as large as it goes."""
    many = dataclasses.replace(
        crossval,
        systems=tuple(
            dataclasses.replace(s, name=f"{s.name} {copy}")
            for copy in range(3)
            for s in crossval.systems
        )[:14],
        paired=tuple(
            dataclasses.replace(p, system=f"{p.system} {copy}")
            for copy in range(4)
            for p in crossval.paired
        )[:13],
    )
    view = shown_tab(make_main_window, qtbot)
    view.show_report(many)
    for tab, chart, count in ((0, view.accuracy_chart, 14), (1, view.paired_chart, 13)):
        view.views.setCurrentIndex(tab)
        splitter = chart.parentWidget()
        mine = splitter.indexOf(chart)
        splitter.setSizes([0 if i == mine else 10_000 for i in range(splitter.count())])
        QApplication.processEvents()
        axis = chart.getAxis("left")
        (ticks,) = axis._tickLevels
        assert len(ticks) == count
        metrics = QFontMetrics(axis.style["tickFont"] or chart.font())
        low, high = chart.getViewBox().viewRange()[1]
        row = chart.getViewBox().height() / (high - low)  # pixels from one row to the next
        assert row >= metrics.height(), (row, metrics.height())
        assert axis.width() >= max(metrics.horizontalAdvance(name) for _, name in ticks)


def test_the_paired_charts_title_is_whole_with_a_long_model_name(make_main_window, qtbot, crossval):
    """With MMLU-Pro's best single model (Meta-Llama-3_1-8B-Instruct alone) the paired
    chart's title lies whole inside the chart at 1280 x 800: on one line it ran past the
    window's edge; it now takes two."""
    best = crossval.best_single
    long = best.replace(best.rsplit("/", 1)[-1], "Meta-Llama-3_1-8B-Instruct")
    renamed = dataclasses.replace(
        crossval,
        best_single=long,
        systems=tuple(
            dataclasses.replace(s, name=long) if s.name == best else s for s in crossval.systems
        ),
    )
    view = shown_tab(make_main_window, qtbot)
    view.show_report(renamed)
    view.views.setCurrentIndex(1)
    chart = view.paired_chart
    title = chart.getPlotItem().titleLabel
    assert "Meta-Llama-3_1-8B-Instruct alone," in title.text

    def whole() -> None:
        QApplication.processEvents()
        drawn = title.item.mapRectToScene(title.item.boundingRect())
        seen = chart.mapToScene(chart.viewport().rect()).boundingRect()
        assert seen.contains(drawn), (drawn, seen)

    qtbot.waitUntil(whole, timeout=5_000)
