"""Run untrusted Python programs (a worker's answer to a code task), isolated by the OS.

On Linux every program runs inside bubblewrap (``linux.py``): its own user, pid, network,
ipc and mount namespaces, the runtime read-only, a private size-capped ``/tmp`` as the
only writable place, an empty environment, no network, and every process it starts ends
with the grade. Resource limits (memory, CPU seconds, file size, open files, processes)
apply on top. On macOS a sandbox-exec profile (``macos.py``); elsewhere there is no
isolation and code runs only if the user opts in (``isolation.py``).

A HumanEval-style grade (``check_function``) runs two sandboxes: the candidate's program
in one, the task's test in the other (``checker.py``), which calls the candidate's function
through a pipe with plain data only (``plaindata.py``) and decides the verdict on its own
side. Nothing the candidate prints, exits with, or returns can forge that verdict.

The files run inside the sandbox (``harness.py``, ``checker.py``, ``plaindata.py``) use
only the stdlib: they start under ``python -I -S`` without this package.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.core.tasks.sandbox import linux, macos
from workbench.core.tasks.sandbox.isolation import (
    NOBODY,
    UNISOLATED_ENV,
    Isolation,
    detect_isolation,
    unisolated_allowed,
)

__all__ = [
    "UNISOLATED_ENV",
    "Check",
    "Isolation",
    "SandboxError",
    "SandboxResult",
    "check_function",
    "detect_isolation",
    "run_program",
    "unisolated_allowed",
]

_HERE = Path(__file__).resolve().parent
_INSIDE = ("harness.py", "checker.py", "plaindata.py")
_MAX_FILE_BYTES = 16 * 2**20
_OPEN_FILES = 64
_EXTRA_PROCESSES = 64
_VERDICT_BYTES = 64 * 1024


class SandboxError(RuntimeError):
    """The sandbox itself could not run (not the program's fault): no isolation here and
    no opt-in to run unisolated, or the interpreter could not be started."""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
            proc = box.start(["run", box.path("program.py")], limits, stdin=stdin_r)
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
    in one sandbox, ``prelude`` (the prompt's trusted code), ``test`` and
    ``check(entry_point)`` in another that calls the candidate's function through a pipe.
    The test passes only if the checker process says so."""
    isolation = _usable_isolation()
    limits = _Limits(timeout_s, memory_mb, _MAX_FILE_BYTES, max_output_bytes)
    task = json.dumps({"prelude": prelude, "test": test, "entry_point": entry_point})
    with (
        _Box(isolation, {"program.py": program}, workdir_parent) as candidate_box,
        _Box(isolation, {"task.json": task}, workdir_parent) as checker_box,
    ):
        to_candidate_r, to_candidate_w = os.pipe()
        from_candidate_r, from_candidate_w = os.pipe()
        verdict_r, verdict_w = os.pipe()
        start = time.monotonic()
        try:
            candidate = candidate_box.start(
                [
                    "serve",
                    candidate_box.path("program.py"),
                    entry_point,
                    str(to_candidate_r),
                    str(from_candidate_w),
                ],
                limits,
                pass_fds=(to_candidate_r, from_candidate_w),
            )
            checker = checker_box.start(
                [
                    checker_box.path("task.json"),
                    str(to_candidate_w),
                    str(from_candidate_r),
                    str(verdict_w),
                ],
                limits,
                pass_fds=(to_candidate_w, from_candidate_r, verdict_w),
                script="checker.py",
            )
        finally:
            for fd in (to_candidate_r, to_candidate_w, from_candidate_r, from_candidate_w):
                os.close(fd)
            os.close(verdict_w)
        try:
            verdict, timed_out = _read_until_eof(verdict_r, start + timeout_s)
        finally:
            os.close(verdict_r)
        if not timed_out:
            timed_out = not _wait_for_exit(checker, max(0.0, start + timeout_s - time.monotonic()))
            # the candidate's process reads the end of its requests and exits by itself
            _wait_for_exit(candidate, 0.2)
        checked = checker_box.finish(checker, limits, timed_out=timed_out, start=start)
        ran = candidate_box.finish(candidate, limits, timed_out=timed_out, start=start)
    status, _, why = verdict.decode("utf-8", errors="replace").partition("\n")
    passed = status == "pass" and checked.ok
    if timed_out:
        why = f"timed out after {timeout_s:g} s and was killed"
    elif not status:
        why = f"the test process ended without a verdict: {checked.reason}"
    elif not passed and not ran.ok and ran.returncode != 0 and status == "fail":
        why = f"{why} ({ran.reason})"
    return Check(passed, why, ran, checked.stderr, time.monotonic() - start)


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


class _Box:
    """One sandboxed interpreter: the host folder with what it runs, its output files,
    how to start it and how to end it."""

    def __init__(self, isolation: Isolation, files: dict[str, str], parent) -> None:
        self.isolation = isolation
        texts = {name: (_HERE / name).read_text(encoding="utf-8") for name in _INSIDE}
        texts.update(files)
        self.host: Path | None = None
        self.memfds: dict[str, int] = {}
        if isolation.kind == "bubblewrap":
            # handed to bwrap as in-memory files: nothing on disk, and nothing a root
            # caller's sandbox (running as nobody) would need permission to read
            self.inside = linux.WORK_DIR
            for name, text in texts.items():
                fd = os.memfd_create(f"wb-{name}", 0)
                os.write(fd, text.encode("utf-8", errors="surrogatepass"))
                os.lseek(fd, 0, os.SEEK_SET)
                self.memfds[name] = fd
        else:
            self.host = Path(tempfile.mkdtemp(prefix="wb-sandbox-", dir=parent))
            self.inside = str(self.host)
            for name, text in texts.items():
                (self.host / name).write_text(text, encoding="utf-8", errors="surrogatepass")
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
        if self.host is not None:
            _remove_tree(self.host)

    def path(self, name: str) -> str:
        return f"{self.inside}/{name}"

    def start(
        self,
        args: list[str],
        limits: _Limits,
        *,
        stdin: int | None = None,
        pass_fds: tuple[int, ...] = (),
        script: str = "harness.py",
    ) -> subprocess.Popen:
        as_root = os.geteuid() == 0
        kind = self.isolation.kind
        if kind == "bubblewrap":
            python = linux.sandbox_python()
            argv = linux.bwrap_argv(shutil.which("bwrap") or "bwrap", python, files=self.memfds)
            argv += [python.executable, "-I", "-S", self.path(script), *args]
            pass_fds = (*pass_fds, *self.memfds.values())
            cwd = "/"
        else:
            python = os.path.realpath(sys.executable)
            argv = [python, "-I", "-S", self.path(script), *args]
            if kind == "sandbox-exec":
                profile = macos.sandbox_profile(
                    python_prefix=os.path.realpath(sys.base_prefix),
                    harness_dir=str(self.host),
                    work_dir=str(self.work),
                )
                argv = ["sandbox-exec", "-p", profile, *argv]
            cwd = str(self.work)
        nproc = _count_tasks_of(NOBODY if as_root else os.getuid()) + _EXTRA_PROCESSES
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
                preexec_fn=_pre_exec(limits, nproc, drop_root=as_root and kind == "bubblewrap"),
            )
        except OSError as error:
            raise SandboxError(f"could not start the sandbox ({argv[0]}): {error}") from error

    def finish(
        self, proc: subprocess.Popen, limits: _Limits, *, timed_out: bool, start: float
    ) -> SandboxResult:
        """End every process of this box and report what the program did."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        returncode = proc.wait()
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


def _pre_exec(limits: _Limits, nproc: int, *, drop_root: bool):
    """The child's pre-exec hook: resource limits, then (root) become nobody."""
    import resource

    memory = limits.memory_mb * 2**20
    cpu = int(limits.timeout_s) + 1

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (_OPEN_FILES, _OPEN_FILES))
        # counted per real user: root is exempt, which is one reason root drops to nobody
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if drop_root:
            linux.drop_root()

    return apply


def _feed(fd: int, data: bytes) -> None:
    """Write the program's stdin from a thread (a pipe holds 64 KiB; the program may read
    late or never) and close it."""
    import threading

    def write() -> None:
        try:
            with os.fdopen(fd, "wb") as pipe:
                pipe.write(data)
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
    process (the owner of ``/proc/PID``), the thread count read only for ``uid``'s."""
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
if hasattr(signal, "SIGXCPU"):
    _SIGNAL_WHY[signal.SIGXCPU] = "used up its CPU time limit (SIGXCPU)"
if hasattr(signal, "SIGXFSZ"):
    _SIGNAL_WHY[signal.SIGXFSZ] = "wrote past the file size limit (SIGXFSZ)"


def _reason(returncode: int, timed_out: bool, timeout_s: float, stderr: str, memory_mb: int) -> str:
    if timed_out:
        return f"timed out after {timeout_s:g} s and was killed"
    if returncode == 0:
        return "exited normally"
    if returncode < 0:
        sig = -returncode
        why = _SIGNAL_WHY.get(sig)
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
