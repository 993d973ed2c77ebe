"""The window as a new user sees it: the real program on a real X server (Xvfb) with a
1280 x 800 screen, a first start in a fresh home folder. Its screen is read back with
tesseract: the first-run guide's words are there, and no full home path is shown on the
pages that used to show machine paths (Workers, Runs, Settings)."""

from __future__ import annotations

import os
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
