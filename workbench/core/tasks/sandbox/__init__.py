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
returns can forge that verdict. One sandbox for both costs half the start-up of two;
``tests/core/tasks/test_hostile.py`` has probes that trace, read and signal the checker.

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

Modules: ``results`` (what a run reports), ``box`` (one sandboxed interpreter and the
process work around it), ``grade_box`` (a HumanEval grade's sandbox and the spares).

The files run inside the sandbox (``harness.py``, ``checker.py``, ``plaindata.py``,
``limits.py``) use only the stdlib: they start under ``python -I -S`` without this package.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from workbench.core.tasks.sandbox.isolation import (
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
from workbench.core.tasks.sandbox.box import (
    MAX_FILE_BYTES,
    Box,
    feed,
    rlimits_script,
    usable_isolation,
    wait_for_exit,
)
from workbench.core.tasks.sandbox.grade_box import (
    GradeBox,
    end_spare_sandboxes,
    keep_spares,
    take_spare,
)
from workbench.core.tasks.sandbox.results import Check, Limits, SandboxError, SandboxResult


def run_program(
    source: str,
    *,
    stdin: str = "",
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    max_output_bytes: int = 1_000_000,
    max_file_bytes: int = MAX_FILE_BYTES,
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
    isolation = usable_isolation()
    limits = Limits(timeout_s, memory_mb, max(max_file_bytes, max_output_bytes), max_output_bytes)
    with Box(isolation, {"program.py": source}, workdir_parent) as box:
        stdin_r, stdin_w = os.pipe()
        try:
            proc = box.start(
                ["run", box.path("program.py")],
                rlimits_script(limits, box.isolation),
                stdin=stdin_r,
            )
        finally:
            os.close(stdin_r)
        feed(stdin_w, stdin.encode("utf-8", errors="surrogatepass"))
        start = time.monotonic()
        exited = wait_for_exit(proc, timeout_s)
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
    isolation = usable_isolation()
    limits = Limits(timeout_s, memory_mb, MAX_FILE_BYTES, max_output_bytes)
    key = (isolation, limits, str(workdir_parent) if workdir_parent is not None else None)
    box, wanted = take_spare(key)
    if box is None:
        box = GradeBox(isolation, limits, workdir_parent)
    try:
        box.give(program, prelude, test, entry_point)
        # the next grades' sandboxes start while this one runs (on another core, if any)
        keep_spares(key, lambda: GradeBox(isolation, limits, workdir_parent), wanted)
        check = box.verdict()
    finally:
        box.close()
    if not box.failed_to_start:
        return check
    box = GradeBox(isolation, limits, workdir_parent)
    try:
        box.give(program, prelude, test, entry_point)
        return box.verdict()
    finally:
        box.close()
