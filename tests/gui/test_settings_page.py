"""The Settings page: changes are saved to the user settings file at once and read back
by a new window; the theme applies at once; a corrupt file reads as a message and is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.settings import Settings, load_settings, settings_path
from workbench.gui.qt import QApplication, QPalette


@pytest.fixture()
def system_theme_after():
    yield
    from workbench.gui.qt_settings import apply_theme

    apply_theme("system")  # the application palette outlives the test


def window_lightness() -> int:
    return QApplication.instance().palette().color(QPalette.ColorRole.Window).lightness()


def settings_page(window, qtbot):
    """The window's Settings page once it has read the settings file (in the background)."""
    page = window.pages["Settings"]
    qtbot.waitUntil(lambda: page.loaded, timeout=10_000)
    return page


def saved(qtbot, page, change) -> bool:
    """Make ``change()`` (it must be accepted) and wait for its background save: True when
    the file holds it."""
    with qtbot.waitSignal(page.settings_saved, timeout=10_000) as done:
        assert change() is not False
    return done.args[0]


def test_changes_are_saved_and_read_back_by_the_next_window(
    make_main_window, qtbot, tmp_path, system_theme_after
):
    window = make_main_window()
    page = settings_page(window, qtbot)
    from workbench.core.printable import shown_path

    # the workspace (a temporary folder here, outside the home folder): by its name, the
    # full path only in the tooltip
    assert page.workspace_label.text() == shown_path(window.workspace.root, short=True)
    assert page.workspace_label.text() == f"…/{window.workspace.root.name}"
    assert page.workspace_label.toolTip() == str(window.workspace.root)
    assert "default workspace" in page.next_workspace_label.text()
    assert not settings_path().exists()  # nothing written until something changes

    elsewhere = tmp_path / "elsewhere"
    assert saved(qtbot, page, lambda: page.choose_workspace(elsewhere))
    assert page.next_workspace_label.text().startswith("At next start: …/elsewhere. Restart")
    assert page.next_workspace_label.toolTip() == str(elsewhere.resolve())
    # as a user picks them, one right after the other: saved in order
    with qtbot.waitSignal(page.settings_saved, timeout=10_000):
        page.device_combo.setCurrentIndex(page.device_combo.findData("cpu"))
        page.cache_combo.setCurrentIndex(page.cache_combo.findData("replay-only"))
    assert page.cache_combo.currentText().startswith("replay-only")
    assert load_settings() == Settings(
        workspace=str(elsewhere.resolve()), device="cpu", cache_policy="replay-only"
    )
    assert shown_path(settings_path()) in page.saved_label.text()
    assert page.saved_label.toolTip() == str(settings_path())

    light = window_lightness()
    assert saved(
        qtbot, page, lambda: page.theme_combo.setCurrentIndex(page.theme_combo.findData("dark"))
    )
    assert load_settings().theme == "dark" and window_lightness() < 100 < light
    assert saved(qtbot, page, lambda: page.set_theme("system"))
    assert window_lightness() == light
    assert saved(qtbot, page, lambda: page.set_theme("dark"))

    again = settings_page(make_main_window(), qtbot)
    assert (
        again.device_combo.currentData() == "cpu"
        and again.cache_combo.currentData() == "replay-only"
    )
    assert again.theme_combo.currentText() == "Dark"
    assert "At next start: …/elsewhere." in again.next_workspace_label.text()
    assert again.message_label.text() == ""

    assert saved(qtbot, again, lambda: again.choose_workspace(None))  # back to the default
    assert (
        load_settings().workspace is None
        and "default workspace" in again.next_workspace_label.text()
    )


def test_a_bad_value_is_refused_with_its_key_and_nothing_is_saved(make_main_window, qtbot):
    page = settings_page(make_main_window(), qtbot)
    assert saved(qtbot, page, lambda: page.set_device("cpu"))
    assert not page.set_device("tpu")
    assert "Settings not saved: device: unknown device 'tpu'" in page.message_label.text()
    assert load_settings().device == "cpu" and page.device_combo.currentData() == "cpu"


def test_a_corrupt_file_shows_a_message_uses_defaults_and_is_kept(make_main_window, qtbot):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('device = "cpu"\ntheme = [not toml\n')
    page = settings_page(make_main_window(), qtbot)
    text = page.message_label.text()
    assert str(path) in text and "not valid TOML" in text and "default settings" in text
    assert page.device_combo.currentData() == "auto" and page.theme_combo.currentData() == "system"
    assert path.read_text() == 'device = "cpu"\ntheme = [not toml\n'


def test_the_gui_opens_the_workspace_chosen_in_the_settings(tmp_path):
    import os
    import subprocess
    import sys

    from workbench.core.settings import save_settings

    chosen = tmp_path / "chosen"
    save_settings(Settings(workspace=str(chosen), theme="dark"))
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "--quit-after", "1500"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert (chosen / "workbench.sqlite3").is_file() and (chosen / "logs" / "gui.log").is_file()
    assert not (
        Path(os.environ["XDG_DATA_HOME"]) / "trinity-workbench"
    ).exists()  # not the default one


def test_the_file_is_read_and_written_and_the_sandbox_probed_off_the_gui_thread(
    make_main_window, qtbot, tmp_path, monkeypatch, system_theme_after
):
    """Reading the settings, saving a change and probing the code sandbox run in background
    jobs, never on the GUI thread; a save that fails says so with the file and the reason,
    and the page goes back to what the file holds."""
    import threading

    import workbench.gui.qt_settings as qt_settings

    on_gui: list[tuple[str, bool]] = []  # per call: (what, was it on the GUI thread?)

    def recorded(what, call):
        def wrapper(*args, **kwargs):
            on_gui.append((what, threading.current_thread() is threading.main_thread()))
            return call(*args, **kwargs)

        return wrapper

    for what, name in (
        ("read", "load_settings_or_defaults"),
        ("save", "save_settings"),
        ("probe", "isolation_text"),
    ):
        monkeypatch.setattr(qt_settings, name, recorded(what, getattr(qt_settings, name)))
    window = make_main_window()
    page = settings_page(window, qtbot)
    window.nav.setCurrentRow(list(window.pages).index("Settings"))  # the probe: when shown
    qtbot.waitUntil(lambda: page.isolation_label.text() != "checking…", timeout=30_000)
    assert saved(qtbot, page, lambda: page.set_device("cpu"))
    assert load_settings().device == "cpu"
    assert sorted({what for what, _ in on_gui}) == ["probe", "read", "save"]
    assert not any(gui for _, gui in on_gui), on_gui

    # a file that cannot be written: named with the reason, and the page shows what is saved
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    page.path = blocker / "settings.toml"
    assert not saved(qtbot, page, lambda: page.set_cache_policy("off"))
    text = page.message_label.text()
    assert f"Settings not saved: cannot write {page.path}" in text and "Traceback" not in text
    assert page.cache_combo.currentData() == "auto" and page.settings.cache_policy == "auto"
    assert not page.set_theme("neon") and "theme" in page.message_label.text()
    assert not any(gui for _, gui in on_gui), on_gui
