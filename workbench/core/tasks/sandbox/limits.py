"""Resource limits a sandboxed interpreter sets on itself, before it runs anything untrusted.

The host writes them as one argument (``spec``); ``harness.py`` and ``checker.py`` read it
from their command line and ``apply`` it as their first act. So no Python code runs
between fork and exec in the parent (no ``preexec_fn``), and the interpreter starts the
sandbox with ``vfork``, which costs far less than a fork of a large parent. Nothing
untrusted runs before ``apply``: the program is read and executed only after it.

Limits: address space (``AS``), CPU seconds (``CPU``; hard limit one second later, so the
soft limit's SIGXCPU comes first), bytes per written file (``FSIZE``), open files
(``NOFILE``), processes and threads of the user (``NPROC``; -1 leaves it as it is, where
each sandbox has a cgroup of its own: ``pids.py``), and no core dumps (``CORE``).

This file runs inside the sandbox too (``python -I -S``), so it imports only the stdlib.
"""

import resource

OPEN_FILES = 64
_NAMES = ("AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE")


def spec(*, memory_bytes: int, cpu_s: int, file_bytes: int, processes: int) -> str:
    """The limits as one command-line argument, for ``apply`` on the other side."""
    values = (memory_bytes, cpu_s, file_bytes, OPEN_FILES, processes, 0)
    return ",".join(f"{name}={int(value)}" for name, value in zip(_NAMES, values, strict=True))


def processes(text: str) -> int:
    """The process limit of a spec (the host also sets it before bwrap: ``linux.py``); -1
    when the spec leaves it as it is."""
    return int(dict(item.split("=", 1) for item in text.split(","))["NPROC"])


def apply(text: str) -> None:
    """Set the limits ``spec`` wrote on this process (inherited by every process it starts).
    Raises ``ValueError`` for a spec that does not name exactly these limits."""
    pairs = [item.split("=", 1) for item in text.split(",")]
    if [pair[0] for pair in pairs] != list(_NAMES) or any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"not a limits spec: {text!r}")
    for name, value in pairs:
        soft = int(value)
        if soft < 0:
            continue  # left as it is (NPROC, where a cgroup caps the sandbox's processes)
        hard = soft + 1 if name == "CPU" else soft
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))
