"""The one progress display of every command that takes time: a bar (rich's ``Progress``)
on stderr that fits the terminal, or sparse plain lines where stderr is no terminal (a
pipe, a CI log), drawn from core's progress data (``core.progress.Stage``, the training
events, ``EvaluationProgress``, ...): core never prints.

A command opens one ``Display``: ``stage(text)`` shows a step no count measures (a
spinner, the words, the time it has taken), ``count(what, total, unit)`` counted work (a
bar, ``done/total unit``, the time taken and an estimate of the time left, ``Eta``),
``say(text)`` a line above it (wrapped at the terminal's width), ``detail(text)`` a line
only with ``--progress detailed`` or ``-v``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, Task, TextColumn
from rich.table import Column, Table
from rich.text import Text

from workbench.core.progress import Stage

MODES = ("auto", "bar", "plain", "detailed")
PLAIN_EVERY = 0.1  # without a terminal, a line each tenth of the work (each unit of less) ...
PLAIN_AT_LEAST_S = 60.0  # ... and at least one a minute while work goes on,
PLAIN_QUIET_S = 2.0  # but none for work that ends before this: it needs no sign of life


def add_progress_option(parser: Any) -> None:
    """``--progress`` on a command that takes time."""
    parser.add_argument(
        "--progress",
        choices=MODES,
        default="auto",
        help="auto (default): a bar on a terminal, a line now and then elsewhere; bar or "
        "plain: that one; detailed: also each step's details (as -v does)",
    )


class Eta:
    """The time left for ``total`` units of work, from the time measured per unit since a
    warm-up: the first ``warmup`` units (a first generation reads every task once, loads
    caches) are slower than the rest and would inflate the estimate, so none is given
    until they are done. After them the rate is the time since the warm-up ended over the
    units done since, and the estimate counts down between updates."""

    def __init__(
        self,
        total: float,
        *,
        start: float = 0.0,
        warmup: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.clock = total, clock
        self.warm_at = start + warmup  # units done when the warm-up ends
        self._anchor: tuple[float, float] | None = None  # (time, done) at the warm-up's end
        self._last: tuple[float, float] | None = None  # (time, done) at the last update

    def update(self, done: float) -> None:
        now = self.clock()
        if self._anchor is None and done >= self.warm_at:
            self._anchor = (now, done)
        self._last = (now, done)

    @property
    def done(self) -> float:
        """The units done at the last update."""
        return self._last[1] if self._last is not None else 0.0

    def remaining(self, now: float | None = None) -> float | None:
        """Seconds left, or None while there is no measurement to go by."""
        if self._anchor is None or self._last is None:
            return None
        (t0, d0), (t1, d1) = self._anchor, self._last
        if d1 >= self.total:
            return 0.0
        if d1 <= d0:
            return None
        per_unit = (t1 - t0) / (d1 - d0)
        since = (self.clock() if now is None else now) - t1
        return max(0.0, per_unit * (self.total - d1) - since)


def duration_words(seconds: float) -> str:
    """A span of time as a person says it: ``45 s``, ``12 min``, ``1 h 20 min``."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def eta_words(remaining: float | None) -> str:
    if remaining is None:
        return "estimating time left"
    if remaining < 60:
        return "under a minute left"
    return f"about {duration_words(remaining)} left"


def clock_words(seconds: float) -> str:
    """Elapsed time as a clock: ``2:05``, ``1:02:05``."""
    whole = int(seconds)
    h, rest = divmod(whole, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def _counted(task: Task) -> bool:
    return task.total is not None


class _Column(ProgressColumn):
    """A column that never wraps: past the terminal's width its words end in an ellipsis
    instead of taking a second line, which a redraw would leave behind."""

    def __init__(self) -> None:
        super().__init__(table_column=Column(no_wrap=True, overflow="ellipsis"))


class _Done(_Column):
    """``12/60 generations`` (counted work only)."""

    def render(self, task: Task) -> Text:
        if not _counted(task):
            return Text("")
        unit = task.fields.get("unit", "")
        return Text(f"{math.floor(task.completed):d}/{task.total:.0f} {unit}".rstrip())


class _Elapsed(_Column):
    def render(self, task: Task) -> Text:
        return Text(clock_words(task.elapsed or 0.0), style="progress.elapsed")


class _Left(_Column):
    """The estimate of the time left (counted work only)."""

    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        if not _counted(task) or eta is None:
            return Text("")
        return Text(eta_words(eta.remaining()), style="progress.remaining")


class _Progress(Progress):
    """rich's display, as wide as the terminal only while it draws a bar: a stage alone
    (a spinner, words and a clock) stays as short as its words."""

    def make_tasks_table(self, tasks: Iterable[Task]) -> Table:
        shown = list(tasks)
        self.expand = any(_counted(t) for t in shown if t.visible)
        return super().make_tasks_table(shown)


class _Bar(BarColumn):
    """A bar for counted work; nothing for a stage (its spinner and clock say it lives)."""

    def render(self, task: Task) -> Any:
        return super().render(task) if _counted(task) else Text("")


class Counter:
    """One piece of counted work on a ``Display``: ``update(done)`` moves it."""

    def __init__(self, display: Display, what: str, total: float, unit: str, eta: Eta):
        self.display, self.what, self.total, self.unit, self.eta = display, what, total, unit, eta
        self.task_id: Any = None  # its row in rich's display
        self.started = eta.clock()
        # plain lines: one each ``step`` units, the next at ``next_line`` units done
        self.step = max(1, math.ceil(total * PLAIN_EVERY))
        self.next_line = 0.0
        self.line_at = self.started  # plain lines: when the last one came

    def update(self, done: float) -> None:
        done = min(done, self.total)
        self.eta.update(done)
        self.display._moved(self, done)

    def describe(self, what: str) -> None:
        """New words for the work (``preparing`` becomes ``training``)."""
        if what != self.what:
            self.what = what
            self.display._described(self)

    def line(self, done: float) -> str:
        """The work's state as one plain line (the non-terminal display)."""
        return (
            f"{self.what}: {math.floor(done):d}/{self.total:.0f} {self.unit}, "
            f"{clock_words(self.eta.clock() - self.started)} elapsed, "
            f"{eta_words(self.eta.remaining())}"
        )


class Display:
    """A command's progress on stderr (see the module's docstring). ``mode``: ``auto``
    (a bar on a terminal, else plain lines), ``bar``, ``plain`` or ``detailed`` (auto's
    display and the details); ``verbose`` (``-v``) shows the details too."""

    def __init__(
        self,
        mode: str = "auto",
        *,
        verbose: bool = False,
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.clock = clock
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=False)
        self.detailed = verbose or mode == "detailed"
        terminal = self.console.is_terminal and not self.console.is_dumb_terminal
        self.bar = mode == "bar" or (mode in ("auto", "detailed") and terminal)
        self._progress: Progress | None = None
        self._stage: Any = None
        self._stage_text = ""

    # -- lifecycle -------------------------------------------------------------

    def __enter__(self) -> Display:
        if self.bar:
            self._progress = _Progress(
                SpinnerColumn(),
                TextColumn(
                    "{task.description}",
                    table_column=Column(no_wrap=True, overflow="ellipsis", min_width=8),
                ),
                _Bar(bar_width=None),
                _Done(),
                _Elapsed(),
                _Left(),
                console=self.console,
                expand=True,
                refresh_per_second=4,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing: a stage's spinner goes, counted work stays as it ended."""
        self.end_stage()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    # -- what a command shows --------------------------------------------------

    def stage(self, text: str) -> None:
        """A step begins that no count measures: its words, a spinner and its time."""
        if text == self._stage_text:
            return
        self._stage_text = text
        if self._progress is None:
            self.console.print(text, soft_wrap=True)
            return
        if self._stage is None:
            self._stage = self._progress.add_task(text, total=None)
        else:
            self._progress.update(self._stage, description=text)
        # drawn now, not at the next tick: a step shorter than a tick is still shown
        self._progress.refresh()

    def heard(self, stage: Stage) -> None:
        """A listener of core's ``Stage`` events (``core.progress``)."""
        self.stage(stage.text)

    def end_stage(self) -> None:
        if self._stage is not None and self._progress is not None:
            self._progress.remove_task(self._stage)
        self._stage, self._stage_text = None, ""

    def count(
        self, what: str, total: float, unit: str, *, start: float = 0.0, warmup: float = 1.0
    ) -> Counter:
        """Counted work begins: ``total`` ``unit`` (``start`` of them already done, as a
        resumed run has); its estimate of the time left comes once ``warmup`` units are
        done. Ends the current stage."""
        self.end_stage()
        eta = Eta(total, start=start, warmup=warmup, clock=self.clock)
        counter = Counter(self, what, total, unit, eta)
        if self._progress is not None:
            counter.task_id = self._progress.add_task(
                what, total=total, completed=int(start), unit=unit, eta=counter.eta
            )
        else:
            counter.next_line = (math.floor(start / counter.step) + 1) * counter.step
        return counter

    def _moved(self, counter: Counter, done: float) -> None:
        if self._progress is not None:
            if counter.task_id is not None:
                self._progress.update(counter.task_id, completed=done)
            return
        now = self.clock()
        if now - counter.started < PLAIN_QUIET_S and done < counter.total:
            return
        # the end is said once, whether or not the total is a multiple of the step
        end = done >= counter.total and counter.next_line < math.inf
        if done >= counter.next_line or end or now - counter.line_at >= PLAIN_AT_LEAST_S:
            self.console.print(counter.line(done), soft_wrap=True)
            counter.line_at = now
            counter.next_line = (
                math.inf
                if done >= counter.total
                else (math.floor(done / counter.step) + 1) * counter.step
            )

    def _described(self, counter: Counter) -> None:
        if self._progress is not None and counter.task_id is not None:
            self._progress.update(counter.task_id, description=counter.what)

    def finish(self, counter: Counter, *, keep: bool = True) -> None:
        """Counted work is over (whole or not): its bar stops where it is (``keep``) or
        goes (a part of larger work: one fold's training)."""
        if self._progress is not None and counter.task_id is not None:
            if keep:
                self._progress.stop_task(counter.task_id)
            else:
                self._progress.remove_task(counter.task_id)
                counter.task_id = None

    def say(self, text: str) -> None:
        """A line for the user, above the bar, wrapped at the terminal's width."""
        self.console.print(text, markup=False)

    def command(self, label: str, command: str) -> None:
        """``label: command``, the command never cut by a line break (a long workspace
        path wraps in the terminal, and a copy of it still runs)."""
        self.console.print(f"{label}: {command}", markup=False, soft_wrap=True)

    def detail(self, text: str) -> None:
        """A line only with ``--progress detailed`` or ``-v``."""
        if self.detailed:
            self.say(text)

    def counting(self, what: str, unit: str, *, warmup: float = 1.0) -> Callable[[Any], None]:
        """A listener of core's counted events (anything with ``done`` and ``total``: an
        evaluation's episodes, the headroom check's answers): the first starts the count."""
        counter: Counter | None = None

        def heard(event: Any) -> None:
            nonlocal counter
            if counter is None or counter.total != event.total:
                counter = self.count(what, event.total, unit, warmup=warmup)
            counter.update(event.done)
            if event.done >= event.total:
                self.finish(counter)

        return heard

    @contextmanager
    def staged(self, text: str) -> Iterator[None]:
        """``stage(text)`` for the length of a ``with`` block."""
        self.stage(text)
        try:
            yield
        finally:
            self.end_stage()
