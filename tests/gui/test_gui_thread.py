"""The GUI thread never waits on the disk: with every page built, shown and left to settle
(a workspace with a stored run, suites, settings), no workspace, settings, registry or
bundled data file is opened and no database connected on the GUI thread. Python's audit
hooks see every ``open`` and ``sqlite3.connect`` of the process, whichever module makes it.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path


class _Recorder:
    """What the audit hook records: the GUI thread's opens of files under ``roots`` and
    every database connection, while ``seen`` is a list (None: not recording)."""

    seen: list[tuple[str, str]] | None = None
    roots: tuple[Path, ...] = ()
    installed = False


def _audit(event: str, args: tuple) -> None:
    seen = _Recorder.seen
    if seen is None or threading.current_thread() is not threading.main_thread():
        return
    if event == "sqlite3.connect":
        seen.append((event, str(args[0])))
    elif event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        path = Path(os.fsdecode(args[0]))
        if any(path.is_relative_to(root) for root in _Recorder.roots):
            seen.append((event, str(path)))


def recording(roots: tuple[Path, ...]) -> list[tuple[str, str]]:
    """Start recording; returns the list the GUI thread's disk calls are appended to. An
    audit hook cannot be removed: it is installed once, and ``stop()`` ends recording."""
    if not _Recorder.installed:
        sys.addaudithook(_audit)
        _Recorder.installed = True
    seen: list[tuple[str, str]] = []
    _Recorder.roots, _Recorder.seen = roots, seen
    return seen


def stop() -> None:
    _Recorder.seen = None


def test_no_page_touches_the_disk_on_the_gui_thread(make_main_window, qtbot, gui_workspace):
    from tests.gui.test_start_page import stored_run
    from workbench.core.settings import Settings, save_settings
    from workbench.core.workspace import resources_dir

    run_id = stored_run(gui_workspace, "latest", 2, "stopped")
    save_settings(Settings(device="cpu", theme="system"))  # a settings file to read
    roots = (
        gui_workspace.root,
        Path(os.environ["XDG_CONFIG_HOME"]),  # settings.toml, workers.toml
        Path(os.environ["XDG_DATA_HOME"]),
        resources_dir(),  # the bundled examples and suites
    )
    seen = recording(tuple(r.resolve() for r in roots))
    try:
        window = make_main_window()
        runs = window.pages["Runs"]
        qtbot.waitUntil(lambda: runs.opened == run_id, timeout=30_000)
        for row in range(window.nav.count()):  # as a user visits every page
            window.nav.setCurrentRow(row)
            # a job's outcome may start another: busy until the last outcome has arrived
            qtbot.waitUntil(
                lambda: not any(getattr(p, "jobs_running", False) for p in window.pages.values()),
                timeout=60_000,
            )
        assert window.pages["Settings"].device_combo.currentData() == "cpu"  # it was read
    finally:
        stop()
    assert seen == [], seen
