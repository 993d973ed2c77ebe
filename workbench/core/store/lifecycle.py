"""A run's life in the store, the same for every job (training, evaluation, the headroom
check, cross-validation, the frontier, serving): ``RunLife`` creates the run, marks it
running with the process that drives it, writes its heartbeats, and ends it exactly once.

Every end writes the same things: the status that follows from the stop reason
(``status_for``), the error's sentence on a failure, and in the result the job's own
figures beside ``spend`` (episodes, worker calls, dollars, minutes: ``Spend.as_totals``;
a job that ended before it counted writes its minutes only) and ``ended_at`` (unix time).
While it runs, the result carries ``pid`` and ``host``: a listing tells a killed run from
a live one by them (``jobs.shared.effective_status``).

Used as a context manager, a run is never left ``running``: a stop (``Interrupted``,
a cancelled task, Ctrl-C) ends it ``stopped`` and any other exception ``failed``, and
the exception goes on to the caller.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

from workbench.core.errors import Interrupted
from workbench.core.records import Episode, RunStatus, RunStopReason, Spend, worker_calls
from workbench.core.store import Store

# what each way of ending leaves as the run's status; a budget's reason ends it finished
_ENDED_AS = {
    RunStopReason.STOPPED: RunStatus.STOPPED,
    RunStopReason.ERROR: RunStatus.FAILED,
}


def status_for(reason: RunStopReason) -> RunStatus:
    """The status a run ends in for ``reason``: stopped by its user, failed on an error,
    finished for the rest (done, a budget reached, a server shut down)."""
    return _ENDED_AS.get(reason, RunStatus.FINISHED)


def stopped_by(exc: BaseException) -> bool:
    """Whether ``exc`` stops a job rather than fails it: a stop the user asked for
    (``Interrupted``), a cancelled task, Ctrl-C, or the process being asked to exit."""
    return isinstance(exc, Interrupted | asyncio.CancelledError | KeyboardInterrupt | SystemExit)


def error_words(exc: BaseException) -> str:
    """The sentence a failed run stores: the exception's type and message."""
    return f"{type(exc).__name__}: {exc}"


class RunLife:
    """One run's record from its start to its one end (see the module's docstring).

    ``spend`` is asked for what the run has used when it ends; without one (or while it
    returns None) only the minutes since ``start`` are written. ``figures`` is asked for
    the job's figures when an end gives none (an error or a stop cuts it short), else the
    figures written last are kept.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        *,
        spend: Callable[[], Spend | None] | None = None,
        figures: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.spend = spend
        self.figures = figures
        self.ended: RunStatus | None = None
        self._result: dict[str, Any] = {}
        self._started = time.perf_counter()

    @classmethod
    def create(
        cls,
        store: Store,
        name: str,
        kind: str,
        config: dict[str, Any],
        *,
        unique: bool = False,
        spend: Callable[[], Spend | None] | None = None,
    ) -> RunLife:
        """A new run of ``kind`` in the store (``Store.create_run``), not yet started."""
        return cls(store, store.create_run(name, kind, config, unique=unique), spend=spend)

    @property
    def seconds(self) -> float:
        """Seconds since the run started (``start``)."""
        return time.perf_counter() - self._started

    def spent(self, episodes: Sequence[Episode]) -> Spend:
        """What ``episodes`` used (their worker calls and dollars) in the run's seconds."""
        return Spend(
            episodes=len(episodes),
            calls=worker_calls(episodes),
            dollars=sum(e.cost for e in episodes),
            seconds=self.seconds,
        )

    def spent_by(self, run_ids: Iterable[str]) -> Spend:
        """What the runs ``run_ids`` used, as their records say (every ended run stores
        its spend), in this run's seconds: the spend of a job made of other runs
        (cross-validation, the frontier)."""
        total = Spend(seconds=self.seconds)
        for run_id in run_ids:
            used = (self.store.get_run(run_id).result or {}).get("spend") or {}
            total.episodes += int(used.get("episodes", 0))
            total.calls += int(used.get("calls", 0))
            total.dollars += float(used.get("dollars", 0.0))
        return total

    def start(self, result: dict[str, Any] | None = None) -> None:
        """Mark the run running, driven by this process (``result``: the job's figures so
        far, such as a resumed training run's); its clock for the minutes starts here."""
        self._started = time.perf_counter()
        self.ended = None
        self.heartbeat(result)

    def heartbeat(self, result: dict[str, Any] | None = None) -> None:
        """Write the run's figures so far (``result`` replaces the last ones), with the
        process that drives it, keeping it ``running``."""
        if result is not None:
            self._result = dict(result)
        self.store.set_run_status(
            self.run_id,
            RunStatus.RUNNING,
            result={**self._result, "pid": os.getpid(), "host": socket.gethostname()},
        )

    def end(
        self,
        reason: RunStopReason = RunStopReason.DONE,
        result: dict[str, Any] | None = None,
        *,
        spend: Spend | None = None,
        error: str | None = None,
    ) -> RunStatus:
        """End the run for ``reason`` (its status: ``status_for``) with ``result`` (else
        the last figures written), ``spend`` (else the run's ``spend`` callback's) and,
        for a failure, ``error``; returns the status. A run ends once: a second end is
        an error of the caller."""
        if self.ended is not None:
            raise RuntimeError(f"run {self.run_id[:8]} has already ended ({self.ended})")
        if result is None and self.figures is not None:
            result = self.figures()
        if result is not None:
            self._result = dict(result)
        used = spend if spend is not None else (self.spend() if self.spend else None)
        totals = used.as_totals() if used is not None else {"minutes": self.seconds / 60}
        status = status_for(reason)
        self.store.set_run_status(
            self.run_id,
            status,
            stop_reason=reason,
            error=error,
            result={**self._result, "spend": totals, "ended_at": time.time()},
        )
        self.ended = status
        return status

    def fail(self, exc: BaseException, result: dict[str, Any] | None = None) -> RunStatus:
        """End the run ``failed`` with ``exc``'s sentence (``error_words``)."""
        return self.end(RunStopReason.ERROR, result, error=error_words(exc))

    def __enter__(self) -> RunLife:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """End a run the block left running: stopped or failed on an exception (which
        goes on to the caller); a block that returns without ending it fails it, as a
        job that forgot to report its result."""
        if self.ended is not None:
            return
        if exc is None:
            self.end(RunStopReason.ERROR, error="the job returned without ending its run")
            raise RuntimeError(f"run {self.run_id[:8]}: the job returned without ending it")
        if stopped_by(exc):
            self.end(RunStopReason.STOPPED)
        else:
            self.fail(exc)


__all__ = ["RunLife", "error_words", "status_for", "stopped_by"]
