"""The code sandbox runs programs isolated and reports what they did (real subprocesses in
real bubblewrap sandboxes, no mocks). Hostile programs: test_hostile.py."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from workbench.core.tasks import sandbox
from workbench.core.tasks.sandbox import (
    box,
    check_function,
    detect_isolation,
    end_spare_sandboxes,
    grade_box,
    run_program,
)
from workbench.core.tasks.sandbox.isolation import NOBODY
from workbench.core.tasks.sandbox.macos import sandbox_profile
from workbench.core.tasks.sandbox.plaindata import NotPlainData, decode, encode


def test_linux_runs_programs_in_bubblewrap() -> None:
    assert sys.platform == "linux", "the project's tests run on Linux (CI)"
    isolation = detect_isolation()
    assert isolation.kind == "bubblewrap", (
        f"no sandbox here: {isolation.detail} (.ci/run installs bubblewrap)"
    )
    assert run_program("print(1)").isolation == "bubblewrap"


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


def test_program_sees_neither_the_project_nor_our_home() -> None:
    project = Path(__file__).resolve().parents[3]
    probes = [str(project), str(project / "workbench"), str(Path.home() / ".ssh")]
    result = run_program(
        f"import os\nprint(os.getcwd(), [os.path.exists(p) for p in {probes!r}])\n"
    )
    assert result.ok, result
    assert result.stdout.split(" ", 1) == ["/tmp", "[False, False, False]\n"]


def test_plain_data_round_trips_builtin_values_only() -> None:
    value = [
        1,
        -(2**80),
        1.5,
        float("inf"),
        "é",
        None,
        True,
        (1, [2]),
        {3: {"a": b"x"}},
        {4, 5},
        frozenset({6}),
        1j,
        {(1, 2): "t"},
    ]
    assert decode(encode(value)) == value
    assert [type(x) for x in decode(encode(value))] == [type(x) for x in value]

    class Rigged(int):
        def __eq__(self, other):
            return True

    for bad in (Rigged(1), [Rigged(1)], {"k": object()}, type("S", (str,), {})("x")):
        with pytest.raises(NotPlainData):
            encode(bad)
    for forged in ('{"list": 1}', '{"eval": "1"}', '{"list": [], "x": 1}', '{"complex": ["a", 1]}'):
        with pytest.raises(NotPlainData):
            decode(forged)


def test_a_correct_function_passes_and_exceptions_reach_the_test() -> None:
    test = (
        "def check(candidate):\n"
        "    assert candidate([3, 1, 2]) == [1, 2, 3]\n"
        "    assert candidate((2, 1)) == [1, 2]\n"
        "    try:\n"
        "        candidate(None)\n"
        "    except TypeError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError('expected TypeError')\n"
    )
    check = check_function(
        "def sort_it(xs):\n    return sorted(xs)\n", prelude="", test=test, entry_point="sort_it"
    )
    assert check.passed, check
    assert check.reason == "all tests passed"


def test_stop_iteration_from_the_candidate_cannot_end_the_tests_loop() -> None:
    """A wrong answer that raises StopIteration: had it reached the test as such, the
    ``zip(map(candidate, ...))`` loop would end at once and the test pass (as it does in the
    official, in-process harness); the checker raises RuntimeError instead."""
    test = (
        "def check(candidate):\n"
        "    for got, want in zip(map(candidate, [1, 2, 3]), [2, 4, 6]):\n"
        "        assert got == want\n"
    )
    for name in ("StopIteration", "StopAsyncIteration"):
        check = check_function(
            f"def double(x):\n    raise {name}('done')\n",
            prelude="",
            test=test,
            entry_point="double",
            timeout_s=5,
        )
        assert not check.passed, check
        assert "RuntimeError: done" in check.reason, check.reason
    right = "def double(x):\n    return 2 * x\n"
    assert check_function(right, prelude="", test=test, entry_point="double", timeout_s=5).passed


def test_macos_profile_denies_by_default_and_allows_only_the_run_folder() -> None:
    profile = sandbox_profile(python_prefix="/opt/py", harness_dir="/tmp/h", work_dir='/tmp/w "x"')
    lines = profile.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert "(deny network*)" in lines
    writes = [line for line in lines if line.startswith("(allow file-write*")]
    assert writes == ['(allow file-write* (subpath "/tmp/w \\"x\\"") (literal "/dev/null"))']
    assert "/Users" not in profile and "network-outbound" not in profile


def test_only_a_capped_tmp_is_writable() -> None:
    source = (
        "import os\n"
        "for path in ['/x', '/w/x', '/dev/x', '/usr/x', '/w/program.py', '/tmp/x']:\n"
        "    try:\n"
        "        open(path, 'a').write('1')\n"
        "        print(path, 'writable')\n"
        "    except OSError as error:\n"
        "        print(path, error.errno)\n"
        "written = 0\n"
        "try:\n"
        "    for n in range(100):\n"
        "        with open(f'/tmp/fill-{n}', 'wb') as f:\n"
        "            f.write(b'x' * 8 * 2**20)\n"
        "        written += 8\n"
        "except OSError as error:\n"
        "    print('full at', written, error.errno)\n"
    )
    result = run_program(source, timeout_s=10)
    assert result.ok, result
    lines = result.stdout.splitlines()
    assert lines[:6] == [
        "/x 30",
        "/w/x 30",
        "/dev/x 30",
        "/usr/x 30",
        "/w/program.py 13",
        "/tmp/x writable",
    ]  # 30: read-only file system; 13: permission denied
    assert lines[6] == "full at 56 28"  # 28: no space left (the 64 MiB tmpfs)


def test_processes_are_capped_and_end_with_the_program() -> None:
    source = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as error:\n"
        "    print(n, error.errno)\n"
    )
    start = time.monotonic()
    result = run_program(source, timeout_s=10)
    assert result.ok, result
    forks, errno = map(int, result.stdout.split())
    assert errno == 11 and 10 < forks <= 64  # EAGAIN at the process limit
    assert time.monotonic() - start < 5  # its sleeping children did not hold the grade


def _children_alive() -> list[int]:
    """Our direct child processes that have not ended (the spare sandboxes' bwraps)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state not in ("Z", "X"):
                found.append(int(pid))
    return found


def test_a_grade_runs_in_sandboxes_started_ahead_and_used_once() -> None:
    """The sandbox a grade uses was started before it (after the previous grade), serves
    that one grade only, and applies every resource limit to itself before the program
    runs."""
    program = (
        "import os, resource\n"
        "SEEN = os.path.exists('/tmp/mark')\n"
        "open('/tmp/mark', 'w').write('x')\n"
        "def probe():\n"
        "    names = ('AS', 'CPU', 'FSIZE', 'NOFILE', 'CORE')\n"
        "    limits = [resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) for n in names]\n"
        "    stat = open('/proc/self/stat').read().rsplit(')', 1)[1].split()\n"
        "    return SEEN, limits, int(stat[19]) / os.sysconf('SC_CLK_TCK')  # start, since boot\n"
    )
    test = (
        "def check(candidate):\n"
        "    seen, got, started = candidate()\n"
        "    assert not seen, 'a file of an earlier grade is still there'\n"
        "    mb = 2**20\n"
        "    assert got == [(256*mb, 256*mb), (4, 5), (16*mb, 16*mb), (64, 64), (0, 0)], got\n"
        "    assert started < GRADED, (started, GRADED)\n"
    )
    end_spare_sandboxes()
    others = set(_children_alive())  # children of other tests in this process, if any

    def grade_and_count_spares(started_before: float = float("inf")) -> int:
        check = check_function(
            program,
            prelude=f"GRADED = {started_before!r}\n".replace("inf", "float('inf')"),
            test=test,
            entry_point="probe",
            timeout_s=3,
            memory_mb=256,
        )
        assert check.passed, check
        return len(set(_children_alive()) - others)

    # the second and third grade use a sandbox an earlier grade started; back to back (a
    # grade had to wait for its sandbox to be ready), a thread keeps two started ahead
    assert [grade_and_count_spares() for _ in range(3)][0] == 1
    assert 1 <= grade_and_count_spares() <= 2
    deadline = time.monotonic() + 30
    while not all(p.ready() for ps in grade_box.SPARES.values() for p in ps):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.2)
    # its sandbox was ready (its processes started before this grade: in the clock of
    # process start times, seconds since boot, 10 ms steps), so one is kept, not two
    now = float(Path("/proc/uptime").read_text().split()[0])
    assert grade_and_count_spares(started_before=now - 0.1) == 1
    end_spare_sandboxes()
    assert set(_children_alive()) - others == set()


def test_a_forked_child_leaves_the_parents_spare_pair_usable() -> None:
    """A child forked while a spare pair waits drops its copies of the pair's task pipes,
    so the parent's next grade still sees the end of its task (else it would wait for the
    child, past its timeout, and fail)."""
    check_function("def f():\n    return 1\n", prelude="", test="", entry_point="f", timeout_s=5)
    pid = os.fork()
    if pid == 0:
        time.sleep(60)  # holds whatever it inherited while the parent grades
        os._exit(0)
    try:
        check = check_function(
            "def f():\n    return 1\n",
            prelude="",
            test="def check(candidate):\n    assert candidate() == 1\n",
            entry_point="f",
            timeout_s=5,
        )
        assert check.passed, check
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        end_spare_sandboxes()


def test_right_programs_graded_back_to_back_from_many_threads_all_pass():
    """Training grades code from many threads at once, back to back: every canonical
    solution of the bundled mixed suite must still score 1 (a sandbox design that ran out
    of processes under this load once scored 7-16 of 300 right programs 0, reported as
    timeouts), and a broken one 0."""
    import concurrent.futures

    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.suites import load_suite

    tasks = [t for t in load_suite("mixed").tasks if t.kind == "code"]
    assert len(tasks) >= 50

    def reward(task, program: str) -> tuple[str, float, str]:
        g = grade(task, f"```python\n{program}\n```")
        return task.id, g.reward, str(g.details.get("reason", ""))

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        right = list(pool.map(lambda t: reward(t, t.solution), tasks * 2))
        broken = list(
            pool.map(
                lambda t: reward(t, f"def {t.tests['entry_point']}(*a):\n    return None"),
                tasks[:16],
            )
        )
    assert [r for r in right if r[1] != 1.0] == []
    assert all(r[1] == 0.0 for r in broken)


def test_a_sandbox_that_could_not_start_is_replaced_once(monkeypatch) -> None:
    """A sandbox that ends before it is ready (as when its fork of the candidate's
    process meets the user's process limit, raised meanwhile by others) ran nothing of
    the grade: a fresh one grades it. A second failure is a failure, not a loop."""
    real_give = grade_box.GradeBox.give
    given: list[object] = []

    def give_then_end_it(self, *args) -> None:
        given.append(self)
        if len(given) <= kills:
            # end it as one that never started: killed, and its "ready" line (if it got
            # that far on a busy machine) taken off the verdict pipe, so the host sees a
            # sandbox that ended before it was ready, whatever the timing
            os.killpg(self.checker.pid, signal.SIGKILL)
            os.waitid(os.P_PID, self.checker.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
            if self.ready():  # "ready", or the end of the pipe
                assert os.read(self.verdict_r, len(grade_box.READY)) in (b"", grade_box.READY)
        real_give(self, *args)

    monkeypatch.setattr(grade_box.GradeBox, "give", give_then_end_it)
    program, test = (
        "def f():\n    return 1\n",
        "def check(candidate):\n    assert candidate() == 1\n",
    )
    end_spare_sandboxes()
    kills = 1
    check = check_function(program, prelude="", test=test, entry_point="f", timeout_s=5)
    assert check.passed, check
    assert len(given) == 2
    end_spare_sandboxes()
    given.clear()
    kills = 2
    check = check_function(program, prelude="", test=test, entry_point="f", timeout_s=5)
    assert not check.passed and "the sandbox could not start" in check.reason, check
    assert len(given) == 2
    end_spare_sandboxes()


def test_the_candidate_cannot_write_into_the_checkers_output() -> None:
    """The candidate shares its sandbox with the checker and with bwrap's process in it
    (pid 1, which holds bwrap's stdout and stderr): whatever it writes through /proc into
    any process's files, the test's output (``checker_stderr``) stays the checker's own."""
    program = (
        "import os\n"
        "def f():\n"
        "    wrote = []\n"
        "    for pid in os.listdir('/proc'):\n"
        "        if pid.isdigit() and int(pid) != os.getpid():\n"
        "            for fd in ('1', '2'):\n"
        "                try:\n"
        "                    with open(f'/proc/{pid}/fd/{fd}', 'a') as out:\n"
        "                        out.write('FORGED by the candidate')\n"
        "                    wrote.append(pid)\n"
        "                except OSError:\n"
        "                    pass\n"
        "    return wrote\n"
    )
    test = "def check(candidate):\n    assert candidate() == 'right', 'wrong'\n"
    check = check_function(program, prelude="", test=test, entry_point="f", timeout_s=5)
    assert not check.passed
    assert "a test assertion failed: wrong" in check.reason
    assert "FORGED" not in check.checker_stderr, check.checker_stderr
    assert "AssertionError: wrong" in check.checker_stderr  # the checker's own traceback
    end_spare_sandboxes()


def test_each_sandbox_has_a_process_limit_of_its_own_here() -> None:
    """On this project's machines (Linux, as root: CI) each sandbox gets a cgroup with
    ``pids.max``, not the weaker limit shared by every sandbox of the user."""
    if os.geteuid() != 0:
        pytest.skip("as an ordinary user the mechanism depends on the desktop (pids.py)")
    limit = sandbox.process_limit()
    assert limit.kind == "cgroup", limit.detail


_AS_USER = (
    "import logging\n"
    "logging.basicConfig(format='%(levelname)s %(name)s: %(message)s')\n"
    "from workbench.core.tasks.sandbox import process_limit, run_program\n"
    "bomb = (\n"
    "    'import os, time\\n'\n"
    "    'n = 0\\n'\n"
    "    'try:\\n'\n"
    "    '    while True:\\n'\n"
    "    '        if os.fork() == 0:\\n'\n"
    "    '            time.sleep(60)\\n'\n"
    "    '            os._exit(0)\\n'\n"
    "    '        n += 1\\n'\n"
    "    'except OSError as error:\\n'\n"
    "    '    print(n, error.errno)\\n'\n"
    ")\n"
    "print(process_limit().kind)\n"
    "print(run_program(bomb, timeout_s=10).stdout.strip())\n"
)


def _pids_hierarchy() -> Path | None:
    """Where this machine's ``pids`` cgroup controller can be used (v1 or v2), if anywhere."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, kind, options, *_ = line.split()
        if kind == "cgroup" and "pids" in options.split(","):
            return Path(where)
        if kind == "cgroup2" and "pids" in (Path(where) / "cgroup.controllers").read_text():
            return Path(where)
    return None


def test_an_ordinary_user_gets_its_own_limit_in_a_delegated_cgroup_else_a_logged_warning() -> None:
    """As uid 1000 (no systemd user session here): with ``WORKBENCH_SANDBOX_CGROUP`` naming
    a cgroup folder that user owns, each sandbox gets its own ``pids.max`` and a bomb stops
    there; without it the weaker shared limit is used and says so in a logged warning."""
    import platformdirs

    if os.geteuid() != 0 or detect_isolation().kind != "bubblewrap":
        pytest.skip("needs root (to hand a cgroup folder to uid 1000) and bubblewrap")
    hierarchy = _pids_hierarchy()
    assert hierarchy is not None, "no pids cgroup controller on this machine"
    tmp_path = Path(tempfile.mkdtemp(prefix="wb-delegated-"))  # uid 1000 can reach /tmp's
    code = tmp_path / "code"
    for package in (Path(sandbox.__file__).parents[3], Path(platformdirs.__file__).parent):
        shutil.copytree(package, code / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    for path in (tmp_path, *tmp_path.rglob("*")):
        path.chmod(0o755)
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    delegated = hierarchy / f"wb-test-delegated-{os.getpid()}"
    delegated.mkdir()
    runs = {}
    try:
        for path in (delegated, *delegated.iterdir()):
            os.chown(path, 1000, 1000)
        for named in (True, False):
            env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code), "HOME": str(tmp_path)}
            if named:
                env["WORKBENCH_SANDBOX_CGROUP"] = str(delegated)
            runs[named] = subprocess.run(
                ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", python]
                + ["-c", _AS_USER],
                capture_output=True,
                text=True,
                env=env,
                cwd="/",
                timeout=120,
            )
    finally:
        for child in delegated.iterdir():
            if child.is_dir():
                child.rmdir()
        delegated.rmdir()
        shutil.rmtree(tmp_path)
    kind, result = (runs[True].stdout + "\n").split("\n", 1)
    assert result.strip(), runs[True].stdout + runs[True].stderr
    assert kind == "cgroup", runs[True].stdout + runs[True].stderr
    forks, errno = map(int, result.split())
    assert errno == 11 and 10 < forks <= 64  # EAGAIN at the sandbox's own pids.max
    assert "WARNING" not in runs[True].stderr, runs[True].stderr
    kind = runs[False].stdout.split("\n", 1)[0]
    assert kind == "rlimit", runs[False].stdout + runs[False].stderr
    assert "WARNING workbench.core.tasks.sandbox.pids" in runs[False].stderr
    assert "a fork bomb in one grade can make another grade" in runs[False].stderr


def test_a_fork_bomb_does_not_fail_another_grade_running_at_the_same_time() -> None:
    """Two graders in parallel: the right answer's sandbox (a spare) starts first; the bomb
    is graded on another thread and holds its processes until its timeout; only once they
    are held does the right answer's grade run (and fork 8 children)."""
    import threading

    if detect_isolation().kind != "bubblewrap":
        pytest.skip("bubblewrap only")
    limit = sandbox.process_limit()
    if not limit.per_sandbox:
        pytest.skip(f"no per-sandbox process limit here: {limit.detail}")
    user = NOBODY if os.geteuid() == 0 else os.getuid()
    bomb = (
        "import os, time\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "    except OSError:\n"
        "        break\n"
        "def f(x):\n"
        "    time.sleep(60)\n"
    )
    forker = (
        "import os\n"
        "def f(x):\n"
        "    pids = []\n"
        "    for _ in range(8):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            os._exit(0)\n"
        "        pids.append(pid)\n"
        "    for pid in pids:\n"
        "        os.waitpid(pid, 0)\n"
        "    return x\n"
    )
    test = "def check(candidate):\n    assert candidate(3) == 3\n"
    end_spare_sandboxes()
    # this thread's spare for the right answer's limits, started before the bomb
    check_function("def f(x):\n    return x\n", prelude="", test=test, entry_point="f")
    held = _tasks_held_by_sandboxes(limit, user)
    bombed_result: list[object] = []

    def grade_the_bomb() -> None:
        try:
            bombed_result.append(
                check_function(bomb, prelude="", test=test, entry_point="f", timeout_s=10)
            )
        except Exception as error:  # shown in the assertion below, not lost in a thread
            bombed_result.append(error)

    bombed = threading.Thread(target=grade_the_bomb)
    bombed.start()
    try:
        most = 0
        while most < 40 and bombed.is_alive():
            most = max(most, held())
            time.sleep(0.05)
        assert bombed.is_alive(), f"the bomb ended holding at most {most}: {bombed_result}"
        check = check_function(forker, prelude="", test=test, entry_point="f")
    finally:
        bombed.join()
        end_spare_sandboxes()
    assert check.passed, check


def _tasks_held_by_sandboxes(limit: sandbox.ProcessLimit, user: int):
    """How many tasks the fullest of this process's sandboxes holds now: read from each
    sandbox's own control group where there is one; otherwise the sandboxes' user's tasks
    added since this call (a total that earlier tests' processes, still being reaped, skew)."""
    if limit.kind == "cgroup":
        base = Path(limit.base)

        def fullest() -> int:
            counts = [0]
            for group in base.glob(f"{os.getpid()}-*"):
                try:
                    counts.append(int((group / "pids.current").read_text()))
                except (OSError, ValueError):
                    continue  # a group removed while it was read
            return max(counts)

        return fullest
    before = box.count_tasks_of(user)
    return lambda: box.count_tasks_of(user) - before


def test_an_interpreter_folder_under_tmp_is_seen_inside_the_jail(tmp_path):
    """A packaged app unpacked under /tmp runs its own binary as the sandbox's interpreter:
    its folder is bound on top of the jail's private /tmp, not hidden by it (the bundle's
    self-test failed from /tmp before)."""
    import shutil
    import subprocess
    import tempfile

    from workbench.core.tasks.sandbox import linux

    bwrap = shutil.which("bwrap")
    assert bwrap, "bubblewrap is a test dependency (scripts/system-packages.sh)"
    folder = Path(tempfile.mkdtemp(prefix="bundle-", dir="/tmp"))
    try:
        (folder / "marker.txt").write_text("inside")
        folder.chmod(0o755)
        (folder / "marker.txt").chmod(0o644)
        python = linux.Python("/usr/bin/python3", (str(folder),))
        argv = linux.bwrap_argv(bwrap, python, files={})
        assert argv.index("--tmpfs") < argv.index(str(folder))
        done = subprocess.run(
            [*argv, "/bin/sh", "-c", f"cat {folder}/marker.txt"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout == "inside", done.stderr
    finally:
        shutil.rmtree(folder)
