"""The Replay page's model: the runs it offers (named, dated, never a stored dict), a run's
episodes in the list's order with the filters' choices, each episode's row in words (how
it ended: "accepted", "answered", "out of turns" only when the turns ran out before an
answer stood), the list's note and the episode's header. Built from core's typed
objects (``RunSummary``, ``EpisodeSummary``, ``Episode``) and free of Qt: a test reads it
without a window. The store reads (``read_runs``, ``read_episodes``, ``read_episode``,
``export_episode``) run in the page's background jobs.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.jobs.shared import NO_EPISODES_WHY, RunSummary, list_runs, named_for_its_day
from workbench.core.records import Episode, Role, StopReason, Turn, Verdict
from workbench.core.store import EpisodeSummary, Store
from workbench.core.tasks.model import Task
from workbench.core.tasks.suites import load_suite
from workbench.core.workspace import Workspace
from workbench.gui.runs_model import started_text
from workbench.gui.words import plural, stop_sentence

log = logging.getLogger(__name__)

EPISODE_COLUMNS = ("Question", "Result", "Turns", "Gen.", "Cand.", "How it ended")
LOOSE = "loose:"  # the runs list's entry for episodes stored outside any run
KIND_WORDS = {
    "train": "training",
    "eval": "evaluation",
    "serve": "Playground",
    "headroom": "headroom check",
}
EPISODE_STOPS = (
    StopReason.ACCEPTED,
    StopReason.MAX_TURNS,
    StopReason.VERIFIER_WITHOUT_ANSWER,
    StopReason.WORKER_ERRORS,
)
OUTCOMES = {"any result": (None, None), "right": (1.0, None), "not right": (None, 0.9999)}


# ---------------------------------------------------------------------- how it ended

ENDING_WORDS = {
    StopReason.ACCEPTED: "accepted",
    StopReason.VERIFIER_WITHOUT_ANSWER: "Verifier too early",
    StopReason.WORKER_ERRORS: "calls failed",
    StopReason.CANCELLED: "cancelled",
}
ANSWERED = "answered"
OUT_OF_TURNS = "out of turns"


def ending_word(stop_reason: StopReason | str, last_role: Role | str | None) -> str:
    """How an episode ended, in a list's word or two. An episode stopped at its turn limit
    whose last turn was a Worker's answered: that answer is graded ("answered", the
    one-turn episode's normal end); "out of turns" is an episode whose turns ran out on a
    Thinker's or a Verifier's turn."""
    reason = StopReason(stop_reason)
    if reason is StopReason.MAX_TURNS:
        return (
            ANSWERED if last_role is not None and Role(last_role) is Role.WORKER else OUT_OF_TURNS
        )
    return ENDING_WORDS.get(reason, stop_sentence(str(reason)))


def ending_sentence(stop_reason: StopReason | str, last_role: Role | str | None) -> str:
    """How an episode ended, as a sentence (the list's tooltip, the episode's header)."""
    if ending_word(stop_reason, last_role) == ANSWERED:
        return "A Worker answered on its last turn"
    return stop_sentence(str(stop_reason))


def episode_ending(episode: Episode) -> tuple[str, str]:
    """An episode's ending word and sentence (``ending_word``, ``ending_sentence``)."""
    last = episode.turns[-1].role if episode.turns else None
    return ending_word(episode.stop_reason, last), ending_sentence(episode.stop_reason, last)


def turn_words(turn: Turn) -> str:
    """What became of a turn, in words (its card's last line)."""
    if turn.error:
        return f"The call failed: {turn.error}"
    if not turn.messages:
        return "Not called: a Verifier before any answer ends the episode"
    if turn.verdict and not turn.verdict_parsed:
        return "No readable verdict: counted as a request to revise"
    if turn.verdict == Verdict.ACCEPT:
        return "Verdict: accepted the answer"
    if turn.verdict:
        return "Verdict: asked for a revision"
    if Role(turn.role) is Role.WORKER:
        return "Gave an answer (graded at the end)"
    return "Gave guidance (not graded)"


REPLY_HEADINGS = {
    Role.WORKER: "It answered:",
    Role.THINKER: "Its guidance:",
    Role.VERIFIER: "Its check:",
}


def reply_heading(turn: Turn) -> str:
    """The words over a turn's reply, by its role."""
    return REPLY_HEADINGS.get(Role(turn.role), "It replied:")


# ---------------------------------------------------------------------- the runs offered


@dataclass(frozen=True)
class RunChoice:
    """A run as the Replay page's run list offers it: its id (``LOOSE`` for the episodes
    stored outside any run), its label (title, kind and date) and kind."""

    run_id: str
    label: str
    kind: str


def run_choice(run: RunSummary, now: float | None = None) -> RunChoice:
    """``sandbox routing · training · today 14:05``; a run whose name carries its day
    (``sandbox routing, Dec 6``) by the time alone: ``sandbox routing, Dec 6 · training ·
    14:05``."""
    kind = KIND_WORDS.get(run.kind, run.kind)
    when = started_text(run.created_at, now)
    if named_for_its_day(run.title, run.created_at):
        when = time.strftime("%H:%M", time.localtime(run.created_at))
    return RunChoice(run.id, f"{run.title} · {kind} · {when}", run.kind)


@dataclass(frozen=True)
class RunsOffered:
    """The Replay page's run list: the runs with episodes to replay (``choices``), and how
    many runs it leaves out for having none (``unlisted``)."""

    choices: list[RunChoice]
    unlisted: int


def read_runs(workspace: Workspace) -> RunsOffered:
    """The runs with episodes to replay, newest first, then the loose episodes if any (a
    background job). A run with no episode stored (trained on a routing table, a
    cross-validation, one whose first episode is still being played) is counted, not
    offered: chosen, it would show an empty list."""
    runs = [r for r in list_runs(workspace, kind=None) if r.kind != "frontier"]
    with Store.open(workspace) as store:
        with_episodes = store.runs_with_episodes()
    choices = [run_choice(r) for r in runs if r.id in with_episodes]
    if None in with_episodes:
        choices.append(RunChoice(LOOSE, "single episodes (not in a run)", ""))
    return RunsOffered(choices, unlisted=sum(r.id not in with_episodes for r in runs))


def runs_note(offered: RunsOffered) -> str:
    """The line under the run list: what it leaves out and where those runs are shown;
    with no run at all, how episodes come to be here."""
    if not offered.choices and not offered.unlisted:
        return "No episodes yet: a training run plays them, and so does the Playground."
    if not offered.unlisted:
        return ""
    return (
        f"Not listed: {plural(offered.unlisted, 'run')} without episodes ({NO_EPISODES_WHY})."
        " Runs and Evaluate show them."
    )


# ---------------------------------------------------------------------- a run's episodes


@dataclass(frozen=True, kw_only=True)
class EpisodeList:
    """What the list shows for a run: the episodes in order (best candidate first), how
    many matched, the best (generation, candidate) and its share right, and the choices
    the filters offer (generations, candidates, workers)."""

    episodes: list[EpisodeSummary]
    matched: int
    best: tuple[int | None, int | None] | None
    best_share: float
    generations: list[int]
    candidates: list[int]
    workers: list[str]


def best_first(
    episodes: Sequence[EpisodeSummary],
) -> tuple[list[EpisodeSummary], tuple[int | None, int | None] | None, float]:
    """The episodes ordered by their candidate's share of right answers, best first (a
    later generation first among equals), then by question; with the best (generation,
    candidate) and its share. A candidate is a (generation, candidate) pair: a training
    candidate, the validation of a generation, or an evaluated system."""
    groups: dict[tuple[int | None, int | None], list[EpisodeSummary]] = defaultdict(list)
    for e in episodes:
        groups[(e.generation, e.candidate)].append(e)
    if not groups:
        return [], None, 0.0
    share = {key: sum(e.reward for e in group) / len(group) for key, group in groups.items()}
    order = sorted(
        groups,
        key=lambda key: (-share[key], -(key[0] if key[0] is not None else -1), key[1] or 0),
    )
    ordered = [e for key in order for e in sorted(groups[key], key=lambda e: e.task_id)]
    return ordered, order[0], share[order[0]]


def candidate_word(kind: str) -> str:
    """What a candidate is in a run of ``kind``: an evaluation's are the systems."""
    return "system" if kind == "eval" else "candidate"


def candidate_words(summary: EpisodeSummary, kind: str) -> tuple[str, str]:
    """An episode's candidate as the list's cell shows it (numbered from 1) and its
    tooltip."""
    if summary.candidate is None:
        if summary.generation is None:
            return "–", "not part of a generation"
        return "validation", "the search's centre, scored on the validation questions"
    return str(summary.candidate + 1), f"{candidate_word(kind)} {summary.candidate + 1}"


def result_words(reward: float) -> str:
    return "✓ right" if reward >= 1.0 else ("partly" if reward > 0 else "✗ wrong")


def list_note(listing: EpisodeList, shown: int, kind: str) -> str:
    """The line under the list: how many episodes, how many shown, the best first."""
    note = plural(listing.matched, "episode") + (
        f" (the first {shown} shown: narrow them with the filters)"
        if shown < listing.matched
        else ""
    )
    # episodes outside any generation and candidate (served, single) form one group
    if listing.best not in (None, (None, None)) and listing.matched:
        generation, candidate = listing.best
        who = "validation" if candidate is None else f"{candidate_word(kind)} {candidate + 1}"
        where = f"generation {generation + 1}, {who}" if generation is not None else who
        note += f". Best first: {where}, {listing.best_share:.0%} right."
    return note


def read_episodes(
    workspace: Workspace, run_id: str | None, query: dict[str, Any], needle: str
) -> EpisodeList:
    """The run's episodes matching the filters (``run_id`` ``LOOSE``: those outside any
    run), best candidate first, and what the filters can offer (a background job)."""
    loose = run_id == LOOSE
    run = None if loose else run_id
    with Store.open(workspace) as store:
        found = store.list_episodes(run, outside_runs=loose, **query)
        every = (
            store.list_episodes(run, outside_runs=loose)
            if any(v is not None for v in query.values())
            else found
        )
        sample = next(iter(every), None)
        pool = store.get_episode(sample.id).pool if sample is not None else ()
    if needle:
        found = [e for e in found if needle in e.task_id]
    ordered, best, share = best_first(found)
    return EpisodeList(
        episodes=ordered,
        matched=len(ordered),
        best=best,
        best_share=share,
        generations=sorted({e.generation for e in every if e.generation is not None}),
        candidates=sorted({e.candidate for e in every if e.candidate is not None}),
        workers=list(pool),
    )


# ---------------------------------------------------------------------- one episode


def episode_header(episode: Episode, kind: str) -> str:
    """The line over the conversation (rich text): right or not, the question, where
    the episode was played, its turns and how it ended."""
    where = ""
    if episode.generation is not None:
        where = f" · generation {episode.generation + 1}"
    if episode.candidate is not None:
        where += f" · {candidate_word(kind)} {episode.candidate + 1}"
    _, sentence = episode_ending(episode)
    return (
        f"<b>{'✓ Right' if episode.reward >= 1.0 else '✗ Not right'}</b> · question "
        f"{episode.task_id}{where} · {plural(len(episode.turns), 'turn')} · {sentence}"
    )


def read_episode(workspace: Workspace, episode_id: str) -> tuple[Episode, Task | None]:
    """An episode and its task (None when its suite is gone), read in a background job."""
    with Store.open(workspace) as store:
        episode = store.get_episode(episode_id)
    try:
        task = load_suite(episode.suite, workspace).get(episode.task_id)
    except (LookupError, ValueError, OSError) as exc:  # the suite may be gone
        log.info("task of episode %s unavailable: %s", episode_id, exc)
        task = None
    return episode, task


def export_episode(workspace: Workspace, episode_id: str, path: str) -> str:
    """Write the episode's export file to ``path`` (a background job)."""
    with Store.open(workspace) as store:
        text = store.export_episode_json(episode_id)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
