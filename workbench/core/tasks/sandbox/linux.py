"""The bubblewrap command line for one sandboxed interpreter (Linux).

The sandbox sees only: ``/usr`` and the interpreter's own prefix (read-only), ``/w`` (the
run's harness and program, read-only, copied from memory), ``/proc`` of its own pid namespace, ``/dev/null``,
``/dev/zero``, ``/dev/urandom``, and a private tmpfs ``/tmp`` of ``TMP_BYTES`` (its only
writable place, also its home and working folder). It gets new user, pid, network, ipc,
uts and cgroup namespaces (no network at all, not even loopback of the host), no
capabilities, an empty environment but for a few fixed variables, and no way to make more
user namespaces. ``--die-with-parent`` and the pid namespace end every process it started
when the grade ends: when the namespace's first process dies the kernel kills the rest.

A root caller drops to ``nobody`` before starting bwrap (``setpriv``, on the command line:
no Python runs between fork and exec), so the sandbox's processes are ``nobody`` on the
host too (their own user in the namespace only maps to that) and ``RLIMIT_NPROC`` counts
them: the kernel does not apply that limit to root. That limit is set before bwrap too
(``prlimit``): the kernel counts a user's processes per user namespace and holds a new
namespace to the limit its creator had, so only a limit set before bwrap makes the user
namespace caps the sandbox against the user's processes on the host. The interpreter
inside sets every limit on itself as well, before it runs anything untrusted
(``limits.py``).
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import WorkFailed

NOBODY = 65534  # the uid and gid a root caller drops to before starting the sandbox

TMP_BYTES = 64 * 2**20
WORK_DIR = "/w"
ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


class NoPython(WorkFailed, RuntimeError):
    """No interpreter that the sandbox's user can run was found."""


@dataclass(frozen=True)
class Python:
    """The interpreter the sandbox runs and the folders it needs (bound read-only)."""

    executable: str
    prefixes: tuple[str, ...]


def sandbox_python() -> Python:
    """This process's own interpreter (its base installation: never a virtualenv's
    site-packages), or, when we run as root and ``nobody`` cannot reach it (pyenv under
    ``/root``), the system's interpreter of the same version. Looked up once per user and
    interpreter (every sandbox start asks)."""
    return _sandbox_python(os.geteuid(), sys.executable)


@functools.lru_cache(maxsize=4)
def _sandbox_python(euid: int, this_executable: str) -> Python:
    executable = os.path.realpath(this_executable)
    prefix = os.path.realpath(sys.base_prefix)
    if getattr(sys, "frozen", False):
        # a packaged app: its own binary is the interpreter (packaging/launcher.py), and
        # its folder holds the bundled stdlib
        prefix = os.path.dirname(executable)
    if euid != 0 or _others_can_run(executable, prefix):
        return Python(executable, _outside_usr(prefix))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for folder in ("/usr/bin", "/usr/local/bin", "/opt/bin"):
        candidate = os.path.join(folder, version)
        real = os.path.realpath(candidate)
        if os.path.isfile(real) and _others_can_run(real, os.path.dirname(os.path.dirname(real))):
            return Python(real, _outside_usr(os.path.dirname(os.path.dirname(real))))
    raise NoPython(
        f"as root the sandbox runs programs as nobody, who cannot run {executable} (a folder "
        f"above it is private) and no {version} that nobody can run was found in /usr/bin: "
        f"install the system's {version} or put the interpreter where everyone can read it"
    )


def _outside_usr(prefix: str) -> tuple[str, ...]:
    return () if prefix == "/usr" or prefix.startswith("/usr/") else (prefix,)


def _others_can_run(executable: str, prefix: str) -> bool:
    """True when any user can run ``executable`` and read ``prefix`` (every folder above
    them searchable by others)."""
    try:
        if not os.stat(executable).st_mode & stat.S_IXOTH:
            return False
        for path in (Path(executable).parent, Path(prefix)):
            for folder in (path, *path.parents):
                if not os.stat(folder).st_mode & stat.S_IXOTH:
                    return False
    except OSError:
        return False
    return True


class NoUtilLinux(WorkFailed, RuntimeError):
    """``prlimit`` or (as root) ``setpriv``, both of util-linux, is not installed."""


def which(name: str, path: str | None = None) -> str | None:
    """``shutil.which``, remembered per ``PATH`` (every sandbox start looks up bwrap and
    util-linux; a changed ``PATH`` looks again)."""
    return _which(name, path if path is not None else os.environ.get("PATH"))


@functools.lru_cache(maxsize=32)
def _which(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


def _util_linux(name: str) -> str:
    found = which(name) or which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        raise NoUtilLinux(
            f"the sandbox starts through {name}, which is not installed: install util-linux "
            "(Debian/Ubuntu: apt install util-linux)"
        )
    return found


def launch_prefix(processes: int | None) -> list[str]:
    """What runs before bwrap: ``prlimit`` capping the user's processes at ``processes``
    (none when ``None``), then for a root caller ``setpriv`` becoming ``nobody`` (no groups;
    setuid away from root clears every capability). Each execs the next: no fork."""
    prefix = []
    if processes is not None:
        prefix += [_util_linux("prlimit"), f"--nproc={processes}:{processes}", "--"]
    if os.geteuid() == 0:
        prefix += [
            _util_linux("setpriv"),
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--",
        ]
    return prefix


def bwrap_argv(
    bwrap: str, python: Python, *, files: dict[str, int], processes: int | None = None
) -> list[str]:
    """bwrap and its options (after ``launch_prefix``), up to (not including) the command to
    run inside; ``files`` maps names to open file descriptors whose content appears
    read-only in ``/w``; ``processes`` caps the user's processes (``RLIMIT_NPROC``)."""
    argv = [
        *launch_prefix(processes),
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--clearenv",
    ]
    for name, value in ENV.items():
        argv += ["--setenv", name, value]
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for device in ("/dev/null", "/dev/zero", "/dev/urandom"):
        argv += ["--dev-bind", device, device]
    argv += ["--proc", "/proc", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    # after the private /tmp, so that an interpreter that lives under /tmp (a packaged
    # app unpacked there) is bound on top of it instead of hidden by it
    for prefix in python.prefixes:
        argv += ["--ro-bind", prefix, prefix]
    for name, fd in files.items():
        argv += ["--perms", "0444", "--ro-bind-data", str(fd), f"{WORK_DIR}/{name}"]
    # bwrap builds the new root on an uncapped tmpfs the sandbox could fill: make it
    # read-only, so the capped /tmp is the only writable place
    argv += ["--remount-ro", "/", "--chdir", "/tmp"]
    return argv
