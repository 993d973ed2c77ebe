"""The Evaluate page on the sandbox pool with the tiny backbone: a short run evaluated
against every single worker, random and the oracle shows core's figures in the table and
the chart and exports the Report's own Markdown and CSV; bad coordinator files read as
messages; Cancel stops cleanly and leaves no thread behind."""

from __future__ import annotations

import csv
import io

import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from tests.core.test_training import config
from tests.gui.fitting import assert_fits_sideways
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.export import export_run
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.gui import tables
from workbench.gui.evaluate_model import COST_COLUMN, result_cells, tick_name
from workbench.gui.qt import QFontMetrics, Qt, QThread

TIMEOUT = 120_000
SYSTEMS = [
    "coordinator",
    "single:sandbox:mathlete",
    "single:sandbox:scholar",
    "single:sandbox:coder",
    "random",
    "oracle",
    "multi-turn oracle",  # the run has K > 1: the exact oracle of the protocol (issue 17)
]


@pytest.fixture()
def trained_run(gui_workspace, tiny_backbone):
    return train(config(budget={"generations": 1}), gui_workspace, backbone=tiny_backbone)


def evaluate_page(make_main_window, qtbot):
    window = make_main_window()
    page = window.pages["Evaluate"]
    # the runs, then the chosen coordinator and the suites, are read in the background
    qtbot.waitUntil(lambda: not page.listing and not page.reading)
    return window, page


def choose_file(qtbot, page, path) -> bool:
    """Choose a coordinator file (read in the background); is it the source now?"""
    page.choose_coordinator_file(path)
    qtbot.waitUntil(lambda: not page.reading)
    return page.source is not None and page.source.coordinator_file == str(path)


def wait_done(qtbot, page):
    """The evaluation ended, and no thread of the page is left running (the evaluation's,
    and the stored evaluations' listing read after it)."""
    qtbot.waitUntil(lambda: page.eval_thread is None, timeout=TIMEOUT)
    qtbot.waitUntil(
        lambda: not any(t.isRunning() for t in page.findChildren(QThread)), timeout=30_000
    )


def test_evaluating_a_run_shows_cores_figures_and_exports_them(
    make_main_window, qtbot, trained_run, gui_workspace, tiny_backbone, tmp_path, monkeypatch
):
    window, page = evaluate_page(make_main_window, qtbot)
    assert page.source_combo.currentData() == f"run:{trained_run}"
    assert page.source.pool == ("sandbox:mathlete", "sandbox:scholar", "sandbox:coder")
    assert list(page.baseline_boxes) == SYSTEMS[1:]  # the oracle is offered: the sandbox pool
    assert page.suite_combo.currentText() == "mixed" and page.split_combo.currentText() == "test"
    assert not page.export_md_button.isEnabled()

    qtbot.mouseClick(page.evaluate_button, Qt.MouseButton.LeftButton)
    assert page.running and page.cancel_button.isEnabled() and not page.evaluate_button.isEnabled()
    wait_done(qtbot, page)
    assert page.state == "finished", page.message_label.text()
    assert page.progress.value() == page.progress.maximum() == 7 * 9

    expected = evaluate_run(gui_workspace, run=trained_run, backbone=tiny_backbone).report
    assert [s.name for s in expected.systems] == SYSTEMS
    assert page.table_rows() == [result_cells(s) for s in expected.systems]
    assert (
        page.table_rows()[0][2]
        == f"{expected.systems[0].ci_low:.3f}–{expected.systems[0].ci_high:.3f}"
    )
    # a sandbox pool's dollars are simulated, and every place that shows them says so: the
    # cost column's header, above its dollars
    assert expected.spend == "simulated"
    assert cost_header_text(page) == "$ per question\n(simulated)"
    assert all(row[COST_COLUMN].startswith("$") for row in page.table_rows())
    assert page.report.systems == expected.systems
    # the chart: one bar per system at the accuracy, error bars spanning the 95% interval
    bars = page.bars.opts
    assert list(bars["x"]) == list(range(7)) and list(bars["height"]) == [
        s.accuracy for s in expected.systems
    ]
    errors = page.error_bars.opts
    assert [y + t for y, t in zip(errors["y"], errors["top"], strict=True)] == pytest.approx(
        [s.ci_high for s in expected.systems]
    )
    assert [y - b for y, b in zip(errors["y"], errors["bottom"], strict=True)] == pytest.approx(
        [s.ci_low for s in expected.systems]
    )
    # under each bar a name that leaves room for its neighbours' at 1280 x 800 (whole in
    # the table): seven long names side by side overlapped
    window.resize(1280, 800)
    window.go("Evaluate")
    qtbot.waitUntil(lambda: page.chart.isVisible(), timeout=5_000)
    assert_table_fits(qtbot, window, page)  # the seven systems, no scrolling sideways
    (ticks,) = page.chart.getAxis("bottom")._tickLevels
    assert [name for _, name in ticks] == [tick_name(s) for s in SYSTEMS]
    assert tick_name("single:sandbox:mathlete") == "mathlete"
    assert_bar_names_fit(page)
    # usage: a row per worker and role, a column per system (named as under its bar):
    # each system's turns, summing to its turns
    usage = page.usage_table
    headers = [usage.horizontalHeaderItem(c).text() for c in range(usage.columnCount())]
    assert headers == ["Worker and role", *(tick_name(s) for s in SYSTEMS)]
    rows = [usage.item(r, 0).text() for r in range(usage.rowCount())]
    assert "sandbox:mathlete as Worker" in rows
    for column, system in enumerate(expected.systems, start=1):
        cells = [int(usage.item(r, column).text()) for r in range(usage.rowCount())]
        assert sum(cells) == sum(system.usage.values()) == round(system.avg_turns * system.n)
    assert usage.item(rows.index("sandbox:mathlete as Worker"), 2).text() == "9"
    # per category (benchmark): a row per category and one for all, each system's
    # accuracy there and its number of questions
    groups = expected.groups
    assert len(groups) >= 2
    categories = page.category_table
    counts = [expected.systems[0].by_group[g].n for g in groups] + [expected.systems[0].n]
    assert [categories.item(r, 0).text() for r in range(categories.rowCount())] == [
        f"{g} ({n})" for g, n in zip([*groups, "all"], counts, strict=True)
    ]  # every system answered as many of a category: said once, beside it
    for column, system in enumerate(expected.systems, start=1):
        cells = [categories.item(r, column).text() for r in range(len(groups) + 1)]
        per = [system.by_group[g] for g in groups] + [system]
        assert cells == [f"{r.accuracy:.3f}" for r in per]
    # at 1280 x 800 neither table scrolls sideways
    page.result_tabs.setCurrentIndex(2)
    qtbot.waitUntil(lambda: usage.isVisible(), timeout=5_000)
    assert_fits_sideways(usage, stretched=[])
    assert_fits_sideways(categories, stretched=[])
    with Store.open(gui_workspace) as store:
        assert len(store.list_episodes(page.result.run_id)) == 7 * 9
    # what the coordinator played per category, beside the oracle's plan (issue 17)
    from workbench.core.learned import describe_learned

    assert expected.learned and page.report.learned == expected.learned
    shown = page.learned_view.toPlainText()
    assert all(line in shown for line in describe_learned(expected.learned))
    assert "oracle: " in shown

    import pathlib
    import threading

    writes_on_gui: list[bool] = []  # per export written: was it on the GUI thread?
    write_text = pathlib.Path.write_text

    def watched_write(self, *args, **kwargs):
        if self.name.startswith("eval."):
            writes_on_gui.append(threading.current_thread() is threading.main_thread())
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", watched_write)
    md = export(qtbot, page.export_markdown, tmp_path / "out" / "eval.md")
    assert md is None  # the folder does not exist: a message, not a traceback
    assert "Could not write" in page.message_label.text()
    md = export(qtbot, page.export_markdown, tmp_path / "eval.md")
    csv_path = export(qtbot, page.export_csv, tmp_path / "eval.csv")
    assert writes_on_gui == [False, False, False]  # exports are written off the GUI thread
    assert md.read_text() == expected.to_markdown()
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert [r["system"] for r in rows] == SYSTEMS
    assert [float(r["accuracy"]) for r in rows] == pytest.approx(
        [s.accuracy for s in expected.systems], abs=1e-4
    )
    for name in SYSTEMS:
        assert f"| {name} |" in md.read_text()
    assert "| $ / query (simulated) |" in md.read_text()
    assert {r["spend"] for r in rows} == {"simulated"}


def assert_bar_names_fit(page) -> None:
    """Under the chart, each bar's name (its widest line) leaves room for its neighbours'
    and the axis is as high as its lines: no name overlaps another or is cut."""
    axis = page.chart.getAxis("bottom")
    (ticks,) = axis._tickLevels
    spacing = axis.width() / (
        page.chart.getViewBox().viewRange()[0][1] - page.chart.getViewBox().viewRange()[0][0]
    )
    metrics = QFontMetrics(axis.style["tickFont"] or page.chart.font())
    widths = [max(metrics.horizontalAdvance(line) for line in n.split("\n")) for _, n in ticks]
    for left, right in zip(widths, widths[1:], strict=False):
        assert (left + right) / 2 < spacing, (widths, spacing)
    lines = max(name.count("\n") + 1 for _, name in ticks)
    assert axis.height() >= lines * metrics.height(), (axis.height(), lines)


def cost_header_text(page) -> str:
    return tables.header_item(page.results_table, COST_COLUMN).text()


def assert_table_fits(qtbot, window, page) -> None:
    """The accuracy table at 1280 x 800: no horizontal scrollbar, every figure's column as
    wide as its content and its header (nothing elided), the system's names in the width
    left (at worst elided in the middle, whole in their tooltips), every row in view."""
    assert (window.width(), window.height()) == (1280, 800)
    page.result_tabs.setCurrentIndex(0)
    table = page.results_table
    qtbot.waitUntil(lambda: table.isVisible(), timeout=5_000)
    assert_fits_sideways(table, stretched=[0], readable=120)  # a name still reads
    # every row in view without scrolling down either
    assert not table.verticalScrollBar().isVisible(), (
        table.rowCount(),
        [table.rowHeight(r) for r in range(table.rowCount())],
        table.horizontalHeader().height(),
        table.viewport().height(),
        page.result_tabs.height(),
    )


def figures_report(names, spend):
    """A report of ``names`` with plausible figures (as a recorded CHAMP pool gives)."""
    from workbench.core.evaluate import Report, SystemResult

    systems = tuple(
        SystemResult(
            name=name,
            kind=name.partition(":")[0] if name.startswith("single:") else name,
            accuracy=0.5 + i / 50,
            ci_low=0.44 + i / 50,
            ci_high=0.56 + i / 50,
            n=54,
            avg_turns=2.5 if name == "coordinator" else 1.0,
            avg_tokens=1234.0 + 100 * i,
            avg_cost=0.001234 * (i + 1),
        )
        for i, name in enumerate(names)
    )
    return Report(suite="champ", split="test", systems=systems, spend=spend)


RECORDED = [
    "coordinator",
    "single:recorded:champ/gpt-3.5",
    "single:recorded:champ/gpt-3.5-5shot",
    "single:recorded:champ/gpt-4",
    "single:recorded:champ/gpt-4-5shot",
    "single:recorded:champ/gpt-4-turbo",
    "single:recorded:champ/gpt-4-turbo-5shot",
    "random",
]


def test_the_accuracy_table_fits_1280_by_800_with_a_recorded_pools_eight_systems(
    make_main_window, qtbot
):
    """A recorded pool's six workers, the coordinator and random: eight rows of long names
    and recorded dollars still fit the Scores tab without a horizontal scrollbar."""
    window, page = evaluate_page(make_main_window, qtbot)
    window.resize(1280, 800)
    window.go("Evaluate")
    report = figures_report(RECORDED, "recorded")
    page.show_report(report)
    assert cost_header_text(page) == "$ per question\n(recorded)"
    assert "not money spent" in tables_tip(page, COST_COLUMN)
    assert page.table_rows()[6][0] == "gpt-4-turbo-5shot alone"
    cell = tables.item(page.results_table, 6, 0)
    assert (
        cell.toolTip()
        == "gpt-4-turbo-5shot alone: single:recorded:champ/gpt-4-turbo-5shot (single)"
    )
    assert_table_fits(qtbot, window, page)
    # under the bars: each worker by its model, a long one on two lines or more, none
    # overlapping
    (ticks,) = page.chart.getAxis("bottom")._tickLevels
    assert [name for _, name in ticks][1:3] == ["gpt-3.5", "gpt-3.5-\n5shot"]
    assert ticks[6][1].replace("\n", "") == "gpt-4-turbo-5shot" and "\n" in ticks[6][1]
    qtbot.waitUntil(lambda: page.chart.isVisible(), timeout=5_000)
    assert_bar_names_fit(page)
    # each header says what it means
    assert all(tables_tip(page, c) for c in range(page.results_table.columnCount()))


def test_nine_systems_of_mmlu_pros_pool_are_named_under_their_bars_without_overlapping(
    make_main_window, qtbot
):
    """MMLU-Pro's six-model pool with the coordinator, random and the recorded oracle:
    nine bars at 1280 x 800, where names wrapped at twelve characters a line overlapped
    ("Mistral-7B-" over "Qwen1.5-7B-"). Each name is wrapped as narrow as the bars'
    spacing asks, and again when the window is made wider or narrower."""
    from dataclasses import replace

    from tests.support.mmlu_pro import SMALL_SIX
    from workbench.core.evaluate import GroupResult

    names = ["coordinator", *(f"single:recorded:small-6/{m}" for m in SMALL_SIX)]
    report = figures_report([*names, "random", "recorded oracle"], "recorded")
    groups = {"biology": GroupResult(0.5, 0.4, 0.6, 36), "business": GroupResult(0.5, 0.4, 0.6, 18)}
    systems = [
        replace(
            s,
            usage={f"{s.name.removeprefix('single:')}/worker": 54}
            if s.name.startswith("single:")
            else {
                f"recorded:small-6/{SMALL_SIX[0]}/worker": 30,
                "recorded:small-6/gemma-7b/worker": 24,
            },
            by_group=groups,
        )
        for s in report.systems
    ]
    report = replace(report, systems=tuple(systems))
    window, page = evaluate_page(make_main_window, qtbot)
    window.resize(1280, 800)
    window.go("Evaluate")
    page.show_report(report)
    qtbot.waitUntil(lambda: assert_bar_names_fit(page), timeout=5_000)  # laid out
    (ticks,) = page.chart.getAxis("bottom")._tickLevels
    assert [name.replace("\n", "") for _, name in ticks][1:3] == [*SMALL_SIX[:2]]
    assert [row[0] for row in page.table_rows()][1:3] == [f"{m} alone" for m in SMALL_SIX[:2]]
    assert_table_fits(qtbot, window, page)
    # usage and categories: nine systems' columns scroll sideways, the first column whole;
    # the workers' shared recorded:small-6/ said once, in its header
    page.result_tabs.setCurrentIndex(2)
    usage, categories = page.usage_table, page.category_table
    qtbot.waitUntil(usage.isVisible, timeout=5_000)
    assert usage.horizontalHeaderItem(0).text() == "Worker and role\n(recorded:small-6/…)"
    rows = [usage.item(r, 0).text() for r in range(usage.rowCount())]
    assert sorted(rows) == sorted(f"{m} as Worker" for m in SMALL_SIX)
    assert [categories.item(r, 0).text() for r in range(3)] == [
        "biology (36)",
        "business (18)",
        "all (54)",
    ]
    for table in (usage, categories):
        whole = max(table.sizeHintForColumn(0), table.horizontalHeader().sectionSizeHint(0))
        assert table.columnWidth(0) >= whole, (table.columnWidth(0), whole)
    page.result_tabs.setCurrentIndex(0)
    narrow = max(name.count("\n") for _, name in ticks)
    window.resize(1800, 800)
    qtbot.waitUntil(lambda: page.chart.width() > 900, timeout=5_000)
    qtbot.waitUntil(lambda: assert_bar_names_fit(page), timeout=5_000)
    (ticks,) = page.chart.getAxis("bottom")._tickLevels
    assert max(name.count("\n") for _, name in ticks) < narrow  # wider: fewer lines


def tables_tip(page, column: int) -> str:
    return tables.header_item(page.results_table, column).toolTip()


def test_fewer_baselines_and_a_coordinator_file(
    make_main_window, qtbot, trained_run, gui_workspace, tiny_backbone, tmp_path
):
    path = export_run(
        gui_workspace, trained_run, tmp_path / "coordinator.safetensors", backbone=tiny_backbone
    )
    window, page = evaluate_page(make_main_window, qtbot)
    assert choose_file(qtbot, page, path)
    assert (
        page.source.coordinator_file == str(path)
        and page.source_combo.currentText() == "file coordinator.safetensors"
    )
    for name in ("single:sandbox:scholar", "random"):
        page.baseline_boxes[name].setChecked(False)
    page.split_combo.setCurrentText("validation")
    page.evaluate()
    wait_done(qtbot, page)
    assert page.state == "finished", page.message_label.text()
    names = [row[0] for row in page.table_rows()]
    assert names == [
        "coordinator",
        "sandbox:mathlete alone",
        "sandbox:coder alone",
        "oracle",
        "multi-turn oracle",
    ]
    assert len(page.bars.opts["x"]) == 5
    assert all(s.n == 6 for s in page.report.systems) and page.report.split == "validation"
    # the file stays a choice after a refresh
    page.refresh_runs()
    qtbot.waitUntil(lambda: not page.listing and not page.reading)
    assert page.source_combo.findData(f"file:{path}") >= 0


def test_unusable_coordinator_files_read_as_messages(
    make_main_window, qtbot, trained_run, gui_workspace, tiny_backbone, tmp_path
):
    window, page = evaluate_page(make_main_window, qtbot)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\x00" * 64)
    assert not choose_file(qtbot, page, garbage)
    assert f"Cannot use {garbage}" in page.message_label.text()
    assert "is not a coordinator file" in page.message_label.text()
    assert "Traceback" not in page.message_label.text()
    assert page.source_combo.findData(f"file:{garbage}") < 0
    assert not choose_file(qtbot, page, tmp_path / "missing.safetensors")
    assert "not found" in page.message_label.text()

    # a file whose manifest reads well but whose head does not fit the backbone: the
    # background evaluation fails with a readable message on the page
    good = export_run(
        gui_workspace, trained_run, tmp_path / "good.safetensors", backbone=tiny_backbone
    )
    with safe_open(str(good), framework="numpy") as f:
        metadata = f.metadata()
    tensors = load_file(str(good))
    tensors["head"] = tensors["head"][:, :16].copy()
    bad = tmp_path / "bad-head.safetensors"
    save_file(tensors, str(bad), metadata=metadata)
    assert choose_file(qtbot, page, bad)
    page.evaluate()
    wait_done(qtbot, page)
    assert page.state == "failed"
    text = page.message_label.text()
    assert (
        text.startswith("The evaluation failed:")
        and "hidden size" in text
        and "Traceback" not in text
    )
    assert page.results_table.rowCount() == 0 and page.evaluate_button.isEnabled()


def test_cancel_stops_cleanly_and_the_page_evaluates_again(
    make_main_window, qtbot, trained_run, gui_workspace
):
    window, page = evaluate_page(make_main_window, qtbot)
    page.evaluate()
    thread = page.eval_thread
    with qtbot.waitSignal(thread.cancelled, timeout=TIMEOUT):
        qtbot.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
        assert page.state == "cancelling" and not page.cancel_button.isEnabled()
    wait_done(qtbot, page)
    assert page.state == "cancelled" and page.report is None and page.results_table.rowCount() == 0
    assert not page.export_csv_button.isEnabled() and page.message_label.text() == ""
    with Store.open(gui_workspace) as store:
        (record,) = store.list_runs(kind="eval")
        assert record.status == "stopped" and store.list_episodes(record.id) == []

    for name in page.chosen_baselines():
        page.baseline_boxes[name].setChecked(False)
    page.evaluate()
    wait_done(qtbot, page)
    assert page.state == "finished" and [row[0] for row in page.table_rows()] == ["coordinator"]


def test_closing_the_window_during_an_evaluation_stops_it(
    make_main_window, qtbot, trained_run, monkeypatch
):
    from workbench.gui.qt import QMessageBox

    window, page = evaluate_page(make_main_window, qtbot)
    page.evaluate()
    thread = page.eval_thread
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    assert window.running_pages() == [page]
    assert window.close()
    assert thread.isFinished()


def test_no_run_yet_says_what_to_do(make_main_window, qtbot):
    window, page = evaluate_page(make_main_window, qtbot)
    assert page.source is None and not page.evaluate_button.isEnabled()
    assert "train one on the Runs page" in page.source_label.text()


def export(qtbot, method, path):
    """Export with ``method`` (written in the background) and wait: the file, or None."""
    page = method.__self__
    with qtbot.waitSignal(page.exported, timeout=30_000) as done:
        assert method(path)
    return done.args[0]


def test_sources_and_suites_are_read_off_the_gui_thread(
    make_main_window, qtbot, trained_run, gui_workspace, tiny_backbone, tmp_path, monkeypatch
):
    """Choosing a run or a coordinator file reads them (and the suites) from disk: in a
    background job, never on the GUI thread."""
    import threading

    import workbench.gui.evaluate_model as evaluate_model

    threads: list[bool] = []  # per read: was it on the GUI (main) thread?

    def recorded(read):
        def wrapper(*args, **kwargs):
            threads.append(threading.current_thread() is threading.main_thread())
            return read(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        evaluate_model, "evaluation_source", recorded(evaluate_model.evaluation_source)
    )
    monkeypatch.setattr(evaluate_model, "list_suites", recorded(evaluate_model.list_suites))
    path = export_run(
        gui_workspace, trained_run, tmp_path / "coordinator.safetensors", backbone=tiny_backbone
    )
    window, page = evaluate_page(make_main_window, qtbot)
    assert page.source is not None and page.source_combo.currentData() == f"run:{trained_run}"
    assert choose_file(qtbot, page, path)
    page.source_combo.setCurrentIndex(page.source_combo.findData(f"run:{trained_run}"))
    qtbot.waitUntil(lambda: not page.reading)
    assert page.source is not None and page.source.coordinator_file is None
    assert len(threads) >= 6 and not any(threads)  # source and suites, three times


def test_an_evaluation_made_on_the_command_line_is_listed_and_shown(
    make_main_window, qtbot, gui_workspace, tiny_backbone, tiny_model_dir
):
    """``trinity-workbench eval`` in a terminal stores an evaluation; the Evaluate page
    lists it (by the run it evaluated) and shows its report, the one core reads back."""
    import subprocess
    import sys

    from workbench.core.jobs.evaluate import load_evaluation
    from workbench.gui.evaluate_model import result_cells

    run_id = train(
        config(budget={"generations": 1}, backbone={"model": str(tiny_model_dir), "device": "cpu"}),
        gui_workspace,
        backbone=tiny_backbone,
    )
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "--workspace", str(gui_workspace.root), "eval"]
        + ["--run", run_id],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    window, page = evaluate_page(make_main_window, qtbot)
    qtbot.waitUntil(lambda: len(page.evaluation_ids()) == 1, timeout=30_000)
    (eval_id,) = page.evaluation_ids()
    # the newest evaluation is shown at once, whichever interface made it
    qtbot.waitUntil(lambda: page.result is not None, timeout=30_000)
    assert page.result.run_id == eval_id
    stored = load_evaluation(gui_workspace, eval_id).report
    assert page.table_rows() == [result_cells(s) for s in stored.systems]
    with Store.open(gui_workspace) as store:
        name = store.get_run(run_id).name  # the config's name and the day
    assert page.stored.table.item(0, 0).text() == name
    assert f"evaluation of '{name}'" in page.shown_label.text()
    assert page.export_md_button.isEnabled()


def test_the_evaluations_list_shows_each_name_whole_at_1280_by_800(make_main_window, qtbot):
    """Cross-validation folds differ only near the end of their names ("…, cv 4/5, seed
    0)"), beyond what the list's first column holds at 1280 x 800: each name is wrapped
    onto as many lines as it needs, its row as tall, instead of cut at the same place."""
    import time

    from workbench.core.jobs.evaluate import StoredEvaluation
    from workbench.core.records import RunStatus

    names = [f"mmlu-pro small-6 (coordinator, cv {k}/5, seed 0)" for k in (4, 5)]
    window, page = evaluate_page(make_main_window, qtbot)
    window.resize(1280, 800)
    with qtbot.waitSignal(page.evaluations_listed, timeout=20_000):  # read when shown
        window.go("Evaluate")
    page.stored.show_evaluations(
        [
            StoredEvaluation(
                id=f"e{k}",
                title=f"evaluation of '{name}'",
                evaluated=name,
                evaluated_run=None,
                suite="small-6",
                split="test",
                status=RunStatus.FINISHED,
                created_at=time.time(),
                accuracy=0.44,
            )
            for k, name in enumerate(names)
        ],
        None,
    )
    table = page.stored.table
    qtbot.waitUntil(table.isVisible, timeout=5_000)
    qtbot.wait(50)
    metrics = QFontMetrics(table.font())
    width = table.columnWidth(0) - 8  # the cell's margins
    assert width < metrics.horizontalAdvance(names[0])  # it takes more than one line
    for row, name in enumerate(names):
        assert table.item(row, 0).text() == name
        needed = metrics.boundingRect(0, 0, width, 1000, Qt.TextFlag.TextWordWrap, name)
        assert table.rowHeight(row) >= needed.height(), (row, table.rowHeight(row), needed)
