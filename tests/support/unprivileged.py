"""Run a Python snippet as a user to whom file permissions apply.

Tests run as root in CI, and root writes to read-only files. The child keeps uid 0 but
loses the capabilities that bypass permission checks (CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH, CAP_FOWNER) from its bounding set before it starts, so a read-only
file or folder is read-only to it, as to an ordinary user. Run as an ordinary user, the
child is that user already.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

_PR_CAPBSET_DROP = 24
_CAPS = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def _drop_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _CAPS:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap})")


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -c code args...`` without the power to ignore file permissions."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        preexec_fn=_drop_capabilities if os.geteuid() == 0 else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
