"""Which isolation this machine gives untrusted programs, and the opt-in to run without.

* Linux: bubblewrap (``bwrap``), probed once per process by starting a real sandbox.
* macOS: ``sandbox-exec`` with the profile of ``macos.py``.
* Anything else, or Linux without bwrap or without unprivileged user namespaces: none.
  Code tasks are then refused unless the user opts in to running them unisolated
  (``WORKBENCH_ALLOW_UNISOLATED=1``, or ``--allow-unisolated`` on the command line).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from workbench.core.tasks.sandbox.linux import NOBODY  # noqa: F401  (re-exported)

UNISOLATED_ENV = "WORKBENCH_ALLOW_UNISOLATED"


@dataclass(frozen=True)
class Isolation:
    """How untrusted programs run here: ``kind`` is ``bubblewrap``, ``sandbox-exec`` or
    ``none``; ``detail`` is a sentence for a person (what is used, or what is missing and
    how to get it)."""

    kind: str
    detail: str

    @property
    def isolated(self) -> bool:
        """True when programs run inside an operating-system sandbox."""
        return self.kind != "none"


def unisolated_allowed() -> bool:
    """True when the user opted in to running code tasks without isolation."""
    return os.environ.get(UNISOLATED_ENV, "").strip().lower() in ("1", "true", "yes")


@functools.lru_cache(maxsize=1)
def detect_isolation() -> Isolation:
    """The isolation this machine offers (probed once per process)."""
    if sys.platform.startswith("linux"):
        return _linux()
    if sys.platform == "darwin":
        if shutil.which("sandbox-exec"):
            return Isolation(
                "sandbox-exec",
                "macOS sandbox-exec profile: no network, writes only to the run's folder",
            )
        return Isolation("none", "macOS without sandbox-exec: programs would run unisolated")
    return Isolation(
        "none",
        f"no sandbox is implemented for {sys.platform}: programs would run unisolated "
        "(grade code tasks on Linux with bubblewrap, for example in WSL)",
    )


def _linux() -> Isolation:
    from workbench.core.tasks.sandbox import linux

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Isolation(
            "none",
            "bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: "
            "apt install bubblewrap; Fedora: dnf install bubblewrap)",
        )
    try:
        python = linux.sandbox_python()
        argv = linux.bwrap_argv(bwrap, python, files={})
    except (linux.NoPython, linux.NoUtilLinux) as error:
        return Isolation("none", str(error))
    argv += [
        python.executable,
        "-I",
        "-S",
        "-c",
        "",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Isolation("none", f"bubblewrap could not start a sandbox: {error}")
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()[-300:]
        return Isolation(
            "none",
            f"bubblewrap could not start a sandbox ({why}); unprivileged user namespaces "
            "may be disabled (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
            "kernel.apparmor_restrict_unprivileged_userns=0)",
        )
    return Isolation(
        "bubblewrap",
        f"bubblewrap {bwrap}: new user, pid, network, ipc, uts and mount namespaces, "
        f"read-only runtime ({python.executable}), a private size-capped /tmp, no network",
    )
