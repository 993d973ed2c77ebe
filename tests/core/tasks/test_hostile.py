"""Hostile programs graded as root and as an ordinary user (uid 1000): every one scores 0,
leaves no process and no file behind, reaches nothing of the user's, and leaks nothing
into the grade's details (real bubblewrap sandboxes, real processes, no mocks).

The ordinary-user run is a real separate process under ``setpriv`` (uid/gid 1000, no
groups) with its own home holding an SSH key, workers.toml and a workspace, and an API
key in its environment. It needs a Python that uid 1000 can run: ours if every folder
above it is searchable, else the system's ``python3.X`` of the same version; the project
and its one third-party import on the grading path (platformdirs) are copied to a folder
everyone can read, since a clean clone may live under a private /root.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.core.tasks import hostile_probes
from workbench.core.tasks.sandbox import end_spare_sandboxes, linux

USER_UID = 1000
PROJECT = Path(__file__).resolve().parents[3]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
NAMES = list(hostile_probes.PROBES)


def _processes() -> dict[int, tuple[int, str]]:
    """Live processes: pid -> (real uid, pid namespace)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = Path(f"/proc/{name}/status").read_text()
            namespace = os.readlink(f"/proc/{name}/ns/pid")
        except OSError:
            continue
        state = re.search(r"^State:\s+(\S)", status, re.M).group(1)
        if state in ("Z", "X"):
            continue
        uid = int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))
        found[int(name)] = (uid, namespace)
    return found


def _is_bwrap(pid: int) -> bool:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "bwrap"
    except OSError:
        return False


def _readable_tree(path: Path) -> None:
    for folder, _, files in os.walk(path):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


def _python_for_others() -> str:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for executable in (
        os.path.realpath(sys.executable),
        f"/usr/bin/{version}",
        f"/usr/local/bin/{version}",
    ):
        real = os.path.realpath(executable)
        if os.path.isfile(real) and linux._others_can_run(real, str(Path(real).parents[1])):
            return real
    pytest.fail(
        f"no {version} that uid {USER_UID} can run: ours ({sys.executable}) is in a private "
        f"folder and there is no /usr/bin/{version}; install the system's {version}"
    )


class World:
    """What a hostile program must not reach: a home with secrets, an API key in the
    environment, a listener on loopback, the project, and a bystander process."""

    def __init__(self, base: Path, owner: int | None) -> None:
        self.secret = f"sk-canary-{secrets.token_hex(12)}"
        self.token = secrets.token_hex(8)
        self.home = base / "home"
        for relative, text in (
            (".ssh/id_rsa", f"-----BEGIN OPENSSH PRIVATE KEY-----{self.secret}"),
            (".config/trinity-workbench/workers.toml", f'[w]\napi_key = "{self.secret}"\n'),
            ("workspace/secret.txt", self.secret),
            (".bashrc", "# bashrc\n"),
        ):
            path = self.home / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if owner is None:
            _readable_tree(self.home)  # only the sandbox's mount namespace hides it
        else:
            for folder, _, files in os.walk(self.home):
                os.chown(folder, owner, owner)
                os.chmod(folder, 0o700)
                for name in files:
                    os.chown(os.path.join(folder, name), owner, owner)
                    os.chmod(os.path.join(folder, name), 0o600)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listener.setblocking(False)
        self.spec = {
            "HOME": str(self.home),
            "TOKEN": self.token,
            "PORT": self.listener.getsockname()[1],
            "PROJECT": str(PROJECT),
        }

    def outside_files(self) -> list[str]:
        paths = [
            f"/tmp/wb-probe-{self.token}",
            f"/dev/shm/wb-probe-{self.token}",
            f"{self.home}/wb-probe-{self.token}",
            f"{PROJECT}/wb-probe-{self.token}",
            f"/var/tmp/wb-probe-{self.token}",
            f"/tmp/wb-daemon-{self.token}",
        ]
        return [p for p in paths if os.path.lexists(p)]

    def connections(self) -> int:
        count = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1


def _grade_as_root(world: World) -> dict:
    saved = {k: os.environ.get(k) for k in ("HOME", "OPENAI_API_KEY")}
    os.environ["HOME"] = str(world.home)
    os.environ["OPENAI_API_KEY"] = world.secret
    try:
        return hostile_probes.grade_probes(NAMES, world.spec)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _grade_as_user(world: World, base: Path) -> dict:
    import platformdirs

    code = base / "code"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(PROJECT / "workbench", code / "workbench", ignore=ignore)
    shutil.copytree(Path(platformdirs.__file__).parent, code / "platformdirs", ignore=ignore)
    shutil.copyfile(hostile_probes.__file__, code / "hostile_probes.py")
    _readable_tree(code)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(world.home),
        "OPENAI_API_KEY": world.secret,
        "PYTHONPATH": str(code),
        "LANG": "C.UTF-8",
    }
    setpriv = ["setpriv", f"--reuid={USER_UID}", f"--regid={USER_UID}", "--clear-groups"]
    done = subprocess.run(
        [
            *setpriv,
            _python_for_others(),
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import runpy; "
            "runpy.run_path(sys.argv[1] + '/hostile_probes.py', run_name='__main__')",
            str(code),
        ],
        input=json.dumps({"names": NAMES, "spec": world.spec}),
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=600,
    )
    assert done.returncode == 0, f"the grader as uid {USER_UID} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


@pytest.fixture(scope="module", params=["root", "uid 1000"])
def graded(request):
    """Every probe graded once by this user, with what was checked around the run."""
    assert os.geteuid() == 0, (
        "the hostile suite grades as root and, through setpriv, as uid 1000: run it as "
        "root (CI does)"
    )
    base = Path(tempfile.mkdtemp(prefix="wb-hostile-"))
    os.chmod(base, 0o755)
    as_user = request.param != "root"
    world = World(base, USER_UID if as_user else None)
    bashrc = (world.home / ".bashrc").read_bytes()
    bystanders = [subprocess.Popen(["sleep", "120"], start_new_session=True)]
    bystanders.append(
        subprocess.Popen(
            [
                "setpriv",
                f"--reuid={USER_UID}",
                f"--regid={USER_UID}",
                "--clear-groups",
                "sleep",
                "120",
            ],
            start_new_session=True,
        )
    )
    before = _processes()
    ours = os.readlink("/proc/self/ns/pid")
    try:
        start = time.monotonic()
        results = _grade_as_user(world, base) if as_user else _grade_as_root(world)
        elapsed = time.monotonic() - start
        time.sleep(0.5)  # a daemon that escaped would write its file by now
        # this process's own spare sandboxes (started ahead of a next grade, e.g. by a
        # grading thread of an earlier test finishing late) are the workbench's, not
        # anything a probe left: end them, so what remains was left behind
        end_spare_sandboxes()
        after = _processes()
        # ours: anything in another pid namespace (the sandboxes' processes), any bwrap,
        # and for the uid 1000 run any process of that user. (Root's sandboxes run as
        # nobody, which old-style sandboxes of other programs on a shared machine also
        # use in our namespace; bwrap and the namespace identify ours.)
        left = {
            pid: info
            for pid, info in after.items()
            if pid not in before
            and pid not in (b.pid for b in bystanders)
            and (info[1] != ours or _is_bwrap(pid) or (as_user and info[0] == USER_UID))
        }
        yield {
            "user": request.param,
            "results": results,
            "world": world,
            "left": left,
            "files": world.outside_files(),
            "bashrc": (world.home / ".bashrc").read_bytes() == bashrc,
            "connections": world.connections(),
            "bystanders": [b.poll() is None for b in bystanders],
            "elapsed": elapsed,
        }
    finally:
        for b in bystanders:
            b.kill()
            b.wait()
        world.listener.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("name", NAMES)
def test_probe_scores_zero_and_leaks_nothing(graded, name: str) -> None:
    result = graded["results"][name]
    details = result["details"]
    assert result["reward"] == 0.0, f"{name} as {graded['user']} was graded 1: {details}"
    text = json.dumps(details, ensure_ascii=False)
    world = graded["world"]
    assert world.secret not in text, f"{name} leaked a secret into the grade"
    assert "CONNECTED" not in details["stderr"], "a program reached the listener on loopback"
    for key in ("stderr", "reason"):
        assert not CONTROL.search(details[key]), f"control characters in {key}: {details[key]!r}"
    assert details["isolation"] == "bubblewrap"


def test_the_attacks_really_ran(graded) -> None:
    """The probes did what they meant to inside their sandbox (so 'nothing left' and
    'nothing reached' are the sandbox's doing, not a probe that never started)."""
    stderr = {name: r["details"]["stderr"] for name, r in graded["results"].items()}
    assert "daemon running" in stderr["daemon via ctypes, setsid, execve with empty env"]
    assert "No space left on device" in stderr["fill the disk"]
    assert "Connection refused" in stderr["connect to loopback"]
    assert "pass\nall tests passed" in stderr["print the verdict and exit 0"]
    # the candidate shares its sandbox with the checker, which the kernel keeps out of its
    # reach (not dumpable: EPERM, EACCES) and which blocks the signals it can
    traced = stderr["trace the checker and read its memory"]
    assert "checker.py" in traced
    assert "ptrace attach: -1 errno 1" in traced and "ptrace seize: -1 errno 1" in traced
    for name in ("mem", "environ", "fd/0", "fd"):
        assert f"{name}: errno 13" in traced, traced
    assert "signalled the checker 8 times" in stderr["signal the checker"]
    # bwrap's process in the sandbox holds bwrap's output files, which its user may reopen
    # (as uid 1000: their owner); the checker's output is its own, and the test's
    # traceback in the details is the checker's alone
    forged = stderr["write into the checker's output"]
    assert "wrote into" in forged and "FORGED-CHECKER-OUTPUT" not in forged, forged
    # the candidate can lower the checker's limits and forge bwrap's exit status (both
    # only end the grade without a verdict: a failure) and plant files in /tmp, which the
    # checker never imports from nor reads
    limited = stderr["lower the checker's resource limits"]
    assert limited.count("on the checker: 0") == 3, limited
    assert "took from bwrap" in stderr["take bwrap's eventfd and forge its exit status"]
    planted = graded["results"]["plant modules the checker imports in /tmp"]["details"]
    assert "planted" in planted["stderr"]
    for mark in ("PLANTED-MODULE-RAN", "PLANTED-SOURCE-LINE"):
        assert mark not in planted["stderr"] + planted["reason"], planted
    assert 'File "test.py"' in planted["stderr"], planted  # the checker's traceback ran
    assert "a test assertion failed" in planted["reason"], planted
    shared = stderr["memory shared with the checker since the fork"]
    assert "writable shared mappings: []" in shared, shared
    signalled = graded["results"]["signal the checker"]["details"]["reason"]
    assert "a test assertion failed" in signalled, signalled


def test_nothing_is_left_behind(graded) -> None:
    assert graded["left"] == {}, f"processes left after the grades: {graded['left']}"
    assert graded["files"] == [], f"files written outside the sandbox: {graded['files']}"
    assert graded["bashrc"], "~/.bashrc was changed"
    assert graded["connections"] == 0, "a program reached the listener on loopback"
    assert all(graded["bystanders"]), "a program killed a process outside its sandbox"
