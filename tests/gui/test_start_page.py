"""Where the workbench opens: on the Runs page with the latest run and its plots when the
workspace has runs (a newcomer's first look after ``trinity-workbench train``), on the
first-run guide when it has none, each of the guide's steps a button that goes where the
step is done. Run statuses and resumability come from core."""

from __future__ import annotations

from workbench.core.jobs.shared import can_resume, list_runs
from workbench.core.records import GenerationStats
from workbench.core.store import Store


def stored_run(
    workspace, name: str, generations: int, status: str, usage: dict[str, int] | None = None
) -> str:
    """A training run in the workspace's real store, with its generations' stats (each
    generation's turns per "worker/role": ``usage``)."""
    with Store.open(workspace) as store:
        run_id = store.create_run(name, "train", {"budget": {"generations": 5}})
        for g in range(generations):
            stats = GenerationStats(
                run_id=run_id,
                generation=g,
                best=0.5 + g / 10,
                mean=0.4,
                median=0.4,
                worst=0.1,
                sigma=0.3,
                evaluations=3,
                calls=3,
                tokens=30,
                dollars=0.0,
                cache_hits=0,
                wall_s=1.0,
                coordinator_s=0.5,
                worker_s=0.2,
                features_requested=3,
                features_computed=3,
                usage=usage or {"sandbox/worker": 3},
                validation=None,
                best_validation=None,
                totals={"episodes": 3.0 * (g + 1)},
            ).to_stored()  # what the trainer stores
            store.commit_generation(run_id, g, stats, b"state")
        store.set_run_status(
            run_id, status, stop_reason="stopped", result={"generations": generations}
        )
    return run_id


def test_with_runs_the_app_opens_on_runs_with_the_latest_run_plotted(
    make_main_window, qtbot, gui_workspace
):
    stored_run(gui_workspace, "older", 2, "finished")
    latest = stored_run(gui_workspace, "latest", 3, "stopped")
    window = make_main_window()
    page = window.pages["Runs"]
    qtbot.waitUntil(lambda: page.opened == latest, timeout=10_000)
    assert window.nav.currentItem().text() == "Runs"
    assert window.current_page() is page
    assert page.selected_run_id() == latest
    page.redraw()
    assert list(page.curves["best"].getData()[0]) == [1, 2, 3]
    assert page.heatmap.image is not None and page.heatmap.image.sum() == 9


def test_without_runs_the_app_opens_on_the_first_run_guide(make_main_window, qtbot):
    window = make_main_window()
    page = window.pages["Runs"]
    # the first runs-list read (a background thread: on a busy machine it may come before
    # or long after the window shows)
    qtbot.waitUntil(lambda: page.listed, timeout=60_000)
    assert page.runs == {}
    assert window.nav.currentItem().text() == "Start"
    assert page.opened is None
    guide = window.pages["Start"]
    words = guide.steps_text()
    for step in ("Choose who answers", "Pick the questions", "Train", "Replay"):
        assert step in words
    assert "simulated" in words and "offline and free" in words
    assert all(button.isVisible() for button in guide.buttons.values())
    assert guide.runs_note.text() == ""


def test_each_step_of_the_guide_is_a_button_that_goes_there(make_main_window, qtbot):
    from workbench.gui.qt_worker_dialog import WorkerDialog

    window = make_main_window()
    guide = window.pages["Start"]
    runs = window.pages["Runs"]
    qtbot.waitUntil(lambda: runs.listed and runs.config_file is None, timeout=10_000)
    runs.source_label.setText("something else")
    with qtbot.waitSignal(runs.config_done, timeout=10_000) as done:
        guide.buttons["Runs:sandbox"].click()
    assert done.args == [True] and window.nav.currentItem().text() == "Runs"
    assert runs.source_label.text() == "the sandbox example"
    assert runs.form.pool_workers() == ["sandbox"]

    guide.buttons["Workers:add"].click()
    assert window.nav.currentItem().text() == "Workers"
    dialogs = [d for d in window.pages["Workers"].findChildren(WorkerDialog) if d.isVisible()]
    assert len(dialogs) == 1 and dialogs[0].windowTitle() == "Add worker"
    dialogs[0].reject()

    evaluate = window.pages["Evaluate"]
    guide.buttons["Evaluate:headroom"].click()
    assert window.current_page() is evaluate
    assert evaluate.result_tabs.currentWidget() is evaluate.headroom_panel

    for where in ("Tasks", "Runs", "Replay"):
        guide.buttons[where].click()
        assert window.nav.currentItem().text() == where
        assert window.current_page() is window.pages[where]


def test_with_runs_the_guide_says_how_many(make_main_window, qtbot, gui_workspace):
    stored_run(gui_workspace, "one", 1, "finished")
    stored_run(gui_workspace, "two", 1, "finished")
    window = make_main_window()
    guide = window.pages["Start"]
    qtbot.waitUntil(lambda: guide.runs_note.text() != "", timeout=10_000)
    assert guide.runs_note.text().startswith("This workspace has 2 runs")


def test_a_user_who_moved_on_is_not_pulled_back_to_runs(make_main_window, qtbot, gui_workspace):
    stored_run(gui_workspace, "latest", 1, "finished")
    window = make_main_window()
    window.nav.setCurrentRow(
        [window.nav.item(i).text() for i in range(window.nav.count())].index("Tasks")
    )
    page = window.pages["Runs"]
    qtbot.waitUntil(lambda: page.opened is not None, timeout=10_000)
    assert window.nav.currentItem().text() == "Tasks"


def test_resumability_and_status_come_from_core(make_main_window, qtbot, gui_workspace):
    finished = stored_run(gui_workspace, "done", 1, "finished")
    stopped = stored_run(gui_workspace, "halted", 1, "stopped")
    failed = stored_run(gui_workspace, "broken", 1, "failed")
    listed = {r.id: r for r in list_runs(gui_workspace)}
    assert [r.name for r in list_runs(gui_workspace)] == ["broken", "halted", "done"]
    assert listed[finished].generations == 1
    assert [can_resume(s) for s in ("finished", "stopped", "interrupted", "failed")] == [
        False,
        True,
        True,
        True,
    ]
    window = make_main_window()
    page = window.pages["Runs"]
    qtbot.waitUntil(lambda: page.opened is not None, timeout=10_000)
    for run_id in (finished, stopped, failed):
        assert page.status_of(run_id) == listed[run_id].status
        assert page.can_resume(run_id) == can_resume(listed[run_id].status)
        page.select_run(run_id)
        assert page.resume_run_button.isEnabled() == can_resume(listed[run_id].status)
    # a status cell edited on screen changes nothing: the page asks core's summary
    page.runs_table.item(page.row_of(finished), 1).setText("stopped")
    assert not page.can_resume(finished)


def test_the_desktop_guide_counts_and_names_the_start_pages_steps():
    """docs/guides/desktop.md says how many first steps the Start page shows, and lists
    them in its order."""
    import re
    from pathlib import Path

    from workbench.gui.qt_start import STEPS

    guide = (Path(__file__).resolve().parents[2] / "docs/guides/desktop.md").read_text()
    found = re.search(r"on Start: (\w+) first\s+steps[^(]*\(([^)]*)\)", guide)
    assert found, "the guide names the Start page's steps"
    numbers = {3: "three", 4: "four", 5: "five", 6: "six"}
    assert found.group(1) == numbers[len(STEPS)]
    listed = [" ".join(item.split()) for item in found.group(2).split(",")]
    assert len(listed) == len(STEPS)
    assert listed == [heading.lower() for heading, _, _ in STEPS]
