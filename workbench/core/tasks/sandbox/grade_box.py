"""A HumanEval grade's sandbox (``GradeBox``): the checker and the candidate's process it
forks, started ahead of the grade, and the spares each grading thread keeps."""

from __future__ import annotations

import atexit
import os
import select
import signal
import subprocess
import tempfile
import threading
import time

from workbench.core.tasks.sandbox import plaindata
from workbench.core.tasks.sandbox.box import (
    Box,
    feed,
    has_exited,
    pipe,
    read_capped,
    read_until_eof,
    reason_for,
    rlimits_script,
    wait_for_exit,
)
from workbench.core.tasks.sandbox.isolation import (
    Isolation,
)
from workbench.core.tasks.sandbox.results import Check, Limits, SandboxError, SandboxResult

READY = b"ready\n"  # what the checker writes on its verdict pipe once it has started
# a spare older than this is replaced rather than used: its process limit was counted
# when it started, and the user's process count may have changed since
SPARE_MAX_AGE_S = 30.0


def end_spare_sandboxes() -> None:
    """End every sandbox started ahead of a grade (each thread's spares). The next
    grade starts its own again. Also run at exit."""
    with SPARES_LOCK:
        boxes = [box for waiting in SPARES.values() for box in waiting]
        SPARES.clear()
    for box in boxes:
        box.close()


class GradeBox:
    """One sandbox for one grade, started ahead of it: the checker's interpreter, which has
    already forked the candidate's process (``checker.py``); each waits for its task on a
    pipe of its own. The candidate's stdout and stderr go to files of their own, and so do
    the checker's: not bwrap's, whose process in the sandbox (its pid 1, which the candidate
    could reach) holds them."""

    def __init__(self, isolation: Isolation, limits: Limits, parent) -> None:
        self.limits = limits
        self.owner = (os.getpid(), threading.current_thread())
        self.started = time.monotonic()
        self.box = Box(isolation, {}, parent, script="checker.py")
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
            checker_task_r, checker_task_w = pipe(ends)
            candidate_task_r, candidate_task_w = pipe(ends)
            self.verdict_r, verdict_w = pipe(ends)
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
                list(map(str, fds)), rlimits_script(limits, isolation), pass_fds=fds
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
        ``SPARE_MAX_AGE_S`` ago."""
        pid, thread = self.owner
        return (
            pid == os.getpid()
            and thread.is_alive()
            and time.monotonic() - self.started < SPARE_MAX_AGE_S
            and not has_exited(self.checker)
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
        feed(candidate_fd, plaindata.encode([program, entry_point]).encode())
        feed(checker_fd, plaindata.encode([prelude, test, entry_point]).encode())

    def verdict(self) -> Check:
        """Wait for the checker's verdict (at most the timeout after ``give``)."""
        assert self.checker is not None
        limits = self.limits
        timeout_s = limits.timeout_s
        start = self.given
        verdict, timed_out = read_until_eof(self.verdict_r, start + timeout_s)
        # the checker says "ready" once the candidate's process is forked, before it reads
        # its task: without it (and before the timeout), the sandbox failed to start and
        # the grade did not run
        ready = verdict.startswith(READY)
        self.failed_to_start = not ready and not timed_out
        verdict = verdict[len(READY) :] if ready else b""
        status, _, rest = verdict.decode("utf-8", errors="replace").partition("\n")
        exit_code, _, why = rest.partition("\n")
        if status not in ("pass", "fail"):
            status = ""
        if not timed_out:
            # the checker exits right after its verdict; when bwrap has exited too, every
            # process of the sandbox has ended (its pid namespace is empty): nothing of
            # this grade is alive once it returns
            timed_out = not wait_for_exit(
                self.checker, max(0.0, start + timeout_s - time.monotonic())
            )
        checked = self.box.finish(self.checker, limits, timed_out=timed_out, start=start)
        self.checker = None
        ran = self._candidate(exit_code, checked, timed_out)
        passed = status == "pass" and checked.ok
        stderr, _ = read_capped(self.checker_err, limits.max_output_bytes)
        if timed_out:
            why = f"timed out after {timeout_s:g} s and was killed"
        elif not ready:
            # bwrap's own messages (nothing of the grade ran yet to write there)
            why = f"the sandbox could not start: {checked.reason}: {checked.stderr[-300:]}"
        elif not status:
            why = reason_for(checked.returncode, False, timeout_s, stderr, limits.memory_mb)
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
        stdout, out_cut = read_capped(self.candidate_out, limits.max_output_bytes)
        stderr, err_cut = read_capped(self.candidate_err, limits.max_output_bytes)
        return SandboxResult(
            returncode=returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=checked.duration_s,
            reason=reason_for(returncode, timed_out, limits.timeout_s, stderr, limits.memory_mb),
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


SPARES: dict[tuple, list[GradeBox]] = {}  # (thread, key) -> spares, the oldest first
SPARES_LOCK = threading.Lock()
_ATEXIT: list[bool] = []


def take_spare(key: tuple) -> tuple[GradeBox | None, int]:
    """This thread's oldest spare for ``key`` that is still waiting, and how many spares
    this thread should have started ahead for its next grades: two while grades come back
    to back (the one taken was not ready yet: its start is what this grade waits for),
    else one. Spares of ended threads are ended on the way."""
    with SPARES_LOCK:
        gone = [s for s, boxes in SPARES.items() if not boxes or not boxes[0].owner[1].is_alive()]
        ended = [box for slot in gone for box in SPARES.pop(slot)]
        waiting = SPARES.get((threading.get_ident(), key), [])
        found = waiting.pop(0) if waiting else None
    for box in ended:
        box.close()
    if found is None:
        return None, 1
    if not found.alive():
        found.close()
        return take_spare(key)[0], 1
    return found, 1 if found.ready() else 2


def _forget_spares_in_child() -> None:
    """After a fork, the spares are the parent's: close the child's copies of their task
    pipes (else the parent's sandboxes would never see the end of their task) and forget
    them, killing nothing."""
    global SPARES_LOCK
    SPARES_LOCK = threading.Lock()
    for boxes in SPARES.values():
        for box in boxes:
            for fd in (*box.task_fds, box.verdict_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
    SPARES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spares_in_child)


def keep_spares(key: tuple, start, wanted: int) -> None:
    """Start spares for this thread and ``key`` until it has ``wanted`` (at most two, so a
    thread that graded back to back keeps two until they are used or too old)."""
    slot = (threading.get_ident(), key)
    with SPARES_LOCK:
        if not _ATEXIT:
            atexit.register(end_spare_sandboxes)
            _ATEXIT.append(True)
        missing = wanted - len(SPARES.setdefault(slot, []))
    for _ in range(missing):
        try:
            box = start()
        except SandboxError:
            return  # the next grade starts its own and reports the error
        with SPARES_LOCK:
            SPARES.setdefault(slot, []).append(box)
