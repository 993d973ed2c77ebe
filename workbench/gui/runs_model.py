"""The Runs page's model: what the page says about runs, built from core's typed objects
(``RunSummary`` and ``StoredRun`` from ``core.jobs.shared``, the training events) and free
of Qt, so that a test reads it without a window. The view (``qt_runs``) puts these words
and figures on its widgets.

What lives here: the runs table's cells (a run being trained shows its live generation
and state, not the store's last word), the window's status strip, the log's lines in plain
words with their technical details apart, the time left, and the config files' disk
reads and writes (run in the page's background jobs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench.core.config import RunConfig
from workbench.core.jobs.shared import RunSummary, StoredRun
from workbench.core.records import RunStopReason
from workbench.core.settings import load_run_config
from workbench.core.spend import Spend, dollars
from workbench.core.training.events import GenerationStats, RunFinished, RunStarted
from workbench.gui.words import score_words, status_words, stop_sentence

RUN_COLUMNS = ("Name", "Status", "Why it ended", "Gen.", "Started")
RUN_COLUMN_TIPS = {
    "Gen.": "Generations trained (of the run's budget while it trains)",
    "Started": "When the run was started (the date and time of this computer)",
}
# what the page is doing with the run it trains, in a few words (its status line)
STATE_WORDS = {
    "idle": "Ready to start",
    "starting": "Starting: loading the language model…",
    "running": "Training",
    "paused": "Paused",
    "stopping": "Stopping after the episodes in flight…",
    "finished": "Finished",
    "stopped": "Stopped (you can resume it)",
    "failed": "Failed",
}
# the states in which the page's run is alive (its child process trains or will)
LIVE_STATES = ("starting", "running", "paused", "stopping")
ENDED_STATES = ("finished", "stopped", "failed")
LEARNED_HEADING = (
    "What run {run} learned: on the validation questions, per kind of question, the "
    "turns its coordinator played most often:"
)
LEARNED_NOT_PLAYED = (
    "What run {run} learned cannot be read here: it was validated on a routing table "
    "(recorded answers scored as arrays, without playing episodes), and its checkpoint "
    "keeps no record of which worker that validation chose. Evaluate it on the Evaluate "
    "page: its episodes then show which worker it asks per category."
)


@dataclass(frozen=True)
class CellText:
    """One cell as shown: its text, what it sorts by (None: its text) and its tooltip
    (None: its text)."""

    text: str
    sort_key: object = None
    tooltip: str | None = None


@dataclass(kw_only=True)
class RunProgress:
    """The run the page trains, or the one it shows: its state (a key of
    ``STATE_WORDS``), name, generations done of its budget, best training score, spend in
    words and time left. The page updates it from the events; the strip, the runs table
    and the status line read it."""

    state: str = "idle"
    run_id: str | None = None
    name: str = ""
    generation: int = 0  # generations done (the next one is generation + 1)
    budget: int = 0  # generations the budget allows (0: unknown)
    best: float | None = None
    spent: str = ""
    eta: str = ""

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def of_budget(self) -> str:
        """``3 of 10`` (``3`` when the budget is unknown)."""
        return f"{self.generation} of {self.budget}" if self.budget else str(self.generation)


def state_after(event: RunFinished) -> str:
    """The page's state once a run ended (its stop reason: stopped by the user, or it ran
    its course)."""
    return "stopped" if event.stop_reason == RunStopReason.STOPPED else "finished"


def started_text(created_at: float, now: float | None = None) -> str:
    """When a run started, short enough for a narrow column: ``today 14:05``,
    ``yesterday 09:12``, ``Mar 4 16:20`` this year, ``2025-03-04`` before."""
    now = time.time() if now is None else now
    then, today = time.localtime(created_at), time.localtime(now)
    days = (
        time.mktime((*today[:3], 0, 0, 0, 0, 0, -1)) - time.mktime((*then[:3], 0, 0, 0, 0, 0, -1))
    ) / 86400
    clock = time.strftime("%H:%M", then)
    if round(days) == 0:
        return f"today {clock}"
    if round(days) == 1:
        return f"yesterday {clock}"
    if then.tm_year == today.tm_year:
        return f"{time.strftime('%b', then)} {then.tm_mday} {clock}"
    return time.strftime("%Y-%m-%d", then)


def run_cells(
    run: RunSummary, live: RunProgress | None, now: float | None = None
) -> list[CellText]:
    """A run's row of the runs table (``RUN_COLUMNS``). ``live``: the run the page trains
    now, whose status and generations come from its events (the store says "running"
    and the generations committed when it was read)."""
    status, tip = status_words(run.status), f"status: {run.status}"
    generations = CellText(str(run.generations), run.generations)
    if live is not None and live.live and live.run_id == run.id:
        status = STATE_WORDS[live.state].split(":")[0].split(" (")[0].lower()
        tip = f"{STATE_WORDS[live.state]}\nstatus: {run.status}"
        generations = CellText(live.of_budget(), live.generation, "generations done of its budget")
    why = stop_sentence(run.stop_reason) or "–"
    why_tip = "\n".join(
        part
        for part in (why, run.error, f"stop reason: {run.stop_reason}" if run.stop_reason else "")
        if part
    )
    return [
        CellText(run.title or run.name or "(no name)", tooltip=f"{run.name}\nrun id {run.id}"),
        CellText(status, run.status, tip),
        CellText(why, tooltip=why_tip),
        generations,
        CellText(
            started_text(run.created_at, now),
            run.created_at,
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created_at)),
        ),
    ]


def strip_text(progress: RunProgress, opened: bool, opened_status: str | None = None) -> str:
    """The run in one line, for the window's status strip: what it is doing, its
    generation, its best training score and its spend. ``opened``: a stored run is shown
    (``opened_status``: its status)."""
    name = f"'{progress.name}'" if progress.name else "the run"
    figures = []
    if progress.generation:
        figures.append(f"generation {progress.of_budget()}")
    if progress.best is not None:
        figures.append(f"best {score_words(progress.best)}")
    if progress.spent:
        figures.append(f"spent {progress.spent}")
    tail = "".join(f" · {f}" for f in figures)
    if progress.state == "starting":
        return f"Starting {name}: loading the language model…"
    if progress.state in ("running", "paused", "stopping"):
        doing = {"running": "Training", "paused": "Paused", "stopping": "Stopping"}
        eta = f" · {progress.eta}" if progress.eta else ""
        return f"{doing[progress.state]} {name}{tail}{eta}"
    if progress.state in ENDED_STATES:
        return f"{STATE_WORDS[progress.state]}: {name}{tail}"
    if opened_status is not None or opened:
        shown = status_words(opened_status) if opened_status else "opened"
        return f"No run in progress · shown: {name} ({shown}){tail}"
    return "No run in progress"


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 10 min``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass
class Eta:
    """The time left of a run, from the generations this page has seen it train (the
    first one, which also loads and reads every question, counted like the rest)."""

    started_at: float = 0.0
    done: int = 0
    samples: list[float] = field(default_factory=list)

    def start(self, now: float | None = None) -> None:
        self.started_at = time.monotonic() if now is None else now
        self.done = 0

    def left(self, generation_done: int, budget: int, now: float | None = None) -> str:
        """``about 3 min 05 s left`` after generation ``generation_done`` (counted from
        1) of ``budget``; empty at the end or without a budget."""
        self.done += 1
        remaining = budget - generation_done
        if remaining <= 0 or not budget:
            return ""
        now = time.monotonic() if now is None else now
        per = (now - self.started_at) / self.done
        return f"about {duration(per * remaining)} left"


# -------------------------------------------------------------------------- the log


def started_lines(event: RunStarted) -> tuple[str, str]:
    """The log's line for a run that started (and its technical details)."""
    return (
        f"run {event.run_id[:8]} '{event.name}' started: each generation tries "
        f"{event.popsize} candidate coordinators on {event.rollouts} questions each; "
        f"generation {event.start_generation + 1} is running (the first reads every "
        f"question once, the slowest){event.executor_note()}",
        f"{event.n_params} parameters, population {event.popsize} x {event.rollouts} "
        f"rollouts, from stored generation {event.start_generation}",
    )


def generation_lines(event: GenerationStats, budget: int, spend: str) -> tuple[str, str]:
    """The log's line for a generation, in words, and its technical figures (step size,
    where the coordinator's time went)."""
    validation = (
        ""
        if event.validation is None
        else f"; on the validation questions {event.validation:.0%} right"
    )
    of = f" of {budget}" if budget else ""
    return (
        f"generation {event.generation + 1}{of}: the best candidate answered "
        f"{event.best:.0%} right, the average {event.mean:.0%}{validation}; {event.calls} "
        f"worker calls, {dollars(event.dollars, spend)}, {event.wall_s:.1f} s",
        f"best {event.best:.3f}, mean {event.mean:.3f}, median {event.median:.3f}, worst "
        f"{event.worst:.3f}, sigma {event.sigma:.4f}{event.opening_note()}; coordinator "
        f"{event.coordinator_s:.1f} s: {event.tokens_forwarded} tokens in {event.batches} "
        f"forwards of {event.mean_batch:.1f} transcripts{event.recheck_note()}; workers "
        f"{event.worker_s:.1f} s, {event.cache_hits} cached replies",
    )


def finished_lines(event: RunFinished) -> tuple[str, str]:
    best = (
        ""
        if event.best_validation is None
        else f"; its best coordinator answered {event.best_validation:.0%} of the "
        "validation questions right"
    )
    before = (
        "; the work before its first generation (the questions' features, the routing "
        "table, the search basis) used it: raise it on the Budget tab and start again"
        if event.generations == 0 and RunStopReason(event.stop_reason).is_budget
        else ""
    )
    return (
        f"run {event.run_id[:8]} ended after {event.generations} generations: "
        f"{stop_sentence(event.stop_reason).lower()}{best}{before}",
        f"stop reason {event.stop_reason}",
    )


def opened_line(run: StoredRun) -> str:
    s = run.summary
    count = len(run.generations)
    return (
        f"opened run {s.id[:8]} '{s.name}': {count} generation{'' if count == 1 else 's'}, "
        f"{status_words(s.status)}"
    )


def spend_line(spend: Spend, kind: str) -> str:
    """``Spent: 96 episodes, 250 calls, $0.0510 (simulated), 0.2 min``."""
    return f"Spent: {spend.words(kind)}"


# -------------------------------------------------------------------------- config files


def read_config(path: str | Path, *, missing_ok: bool = False) -> RunConfig | None:
    """The run config at ``path`` with the user's defaults (the Settings page's device and
    cache policy) for what it leaves out: the disk reads of loading a config, run in a
    background job. None when ``missing_ok`` and there is no file at ``path``."""
    if missing_ok and not Path(path).is_file():
        return None
    return load_run_config(path)


def write_config(path: str | Path, text: str) -> None:
    """Write a config TOML's ``text`` to ``path`` (a background job)."""
    Path(path).write_text(text, encoding="utf-8")
