"""The Evaluate page's "Headroom and cost" panel: the headroom check of a run config runs
in the background and shows core's report; a stored frontier study is drawn with every
point's details on hover (the figures are core's: workbench/core/headroom.py, frontier.py)."""

from __future__ import annotations

from tests.core.test_frontier import _config as frontier_config
from workbench.core.jobs.frontier import study_frontier
from workbench.core.jobs.frontier_report import point_details
from workbench.core.jobs.headroom import check_headroom
from workbench.gui.qt import Qt

TIMEOUT = 120_000

CONFIG = """
[run]
name = "headroom"
[pool]
workers = ["sandbox"]
[tasks]
suite = "mixed"
[protocol]
max_turns = 1
temperature = 0.0
"""


def test_the_panel_checks_a_config_and_draws_a_stored_frontier(
    make_main_window, qtbot, gui_workspace, tiny_backbone, tmp_path
):
    frontier = study_frontier(frontier_config(), gui_workspace, [0], backbone=tiny_backbone)
    window = make_main_window()
    page = window.pages["Evaluate"]
    panel = page.headroom_panel
    # the stored study is listed and drawn, each point's details on hover
    qtbot.waitUntil(lambda: panel.frontier is not None, timeout=TIMEOUT)
    assert panel.frontier == frontier
    assert panel.hover_texts() == [point_details(p, "simulated") for p in frontier.points]
    assert "(simulated)" in panel.plot.getAxis("bottom").labelText
    assert frontier.best_at_best_single_cost in panel.frontier_label.text()

    assert not panel.check_button.isEnabled()  # no config chosen yet
    path = tmp_path / "headroom.toml"
    path.write_text(CONFIG, encoding="utf-8")
    panel.choose_config(path)
    panel.sample_box.setValue(20)
    qtbot.mouseClick(panel.check_button, Qt.MouseButton.LeftButton)
    assert panel.checking and not panel.check_button.isEnabled()
    qtbot.waitUntil(lambda: not panel.checking, timeout=TIMEOUT)
    report = panel.report
    assert report is not None and report.n == 20, page.message_label.text()
    assert panel.report_view.toPlainText() == report.table()
    assert report.sentence in panel.sentence_label.text()
    # the same check again reads every answer from the cache: the same figures, no call
    from workbench.core.config import RunConfig

    again = check_headroom(RunConfig.load(path), gui_workspace, sample=20)
    assert again.workers == report.workers and again.cost.calls == 0
