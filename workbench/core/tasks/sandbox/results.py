"""What a sandboxed run reports: its result, a HumanEval check's verdict, the limits it
ran under, and the error for a sandbox that cannot run at all."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.errors import WorkFailed


class SandboxError(WorkFailed, RuntimeError):
    """The sandbox itself could not run (not the program's fault): no isolation here and
    no opt-in to run unisolated, or the interpreter could not be started."""


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
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
class Limits:
    timeout_s: float
    memory_mb: int
    file_bytes: int
    max_output_bytes: int
