"""A newcomer's first hour, scripted on a real window: the real program on a real X server
(Xvfb, one 1280 x 800 screen) in a fresh home folder, its screen read back with tesseract.

The child starts the app's own ``main()`` on a workspace that holds one earlier run, then
does what a newcomer does: reads the Start page, trains a run on the Runs page (the
tiny model: a short config), watches it (the list says "training", the plots fill),
replays it, compares the two runs, evaluates the new one, checks the headroom, opens
Help > About and Help > Documentation, and quits with Ctrl+Q. Each step's screen is
grabbed; the test reads every screen with OCR: what a page must say is there, and no
screen shows a raw dict, a placeholder (``{{``), a config key (``budget.generations``), a
Python repr or the method's terms (fitness, sigma) a newcomer cannot read.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.core.test_training import config
from tests.gui.test_real_window import ocr, xvfb  # noqa: F401 (a fixture, used by name)
from workbench.core.config import config_keys
from workbench.core.jobs.shared import run_day

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Xvfb is Linux's")

# Runs in the child: each step waits for what it needs (a timer polls), then grabs the
# whole screen (scaled 2x for the OCR) and moves on; one line per step on stdout.
FIRST_HOUR = r"""
import sys
import time
from pathlib import Path
from workbench.gui import app as gui
from PySide6.QtTest import QTest  # the test's own keyboard; the app has no use for it
from workbench.gui.qt import QApplication, QDesktopServices, QObject, QTimer, QUrl, Qt, Slot

out, run_config = Path(sys.argv[1]), sys.argv[2]
qt_app = QApplication(sys.argv[:1])
started = time.monotonic()


class Opened(QObject):
    @Slot(QUrl)
    def handle(self, url):
        print(f"opened {url.toLocalFile()}", flush=True)


opened = Opened()
QDesktopServices.setUrlHandler("file", opened, "handle")


def window():
    return next(w for w in QApplication.topLevelWidgets() if isinstance(w, gui.MainWindow))


def shot(name):
    image = QApplication.primaryScreen().grabWindow(0).toImage()
    image.scaled(image.size() * 2, Qt.AspectRatioMode.KeepAspectRatio,
                 Qt.TransformationMode.SmoothTransformation).save(str(out / f"{name}.png"))
    print(f"shot {name} at {time.monotonic() - started:.0f} s", flush=True)


def when(ready, then, limit=600):
    deadline = time.monotonic() + limit
    def poll():
        if ready():
            then()
        elif time.monotonic() > deadline:
            print(f"timed out waiting at {then.__name__}", flush=True)
            window().close()
        else:
            QTimer.singleShot(200, poll)
    QTimer.singleShot(200, poll)


def settle(then):
    QTimer.singleShot(1200, then)


def start():
    # with a run in the workspace the app opens on the Runs page: the newcomer goes back
    # to read the Start page first
    window().go("Start")
    settle(start_page)


def start_page():
    shot("start")
    w = window()
    w.go("Runs")
    runs = w.pages["Runs"]
    runs.load_config(run_config)
    when(lambda: runs.config_file is None and not runs.jobs_running, first_run)


def first_run():
    runs = window().pages["Runs"]
    runs.start()
    when(lambda: runs.progress_of.generation >= 1 and runs.state == "running",
         lambda: settle(training))


def training():
    shot("training")
    runs = window().pages["Runs"]
    when(lambda: runs.run_thread is None and runs.listed and not runs.jobs_running,
         lambda: settle(trained))


def trained():
    shot("runs")
    w = window()
    w.go("Replay")
    replay = w.pages["Replay"]
    when(lambda: replay.replay is not None and not replay.loading, lambda: settle(replayed))


def replayed():
    shot("replay")
    w = window()
    w.go("Compare")
    compare = w.pages["Compare"]
    def tick():
        compare.tick(list(compare.runs))
        when(lambda: len(compare.shown) == 2 and not compare.jobs_running,
             lambda: settle(compared))
    when(lambda: len(compare.runs) == 2 and not compare.jobs_running, tick)


def compared():
    shot("compare")
    w = window()
    w.go("Evaluate")
    evaluate = w.pages["Evaluate"]
    def go():
        evaluate.evaluate()
        when(lambda: evaluate.eval_thread is None and evaluate.result is not None
             and not evaluate.jobs_running, lambda: settle(evaluated))
    when(lambda: evaluate.source is not None and not evaluate.reading
         and not evaluate.jobs_running, go)


def evaluated():
    shot("evaluate")
    evaluate = window().pages["Evaluate"]
    evaluate.result_tabs.setCurrentIndex(2)
    settle(usage)


def usage():
    shot("usage")
    evaluate = window().pages["Evaluate"]
    evaluate.show_headroom()
    panel = evaluate.headroom_panel
    panel.choose_config(run_config)
    panel.sample_box.setValue(20)
    panel.check()
    when(lambda: not panel.checking and panel.report is not None, lambda: settle(headroom))


def headroom():
    shot("headroom")
    box = window().show_about()
    when(lambda: "checking" not in box.text(), lambda: settle(lambda: about(box)))


def about(box):
    shot("about")
    box.close()
    window().help_actions["documentation"].trigger()
    settle(quit)


def quit():
    # an application shortcut reaches an active window only: wait until it is one
    w = window()
    w.raise_()
    w.activateWindow()
    when(lambda: QApplication.activeWindow() is w, press, limit=60)


def press():
    QTest.keyClick(window(), Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    print("pressed Ctrl+Q", flush=True)
    QTimer.singleShot(20000, still_running)


def still_running():
    # Ctrl+Q did not quit: say so and close, so the test fails now instead of at its limit
    print("still running 20 s after Ctrl+Q", flush=True)
    window().close()


QTimer.singleShot(3000, start)
code = gui.main(None, argv=sys.argv[:1])
print(f"exit {code}", flush=True)
sys.exit(code)
"""

# what a newcomer cannot read: a stored dict, a placeholder, a Python repr, a config key,
# the method's own terms (named in tooltips only)
DOTTED_KEYS = sorted({k.dotted for k in config_keys()})
FORBIDDEN = [
    r"\{'",
    r"\{\{",
    r"\}\}",
    r"object at 0x",
    r"<workbench\.",
    r"Traceback",
    r"\bfitness\b",
    r"\bsigma\b",
    *(re.escape(key) for key in DOTTED_KEYS),
]
EXPECTED = {
    "start": ["Welcome", "Choose who answers", "Is a team worth it?", "Go to training"],
    "training": ["Training score and validation", "training", "of 2"],
    "runs": ["Runs in this workspace", "Why it ended", "today", "Finished"],
    # the run's name carries its day (train's default name): the list adds the time alone
    "replay": ["training", run_day(), "How it ended"],
    "compare": ["Runs compared", "first steps"],
    "evaluate": ["Evaluations in this workspace", "coordinator", "Accuracy"],
    "usage": ["Worker and role", "as Worker"],
    "headroom": ["routing by category gains", "Study the frontier"],
    "about": ["Trinity Workbench", "Licence: MIT", "Workspace:"],
}


def test_a_newcomers_first_hour_reads_in_plain_words(xvfb, tmp_path, tiny_backbone, tiny_model_dir):  # noqa: F811
    from workbench.core.jobs.train import train
    from workbench.core.workspace import Workspace

    home = tmp_path / "home"
    home.mkdir()
    data = home / ".local" / "share" / "trinity-workbench"
    short = {"model": str(tiny_model_dir), "device": "cpu"}
    # an earlier run (the Compare page's second)
    train(
        config(run={"name": "first steps"}, budget={"generations": 2}, backbone=short),
        Workspace.open(data),
        backbone=tiny_backbone,
    )
    run_config = tmp_path / "run.toml"
    run_config.write_text(
        config(run={"name": "my first run"}, budget={"generations": 2}, backbone=short).to_toml(),
        encoding="utf-8",
    )
    shots = tmp_path / "shots"
    shots.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "XDG_DATA_HOME", "XDG_CONFIG_HOME")
    }
    env.update(DISPLAY=xvfb, HOME=str(home), QT_QPA_PLATFORM="xcb")
    result = subprocess.run(
        [sys.executable, "-c", FIRST_HOUR, str(shots), str(run_config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("timed out", "still running"))], (
        result.stdout
    )
    assert "pressed Ctrl+Q" in lines and "exit 0" in lines  # Ctrl+Q quit the app
    taken = [line.split()[1] for line in lines if line.startswith("shot ")]
    assert taken == list(EXPECTED), result.stdout
    opened = [line.removeprefix("opened ") for line in lines if line.startswith("opened ")]
    assert len(opened) == 1 and opened[0].endswith(("index.html", "docs"))  # Help > Documentation
    for name, words in EXPECTED.items():
        text = " ".join(ocr(shots / f"{name}.png").split())
        for word in words:
            assert word in text, (name, word, text)
        for pattern in FORBIDDEN:
            assert not re.search(pattern, text), (name, pattern, text)
