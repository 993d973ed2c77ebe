"""The main window on a small screen: every button of every page inside a 1280 x 800
window with nothing scrolled, every control reachable at 200% scaling (a 1280 x 800 screen
is 640 x 400 logical pixels there), the window's size and splitters remembered, errors in
a banner at the top of the page, and the clean one-line exits: a workspace that is a file,
no display."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.gui.app import NO_DISPLAY, display_problem


def visible_buttons(page):
    from workbench.gui.qt import QAbstractButton

    return [b for b in page.findChildren(QAbstractButton) if b.isVisible()]


def inside(widget, area) -> bool:
    """Whether ``widget`` lies wholly inside ``area``'s rectangle (``area`` an ancestor)."""
    top_left = widget.mapTo(area, widget.rect().topLeft())
    bottom_right = widget.mapTo(area, widget.rect().bottomRight())
    return area.rect().contains(top_left) and area.rect().contains(bottom_right)


def in_view(button, page, viewport) -> bool:
    """Whether ``button`` is inside the window's view of its page: directly, or inside a
    list the page scrolls on purpose (the Replay page's conversation, a form's tab) that
    is itself in view and brings the button into its view when asked."""
    from workbench.gui.qt import QScrollArea

    inner = button.parentWidget()
    while inner is not None and inner is not page and not isinstance(inner, QScrollArea):
        inner = inner.parentWidget()
    if isinstance(inner, QScrollArea):
        inner.ensureWidgetVisible(button, 0, 0)
        return inside(inner.viewport(), viewport) and inside(button, inner.viewport())
    return inside(button, viewport)


def show_each_page(window, qtbot):
    for row, title in enumerate(window.pages):
        window.nav.setCurrentRow(row)
        qtbot.waitUntil(lambda title=title: window.current_page().isVisible(), timeout=5_000)
        yield title, window.pages[title], window.scrolls[title]


def test_every_button_of_every_page_is_inside_a_1280_x_800_window(make_main_window, qtbot):
    window = make_main_window()
    window.resize(1280, 800)
    qtbot.waitUntil(lambda: window.size().width() == 1280 and window.size().height() == 800)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 800, hint
    checked = 0
    for title, page, scroll in show_each_page(window, qtbot):
        viewport = scroll.viewport()

        # nothing to scroll: the page fits its place in the window (once laid out)
        def fits(page=page, scroll=scroll, viewport=viewport) -> bool:
            bars = (scroll.verticalScrollBar(), scroll.horizontalScrollBar())
            return not any(b.isVisible() for b in bars) and page.size() == viewport.size()

        qtbot.waitUntil(fits, timeout=5_000)
        buttons = visible_buttons(page)
        assert buttons, title
        for button in buttons:
            assert in_view(button, page, viewport), f"{title}: {button.text()!r} is cut off"
            assert inside(button, window), f"{title}: {button.text()!r} is outside the window"
            checked += 1
    assert checked > 40


def test_at_200_percent_scaling_every_control_is_reachable_by_scrolling(make_main_window, qtbot):
    window = make_main_window()
    window.resize(640, 400)  # a 1280 x 800 screen at 200%
    qtbot.waitUntil(lambda: window.width() <= 640 and window.height() <= 400)
    assert window.width() == 640 and window.height() == 400  # the window's minimum allows it
    for title, page, scroll in show_each_page(window, qtbot):
        for button in visible_buttons(page):
            scroll.ensureWidgetVisible(button, 0, 0)
            assert inside(button, scroll.viewport()), f"{title}: {button.text()!r} unreachable"
        scroll.verticalScrollBar().setValue(0)
        scroll.horizontalScrollBar().setValue(0)


def test_the_window_remembers_its_size_and_splitters(make_main_window, qtbot):
    first = make_main_window()
    first.resize(760, 560)  # within the offscreen screen (800 x 600)
    qtbot.waitUntil(lambda: first.width() == 760)
    splitters = first.splitters()
    name, splitter = next((n, s) for n, s in splitters.items() if n.startswith("Runs/"))
    first.nav.setCurrentRow(list(first.pages).index("Runs"))
    qtbot.waitUntil(lambda: splitter.isVisible())
    total = sum(splitter.sizes())
    splitter.setSizes([total // 4, total - total // 4])
    moved = splitter.sizes()
    first.close()

    second = make_main_window()
    assert (second.width(), second.height()) == (760, 560)
    again = second.splitters()[name]
    second.nav.setCurrentRow(list(second.pages).index("Runs"))
    qtbot.waitUntil(lambda: again.isVisible())
    assert again.sizes() == moved
    second.close()

    # the screenshots' window (what a new user sees) neither reads nor writes that layout
    from workbench.core.settings import settings_path
    from workbench.gui.app import WINDOW_STATE

    saved = (settings_path().parent / WINDOW_STATE).read_bytes()
    fresh = make_main_window(remember_layout=False)
    assert (fresh.width(), fresh.height()) != (760, 560)  # a first start's size
    fresh.resize(700, 500)
    fresh.close()
    assert (settings_path().parent / WINDOW_STATE).read_bytes() == saved


def test_an_error_shows_in_a_banner_at_the_top_of_the_page_without_a_traceback(
    make_main_window, qtbot
):
    from workbench.core.workers.registry import Registry

    Registry().path.parent.mkdir(parents=True, exist_ok=True)
    Registry().path.write_text("[workers.gpt\nprovider = 'openai'\n")  # broken TOML
    window = make_main_window()
    window.resize(1280, 800)
    page = window.pages["Workers"]
    window.nav.setCurrentRow(list(window.pages).index("Workers"))
    qtbot.waitUntil(lambda: page.banner.isVisible(), timeout=20_000)
    text = page.banner.text()
    assert text.startswith("Cannot read the registered workers: worker registry ")
    assert "is not valid TOML" in text and "Traceback" not in text
    # at the top of the page, above the buttons and the table
    top = page.banner.mapTo(page, page.banner.rect().topLeft()).y()
    assert top < 20 and top < page.add_button.mapTo(page, page.add_button.rect().topLeft()).y()
    assert not page.status.isVisible()  # not said twice: the line below gives way
    page.banner.dismiss_button.click()
    assert not page.banner.isVisible()
    page.say("Saved worker 'x'.")  # a plain status shows on the page's line, not the banner
    assert page.status.isVisible() and not page.banner.isVisible()


def test_a_workspace_that_is_a_file_is_one_sentence_and_exit_2(tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "--workspace", str(afile), "--quit-after", "100"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    # the sentence (also in a dialog: tests/gui/test_help_and_startup.py); the other line
    # is Qt's offscreen platform's note on showing that dialog
    said = [line for line in result.stderr.splitlines() if "propagateSizeHints" not in line]
    assert said == [
        f"error: workspace {afile} is a file, not a folder: pass --workspace with a folder path"
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 and Wayland are Linux's")
def test_without_a_display_one_sentence_instead_of_qts_abort(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "--workspace", str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: no display to open the window on")
    assert "--screenshot" in line and "reinstall" not in line.lower()


def test_which_environments_have_a_display():
    linux = "linux"
    assert display_problem({}, linux) == NO_DISPLAY.format(
        why="DISPLAY and WAYLAND_DISPLAY are not set"
    )
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, linux) is None
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, linux) is None
    assert "no X server is running on display :987" in display_problem({"DISPLAY": ":987"}, linux)
    assert display_problem({"DISPLAY": "remote:0"}, linux) is None  # not ours to probe
    assert display_problem({}, "darwin") is None and display_problem({}, "win32") is None


def test_handled_errors_print_no_traceback_in_the_terminal(tmp_path):
    """A broken workers.toml is reported on the Workers page; the terminal gets no
    traceback (it is in the workspace's logs/gui.log)."""
    config = tmp_path / "config"
    registry = config / "trinity-workbench" / "workers.toml"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(config)}
    code = "from workbench.core.workers.registry import Registry; print(Registry().path)"
    path = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    registry = type(tmp_path)(path)
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text("[workers.gpt\nprovider = 'openai'\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "--workspace",
            str(tmp_path / "ws"),
            "--quit-after",
            "4000",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    log = (tmp_path / "ws" / "logs" / "gui.log").read_text()
    assert "is not valid TOML" in log and "Traceback" in log  # the details are kept there
