"""The window's menus and its start: Help > Documentation opens the documentation from this
computer (the offline site built by packaging/docs_site.py, else a checkout's Markdown
pages), Help > About names the version, the licence and the workspace, Ctrl+Q quits; a
workspace that cannot be used is said in a dialog (and on stderr) with exit 2, a missing
keychain for registered workers' keys in a dialog beside the window."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workbench import __version__
from workbench.gui.help import find_documentation

ROOT = Path(__file__).resolve().parents[2]


class Opened:
    """What the window asked the desktop to open: a handler of file:// URLs set with
    ``QDesktopServices.setUrlHandler`` (Qt's own hook), in place of a browser."""

    def __enter__(self) -> list[str]:
        from workbench.gui.qt import QDesktopServices, QObject, QUrl, Slot

        class Receiver(QObject):
            def __init__(self) -> None:
                super().__init__()
                self.urls: list[str] = []

            @Slot(QUrl)
            def handle(self, url: QUrl) -> None:
                self.urls.append(url.toLocalFile())

        self.receiver = Receiver()
        QDesktopServices.setUrlHandler("file", self.receiver, "handle")
        return self.receiver.urls

    def __exit__(self, *exc: object) -> None:
        from workbench.gui.qt import QDesktopServices

        QDesktopServices.unsetUrlHandler("file")


@pytest.fixture(scope="module")
def offline_site(tmp_path_factory):
    """The documentation site built for reading offline, as the installers carry it."""
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        from docs_site import build
    finally:
        sys.path.pop(0)
    resources = tmp_path_factory.mktemp("resources")
    build(resources / "docs")
    return resources


def test_the_offline_site_is_a_file_per_page_with_its_own_search(offline_site):
    site = offline_site / "docs"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="guides/desktop.html"' in index  # a page is a file: it opens from disk
    assert (site / "guides" / "desktop.html").is_file()
    assert (site / "search" / "search_index.js").is_file()  # search without a server
    assert "fonts.googleapis.com" not in index  # nothing is fetched from the network


def test_help_documentation_opens_the_bundled_site_from_disk(
    make_main_window, qtbot, offline_site, monkeypatch
):
    import workbench.gui.app as app

    window = make_main_window()
    found = find_documentation(resources=offline_site)
    assert found is not None and found.site and not found.note
    monkeypatch.setattr(app, "find_documentation", lambda: found)
    with Opened() as urls:
        window.help_actions["documentation"].trigger()
    assert urls == [str(offline_site / "docs" / "index.html")]
    assert window.help_actions["documentation"].shortcut().toString() == "F1"


def test_without_the_site_a_checkout_opens_its_markdown_and_says_how_to_build(
    make_main_window, qtbot, tmp_path
):
    found = find_documentation(resources=tmp_path / "no-site", checkout=ROOT)
    assert found is not None and not found.site and found.path == ROOT / "docs"
    assert "python packaging/docs_site.py" in found.note
    assert find_documentation(resources=tmp_path, checkout=tmp_path) is None


def test_about_names_the_version_the_licence_and_the_workspace(make_main_window, qtbot):
    window = make_main_window()
    box = window.show_about()
    text = box.text()
    assert f"Trinity Workbench {__version__}" in text
    assert "Licence: MIT" in text
    assert f"Workspace: …/{window.workspace.root.name}" in text
    # the device, which needs torch, arrives from a background job
    qtbot.waitUntil(lambda: "checking" not in box.text(), timeout=60_000)
    assert "Device: CPU" in box.text() or "Device: CUDA" in box.text()
    box.close()


def test_ctrl_q_quits(make_main_window, qtbot):
    from workbench.gui.qt import Qt

    window = make_main_window()
    assert window.quit_action.shortcut().toString() == "Ctrl+Q"
    window.activateWindow()
    # an application shortcut fires in the active window (a user's is: they type in it)
    qtbot.waitUntil(window.isActiveWindow, timeout=10_000)
    qtbot.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)


# Runs in the child: the app's main() on a workspace that cannot be used; a timer reads
# the dialog that says so (what the user sees) before the app's own timer closes it.
DIALOG = r"""
import sys
from workbench.gui import app as gui
from workbench.gui.qt import QApplication, QMessageBox, QTimer

qt_app = QApplication(sys.argv[:1])

def read():
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    for box in boxes:
        print(f"dialog: {box.windowTitle()} | {box.text()}", flush=True)

QTimer.singleShot(1500, read)
sys.exit(gui.main(sys.argv[1], quit_after_ms=3000))
"""


def run_dialog(workspace: Path, unprivileged: bool = False) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    if unprivileged:
        from tests.support.unprivileged import run_python

        return run_python(DIALOG, str(workspace))
    return subprocess.run(
        [sys.executable, "-c", DIALOG, str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_workspace_that_is_a_file_is_said_in_a_dialog(tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    result = run_dialog(afile)
    assert result.returncode == 2, result.stderr
    sentence = f"workspace {afile} is a file, not a folder: pass --workspace with a folder path"
    assert f"dialog: The workspace cannot be used | {sentence}" in result.stdout
    said = [line for line in result.stderr.splitlines() if "propagateSizeHints" not in line]
    assert said == [f"error: {sentence}"]  # and on stderr, once: the sentence alone


def test_a_workspace_under_a_file_is_said_in_a_dialog(tmp_path):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    result = run_dialog(afile / "ws")  # its parent cannot be made: a file is in the way
    assert result.returncode == 2, result.stderr
    assert "dialog: The workspace cannot be used | cannot create workspace folder" in result.stdout
    assert "pass --workspace with a folder you can write to" in result.stdout


def test_a_workspace_that_cannot_be_written_is_said_in_a_dialog(tmp_path, monkeypatch):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    try:
        result = run_dialog(locked, unprivileged=True)
    finally:
        locked.chmod(0o700)
    assert result.returncode == 2, result.stderr
    assert "dialog: The workspace cannot be used | " in result.stdout
    assert "permission denied" in result.stdout and "another --workspace" in result.stdout
    assert os.listdir(locked) == []  # nothing was written


def test_registered_workers_without_a_keychain_are_said_in_a_dialog(
    make_main_window, qtbot, tmp_path, monkeypatch
):
    """A registered cloud worker whose key would be in the keychain, on a computer whose
    only keyring backend keeps keys in plain text (which the workbench refuses): a dialog
    beside the window names the worker and the fix."""
    from keyrings.alt.file import PlaintextKeyring

    from workbench.core.keychain import KeyStore
    from workbench.core.workers.registry import Registry
    from workbench.gui import startup
    from workbench.gui.qt import QMessageBox

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "workers.toml"
    path.write_text('[workers.gpt]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n', encoding="utf-8")
    registry = Registry(path, keys=KeyStore(PlaintextKeyring()))
    window = make_main_window()
    window.check_keychain(registry)

    def shown() -> list[QMessageBox]:
        return [b for b in window.findChildren(QMessageBox) if b.isVisible()]

    qtbot.waitUntil(lambda: bool(shown()), timeout=30_000)
    (box,) = shown()
    assert box.windowTitle() == startup.KEYCHAIN_TITLE
    assert "'gpt'" in box.text() and "OPENAI_API_KEY" in box.text()
    assert "no secure keychain" in box.text()
    box.close()
    # with no registered worker that needs a key, nothing is said
    empty = tmp_path / "none.toml"
    empty.write_text("", encoding="utf-8")
    assert startup.keychain_problem(Registry(empty, keys=KeyStore(PlaintextKeyring()))) is None
