"""``trinity-workbench --self-test``: is this installation whole? (Used on frozen bundles.)

Starts the GUI offscreen on a temporary workspace (Qt, its plugins and every page load),
then runs one real episode of the offline backbone coordinating the sandbox pool on a
bundled task and stores it (torch, transformers, the model, the protocol, the graders,
SQLite), and grades a bundled code task's reference solution in the code sandbox (a
child Python process). Prints what it checked and exits 0; on any failure prints the
reason and exits 1.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

TASK = ("mixed", "mixed-math-001")
CODE_TASK = ("humaneval", "HumanEval/0")


def run() -> int:
    started = time.perf_counter()
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        with tempfile.TemporaryDirectory(prefix="trinity-self-test-") as tmp:
            _gui(Path(tmp) / "workspace")
            episode = _episode(Path(tmp) / "workspace")
            isolation = _code_sandbox()
            _keyring_backends()
    except Exception as exc:  # the message is the point: say what broke
        traceback.print_exc(file=sys.stderr)
        print(f"self-test FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(
        f"self-test passed in {time.perf_counter() - started:.1f} s: GUI pages built offscreen; "
        f"episode on {TASK[1]} with {len(episode.turns)} turn(s), reward {episode.reward:g}, stored; "
        f"{CODE_TASK[1]} {isolation}; keychain backends present"
    )
    return 0


def _gui(root: Path) -> None:
    from workbench.core.workspace import Workspace
    from workbench.gui.app import MainWindow
    from workbench.gui.qt import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow(Workspace.open(root))
    window.show()
    app.processEvents()
    if not window.isVisible() or len(window.pages) < 6:
        raise RuntimeError(f"the main window did not come up (pages: {list(window.pages)})")
    for page in window.pages.values():
        if hasattr(page, "shutdown"):
            page.shutdown()
    window.close()
    print(f"GUI: {', '.join(window.pages)} pages built", file=sys.stderr)


def _episode(root: Path):
    from workbench.cli import main as cli_main
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    suite, task = TASK
    code = cli_main(
        [
            "run-episode",
            "--backbone",
            "offline",
            "--device",
            "cpu",
            "--pool",
            "sandbox",
            "--suite",
            suite,
            "--task",
            task,
            "--max-tokens",
            "64",
            "--workspace",
            str(root),
        ]
    )
    if code != 0:
        raise RuntimeError(f"run-episode exited with status {code}")
    with Store.open(Workspace.open(root)) as store:
        (summary,) = store.list_episodes()
        return store.get_episode(summary.id)


def _code_sandbox() -> str:
    """Grade a reference solution in the code sandbox; say plainly which isolation it had
    (or that there is none, in which case code tasks need the user's opt-in)."""
    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.sandbox import UNISOLATED_ENV, detect_isolation, unisolated_allowed
    from workbench.core.tasks.suites import load_suite

    isolation = detect_isolation()
    print(f"code sandbox isolation: {isolation.kind}: {isolation.detail}", file=sys.stderr)
    if not isolation.isolated and not unisolated_allowed():
        print(
            f"code sandbox: NOT ISOLATED here; code tasks are refused unless "
            f"{UNISOLATED_ENV}=1 is set",
            file=sys.stderr,
        )
        return "not graded: NO code isolation on this machine (code tasks refused)"
    suite, task_id = CODE_TASK
    task = load_suite(suite).get(task_id)
    result = grade(task, f"```python\n{task.solution}\n```")
    if result.reward != 1.0:
        raise RuntimeError(
            f"the code sandbox failed {task_id}'s reference solution: {result.details}"
        )
    print(f"code sandbox: {task_id} passes its tests", file=sys.stderr)
    if not isolation.isolated:
        return "graded UNISOLATED (opted in: no code isolation on this machine)"
    return f"graded in the code sandbox ({isolation.kind})"


KEYRING_BACKENDS = {
    "linux": (
        "keyring.backends.SecretService",
        "keyring.backends.libsecret",
        "keyring.backends.kwallet",
    ),
    "darwin": ("keyring.backends.macOS",),
    "win32": ("keyring.backends.Windows",),
}


def _keyring_backends() -> None:
    """The platform's keychain backends are importable (keyring finds them through entry
    points, which a bundler can miss); whether a keychain runs is the user's session."""
    import importlib

    platform = "linux" if sys.platform.startswith("linux") else sys.platform
    for name in KEYRING_BACKENDS.get(platform, ()):
        importlib.import_module(name)
    import keyring.backend

    found = {type(b).__module__ for b in keyring.backend.get_all_keyring()}
    print(f"keyring: backends {', '.join(sorted(found)) or 'none running'}", file=sys.stderr)
