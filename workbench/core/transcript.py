"""The coordinator's view of an episode: the transcript its backbone reads (the query,
then each earlier turn as ``Role/worker: content``), and the same fitted to the
coordinator's context (``fit_transcript``). Played episodes (``protocol``), the search's
gradient baselines (``optimizers``), a routing table's features and replay all read it
from here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workbench.core.records import Role, Turn
from workbench.core.tasks.model import Task

ROLE_TITLES = {Role.THINKER: "Thinker", Role.WORKER: "Worker", Role.VERIFIER: "Verifier"}


def render_transcript(task: Task, turns: Sequence[Turn], omitted: int = 0) -> str:
    """The coordinator's view: the query, then each earlier turn as ``role/worker: content``,
    whole (the paper reads the transcript), the oldest ``omitted`` turns left out (a line
    says how many: ``fit_transcript``)."""
    parts = [f"Query:\n{task.full_prompt()}"]
    if omitted:
        parts.append(f"[{omitted} earlier turns omitted]")
    for turn in turns[omitted:]:
        body = turn.response if turn.error is None else f"[call failed: {turn.error}]"
        parts.append(f"{ROLE_TITLES[turn.role]}/{turn.worker}: {body}")
    return "\n\n".join(parts)


def fit_transcript(
    task: Task, turns: Sequence[Turn], fits: Callable[[str], bool]
) -> tuple[str, int]:
    """``render_transcript`` within the coordinator's context: while ``fits`` (the policy's
    ``context_fits``) says the text is too long, the oldest turns are dropped first; returns
    the text and how many turns were dropped (recorded on the turn decided from it)."""
    omitted = 0
    text = render_transcript(task, turns)
    while omitted < len(turns) and not fits(text):
        omitted += 1
        text = render_transcript(task, turns, omitted)
    return text, omitted
