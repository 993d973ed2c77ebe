"""The Evaluate page's "Headroom and cost" panel: the headroom check of a run config runs
in the background and shows core's report; a stored frontier study is drawn with every
point's details on hover (the figures are core's: workbench/core/jobs/headroom.py, frontier.py)."""

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


def test_a_frontier_study_runs_from_the_panel_with_its_progress(
    make_main_window, qtbot, gui_workspace, tiny_model_dir, tmp_path
):
    """Study the frontier from the panel: the study runs in a child process (the window
    stays live), the bar counts the penalties as each is done, and the finished study is
    drawn and stored."""
    from workbench.core.jobs.frontier_report import list_frontiers

    config = frontier_config().replace(backbone={"model": str(tiny_model_dir), "device": "cpu"})
    path = tmp_path / "frontier.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    window = make_main_window()
    page = window.pages["Evaluate"]
    panel = page.headroom_panel
    page.show_headroom()
    panel.choose_config(path)
    panel.penalties_edit.setText("0, 2000")
    seen: list[int] = []
    qtbot.mouseClick(panel.study_button, Qt.MouseButton.LeftButton)
    assert panel.studying and panel.study is not None
    panel.study.penalty_finished.connect(lambda done, _line: seen.append(done))
    assert panel.stop_study_button.isEnabled() and not panel.study_button.isEnabled()
    assert panel.study_progress.maximum() == 2 and panel.study_progress.value() == 0
    qtbot.waitUntil(lambda: not panel.studying, timeout=300_000)
    assert panel.frontier is not None, page.message_label.text()
    assert seen == [1, 2] and panel.study_progress.value() == 2
    assert {"cost_penalty 0", "cost_penalty 2000"} <= {p.name for p in panel.frontier.points}
    assert [s.run_id for s in list_frontiers(gui_workspace)] == [panel.frontier.run_id]
    assert panel.study_button.isEnabled()


def test_a_stopped_study_says_so_and_stores_no_study(
    make_main_window, qtbot, gui_workspace, tiny_model_dir, tmp_path
):
    from workbench.core.jobs.frontier_report import list_frontiers

    config = frontier_config().replace(backbone={"model": str(tiny_model_dir), "device": "cpu"})
    path = tmp_path / "frontier.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    window = make_main_window()
    page = window.pages["Evaluate"]
    panel = page.headroom_panel
    panel.choose_config(path)
    panel.penalties_edit.setText("0")
    panel.start_study()
    study = panel.study
    qtbot.waitUntil(lambda: study._process is not None, timeout=30_000)  # the child started
    qtbot.mouseClick(panel.stop_study_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.studying, timeout=60_000)
    assert "stopped after 0 of 1 penalties" in page.message_label.text()
    assert study._process.poll() is not None  # the child is gone
    assert list_frontiers(gui_workspace) == []
