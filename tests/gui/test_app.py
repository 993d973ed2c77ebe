"""The main window and the GUI entry point."""

from __future__ import annotations

import os
import subprocess
import sys

from workbench.gui.app import PAGES, about_text


def test_main_window_lists_the_pages_and_about_names_versions(make_main_window):
    window = make_main_window()
    assert [window.nav.item(i).text() for i in range(window.nav.count())] == [t for t, _ in PAGES]
    assert window.stack.count() == len(PAGES)
    text = about_text()
    for name in ("Python", "torch", "transformers", "Qt"):
        assert name in text


def test_the_command_without_arguments_starts_the_gui_and_exits_on_a_timer(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-m", "workbench", "--quit-after", "1500", "--workspace",
                             str(tmp_path / "ws")], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert (tmp_path / "ws").is_dir()
