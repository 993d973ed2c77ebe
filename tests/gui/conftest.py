"""GUI test set-up: Qt offscreen (set before Qt is imported), and a fixture building the
main window that checks at teardown that no thread of ours outlives it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402


@pytest.fixture()
def gui_workspace(tmp_path):
    from workbench.core.workspace import Workspace

    return Workspace.open(tmp_path / "ws")


def _stop_running(window) -> None:
    for page in window.running_pages():
        page.stop_and_wait()


@pytest.fixture()
def make_main_window(qtbot, gui_workspace, tiny_backbone):
    """Builds the main window over a temporary workspace with the tiny backbone (or the
    ``backbone`` given); at teardown
    stops any run (with a checkpoint), shuts down the pages' background jobs, closes the
    window and asserts no RunThread, Job or EvaluationThread runs."""
    from workbench.gui.app import MainWindow
    from workbench.gui.background import Job
    from workbench.gui.qt_evaluate import EvaluationThread
    from workbench.gui.run_thread import RunThread

    windows = []

    def make(**kwargs):
        window = MainWindow(
            kwargs.pop("workspace", gui_workspace),
            backbone=kwargs.pop("backbone", tiny_backbone),
            **kwargs,
        )
        # a test that failed mid-run leaves work going: stop it before qtbot closes the
        # window, or the close would wait on the "Work in progress" question forever
        qtbot.addWidget(window, before_close_func=_stop_running)
        window.show()
        qtbot.waitExposed(window)
        windows.append(window)
        return window

    yield make
    for window in windows:
        for page in window.pages.values():
            if getattr(page, "running", False):
                page.stop_and_wait()
            if hasattr(page, "shutdown"):
                page.shutdown()
        still = [
            t
            for cls in (RunThread, Job, EvaluationThread)
            for t in window.findChildren(cls)
            if t.isRunning()
        ]
        assert not still, f"threads still running after the test: {still}"


# Harmless notes of Qt's offscreen platform (not of ours): every other Qt warning fails.
OFFSCREEN_NOISE = r"This plugin does not support propagateSizeHints\(\)"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/gui/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.qt_log_ignore(OFFSCREEN_NOISE))
