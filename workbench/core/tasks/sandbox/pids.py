"""The process limit of one sandbox: how many processes (and threads) a grade may start.

A fork bomb in graded code stops at ``SANDBOX_PROCESSES`` tasks of its own sandbox, and
nothing else on the machine notices: not another grade running at the same time, not the
user's other programs. Which mechanism gives that depends on the machine; ``process_limit``
picks the first that works here (probed once per process, by really starting one):

1. ``cgroup``: a control group of the ``pids`` controller per sandbox, with ``pids.max``
   set, made directly in the cgroup file system where this process may: as root (CI, a
   server) on cgroup v2 or on v1's ``pids`` hierarchy, or in a delegated folder named by
   ``WORKBENCH_SANDBOX_CGROUP`` (cgroup v2, its ``cgroup.subtree_control`` allowing
   ``pids``). Each sandbox's first process joins its group by writing its own pid to
   ``cgroup.procs`` (``/bin/sh``, then ``exec``: no Python runs between fork and exec) and
   everything it starts stays in it; the group is removed once the sandbox has ended.
2. ``systemd``: a transient systemd user scope per sandbox, ``systemd-run --user --scope
   -p TasksMax=N`` (a common Linux desktop, as an ordinary user: the user's systemd
   manager owns a delegated cgroup v2 subtree). Costs a D-Bus round trip per sandbox,
   paid while the sandbox is started ahead of its grade. Untested on this project's CI
   (no systemd there), like macOS.
3. ``rlimit`` (the weaker fallback, logged as a warning once): ``RLIMIT_NPROC`` of the
   sandbox's user, set to the processes that user runs now plus ``SANDBOX_PROCESSES``. A
   fork bomb is still capped, but every sandbox of the user (all run as ``nobody`` for a
   root caller) counts against one shared total: a bomb can take the processes another
   grade running at the same time counted on, and that grade's right answer may fail.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

SANDBOX_PROCESSES = 64  # tasks of one sandbox: bwrap's two, the checker, the candidate, ...
CGROUP_ENV = "WORKBENCH_SANDBOX_CGROUP"
_GROUP = "workbench-sandbox"
_JOIN = 'echo $$ > "$0" && exec "$@"'  # sh: join the group (its cgroup.procs), become argv

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProcessLimit:
    """How this machine caps a sandbox's processes: ``kind`` is ``cgroup``, ``systemd`` or
    ``rlimit``; ``detail`` says so in a sentence (with the guarantee's limits for
    ``rlimit``); ``base`` is the cgroup folder sandboxes' groups are made in (``cgroup``)."""

    kind: str
    detail: str
    base: str = ""

    @property
    def per_sandbox(self) -> bool:
        """True when each sandbox has a limit of its own (a bomb fails no other grade)."""
        return self.kind != "rlimit"


class Group:
    """One sandbox's process limit: what to run before the sandbox's command, and the
    clean-up once it has ended (``close``)."""

    _names = itertools.count()

    def __init__(self, limit: ProcessLimit, processes: int = SANDBOX_PROCESSES) -> None:
        self.limit = limit
        self.path: Path | None = None
        self.prefix: list[str] = []
        if limit.kind == "cgroup":
            _remove_left_over()
            self.path = Path(limit.base) / f"{os.getpid()}-{next(Group._names)}"
            self.path.mkdir()
            try:
                (self.path / "pids.max").write_text(f"{processes}\n")
            except OSError:
                self.close()
                raise
            self.prefix = [_sh(), "-c", _JOIN, str(self.path / "cgroup.procs")]
        elif limit.kind == "systemd":
            self.prefix = [
                _systemd_run(),
                "--user",
                "--scope",
                "--quiet",
                "--collect",
                "-p",
                f"TasksMax={processes}",
                "--",
            ]

    def close(self) -> None:
        """Remove the group (its processes have ended; the kernel may release them a moment
        later: then the next sandbox's start removes it, so the grade does not wait)."""
        if self.path is not None and not _rmdir(self.path, tries=1):
            with _LEFT_LOCK:
                _LEFT_OVER.append(self.path)
        self.path = None


_LEFT_OVER: list[Path] = []
_LEFT_LOCK = threading.Lock()


def _remove_own_at_exit(base: Path) -> None:
    """Remove this process's groups still there (their sandboxes have ended: a spare's
    ends with the thread that started it, and with this process)."""
    with _LEFT_LOCK:
        _LEFT_OVER.clear()
    try:
        own = [p for p in base.iterdir() if p.name.startswith(f"{os.getpid()}-")]
    except OSError:
        return
    for path in own:
        _rmdir(path, tries=40)


def _sweep(base: Path) -> None:
    """Remove the empty groups of workbench processes that have ended (left when the kernel
    released a sandbox's processes only after that process's last try)."""
    try:
        children = list(base.iterdir())
    except OSError:
        return
    for child in children:
        owner = child.name.split("-", 1)[0]
        if child.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _rmdir(child, tries=1)


def _remove_left_over() -> None:
    with _LEFT_LOCK:
        paths = list(_LEFT_OVER)
        _LEFT_OVER.clear()
    for path in paths:
        if not _rmdir(path, tries=1):
            with _LEFT_LOCK:
                _LEFT_OVER.append(path)


def _rmdir(path: Path, tries: int = 20) -> bool:
    for attempt in range(tries):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if attempt + 1 < tries:
                threading.Event().wait(0.005)
    return False


def _sh() -> str:
    return shutil.which("sh", path="/usr/bin:/bin") or "/bin/sh"


def _systemd_run() -> str:
    return shutil.which("systemd-run", path="/usr/bin:/bin") or "systemd-run"


@functools.lru_cache(maxsize=1)
def process_limit() -> ProcessLimit:
    """The mechanism that caps each sandbox's processes here (probed once per process).
    Logs a warning when only the weaker, shared ``rlimit`` is available."""
    tried: list[str] = []
    for find in (_cgroup, _systemd):
        found = find(tried)
        if found is not None:
            return found
    detail = (
        f"each sandbox is capped at its user's processes now plus {SANDBOX_PROCESSES} "
        "(RLIMIT_NPROC), a total shared by every sandbox of that user: a fork bomb in one "
        "grade can make another grade running at the same time fail. No per-sandbox limit "
        "here (" + "; ".join(tried) + "). For one: run as root, or on cgroup v2 with a "
        f"systemd user session, or set {CGROUP_ENV} to a delegated cgroup v2 folder"
    )
    log.warning("code sandbox: %s", detail)
    return ProcessLimit("rlimit", detail)


def _cgroup(tried: list[str]) -> ProcessLimit | None:
    bases = _cgroup_bases()
    if not bases:
        tried.append("no cgroup folder with the pids controller that this user may write")
    for parent, version in bases:
        base = parent / _GROUP if version else parent
        try:
            if version:
                base.mkdir(exist_ok=True)
            if version == 2:
                _enable_pids(parent)
            if version != 1:
                _enable_pids(base)
            _sweep(base)
            limit = ProcessLimit(
                "cgroup",
                f"each sandbox in a cgroup of its own under {base} with pids.max = "
                f"{SANDBOX_PROCESSES} ("
                + (f"cgroup v{version})" if version else f"a delegated folder, {CGROUP_ENV})"),
                str(base),
            )
            _probe(limit)
            atexit.register(_remove_own_at_exit, base)
            return limit
        except (OSError, subprocess.SubprocessError) as error:
            tried.append(f"a cgroup under {base}: {error}")
    return None


def _enable_pids(folder: Path) -> None:
    """Let ``folder``'s children use the pids controller (cgroup v2; v1 has no such file)."""
    control = folder / "cgroup.subtree_control"
    if not control.exists():
        return
    if "pids" not in control.read_text().split():
        control.write_text("+pids\n")


def _cgroup_bases() -> list[tuple[Path, int]]:
    """Where groups can be made: (folder, cgroup version; 0 for a delegated folder used as
    is). ``WORKBENCH_SANDBOX_CGROUP`` first, then, as root, the v2 and v1 ``pids`` roots."""
    bases: list[tuple[Path, int]] = []
    named = os.environ.get(CGROUP_ENV, "").strip()
    if named:
        bases.append((Path(named), 0))
    if os.geteuid() != 0:
        return bases
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return bases
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        where, kind, options = Path(fields[1]), fields[2], fields[3].split(",")
        if kind == "cgroup2":
            try:
                controllers = (where / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if "pids" in controllers:
                bases.append((where, 2))
        elif kind == "cgroup" and "pids" in options:
            bases.append((where, 1))
    return bases


def _systemd(tried: list[str]) -> ProcessLimit | None:
    if os.geteuid() == 0:
        return None  # root's own processes are capped through a cgroup, or not at all
    if shutil.which("systemd-run", path="/usr/bin:/bin") is None:
        tried.append("systemd-run is not installed")
        return None
    limit = ProcessLimit(
        "systemd",
        f"each sandbox in a transient systemd user scope with TasksMax = {SANDBOX_PROCESSES}",
    )
    try:
        _probe(limit)
    except (OSError, subprocess.SubprocessError) as error:
        tried.append(f"systemd-run --user --scope: {error}")
        return None
    return limit


def _probe(limit: ProcessLimit) -> None:
    """Start a process under ``limit`` that checks it is capped: raises if it is not."""
    group = Group(limit, processes=8)
    try:
        argv = [*group.prefix, _sh(), "-c", "cat /proc/self/cgroup"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise subprocess.SubprocessError(done.stderr.strip()[-300:] or "it failed")
        if group.path is not None and group.path.name not in done.stdout:
            raise subprocess.SubprocessError("the process did not join its group")
    finally:
        group.close()
