"""The code sandbox contains hostile and broken programs (real subprocesses, no mocks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.core.tasks.sandbox import MARKER_VAR, SandboxResult, run_program

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the full sandbox needs Linux")

AS_ROOT = os.geteuid() == 0
root_only = pytest.mark.skipif(
    not AS_ROOT,
    reason="a program that undoes the guard is only contained by the user switch (needs root)",
)

# A program that undoes the in-process guard, as a determined one could: re-import ctypes
# and call libc directly. Only the other layers (user, limits, sweep) stop it then.
BYPASS = """
import sys
for _name in ("ctypes", "_ctypes"):
    sys.modules.pop(_name, None)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
"""

REPORT_RUN = f"""
import os
print("TOKEN", os.environ["{MARKER_VAR}"], "SID", os.getsid(0), flush=True)
"""


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def live_processes_of_run(result: SandboxResult) -> list[int]:
    """Processes still alive (not zombies) that belong to the run that printed REPORT_RUN."""
    match = re.search(r"TOKEN (\w+) SID (\d+)", result.stdout)
    assert match, f"the program did not report its run: {result}"
    marker = f"{MARKER_VAR}={match.group(1)}".encode()
    session = match.group(2)
    alive = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        if fields is None or fields[0] in ("Z", "X"):
            continue
        if fields[3] == session:
            alive.append(int(name))
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            alive.append(int(name))
    return alive


def is_alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    """A file outside the sandbox that no program may remove or change."""
    folder = tmp_path / "outside"
    folder.mkdir()
    path = folder / "canary.txt"
    path.write_text("still here")
    return path


@pytest.fixture
def bystander():
    """A process of ours that no program may kill."""
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


def test_runs_a_program_with_stdin_and_reports_output() -> None:
    result = run_program(
        "import sys\nname = input()\nprint('hello', name)\nprint('warn', file=sys.stderr)\n",
        stdin="world\n",
    )
    assert result.ok and result.returncode == 0 and not result.timed_out
    assert result.stdout == "hello world\n"
    assert result.stderr == "warn\n"
    assert result.reason == "exited normally"


def test_reports_a_crash_with_its_traceback() -> None:
    result = run_program("def f():\n    return 1 / 0\nf()\n")
    assert result.returncode == 1 and not result.ok
    assert "ZeroDivisionError" in result.stderr
    assert 'File "program.py", line 2' in result.stderr  # the harness's frame is not shown
    assert "harness" not in result.stderr


def test_syntax_error_is_a_failure_not_an_exception() -> None:
    result = run_program("def broken(:\n")
    assert result.returncode == 1 and "SyntaxError" in result.stderr


def test_program_is_run_from_a_file_in_a_fresh_folder(tmp_path: Path) -> None:
    source = "import os, sys\nprint(sys.argv[0], sorted(os.listdir('.')))\nopen('mine.txt', 'w').write('x')\n"
    first = run_program(source, workdir_parent=tmp_path)
    second = run_program(source, workdir_parent=tmp_path)
    assert first.ok and second.ok
    assert first.stdout.startswith("program.py")
    assert "mine.txt" not in first.stdout and "mine.txt" not in second.stdout
    assert list(tmp_path.iterdir()) == []  # each run's folder is gone


def test_infinite_loop_is_killed_at_the_timeout() -> None:
    start = time.monotonic()
    result = run_program("while True:\n    pass\n", timeout_s=2)
    assert result.timed_out and result.killed and not result.ok
    assert "timed out after 2 s" in result.reason
    assert time.monotonic() - start < 4


def test_memory_hog_fails_fast() -> None:
    result = run_program(
        "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))\n",
        memory_mb=256,
        timeout_s=5,
    )
    assert not result.ok and not result.timed_out
    assert "out of memory" in result.reason or result.killed
    assert result.duration_s < 4


def test_huge_output_is_capped() -> None:
    result = run_program(
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
        max_output_bytes=100_000,
        max_file_bytes=2 * 2**20,
        timeout_s=5,
    )
    assert not result.ok and not result.timed_out
    assert len(result.stdout) == 100_000 and result.truncated
    assert result.duration_s < 4


def test_huge_file_is_stopped_at_the_file_size_limit(tmp_path: Path) -> None:
    source = "with open('big.bin', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)\n"
    result = run_program(source, max_file_bytes=4 * 2**20, timeout_s=5, workdir_parent=tmp_path)
    assert not result.ok and not result.timed_out
    assert "File too large" in result.stderr or result.killed
    assert list(tmp_path.iterdir()) == []


def test_folder_made_read_only_is_still_removed(tmp_path: Path) -> None:
    source = (
        "import os\n"
        "os.makedirs('a/b/c')\n"
        "open('a/b/c/f.txt', 'w').write('x')\n"
        "os.chmod('a/b/c', 0)\nos.chmod('a/b', 0o500)\nos.chmod('a', 0)\nos.chmod('.', 0o500)\n"
        "print('locked')\n"
    )
    result = run_program(source, workdir_parent=tmp_path)
    assert result.stdout == "locked\n", result
    assert list(tmp_path.iterdir()) == []


def test_program_cannot_see_our_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-canary-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    source = (
        "import os\n"
        "print(dict(os.environ))\n"
        "for pid in (os.getppid(), 1):\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError as error:\n"
        "        print('denied', error)\n"
    )
    result = run_program(source)
    assert result.ok, result
    assert secret not in result.stdout and secret not in result.stderr
    assert "OPENAI_API_KEY" not in result.stdout.splitlines()[0]
    environment = eval(result.stdout.splitlines()[0])  # noqa: S307 - our own printout
    assert {"PATH", "HOME", "LANG"} <= set(environment)
    assert not any("KEY" in name or "TOKEN" in name for name in environment)


def test_guard_refuses_dangerous_calls(canary: Path) -> None:
    source = f"""
import os, shutil, subprocess
for name, call in [
    ("kill parent", lambda: os.kill(os.getppid(), 9)),
    ("kill all", lambda: os.kill(-1, 9)),
    ("killpg", lambda: os.killpg(os.getpgid(0), 9)),
    ("fork", os.fork),
    ("setsid", os.setsid),
    ("system", lambda: os.system("true")),
    ("popen", lambda: subprocess.run(["true"])),
    ("remove outside", lambda: os.remove({str(canary)!r})),
    ("rmtree outside", lambda: shutil.rmtree({str(canary.parent)!r})),
    ("posix.kill", lambda: __import__("posix").kill(os.getppid(), 9)),
]:
    try:
        call()
        print(name, "ALLOWED")
    except (PermissionError, OSError) as error:
        print(name, "refused")
open("inside.txt", "w").write("x")
os.remove("inside.txt")
print("inside ok")
"""
    result = run_program(source)
    assert result.ok, result
    assert "ALLOWED" not in result.stdout, result.stdout
    assert result.stdout.count("refused") == 10
    assert "inside ok" in result.stdout
    assert canary.read_text() == "still here"


def test_killing_the_parent_does_not_stop_us(bystander: subprocess.Popen) -> None:
    result = run_program("import os\nos.kill(os.getppid(), 9)\n")
    assert not result.ok and "PermissionError" in result.stderr
    assert bystander.poll() is None


@root_only
def test_killing_the_parent_with_libc_is_refused_by_the_kernel() -> None:
    result = run_program(
        BYPASS + "import os\nprint(libc.kill(os.getppid(), 9), ctypes.get_errno())\n"
        "print(libc.kill(1, 9), ctypes.get_errno())\n"
    )
    assert result.ok, result
    assert result.stdout.split() == ["-1", "1", "-1", "1"]  # EPERM both times


@root_only
def test_killing_every_process_it_can_spares_ours(bystander: subprocess.Popen) -> None:
    result = run_program(BYPASS + "libc.kill(-1, 9)\nprint('after')\n", timeout_s=3)
    assert bystander.poll() is None
    assert os.getpid() and result.returncode in (0, -9)


@root_only
def test_deleting_files_outside_with_libc_is_refused(canary: Path) -> None:
    result = run_program(
        BYPASS + f"print(libc.unlink({str(canary).encode()!r}), ctypes.get_errno())\n"
    )
    assert result.ok, result
    assert result.stdout.split()[0] == "-1"
    assert canary.read_text() == "still here"


def test_child_that_escapes_with_setsid_is_killed_at_the_timeout() -> None:
    source = (
        REPORT_RUN
        + BYPASS
        + (
            "import time\n"
            "pid = libc.fork()\n"
            "if pid == 0:\n"
            "    libc.setsid()\n"
            "    time.sleep(60)\n"
            "    libc._exit(0)\n"
            "print('CHILD', pid, flush=True)\n"
            "time.sleep(60)\n"
        )
    )
    result = run_program(source, timeout_s=2)
    assert result.timed_out
    child = int(re.search(r"CHILD (\d+)", result.stdout).group(1))
    assert not is_alive(child)
    assert live_processes_of_run(result) == []


def test_child_left_behind_by_a_program_that_exits_is_killed() -> None:
    source = (
        REPORT_RUN
        + BYPASS
        + (
            "import time\n"
            "pid = libc.fork()\n"
            "if pid == 0:\n"
            "    libc.setsid()\n"
            "    time.sleep(60)\n"
            "    libc._exit(0)\n"
            "print('CHILD', pid, flush=True)\n"
        )
    )
    result = run_program(source, timeout_s=5)
    assert result.ok and result.duration_s < 4, result
    child = int(re.search(r"CHILD (\d+)", result.stdout).group(1))
    assert not is_alive(child)
    assert live_processes_of_run(result) == []


def test_fork_bomb_through_os_is_refused() -> None:
    result = run_program("import os\nwhile True:\n    os.fork()\n", timeout_s=3)
    assert not result.ok and "PermissionError" in result.stderr
    assert result.duration_s < 2.5


@root_only
def test_fork_bomb_through_libc_is_contained_and_cleaned_up(bystander: subprocess.Popen) -> None:
    source = REPORT_RUN + BYPASS + "while True:\n    libc.fork()\n"
    start = time.monotonic()
    result = run_program(source, timeout_s=2)
    assert not result.ok
    assert time.monotonic() - start < 8
    assert live_processes_of_run(result) == []
    assert bystander.poll() is None


@root_only
def test_program_runs_as_nobody() -> None:
    result = run_program(
        "import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())\n"
    )
    assert result.stdout.split() == ["65534", "65534", "65534", "[]"]
