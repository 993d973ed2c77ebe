"""What a training run tells its listeners (the CLI's progress, ``train --events``, the
GUI's plots), as typed events that round-trip through one line of JSON, and the token a
caller stops or pauses a run with."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal, TypeVar

from workbench.core.errors import Interrupted
from workbench.core.records import GenerationStats, RunStopReason, StopReason

log = logging.getLogger(__name__)

T = TypeVar("T")
POLL_S = 0.05  # how often a waiting run looks at its stop token
CANCEL_WAIT_S = 1.0  # at most this long for cancelled work to unwind before a stop returns


@dataclass(frozen=True, kw_only=True)
class RunStarted:
    run_id: str
    name: str
    n_params: int
    popsize: int
    rollouts: int
    start_generation: int  # > 0 when resumed
    budget: dict[str, float]
    executor: str = "local"  # where the training episodes run (run.executor)
    actors: int | None = None  # with ray: how many actors, on which nodes
    nodes: tuple[str, ...] = ()

    @property
    def budget_generations(self) -> int:
        """The generations the run's budget allows (0: no limit on generations)."""
        return int(self.budget.get("generations") or 0)

    def executor_note(self) -> str:
        """Where the episodes run, in words ('' for this process), after a '; '."""
        where = where_episodes_ran(self.executor, self.actors, self.nodes)
        return f"; {where[:1].lower()}{where[1:]}" if where else ""


def where_episodes_ran(executor: str | None, actors: int | None, nodes: Sequence[str]) -> str:
    """A run's executor in words: '' for this process (the local executor), else e.g.
    "Episodes on Ray: 2 actors on node-a, node-b" (the CLI, the progress line, the GUI)."""
    if executor != "ray":
        return ""
    count = f"{actors} actor{'' if actors == 1 else 's'}"
    return f"Episodes on Ray: {count} on {', '.join(nodes) or '?'}"


@dataclass(frozen=True, kw_only=True)
class EpisodeDone:
    run_id: str
    generation: int
    candidate: int | None
    task_id: str
    reward: float
    turns: int
    stop_reason: StopReason
    cost: float


# the counted work before a routing table's first generation, in words (the CLI's bars of
# train and crossval, the Runs page)
PreparingStage = Literal["table", "features"]
PREPARING_WORDS: dict[str, str] = {
    "table": "grading the recorded answers",
    "features": "reading every question with the backbone",
}


@dataclass(frozen=True, kw_only=True)
class Preparing:
    """Counted work before a run's first generation: its routing table's recorded answers
    graded (``stage`` "table") or its questions read by the backbone ("features", kept in
    the workspace: a later run on them reads them back), ``done`` of ``total``
    questions."""

    run_id: str
    stage: PreparingStage
    done: int
    total: int

    @property
    def words(self) -> str:
        return PREPARING_WORDS[self.stage]


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    stop_reason: RunStopReason
    generations: int
    best_validation: float | None


@dataclass(frozen=True)
class RunFailed:
    run_id: str
    error: str


# GenerationStats lives in records (the store returns it too); it is one of the events.
Event = RunStarted | Preparing | GenerationStats | EpisodeDone | RunFinished | RunFailed
Listener = Callable[[Event], None]
EVENT_TYPES: dict[str, type] = {
    t.__name__: t
    for t in (RunStarted, Preparing, GenerationStats, EpisodeDone, RunFinished, RunFailed)
}


def event_to_json(event: Event) -> str:
    """One event as one line of JSON (``train --events`` writes these to stdout)."""
    return json.dumps({"event": type(event).__name__, **asdict(event)})


def event_from_json(line: str) -> Event:
    """The event a line written by ``event_to_json`` stands for (its enums' strings read
    back as their members)."""
    data = json.loads(line)
    kind = data.pop("event", None)
    if kind not in EVENT_TYPES:
        raise ValueError(f"not a training event: {line[:80]!r}")
    cls = EVENT_TYPES[kind]
    for name, hint in typing.get_type_hints(cls).items():
        if isinstance(hint, type) and issubclass(hint, StrEnum) and name in data:
            data[name] = hint(data[name])
    return cls(**data)


class StopToken:
    """Thread-safe stop and pause, checked by the trainer between episodes."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def follow(self, stream: Any) -> threading.Thread:
        """Obey ``pause``, ``resume`` and ``stop`` lines read from ``stream`` in a daemon
        thread; the end of the stream (the controlling process went away) means stop."""

        def read() -> None:
            for line in stream:
                command = line.strip()
                if command == "pause":
                    self.pause()
                elif command == "resume":
                    self.resume()
                elif command == "stop":
                    self.stop()
                elif command:
                    log.warning("unknown run command %r (pause, resume or stop)", command)
            self.stop()

        thread = threading.Thread(target=read, name="run-commands", daemon=True)
        thread.start()
        return thread

    async def checkpoint(self) -> None:
        """Wait here while paused (without blocking the loop); raise if stopped."""
        while not self._running.is_set():
            await asyncio.sleep(POLL_S)
        if self._stop.is_set():
            raise Stopped

    async def race(self, work: Awaitable[T]) -> T:
        """Await ``work``; if the token is stopped before it is awaited (looked at every
        ``POLL_S``), cancel it and raise ``Stopped``, even if it has just finished. A stop
        then ends a generation's episodes in flight instead of waiting for them: with
        every episode started at once, they have all passed their ``checkpoint``. Work
        running in a thread (a forward) finishes there, unawaited."""
        task = asyncio.ensure_future(work)
        while not self._stop.is_set():
            if task.done():
                return task.result()
            await asyncio.wait({task}, timeout=POLL_S)
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_WAIT_S)  # it unwinds now, not at the close
        if not task.cancelled() and task.done():
            task.exception()  # retrieved: a failure the stop made moot is not logged
        raise Stopped


class Stopped(Interrupted):
    """Raised inside a run at a checkpoint after ``StopToken.stop``."""
