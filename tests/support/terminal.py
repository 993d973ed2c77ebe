"""A command run in a real pseudo-terminal of a given size, as a user's terminal runs it:
what it printed and when, Ctrl-C (SIGINT to its process group, as the terminal sends it)
at a moment or on a condition, and what a reader of that terminal saw line by line.

Used by the CLI's terminal tests (tests/test_cli_terminal.py) and by the benchmark of the
CLI's waits (tests/benchmarks/bench_cli_waits.py).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# an escape sequence: colours, cursor moves, erasing a line (what a bar redraws with)
ESCAPE = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>78])")


@dataclass
class Session:
    """What one command did in the terminal: ``chunks`` of output with the second (since
    start) each arrived, its exit ``status`` (as ``os.waitstatus_to_exitcode``), when
    Ctrl-C was pressed (``interrupted_at``) and when it ended (``ended_at``)."""

    chunks: list[tuple[float, str]] = field(default_factory=list)
    status: int | None = None
    interrupted_at: float | None = None
    ended_at: float = 0.0

    @property
    def text(self) -> str:
        return "".join(c for _, c in self.chunks)

    @property
    def first_output_s(self) -> float | None:
        """When the first printable character arrived."""
        for at, chunk in self.chunks:
            if ESCAPE.sub("", chunk).strip():
                return at
        return None

    def longest_silence_s(self, until: float | None = None) -> float:
        """The longest stretch without any output (a redrawn bar counts as output), from
        the start to the end (or ``until``)."""
        end = self.ended_at if until is None else until
        times = [0.0, *(at for at, c in self.chunks if at <= end and c), end]
        return max(b - a for a, b in zip(times, times[1:], strict=False))

    @property
    def return_after_interrupt_s(self) -> float | None:
        if self.interrupted_at is None:
            return None
        return self.ended_at - self.interrupted_at

    def screen_lines(self) -> list[str]:
        """Every line a reader saw: the output without escape sequences, cut at line ends
        and at carriage returns (a redraw replaces the line: each version is a line)."""
        plain = ESCAPE.sub("", self.text)
        return [line for line in re.split(r"\r\n|\r|\n", plain) if line.strip()]

    def wide_lines(self, columns: int) -> list[str]:
        return [line for line in self.screen_lines() if len(line) > columns]


def run_in_terminal(
    argv: Sequence[str],
    *,
    columns: int = 80,
    rows: int = 24,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    interrupt_at: float | None = None,
    interrupt_when: Callable[[str], bool] | None = None,
    timeout: float = 1800,
) -> Session:
    """Run ``argv`` in a new pseudo-terminal ``columns`` x ``rows`` (``COLUMNS`` and
    ``LINES`` set too) and collect its output until it exits. Ctrl-C is sent once, at
    ``interrupt_at`` seconds or as soon as ``interrupt_when(output so far)`` holds, to the
    terminal's foreground process group, as a terminal does. Past ``timeout`` the process
    group is killed and ``TimeoutError`` raised."""
    environment = {**os.environ, **(env or {}), "COLUMNS": str(columns), "LINES": str(rows)}
    environment.pop("NO_COLOR", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader with the terminal as its controlling tty
        try:
            if cwd:
                os.chdir(cwd)
            os.execvpe(argv[0], list(argv), environment)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    session = Session()
    start = time.monotonic()
    seen = ""
    try:
        while True:
            now = time.monotonic() - start
            if session.interrupted_at is None and (
                (interrupt_at is not None and now >= interrupt_at)
                or (interrupt_when is not None and interrupt_when(seen))
            ):
                os.killpg(pid, signal.SIGINT)  # the child leads its own process group
                session.interrupted_at = now
            if now > timeout:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise TimeoutError(f"{argv!r} ran past {timeout} s; its output: {seen[-2000:]}")
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal (it ended)
                break
            if not data:
                break
            chunk = data.decode("utf-8", "replace")
            session.chunks.append((time.monotonic() - start, chunk))
            seen += chunk
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    session.ended_at = time.monotonic() - start
    session.status = os.waitstatus_to_exitcode(status)
    return session
