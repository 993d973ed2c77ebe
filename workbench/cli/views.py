"""What a training run shows while it runs, on the command's ``Display``: ``TrainingView``
(one run: its opening lines, a bar of its generations, its validations) and ``RunsView``
(runs one after another: a study, a frontier). Both listen to the run's events
(``core.training.events``)."""

from __future__ import annotations

from collections.abc import Callable

from workbench.cli.progress import Counter, Display
from workbench.core.records import GenerationStats
from workbench.core.spend import dollars, spend_kind
from workbench.core.training.events import (
    PREPARING_WORDS,
    EpisodeDone,
    Preparing,
    RunFailed,
    RunFinished,
    RunStarted,
)


class PreparingBars:
    """A bar, in questions, for each step before a routing table's training that has work
    to do (``events.PREPARING_WORDS``: its answers graded, its questions read by the
    backbone); a step whole at its first word (features kept by an earlier run) draws
    none. ``transient``: each bar goes once its step is done."""

    def __init__(self, display: Display, *, transient: bool = False):
        self.display, self.transient = display, transient
        self.bars: dict[str, Counter | None] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.bars:
            self.bars[stage] = (
                None
                if done >= total
                else self.display.count(PREPARING_WORDS[stage], max(1, total), "questions")
            )
        bar = self.bars[stage]
        if bar is None:
            return
        bar.update(done)
        if done >= total:
            self.display.finish(bar, keep=not self.transient)


class TrainingView:
    """A training run on a ``Display``: its opening lines, a bar of its generations
    (moved by each training episode, so it lives within a generation), a line at each
    validation, the details of each generation with ``--progress detailed`` or ``-v``.
    A listener of the run's events; what the run ended as is kept in ``ended``."""

    def __init__(
        self,
        display: Display,
        resume: Callable[[str], str] | None,
        *,
        transient: bool = False,
        fits_basis: bool = False,
    ):
        self.display, self.resume, self.transient = display, resume, transient
        self.fits_basis = fits_basis  # a new run reads a sample of tasks first
        self.best: float | None = None  # the best validation score so far
        self.counter: Counter | None = None
        self.started: RunStarted | None = None
        self.per_generation = 1  # training episodes a generation plays
        self.episodes = 0  # of the generation in flight, done
        self.ended: RunFinished | RunFailed | None = None
        self.workers: set[str] = set()  # the workers called so far: is the spend simulated?
        self.preparing = PreparingBars(display, transient=transient)

    def __call__(self, event) -> None:
        if isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, EpisodeDone) and self.counter is not None:
            self.episodes += 1
            self.counter.describe("training")
            self.counter.update(event.generation + min(1.0, self.episodes / self.per_generation))
        elif isinstance(event, Preparing):
            self.preparing(event.stage, event.done, event.total)
        elif isinstance(event, GenerationStats):
            self._generation(event)
        elif isinstance(event, RunFinished | RunFailed):
            self.ended = event
            if self.counter is not None:
                self.display.finish(self.counter, keep=not self.transient)
            if isinstance(event, RunFailed) and self.resume is not None:  # its error follows
                self.display.say(
                    f"Run {event.run_id[:8]} stopped on the error below; once it is fixed:"
                )
                self.display.command("Resume", self.resume(event.run_id))

    def _started(self, event: RunStarted) -> None:
        self.started = event
        self.per_generation = max(1, event.popsize * event.rollouts)
        total = int(event.budget["generations"])
        first = event.start_generation
        what = (
            f"Resuming run {event.run_id[:8]} at generation {first + 1}"
            if first
            else f"Training run {event.run_id[:8]}"
        )
        self.display.say(f'{what}, "{event.name}":')
        stop = " Ctrl-C stops it and keeps every finished generation." if self.resume else ""
        self.display.say(
            f"{total} generations of {event.popsize} candidates, each tried on "
            f"{event.rollouts} tasks.{stop}"
        )
        self.display.detail(
            f"{event.n_params} parameters{event.executor_note()}; budget "
            + ", ".join(f"{k} {v:g}" for k, v in event.budget.items() if v)
        )
        if self.fits_basis and not first:
            self.display.say(
                "First the model reads a sample of the tasks to set up the search (once)."
            )
        # until its first episode ends: the search's set-up, the first forwards
        self.counter = self.display.count("preparing", total, "generations", start=first)

    def _generation(self, g: GenerationStats) -> None:
        self.episodes = 0
        if self.counter is not None:
            self.counter.describe("training")
            self.counter.update(g.generation + 1)
        self.workers.update(key.rpartition("/")[0] for key in g.usage)
        kind = spend_kind(self.workers)
        spend = dollars(g.totals["dollars"], kind)
        if g.validation is not None:
            best = " (the best so far)" if self.best is None or g.validation > self.best else ""
            self.best = g.validation if best else self.best
            real = not kind or kind.startswith("partly")  # real dollars are worth a word
            paid = f"; {spend} spent so far" if real else ""
            self.display.say(
                f"generation {g.generation + 1}: validation score {g.validation:.3f}{best}{paid}"
            )
        self.display.detail(
            f"generation {g.generation + 1}: fitness best {g.best:.3f}, mean {g.mean:.3f}; "
            f"sigma {g.sigma:.4f}{g.opening_note()}; {spend}, {int(g.totals['calls'])} calls; "
            f"coordinator {g.coordinator_s:.1f} s of {g.wall_s:.1f} s ({g.tokens_forwarded} "
            f"tokens, {g.batches} batches of {g.mean_batch:.1f}{g.recheck_note()})"
        )


class RunsView:
    """Training runs one after another (a study, a frontier) on a ``Display``: a count of
    the runs, each run's own bar while it trains, a line as each is evaluated."""

    def __init__(self, display: Display, what: str, runs: int):
        self.display, self.done = display, 0
        self.counter: Counter | None = None
        self.what, self.runs = what, runs
        self._training = TrainingView(display, resume=None, transient=True)

    def training(self, event) -> None:
        """A listener of every run's training events."""
        if self.counter is None and isinstance(event, RunStarted):
            self.counter = self.display.count(self.what, self.runs, "runs")
        self._training(event)

    def evaluated(self, line: str) -> None:
        """The job's line as a run is evaluated: the count moves on."""
        self.display.say(line)
        self.done += 1
        if self.counter is not None:
            self.counter.update(self.done)
