"""Run untrusted Python programs (a worker's answer to a code task), isolated by the OS.

On Linux every program runs inside bubblewrap (``linux.py``): its own user, pid, network,
ipc and mount namespaces, the runtime read-only, a private size-capped ``/tmp`` as the
only writable place, an empty environment, no network, and every process it starts ends
with the grade. Resource limits (memory, CPU seconds, file size, open files, processes)
apply on top. On macOS a sandbox-exec profile (``macos.py``); elsewhere there is no
isolation and code runs only if the user opts in (``isolation.py``).

A HumanEval-style grade (``check_function``) runs in one sandbox, in two processes: the
checker (``checker.py``), which runs the task's test, and the candidate's process, which
the checker forks before any of the grade arrives and which runs the program
(``harness.py``). The test calls the candidate's function through a pipe with plain data
only (``plaindata.py``) and the checker decides the verdict on its own side. The checker
is out of the candidate's reach although both run as the same user: it is not dumpable
(the kernel refuses the candidate ``ptrace``, its memory and its ``/proc`` files, fds
included: the sandbox has no capability), it blocks every signal it can (a ``kill`` can
end it or stop it: no verdict, a failure), it never reads the writable ``/tmp``, and its
verdict pipe, task and output are its own. Nothing the candidate prints, exits with, or
returns can forge that verdict. (One sandbox costs half the start-up of two, and
``tests/core/tasks/test_hostile.py`` has probes that trace, read and signal the checker.)

Speed: a grade's sandbox is started ahead of it and waits (interpreter started, limits
set, candidate's process forked) for its task on a pipe; each grading thread keeps one
such spare per set of limits, two while its grades come back to back (a grade found its
sandbox not ready yet), started while the previous grade runs (replaced, not used, once
older than ``_SPARE_MAX_AGE_S``), so a grade pays only for running the code. A sandbox
serves exactly one grade and the grade waits for it to end: nothing of one grade is alive
when the next one's program runs. ``end_spare_sandboxes()`` ends the spares (also done at
exit). The sandboxes start without Python code between fork and exec (no ``preexec_fn``:
resource limits are set by the interpreter inside, ``limits.py``; a root caller drops to
nobody through ``setpriv``), so the interpreter starts them with ``vfork``. What runs
inside goes in as bytecode (no compiling per sandbox) and imports as little as it can
(no ``typing``, ``signal`` or ``ctypes`` packages: a grade that needs them imports them).

The files run inside the sandbox (``harness.py``, ``checker.py``, ``plaindata.py``,
``limits.py``) use only the stdlib: they start under ``python -I -S`` without this package.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import marshal
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import WorkFailed
from workbench.core.tasks.sandbox import limits as rlimits
from workbench.core.tasks.sandbox import linux, macos, pids, plaindata
from workbench.core.tasks.sandbox.isolation import (
    NOBODY,
    UNISOLATED_ENV,
    Isolation,
    detect_isolation,
    unisolated_allowed,
)
from workbench.core.tasks.sandbox.pids import ProcessLimit, process_limit

__all__ = [
    "UNISOLATED_ENV",
    "Check",
    "Isolation",
    "ProcessLimit",
    "SandboxError",
    "SandboxResult",
    "check_function",
    "detect_isolation",
    "end_spare_sandboxes",
    "process_limit",
    "run_program",
    "unisolated_allowed",
]

_HERE = Path(__file__).resolve().parent
_INSIDE = ("harness.py", "checker.py", "plaindata.py", "limits.py")
_MAX_FILE_BYTES = 16 * 2**20
_EXTRA_PROCESSES = 64
_VERDICT_BYTES = 64 * 1024
_READY = b"ready\n"  # what the checker writes on its verdict pipe once it has started
# a spare older than this is replaced rather than used: its process limit was counted
# when it started, and the user's process count may have changed since
_SPARE_MAX_AGE_S = 30.0


class SandboxError(WorkFailed, RuntimeError):
    """The sandbox itself could not run (not the program's fault): no isolation here and
    no opt-in to run unisolated, or the interpreter could not be started."""


@dataclass(frozen=True, kw_only=True)
class SandboxResult:
    """What a program did: its exit status, its (capped) output and why it stopped.

    ``returncode`` is negative when a signal killed the program (``-9`` after a timeout).
    ``reason`` is a short sentence for a person reading a grade; ``isolation`` names the
    sandbox it ran in (``bubblewrap``, ``sandbox-exec`` or ``none``).
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    reason: str
    truncated: bool = False
    isolation: str = ""

    @property
    def ok(self) -> bool:
        """True when the program ran to the end and exited with status 0."""
        return self.returncode == 0 and not self.timed_out

    @property
    def killed(self) -> bool:
        """True when a signal ended the program (timeout, CPU limit, out of memory)."""
        return self.returncode < 0


@dataclass(frozen=True, kw_only=True)
class Check:
    """The verdict of a HumanEval-style test: ``passed`` is decided by the checker process
    alone; ``reason`` says why; ``candidate`` is what the candidate's process did (its
    output, for a person); ``checker_stderr`` is the test's traceback, if any."""

    passed: bool
    reason: str
    candidate: SandboxResult
    checker_stderr: str
    duration_s: float


@dataclass(frozen=True)
class _Limits:
    timeout_s: float
    memory_mb: int
    file_bytes: int
    max_output_bytes: int


def run_program(
    source: str,
    *,
    stdin: str = "",
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    max_output_bytes: int = 1_000_000,
    max_file_bytes: int = _MAX_FILE_BYTES,
    workdir_parent: str | Path | None = None,
) -> SandboxResult:
    """Run ``source`` as a Python program (as ``__main__``) in the sandbox and report
    what it did.

    ``stdin`` is fed to the program through a pipe; ``stdout`` and ``stderr`` come back
    as text (raw: pass them through ``workbench.core.printable`` before showing them),
    each capped at ``max_output_bytes``. Files the program writes are capped at
    ``max(max_file_bytes, max_output_bytes)`` bytes each. ``workdir_parent`` is where the
    host-side folder holding the program is made (default: the system temp folder).

    Never raises because of what the program does. Raises ``SandboxError`` when the
    sandbox cannot run here, or when there is no isolation and the user did not opt in.
    """
    isolation = _usable_isolation()
    limits = _Limits(timeout_s, memory_mb, max(max_file_bytes, max_output_bytes), max_output_bytes)
    with _Box(isolation, {"program.py": source}, workdir_parent) as box:
        stdin_r, stdin_w = os.pipe()
        try:
            proc = box.start(
                ["run", box.path("program.py")], _rlimits(limits, box.isolation), stdin=stdin_r
            )
        finally:
            os.close(stdin_r)
        _feed(stdin_w, stdin.encode("utf-8", errors="surrogatepass"))
        start = time.monotonic()
        exited = _wait_for_exit(proc, timeout_s)
        return box.finish(proc, limits, timed_out=not exited, start=start)


def check_function(
    program: str,
    *,
    prelude: str,
    test: str,
    entry_point: str,
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    max_output_bytes: int = 100_000,
    workdir_parent: str | Path | None = None,
) -> Check:
    """Run a HumanEval-style test: ``program`` (the candidate, defining ``entry_point``)
    in one process, ``prelude`` (the prompt's trusted code), ``test`` and
    ``check(entry_point)`` in another (the checker, in the same sandbox, out of the
    candidate's reach) that calls the candidate's function through a pipe. The test
    passes only if the checker process says so.

    Uses this thread's oldest sandbox started ahead for these limits if there is one
    (else starts one now), and starts the next ones while this grade runs. A sandbox that
    could not start (before it took its task: e.g. the user's process limit reached by
    others meanwhile) is replaced once by a fresh one."""
    isolation = _usable_isolation()
    limits = _Limits(timeout_s, memory_mb, _MAX_FILE_BYTES, max_output_bytes)
    key = (isolation, limits, str(workdir_parent) if workdir_parent is not None else None)
    box, wanted = _take_spare(key)
    if box is None:
        box = _GradeBox(isolation, limits, workdir_parent)
    try:
        box.give(program, prelude, test, entry_point)
        # the next grades' sandboxes start while this one runs (on another core, if any)
        _keep_spares(key, lambda: _GradeBox(isolation, limits, workdir_parent), wanted)
        check = box.verdict()
    finally:
        box.close()
    if not box.failed_to_start:
        return check
    box = _GradeBox(isolation, limits, workdir_parent)
    try:
        box.give(program, prelude, test, entry_point)
        return box.verdict()
    finally:
        box.close()


def end_spare_sandboxes() -> None:
    """End every sandbox started ahead of a grade (each thread's spares). The next
    grade starts its own again. Also run at exit."""
    with _SPARES_LOCK:
        boxes = [box for waiting in _SPARES.values() for box in waiting]
        _SPARES.clear()
    for box in boxes:
        box.close()


class _GradeBox:
    """One sandbox for one grade, started ahead of it: the checker's interpreter, which has
    already forked the candidate's process (``checker.py``); each waits for its task on a
    pipe of its own. The candidate's stdout and stderr go to files of their own, and so do
    the checker's: not bwrap's, whose process in the sandbox (its pid 1, which the candidate
    could reach) holds them."""

    def __init__(self, isolation: Isolation, limits: _Limits, parent) -> None:
        self.limits = limits
        self.owner = (os.getpid(), threading.current_thread())
        self.started = time.monotonic()
        self.box = _Box(isolation, {}, parent, script="checker.py")
        self.candidate_out = tempfile.TemporaryFile(dir=parent)
        self.candidate_err = tempfile.TemporaryFile(dir=parent)
        self.checker_out = tempfile.TemporaryFile(dir=parent)
        self.checker_err = tempfile.TemporaryFile(dir=parent)
        self.checker: subprocess.Popen | None = None
        self.task_fds: list[int] = []
        self.verdict_r = -1
        self.given = 0.0
        self.failed_to_start = False
        ends: list[int] = []
        try:
            checker_task_r, checker_task_w = _pipe(ends)
            candidate_task_r, candidate_task_w = _pipe(ends)
            self.verdict_r, verdict_w = _pipe(ends)
            self.task_fds = [candidate_task_w, checker_task_w]
            fds = (
                checker_task_r,
                candidate_task_r,
                verdict_w,
                self.candidate_out.fileno(),
                self.candidate_err.fileno(),
                self.checker_out.fileno(),
                self.checker_err.fileno(),
            )
            self.checker = self.box.start(
                list(map(str, fds)), _rlimits(limits, isolation), pass_fds=fds
            )
        except BaseException:
            for fd in ends:
                os.close(fd)
            self.task_fds, self.verdict_r = [], -1
            self.close()
            raise
        # the parent keeps only the task pipes' write ends and the verdict's read end
        for fd in ends:
            if fd not in (*self.task_fds, self.verdict_r):
                os.close(fd)

    def alive(self) -> bool:
        """True when the sandbox still waits for its task in this process and thread
        (after a fork, or once the thread that started it has ended, it is not ours to
        use: bwrap dies with the thread that started it), started less than
        ``_SPARE_MAX_AGE_S`` ago."""
        pid, thread = self.owner
        return (
            pid == os.getpid()
            and thread.is_alive()
            and time.monotonic() - self.started < _SPARE_MAX_AGE_S
            and not _has_exited(self.checker)
        )

    def ready(self) -> bool:
        """True once the checker has started (said ``ready`` on its verdict pipe, which
        stays unread until the verdict)."""
        try:
            readable, _, _ = select.select([self.verdict_r], [], [], 0)
        except (OSError, ValueError):
            return False
        return bool(readable)

    def give(self, program: str, prelude: str, test: str, entry_point: str) -> None:
        """Hand the candidate and the checker their tasks; the grade's time starts."""
        assert self.checker is not None
        self.given = time.monotonic()
        candidate_fd, checker_fd = self.task_fds
        self.task_fds = []
        _feed(candidate_fd, plaindata.encode([program, entry_point]).encode())
        _feed(checker_fd, plaindata.encode([prelude, test, entry_point]).encode())

    def verdict(self) -> Check:
        """Wait for the checker's verdict (at most the timeout after ``give``)."""
        assert self.checker is not None
        limits = self.limits
        timeout_s = limits.timeout_s
        start = self.given
        verdict, timed_out = _read_until_eof(self.verdict_r, start + timeout_s)
        # the checker says "ready" once the candidate's process is forked, before it reads
        # its task: without it (and before the timeout), the sandbox failed to start and
        # the grade did not run
        ready = verdict.startswith(_READY)
        self.failed_to_start = not ready and not timed_out
        verdict = verdict[len(_READY) :] if ready else b""
        status, _, rest = verdict.decode("utf-8", errors="replace").partition("\n")
        exit_code, _, why = rest.partition("\n")
        if status not in ("pass", "fail"):
            status = ""
        if not timed_out:
            # the checker exits right after its verdict; when bwrap has exited too, every
            # process of the sandbox has ended (its pid namespace is empty): nothing of
            # this grade is alive once it returns
            timed_out = not _wait_for_exit(
                self.checker, max(0.0, start + timeout_s - time.monotonic())
            )
        checked = self.box.finish(self.checker, limits, timed_out=timed_out, start=start)
        self.checker = None
        ran = self._candidate(exit_code, checked, timed_out)
        passed = status == "pass" and checked.ok
        stderr, _ = _read_capped(self.checker_err, limits.max_output_bytes)
        if timed_out:
            why = f"timed out after {timeout_s:g} s and was killed"
        elif not ready:
            # bwrap's own messages (nothing of the grade ran yet to write there)
            why = f"the sandbox could not start: {checked.reason}: {checked.stderr[-300:]}"
        elif not status:
            why = _reason(checked.returncode, False, timeout_s, stderr, limits.memory_mb)
            why = f"the test process ended without a verdict: {why}"
        elif not passed and not ran.ok and ran.returncode != 0 and status == "fail":
            why = f"{why} ({ran.reason})"
        return Check(
            passed=passed,
            reason=why,
            candidate=ran,
            checker_stderr=stderr,
            duration_s=time.monotonic() - start,
        )

    def _candidate(self, exit_code: str, checked: SandboxResult, timed_out: bool) -> SandboxResult:
        """What the candidate's process did: its exit status as the checker saw it (else
        that of the sandbox, which ended it) and its own output."""
        limits = self.limits
        try:
            returncode = int(exit_code)
        except ValueError:
            # not ended when the checker gave its verdict, or the checker did not get that
            # far: it ended with the sandbox
            returncode = checked.returncode if checked.returncode < 0 else -signal.SIGKILL
        stdout, out_cut = _read_capped(self.candidate_out, limits.max_output_bytes)
        stderr, err_cut = _read_capped(self.candidate_err, limits.max_output_bytes)
        return SandboxResult(
            returncode=returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=checked.duration_s,
            reason=_reason(returncode, timed_out, limits.timeout_s, stderr, limits.memory_mb),
            truncated=out_cut or err_cut,
            isolation=checked.isolation,
        )

    def close(self) -> None:
        """Kill the sandbox (if still running) and release everything it holds."""
        if self.checker is not None:
            self.box.kill(self.checker)
        self.checker = None
        for fd in (*self.task_fds, self.verdict_r):
            if fd >= 0:
                os.close(fd)
        self.task_fds, self.verdict_r = [], -1
        self.box.__exit__(None, None, None)
        for file in (self.candidate_out, self.candidate_err, self.checker_out, self.checker_err):
            file.close()


_SPARES: dict[tuple, list[_GradeBox]] = {}  # (thread, key) -> spares, the oldest first
_SPARES_LOCK = threading.Lock()
_ATEXIT: list[bool] = []


def _take_spare(key: tuple) -> tuple[_GradeBox | None, int]:
    """This thread's oldest spare for ``key`` that is still waiting, and how many spares
    this thread should have started ahead for its next grades: two while grades come back
    to back (the one taken was not ready yet: its start is what this grade waits for),
    else one. Spares of ended threads are ended on the way."""
    with _SPARES_LOCK:
        gone = [s for s, boxes in _SPARES.items() if not boxes or not boxes[0].owner[1].is_alive()]
        ended = [box for slot in gone for box in _SPARES.pop(slot)]
        waiting = _SPARES.get((threading.get_ident(), key), [])
        found = waiting.pop(0) if waiting else None
    for box in ended:
        box.close()
    if found is None:
        return None, 1
    if not found.alive():
        found.close()
        return _take_spare(key)[0], 1
    return found, 1 if found.ready() else 2


def _forget_spares_in_child() -> None:
    """After a fork, the spares are the parent's: close the child's copies of their task
    pipes (else the parent's sandboxes would never see the end of their task) and forget
    them, killing nothing."""
    global _SPARES_LOCK
    _SPARES_LOCK = threading.Lock()
    for boxes in _SPARES.values():
        for box in boxes:
            for fd in (*box.task_fds, box.verdict_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
    _SPARES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spares_in_child)


def _keep_spares(key: tuple, start, wanted: int) -> None:
    """Start spares for this thread and ``key`` until it has ``wanted`` (at most two, so a
    thread that graded back to back keeps two until they are used or too old)."""
    slot = (threading.get_ident(), key)
    with _SPARES_LOCK:
        if not _ATEXIT:
            atexit.register(end_spare_sandboxes)
            _ATEXIT.append(True)
        missing = wanted - len(_SPARES.setdefault(slot, []))
    for _ in range(missing):
        try:
            box = start()
        except SandboxError:
            return  # the next grade starts its own and reports the error
        with _SPARES_LOCK:
            _SPARES.setdefault(slot, []).append(box)


def _pipe(opened: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    opened += (r, w)
    return r, w


def _has_exited(proc: subprocess.Popen | None) -> bool:
    """True when ``proc`` has ended (without reaping it: its pid stays ours to kill by)."""
    if proc is None or proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _rlimits(limits: _Limits, isolation: Isolation) -> str:
    """The limits spec a sandboxed interpreter applies to itself. Where each sandbox has a
    process limit of its own (``pids.py``) RLIMIT_NPROC is left as it is; else it counts
    every process of the sandbox's user (nobody, for a root caller) now, plus room."""
    if isolation.kind == "bubblewrap" and process_limit().per_sandbox:
        processes = -1
    else:
        user = NOBODY if os.geteuid() == 0 and isolation.kind == "bubblewrap" else os.getuid()
        processes = _count_tasks_of(user) + _EXTRA_PROCESSES
    return rlimits.spec(
        memory_bytes=limits.memory_mb * 2**20,
        cpu_s=int(limits.timeout_s) + 1,
        file_bytes=limits.file_bytes,
        processes=processes,
    )


def _usable_isolation() -> Isolation:
    isolation = detect_isolation()
    if isolation.isolated:
        return isolation
    if not unisolated_allowed():
        raise SandboxError(
            f"code tasks are graded only in a sandbox, and there is none here: "
            f"{isolation.detail}. To run untrusted code on this machine WITHOUT isolation "
            f"anyway, set {UNISOLATED_ENV}=1 (or pass --allow-unisolated)"
        )
    if os.name != "posix":
        raise SandboxError(
            "running code unisolated needs process groups and resource limits (Linux or "
            "macOS); grade code tasks there, for example in WSL"
        )
    return isolation


def _inside_files(executable: str, script: str) -> dict[str, bytes]:
    """The files a sandbox running ``script`` needs (``checker.py`` imports the others, and
    ``harness.py`` does not need the checker), as bytecode the interpreter ``executable``
    loads without compiling them (it would pay ~6 ms of CPU per sandbox for that): sourceless
    ``.pyc`` files, when that interpreter reads this one's bytecode. Else the sources."""
    compiled = _same_bytecode(executable)
    names = _INSIDE if script == "checker.py" else tuple(n for n in _INSIDE if n != "checker.py")
    return {_inside_name(name, compiled): _inside_file(name, compiled) for name in names}


def _inside_name(name: str, compiled: bool) -> str:
    return name[: -len(".py")] + ".pyc" if compiled else name


@functools.lru_cache(maxsize=16)
def _inside_file(name: str, compiled: bool) -> bytes:
    source = (_HERE / name).read_bytes()
    if not compiled:
        return source
    code = compile(source, name, "exec", dont_inherit=True, optimize=0)
    # a .pyc header (magic, flags, 8 unused bytes: nothing to check a sourceless file against)
    return importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


@functools.lru_cache(maxsize=4)
def _same_bytecode(executable: str) -> bool:
    """True when ``executable`` loads this interpreter's bytecode (the same one, or the
    system's interpreter of the same version: asked once)."""
    if executable == os.path.realpath(sys.executable):
        return True
    try:
        done = subprocess.run(
            [
                executable,
                "-I",
                "-S",
                "-c",
                "import sys; sys.stdout.buffer.write("
                "sys.modules['_frozen_importlib_external'].MAGIC_NUMBER)",
            ],
            capture_output=True,
            timeout=30,
            env={},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout == importlib.util.MAGIC_NUMBER


class _Box:
    """One sandboxed interpreter: the host folder with what it runs, its output files,
    how to start it and how to end it."""

    def __init__(
        self,
        isolation: Isolation,
        files: dict[str, str],
        parent,
        script: str = "harness.py",
    ) -> None:
        self.isolation = isolation
        self.python: linux.Python | None = None
        if isolation.kind == "bubblewrap":
            self.python = linux.sandbox_python()
            executable = self.python.executable
        else:
            executable = os.path.realpath(sys.executable)
        inside = _inside_files(executable, script)
        self.script = _inside_name(script, _inside_name(script, True) in inside)
        data = {
            **inside,
            **{n: t.encode("utf-8", errors="surrogatepass") for n, t in files.items()},
        }
        self.host: Path | None = None
        self.group: pids.Group | None = None
        self.memfds: dict[str, int] = {}
        if isolation.kind == "bubblewrap":
            # handed to bwrap as in-memory files: nothing on disk, and nothing a root
            # caller's sandbox (running as nobody) would need permission to read
            self.inside = linux.WORK_DIR
            for name, content in data.items():
                fd = os.memfd_create(f"wb-{name}", 0)
                os.write(fd, content)
                os.lseek(fd, 0, os.SEEK_SET)
                self.memfds[name] = fd
        else:
            self.host = Path(tempfile.mkdtemp(prefix="wb-sandbox-", dir=parent))
            self.inside = str(self.host)
            for name, content in data.items():
                (self.host / name).write_bytes(content)
            self.work = self.host / "work"  # the program's writable folder
            self.work.mkdir()
        self.out = tempfile.TemporaryFile(dir=parent)
        self.err = tempfile.TemporaryFile(dir=parent)

    def __enter__(self) -> _Box:
        return self

    def __exit__(self, *exc_info) -> None:
        self.out.close()
        self.err.close()
        for fd in self.memfds.values():
            os.close(fd)
        self.memfds = {}
        if self.group is not None:
            self.group.close()
            self.group = None
        if self.host is not None:
            _remove_tree(self.host)

    def path(self, name: str) -> str:
        return f"{self.inside}/{name}"

    def start(
        self,
        args: list[str],
        spec: str,
        *,
        stdin: int | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> subprocess.Popen:
        """Start this box's script (``harness.py`` or ``checker.py``) with the limits
        ``spec`` (which it applies to itself first) and ``args``. No Python runs in the child before exec (no ``preexec_fn``): the
        interpreter starts it with ``vfork``; on Linux the sandbox joins a process group of
        its own first (``pids.py``: a cgroup through ``sh``, or a systemd scope; else
        ``prlimit`` caps the user's processes) and a root caller's sandbox starts as nobody
        through ``setpriv`` (``linux.launch_prefix``)."""
        kind = self.isolation.kind
        if kind == "bubblewrap":
            python = self.python
            assert python is not None
            processes = rlimits.processes(spec)
            try:
                argv = linux.bwrap_argv(
                    linux.which("bwrap") or "bwrap",
                    python,
                    files=self.memfds,
                    processes=processes if processes >= 0 else None,
                )
                limit = process_limit()
                if limit.per_sandbox:
                    # its own cgroup (or systemd scope), joined before anything else runs
                    self.group = pids.Group(limit)
                    argv = [*self.group.prefix, *argv]
            except linux.NoUtilLinux as error:
                raise SandboxError(str(error)) from error
            except OSError as error:
                raise SandboxError(
                    f"could not make the sandbox's process group: {error}"
                ) from error
            argv += [python.executable, "-I", "-S", self.path(self.script), spec, *args]
            pass_fds = (*pass_fds, *self.memfds.values())
            cwd = "/"
        else:
            host_python = os.path.realpath(sys.executable)
            argv = [host_python, "-I", "-S", self.path(self.script), spec, *args]
            if kind == "sandbox-exec":
                profile = macos.sandbox_profile(
                    python_prefix=os.path.realpath(sys.base_prefix),
                    harness_dir=str(self.host),
                    work_dir=str(self.work),
                )
                argv = ["sandbox-exec", "-p", profile, *argv]
            cwd = str(self.work)
        env = {} if kind == "bubblewrap" else _plain_env(str(self.work))
        try:
            return subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                stdout=self.out,
                stderr=self.err,
                pass_fds=pass_fds,
                start_new_session=True,
            )
        except OSError as error:
            raise SandboxError(f"could not start the sandbox ({argv[0]}): {error}") from error

    def kill(self, proc: subprocess.Popen) -> int:
        """End every process of this box; the exit status of its first process."""
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return proc.wait()

    def finish(
        self, proc: subprocess.Popen, limits: _Limits, *, timed_out: bool, start: float
    ) -> SandboxResult:
        """End every process of this box and report what the program did."""
        returncode = self.kill(proc)
        duration = time.monotonic() - start
        if self.isolation.kind == "bubblewrap" and returncode > 128:
            # bwrap reports a program killed by signal N as exit status 128 + N
            returncode = -(returncode - 128)
        stdout, out_cut = _read_capped(self.out, limits.max_output_bytes)
        stderr, err_cut = _read_capped(self.err, limits.max_output_bytes)
        return SandboxResult(
            returncode=returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            reason=_reason(returncode, timed_out, limits.timeout_s, stderr, limits.memory_mb),
            truncated=out_cut or err_cut,
            isolation=self.isolation.kind,
        )


def _plain_env(work: str) -> dict[str, str]:
    return {**linux.ENV, "HOME": work, "TMPDIR": work}


def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` to a pipe and close it: at once what the pipe holds (a task usually
    fits), the rest from a thread (the program may read late or never)."""
    try:
        os.set_blocking(fd, False)
        written = os.write(fd, data) if data else 0
    except BlockingIOError:
        written = 0
    except OSError:
        os.close(fd)  # the program ended without reading it
        return
    if written == len(data):
        os.close(fd)
        return
    os.set_blocking(fd, True)
    rest = data[written:]

    def write() -> None:
        try:
            with os.fdopen(fd, "wb") as pipe:
                pipe.write(rest)
        except OSError:
            pass  # the program ended without reading all of it

    threading.Thread(target=write, daemon=True).start()


def _read_until_eof(fd: int, deadline: float) -> tuple[bytes, bool]:
    """What the checker writes to its verdict pipe; (data, timed_out)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), False
        if size < _VERDICT_BYTES:
            chunks.append(chunk)
            size += len(chunk)


def _wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until the child exits without reaping it (its pid stays ours to kill by);
    False on timeout."""
    deadline = time.monotonic() + timeout_s
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = None
        if pidfd is not None:
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    if poller.poll(max(1, int(remaining * 1000))):
                        return True
            finally:
                os.close(pidfd)
    delay = 0.001
    while True:
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.02)


def _count_tasks_of(uid: int) -> int:
    """Threads and processes of ``uid`` now (what RLIMIT_NPROC counts). One ``stat`` per
    process (the owner of ``/proc/PID``), the thread count read only for ``uid``'s.
    Zombies count: the kernel counts a process until it is reaped, and the ended sandboxes'
    processes are reaped by the system's init, a little later (leaving them out made the
    limit too tight and failed right answers with EAGAIN while they were not reaped yet)."""
    if not os.path.isdir("/proc"):
        return 0
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        count += int(fields[17]) if len(fields) > 17 else 1  # num_threads
    return count


def _read_capped(file, limit: int) -> tuple[str, bool]:
    file.seek(0)
    data = file.read(limit + 1)
    cut = len(data) > limit
    return data[:limit].decode("utf-8", errors="replace"), cut


def _remove_tree(path: Path) -> None:
    """Remove the run's host folder, even if an unisolated program made parts of it
    read-only (anyone but root first gives every folder back its owner rights)."""
    try:
        shutil.rmtree(path)
        return
    except OSError:
        pass
    for folder, _, _ in os.walk(path):
        try:
            os.chmod(folder, 0o700)
        except OSError:
            continue
    shutil.rmtree(path, ignore_errors=True)


_SIGNAL_WHY = {
    signal.SIGKILL: "was killed (SIGKILL: CPU time or memory limit)",
    signal.SIGSEGV: "crashed (SIGSEGV)",
    signal.SIGABRT: "aborted (SIGABRT)",
}
_SIGNAL_NUMBERS = frozenset(int(s) for s in signal.Signals)
if hasattr(signal, "SIGXCPU"):
    _SIGNAL_WHY[signal.SIGXCPU] = "used up its CPU time limit (SIGXCPU)"
if hasattr(signal, "SIGXFSZ"):
    _SIGNAL_WHY[signal.SIGXFSZ] = "wrote past the file size limit (SIGXFSZ)"


def _reason(
    returncode: int | None, timed_out: bool, timeout_s: float, stderr: str, memory_mb: int
) -> str:
    if timed_out or returncode is None:  # None: it had not ended by the grade's deadline
        return f"timed out after {timeout_s:g} s and was killed"
    if returncode == 0:
        return "exited normally"
    if returncode < 0:
        sig = -returncode
        why = _SIGNAL_WHY.get(signal.Signals(sig)) if sig in _SIGNAL_NUMBERS else None
        if why is None:
            try:
                why = f"was killed by {signal.Signals(sig).name}"
            except ValueError:
                why = f"was killed by signal {sig}"
        return f"the program {why}"
    tail = stderr[-2000:]
    if "MemoryError" in tail:
        return f"the program ran out of memory (limit {memory_mb} MB)"
    if "File too large" in tail or "No space left on device" in tail:
        return "the program wrote past the file size or disk limit"
    return f"the program exited with status {returncode}"
