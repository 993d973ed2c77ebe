"""The window as a new user sees it: the real program on a real X server (Xvfb) with a
1280 x 800 screen, a first start in a fresh home folder. Its screen is read back with
tesseract: the first-run guide's words are there, and no full home path is shown on the
pages that used to show machine paths (Workers, Runs, Settings). At 200% scaling
(QT_SCALE_FACTOR=2: the same screen is 640 x 400 logical pixels) the window still fits
the screen and every button of every page is reached by scrolling its page."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not (shutil.which("Xvfb") and shutil.which("tesseract")) or sys.platform != "linux",
    reason="needs Xvfb and tesseract-ocr (Linux)",
)

# Runs in the child: the app's own main() on the X display, with a timer that grabs the
# whole screen on three pages (scaled 2x for the OCR), then closes the window.
GRAB = r"""
import sys
from pathlib import Path
from workbench.gui import app as gui
from workbench.gui.qt import QApplication, QTimer, Qt

out = Path(sys.argv[1])
qt_app = QApplication(sys.argv[:1])
PAGES = ["Start", "Workers", "Runs", "Settings"]

def window():
    return next(w for w in QApplication.topLevelWidgets() if isinstance(w, gui.MainWindow))

def shot(index=0):
    w = window()
    if index == len(PAGES):
        w.close()
        return
    w.go(PAGES[index])
    def grab():
        image = QApplication.primaryScreen().grabWindow(0).toImage()
        size = image.size()
        print(f"{PAGES[index]} {size.width()}x{size.height()} window {w.width()}x{w.height()}",
              flush=True)
        image.scaled(size * 2, Qt.AspectRatioMode.KeepAspectRatio,
                     Qt.TransformationMode.SmoothTransformation).save(str(out / f"{index}.png"))
        shot(index + 1)
    QTimer.singleShot(1500, grab)

QTimer.singleShot(4000, shot)
sys.exit(gui.main(None, argv=sys.argv[:1]))
"""


def ocr(path: Path) -> str:
    result = subprocess.run(
        ["tesseract", str(path), "-", "--psm", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout


@pytest.fixture()
def xvfb(tmp_path):
    """An X server with one 1280 x 800 screen; its display name. Stopped by its pid."""
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    try:
        yield f":{number}"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def test_a_first_start_on_a_1280_x_800_screen_reads_as_a_guide_without_machine_paths(
    xvfb, tmp_path
):
    home = tmp_path / "home-of-a-new-user"
    home.mkdir()
    shots = tmp_path / "shots"
    shots.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "XDG_DATA_HOME", "XDG_CONFIG_HOME")
    }
    env.update(DISPLAY=xvfb, HOME=str(home), QT_QPA_PLATFORM="xcb")
    result = subprocess.run(
        [sys.executable, "-c", GRAB, str(shots)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    sizes = result.stdout.split()
    assert "1280x800" in sizes and "window" in sizes  # the real screen, the whole of it
    windows = [sizes[i + 1] for i, word in enumerate(sizes) if word == "window"]
    assert set(windows) == {"1280x800"}  # a first start fills the screen, no larger
    texts = [ocr(shots / f"{i}.png") for i in range(4)]
    guide = " ".join(texts[0].split())
    for words in (
        "Welcome",
        "Choose who answers",
        "Use the simulated team",
        "Add a worker",
        "Pick the questions",
        "Go to training",
        "Open Replay",
    ):
        assert words in guide, (words, guide)
    for text in texts:
        flat = "".join(text.split())
        assert "home-of-a-new-user" not in flat, text  # never the full home path
        assert str(tmp_path).replace(" ", "") not in flat, text
        assert not re.search(r"/root\b|/home/|/Users/", flat), text  # nor anyone's


# Runs in the child at QT_SCALE_FACTOR=2: on each page, every visible button is inside the
# page's scroll area and comes into its view when scrolled to; one line per page.
SCALED = r"""
import sys
from workbench.gui import app as gui
from workbench.gui.qt import QAbstractButton, QApplication, QTimer

qt_app = QApplication(sys.argv[:1])

def inside(widget, area):
    top_left = widget.mapTo(area, widget.rect().topLeft())
    bottom_right = widget.mapTo(area, widget.rect().bottomRight())
    return area.rect().contains(top_left) and area.rect().contains(bottom_right)

def check(titles=None):
    w = next(x for x in QApplication.topLevelWidgets() if isinstance(x, gui.MainWindow))
    if titles is None:
        hint, screen = w.minimumSizeHint(), w.screen()
        print(f"ratio {w.devicePixelRatio()} screen {screen.size().width()}x"
              f"{screen.size().height()} window {w.width()}x{w.height()} minimum "
              f"{hint.width()}x{hint.height()}", flush=True)
        titles = list(w.pages)
    if not titles:
        w.close()
        return
    title = titles[0]
    w.go(title)
    def look():
        page, scroll = w.pages[title], w.scrolls[title]
        buttons = [b for b in page.findChildren(QAbstractButton) if b.isVisible()]
        lost = []
        for button in buttons:
            scroll.ensureWidgetVisible(button, 0, 0)
            qt_app.processEvents()
            held = scroll.widget().isAncestorOf(button)
            if not (held and inside(button, scroll.viewport())):
                lost.append(button.text() or button.toolTip() or type(button).__name__)
        print(f"page {title}: {len(buttons)} buttons, unreachable {lost!r}", flush=True)
        check(titles[1:])
    QTimer.singleShot(700, look)

QTimer.singleShot(3000, check)
sys.exit(gui.main(None, argv=sys.argv[:1]))
"""


def test_at_200_percent_on_a_1280_x_800_screen_every_button_is_reached_by_scrolling(xvfb, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "XDG_DATA_HOME", "XDG_CONFIG_HOME")
    }
    env.update(DISPLAY=xvfb, HOME=str(home), QT_QPA_PLATFORM="xcb", QT_SCALE_FACTOR="2")
    result = subprocess.run(
        [sys.executable, "-c", SCALED], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    head = re.search(
        r"ratio (\S+) screen (\d+)x(\d+) window (\d+)x(\d+) minimum (\d+)x(\d+)",
        result.stdout,
    )
    assert head, result.stdout
    ratio = float(head.group(1))
    screen, window, minimum = ((int(head.group(i)), int(head.group(i + 1))) for i in (2, 4, 6))
    assert ratio == 2.0 and screen == (640, 400)  # 1280 x 800 pixels at 200%
    assert window[0] <= 640 and window[1] <= 400  # a first start fits the screen ...
    assert minimum[0] <= 640 and minimum[1] <= 400  # ... and could not be forced larger
    pages = re.findall(r"page (\w+): (\d+) buttons, unreachable (.*)", result.stdout)
    from workbench.gui.app import PAGES

    assert [p[0] for p in pages] == [title for title, _ in PAGES], result.stdout
    for title, count, lost in pages:
        assert int(count) > 0 and lost == "[]", (title, lost)
