"""One sandboxed interpreter (``Box``) and the process work around it: the files that run
inside, resource limits, feeding stdin, reading capped output, waiting with a deadline,
and the sentence that says why a program stopped."""

from __future__ import annotations

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
from pathlib import Path

from workbench.core.tasks.sandbox import limits as rlimits
from workbench.core.tasks.sandbox import linux, macos, pids
from workbench.core.tasks.sandbox.isolation import (
    NOBODY,
    UNISOLATED_ENV,
    Isolation,
    detect_isolation,
    unisolated_allowed,
)
from workbench.core.tasks.sandbox.pids import process_limit
from workbench.core.tasks.sandbox.results import Limits, SandboxError, SandboxResult

_HERE = Path(__file__).resolve().parent
_INSIDE = ("harness.py", "checker.py", "plaindata.py", "limits.py")
MAX_FILE_BYTES = 16 * 2**20
EXTRA_PROCESSES = 64
VERDICT_BYTES = 64 * 1024


def pipe(opened: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    opened += (r, w)
    return r, w


def has_exited(proc: subprocess.Popen | None) -> bool:
    """True when ``proc`` has ended (without reaping it: its pid stays ours to kill by)."""
    if proc is None or proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def rlimits_script(limits: Limits, isolation: Isolation) -> str:
    """The limits spec a sandboxed interpreter applies to itself. Where each sandbox has a
    process limit of its own (``pids.py``) RLIMIT_NPROC is left as it is; else it counts
    every process of the sandbox's user (nobody, for a root caller) now, plus room."""
    if isolation.kind == "bubblewrap" and process_limit().per_sandbox:
        processes = -1
    else:
        user = NOBODY if os.geteuid() == 0 and isolation.kind == "bubblewrap" else os.getuid()
        processes = count_tasks_of(user) + EXTRA_PROCESSES
    return rlimits.spec(
        memory_bytes=limits.memory_mb * 2**20,
        cpu_s=int(limits.timeout_s) + 1,
        file_bytes=limits.file_bytes,
        processes=processes,
    )


def usable_isolation() -> Isolation:
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


class Box:
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

    def __enter__(self) -> Box:
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
            remove_tree(self.host)

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
        env = {} if kind == "bubblewrap" else plain_env(str(self.work))
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
        self, proc: subprocess.Popen, limits: Limits, *, timed_out: bool, start: float
    ) -> SandboxResult:
        """End every process of this box and report what the program did."""
        returncode = self.kill(proc)
        duration = time.monotonic() - start
        if self.isolation.kind == "bubblewrap" and returncode > 128:
            # bwrap reports a program killed by signal N as exit status 128 + N
            returncode = -(returncode - 128)
        stdout, out_cut = read_capped(self.out, limits.max_output_bytes)
        stderr, err_cut = read_capped(self.err, limits.max_output_bytes)
        return SandboxResult(
            returncode=returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            reason=reason_for(returncode, timed_out, limits.timeout_s, stderr, limits.memory_mb),
            truncated=out_cut or err_cut,
            isolation=self.isolation.kind,
        )


def plain_env(work: str) -> dict[str, str]:
    return {**linux.ENV, "HOME": work, "TMPDIR": work}


def feed(fd: int, data: bytes) -> None:
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


def read_until_eof(fd: int, deadline: float) -> tuple[bytes, bool]:
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
        if size < VERDICT_BYTES:
            chunks.append(chunk)
            size += len(chunk)


def wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
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


def count_tasks_of(uid: int) -> int:
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


def read_capped(file, limit: int) -> tuple[str, bool]:
    file.seek(0)
    data = file.read(limit + 1)
    cut = len(data) > limit
    return data[:limit].decode("utf-8", errors="replace"), cut


def remove_tree(path: Path) -> None:
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


def reason_for(
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
