"""The Runs page on the sandbox pool with the tiny backbone: a short run fills the plots
and the heatmap; pause, resume and stop checkpoint and leave a resumable run."""

from __future__ import annotations

import numpy as np

from tests.core.test_training import config
from workbench.core.evolution import GenerationStats
from workbench.core.store import Store

TIMEOUT = 120_000


def runs_page(make_main_window, tmp_path, **budget):
    window = make_main_window()
    page = window.pages["Runs"]
    path = tmp_path / "run.toml"
    path.write_text(config(budget=budget).to_toml())
    assert page.load_config(path)
    return window, page


def test_a_short_run_fills_the_plots_and_ends_finished(make_main_window, qtbot, tmp_path):
    window, page = runs_page(make_main_window, tmp_path, generations=3)
    assert page.name_label.text() == "t" and page.pool_label.text() == "sandbox"
    qtbot.mouseClick(page.start_button, qtbot_button())
    thread = page.run_thread
    with qtbot.waitSignal(thread.finished_run, timeout=TIMEOUT) as finished:
        pass
    assert finished.args[0].stop_reason == "budget.generations"
    qtbot.waitUntil(lambda: page.run_thread is None, timeout=TIMEOUT)
    page.redraw()
    x, y = page.curves["best"].getData()
    assert list(x) == [0, 1, 2] and len(y) == 3
    for name in ("mean", "median", "worst", "sigma"):
        assert len(page.curves[name].getData()[0]) == 3
    vx, _ = page.validation_points.getData()
    assert list(vx) == [1, 2]
    image = page.heatmap.image
    assert image.shape[1] == 3 and image.shape[0] % 3 == 0 and image.sum() > 0
    assert page.progress.value() == 3 and page.status_label.text() == "finished"
    run_id = finished.args[0].run_id
    assert page.status_of(run_id) == "finished"
    assert not page.can_resume(run_id)

    # open it again from the store: the same plots
    page.clear_plots()
    page.select_run(run_id)
    qtbot.mouseClick(page.open_button, qtbot_button())
    assert list(page.curves["best"].getData()[0]) == [0, 1, 2]
    assert np.array_equal(page.heatmap.image, image)


def test_pause_resume_stop_then_resume_from_the_list(make_main_window, qtbot, tmp_path):
    window, page = runs_page(make_main_window, tmp_path, generations=50)
    page.start()
    thread = page.run_thread
    with qtbot.waitSignal(thread.generation, timeout=TIMEOUT):
        pass
    qtbot.mouseClick(page.pause_button, qtbot_button())
    assert thread.token.paused and page.status_label.text() == "paused"
    assert page.resume_button.isEnabled() and not page.pause_button.isEnabled()
    qtbot.mouseClick(page.resume_button, qtbot_button())
    assert not thread.token.paused and page.status_label.text() == "running"
    with qtbot.waitSignal(thread.finished_run, timeout=TIMEOUT) as finished:
        qtbot.mouseClick(page.stop_button, qtbot_button())
    event = finished.args[0]
    assert event.stop_reason == "stopped"
    qtbot.waitUntil(lambda: page.run_thread is None, timeout=TIMEOUT)
    with Store.open(page.workspace) as store:
        generations = store.generations(event.run_id)
        assert generations and store.latest_checkpoint(event.run_id)[0] == generations[-1]["generation"]
    assert page.status_of(event.run_id) == "stopped" and page.can_resume(event.run_id)

    # resume from the runs list: it continues after the checkpoint
    page.select_run(event.run_id)
    assert page.resume_run_button.isEnabled()
    qtbot.mouseClick(page.resume_run_button, qtbot_button())
    resumed = page.run_thread
    with qtbot.waitSignal(resumed.generation, timeout=TIMEOUT, check_params_cb=lambda s: isinstance(s, GenerationStats)) as gen:
        pass
    assert gen.args[0].generation == generations[-1]["generation"] + 1
    with qtbot.waitSignal(resumed.finished_run, timeout=TIMEOUT):
        page.stop()
    qtbot.waitUntil(lambda: page.run_thread is None, timeout=TIMEOUT)


def qtbot_button():
    from workbench.gui.qt import Qt

    return Qt.MouseButton.LeftButton
