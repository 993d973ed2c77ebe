"""Replay: a cursor over one stored episode, turn by turn, for the Replay page and the
``replay`` command. It holds no Qt; views subscribe to ``changed``.

At turn ``i`` it exposes what the coordinator saw (the transcript before the turn), what
it decided (both distributions, the chosen worker and role), what the worker received
and answered, and, at the end, the final answer, the reference and the grader's details.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.core.records import ROLES, Episode, StopReason, Turn
from workbench.core.spend import dollars, spend_kind
from workbench.core.tasks.model import Task
from workbench.core.transcript import render_transcript


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The coordinator's decision at one turn, ready to draw as two bar charts."""

    workers: tuple[str, ...]
    worker_probs: tuple[float, ...]
    chosen_worker: int
    roles: tuple[str, ...]
    role_probs: tuple[float, ...]
    chosen_role: int


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How an episode ended: the final answer (None: no Worker answered), the task's
    reference (None: its suite is gone), the reward, why it ended and the grader's
    details."""

    answer: str | None
    reference: str | None
    reward: float
    stop_reason: StopReason
    grader: dict[str, Any] = field(hash=False)

    @property
    def right(self) -> bool:
        return self.reward >= 1.0


THINKER_CHOSE = "role chosen by the Thinker before it (the coordinator's choice overridden)"


def role_label(episode: Episode, index: int) -> str:
    """Turn ``index``'s role as replays show it: marked "(Thinker's pick)" when the
    previous Thinker's suggested role replaced the coordinator's (protocol option
    ``thinker_suggests_role``; the turns are listed in ``grade_details``), or "(worker
    only)" when the turn was restricted to the Worker role so that the episode would not
    end without an answer (``final_turn = "worker"``, the server's default)."""
    role = str(episode.turns[index].role)
    if index in episode.grade_details.get("worker_only_turns", ()):
        return f"{role} (worker only)"
    chosen_by_thinker = index in episode.grade_details.get("thinker_role_turns", ())
    return f"{role} (Thinker's pick)" if chosen_by_thinker else role


def turn_cost(turn: Turn) -> str:
    """A turn's dollars, labelled simulated when a sandbox worker answered it."""
    return dollars(turn.cost, spend_kind([turn.worker]), 6)


def turn_verdict(turn: Turn) -> str:
    """What became of a turn, in a word or two: the verifier's verdict, the error, or
    that the worker was not called."""
    if turn.error:
        return f"error: {turn.error}"
    if not turn.messages:
        return "not called"
    if turn.verdict and not turn.verdict_parsed:
        return f"{turn.verdict} (unreadable: REVISE)"
    return str(turn.verdict or "")


class Replay:
    """One episode and the current turn index (0 .. n_turns - 1)."""

    def __init__(self, episode: Episode, task: Task | None = None):
        if not episode.turns:
            raise ValueError(f"episode {episode.id} has no turns to replay")
        self.episode = episode
        self.task = task
        self.index = 0
        self.changed: list[Callable[[int], None]] = []  # called with the new index

    # -- navigation -----------------------------------------------------------

    @property
    def n_turns(self) -> int:
        return len(self.episode.turns)

    def go(self, index: int) -> None:
        index = max(0, min(self.n_turns - 1, index))
        if index != self.index:
            self.index = index
            for callback in list(self.changed):
                callback(index)

    def next(self) -> None:
        self.go(self.index + 1)

    def previous(self) -> None:
        self.go(self.index - 1)

    @property
    def at_end(self) -> bool:
        return self.index == self.n_turns - 1

    # -- what the current turn shows -------------------------------------------

    @property
    def turn(self) -> Turn:
        return self.episode.turns[self.index]

    def transcript_before(self) -> str:
        """What the coordinator read before deciding this turn."""
        turns = self.episode.turns[: self.index]
        if self.task is not None:
            return render_transcript(
                self.task, turns, self.episode.turns[self.index].context_omitted
            )
        # the task is unknown (a suite that is no longer installed): the turns alone
        return "\n\n".join(f"{t.role}/{t.worker}: {t.response}" for t in turns)

    def decision(self) -> Decision:
        turn = self.turn
        return Decision(
            workers=self.episode.pool,
            worker_probs=turn.worker_probs,
            chosen_worker=self.episode.pool.index(turn.worker),
            roles=tuple(str(r) for r in ROLES),
            role_probs=turn.role_probs,
            chosen_role=ROLES.index(turn.role),
        )

    def prompt(self) -> str:
        """The messages the worker received, as text (empty when it was not called)."""
        return self.turn.prompt_text()

    def outcome(self) -> Outcome:
        """The episode's end: answer, reference, reward, stop reason, grader details."""
        task = self.task
        reference = None
        if task is not None:
            reference = task.solution if task.kind == "code" and task.solution else task.answer
        return Outcome(
            answer=self.episode.answer,
            reference=reference,
            reward=self.episode.reward,
            stop_reason=self.episode.stop_reason,
            grader=dict(self.episode.grade_details),
        )
