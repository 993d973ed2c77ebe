"""Recorded pools in the desktop app: the Workers page lists the built-in CHAMP pool and a
pool imported into the workspace with each worker's answers and coverage (of the pool's
own suite or a chosen one); the Runs page's pool list offers them; the Evaluate page
charts each system's paired difference from the best single worker with its interval."""

from __future__ import annotations

import asyncio
import json

import pytest

from workbench.core.evaluate import evaluate
from workbench.core.policies import FixedPolicy
from workbench.core.protocol import EpisodeSettings
from workbench.core.recordings import import_file
from workbench.core.tasks.suites import load_suite
from workbench.core.workers.pool import build_pool

TIMEOUT = 60_000


@pytest.fixture()
def imported(gui_workspace, tmp_path):
    """A pool 'mine' of two workers on the first two arithmetic tasks: alpha right on the
    first and wrong on the second, beta right on the second only."""
    tasks = load_suite("arithmetic").tasks[:2]
    lines = [
        {"task_id": tasks[0].id, "worker": "alpha", "response": f"\\boxed{{{tasks[0].answer}}}"},
        {"task_id": tasks[1].id, "worker": "alpha", "response": "\\boxed{-1}"},
        {"task_id": tasks[1].id, "worker": "beta", "response": f"\\boxed{{{tasks[1].answer}}}"},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_file(gui_workspace, path, "mine", "arithmetic")
    return tasks


def test_the_workers_page_lists_recorded_pools_with_coverage(qtbot, gui_workspace, imported):
    from workbench.gui.qt_workers import QtWorkers

    page = QtWorkers(workspace=gui_workspace)
    qtbot.addWidget(page)
    box = page.recorded
    assert box is not None
    with qtbot.waitSignal(box.listed, timeout=TIMEOUT):
        page.show()
    try:
        assert box.cell("recorded:champ/gpt-4-turbo", "Answers") == "266"
        assert box.cell("recorded:champ/gpt-4-turbo", "Covers") == "266/270 of champ (99%)"
        assert box.cell("recorded:champ/gpt-4-turbo", "Model") == "GPT-4 Turbo"
        assert box.cell("recorded:mine/alpha", "Answers") == "2"
        assert box.cell("recorded:mine/beta", "Covers") == "1/420 of arithmetic (0%)"
        # coverage of a chosen suite: CHAMP's answers cover none of arithmetic's tasks
        box.suite_combo.setCurrentText("arithmetic")
        with qtbot.waitSignal(box.listed, timeout=TIMEOUT):
            box.refresh()
        assert box.cell("recorded:champ/gpt-4", "Covers") == "0/420 of arithmetic (0%)"
        assert box.cell("recorded:mine/alpha", "Covers") == "2/420 of arithmetic (0%)"
    finally:
        page.shutdown()


def test_the_run_forms_pool_list_offers_the_recorded_pools(gui_workspace, imported):
    from workbench.gui.qt_run_form import choices as _choices

    workers, _suites = _choices(gui_workspace)
    assert "recorded:champ" in workers and "recorded:mine" in workers


def test_the_evaluate_page_charts_paired_differences_from_the_best_single(
    make_main_window, qtbot, gui_workspace, imported
):
    pool = build_pool(["recorded:mine"], workspace=gui_workspace)
    report, _ = asyncio.run(
        evaluate(
            FixedPolicy(2, 1), pool, imported, EpisodeSettings(suite="arithmetic", max_turns=1)
        )
    )
    window = make_main_window()
    page = window.pages["Evaluate"]
    qtbot.waitUntil(lambda: not page.listing and not page.reading)
    page.show_report(report)
    assert [s.name for s in report.systems][-1] == "recorded oracle"
    # paired on the one task both workers answer (the second), where beta is right
    assert report.best_single == "single:recorded:mine/beta" and report.paired_left_out == 1
    names = [p.system for p in report.paired]
    assert names == ["coordinator", "single:recorded:mine/alpha", "random", "recorded oracle"]
    bars, errors = page.paired_items
    assert list(bars.opts["height"]) == [p.difference for p in report.paired]
    tops = [y + t for y, t in zip(errors.opts["y"], errors.opts["top"], strict=True)]
    assert tops == pytest.approx([p.ci_high for p in report.paired])
    assert "Difference from beta alone," in page.paired_chart.plotItem.titleLabel.text
    page.clear_results()
    assert page.paired_items == []
