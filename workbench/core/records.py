"""What an episode and a run leave behind: their records as frozen dataclasses, and the
words they are told in as enums (a turn's role and verdict, why an episode ended, a run's
status and why it ended).

These are shared by the protocol and the jobs (which make them), the store (which keeps
them) and the pages that show them. They serialise to plain JSON; each enum is a
``StrEnum``, so its members are the very strings stored and compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    """The three roles the coordinator can give a worker (docs/METHOD.md)."""

    THINKER = "thinker"
    WORKER = "worker"
    VERIFIER = "verifier"


ROLES: tuple[Role, ...] = (Role.THINKER, Role.WORKER, Role.VERIFIER)


class Verdict(StrEnum):
    """What a Verifier turn says of the latest answer: ACCEPT ends the episode."""

    ACCEPT = "ACCEPT"
    REVISE = "REVISE"


class StopReason(StrEnum):
    """Why an episode ended."""

    ACCEPTED = "accepted"  # a Verifier said ACCEPT
    MAX_TURNS = "max_turns"  # K turns were used
    VERIFIER_WITHOUT_ANSWER = "verifier_without_answer"  # Verifier before any Worker answer
    WORKER_ERRORS = "worker_errors"  # every worker call failed
    CANCELLED = "cancelled"  # stopped before its end (a served request's client left)


class RunStatus(StrEnum):
    """Where a stored run (of any kind) is in its life."""

    CREATED = "created"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"  # by its user; a training run resumes from its checkpoint
    FINISHED = "finished"
    FAILED = "failed"
    # never stored: a run the store says is running whose process is gone (killed, or the
    # machine restarted) reads so (jobs.shared.effective_status)
    INTERRUPTED = "interrupted"


class RunStopReason(StrEnum):
    """Why a run (of any kind) ended: a training run's budget key that ran out, its user,
    an error; the other jobs end ``done``; a served team when its server shuts down."""

    GENERATIONS = "budget.generations"
    EPISODES = "budget.episodes"
    CALLS = "budget.calls"
    DOLLARS = "budget.dollars"
    MINUTES = "budget.minutes"
    STOPPED = "stopped"
    ERROR = "error"
    DONE = "done"
    SHUTDOWN = "shutdown"

    @property
    def is_budget(self) -> bool:
        """Whether a budget key ran out (``budget.minutes``...)."""
        return self.value.startswith("budget.")

    @classmethod
    def _missing_(cls, value: object) -> RunStopReason | None:
        # "failed" is how the Playground marks a served question that raised: an error
        return cls.ERROR if value == "failed" else None


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One call of one worker in one role, with the coordinator's full decision."""

    index: int
    worker: str  # worker id
    role: Role
    worker_probs: tuple[float, ...]
    role_probs: tuple[float, ...]
    messages: tuple[dict[str, str], ...]  # the chat messages sent to the worker
    response: str = ""
    verdict: Verdict | None = None  # a Verifier turn's, else None
    verdict_parsed: bool = True  # False when a Verifier reply had no readable verdict
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cost: float = 0.0
    usage_estimated: bool = False
    error: str | None = None
    # the oldest earlier turns left out of what the coordinator read for this decision,
    # because the transcript exceeded its backbone's context (transcript.fit_transcript)
    context_omitted: int = 0

    def prompt_text(self) -> str:
        """The chat messages the worker received, as text (``[role]`` over each message's
        content); empty when it was not called."""
        return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["role"] = str(self.role)
        d["worker_probs"] = list(self.worker_probs)
        d["role_probs"] = list(self.role_probs)
        d["messages"] = [dict(m) for m in self.messages]
        if not self.context_omitted:  # stored only when it happened
            del d["context_omitted"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Turn:
        d = dict(d)
        d["role"] = Role(d["role"])
        d["verdict"] = None if d.get("verdict") is None else Verdict(d["verdict"])
        d["worker_probs"] = tuple(d["worker_probs"])
        d["role_probs"] = tuple(d["role_probs"])
        d["messages"] = tuple(dict(m) for m in d["messages"])
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class Episode:
    """One query solved over at most K turns, graded."""

    id: str
    suite: str
    task_id: str
    pool: tuple[str, ...]  # worker ids in head-row order
    max_turns: int
    turns: tuple[Turn, ...]
    answer: str | None  # the latest Worker output, or None if no Worker answered
    reward: float
    stop_reason: StopReason
    grade_details: dict[str, Any] = field(default_factory=dict, hash=False)
    seed: int | None = None
    run_id: str | None = None
    generation: int | None = None
    candidate: int | None = None
    created_at: float = 0.0  # unix time

    @property
    def tokens_in(self) -> int:
        return sum(t.tokens_in for t in self.turns)

    @property
    def tokens_out(self) -> int:
        return sum(t.tokens_out for t in self.turns)

    @property
    def cost(self) -> float:
        return sum(t.cost for t in self.turns)

    @property
    def calls(self) -> int:
        return len(self.turns)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pool"] = list(self.pool)
        d["stop_reason"] = str(self.stop_reason)
        d["turns"] = [t.to_dict() for t in self.turns]
        d["tokens_in"], d["tokens_out"], d["cost"] = self.tokens_in, self.tokens_out, self.cost
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Episode:
        d = {k: v for k, v in d.items() if k not in ("tokens_in", "tokens_out", "cost")}
        d["pool"] = tuple(d["pool"])
        d["stop_reason"] = StopReason(d["stop_reason"])
        d["turns"] = tuple(Turn.from_dict(t) for t in d["turns"])
        return cls(**d)


_RESULT_OPTIONAL = (
    "search_basis_alpha",
    "sigma0_head_scale",
    "backbone_device",
    "backbone_precision",
    "executor",
    "actors",
    "nodes",
    "pid",
    "host",
)


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What a training run's record says about it: generations done, the best validation
    reward and its generation, the parameter count, the spend so far (episodes, calls,
    dollars, minutes), and, while it runs, which process on which host runs it."""

    generations: int
    best_validation: float | None
    best_validation_generation: int | None
    n_params: int
    spend: dict[str, float]
    search_basis_alpha: float | None = None
    sigma0_head_scale: float | None = None
    backbone_device: str | None = None  # what the coordinator's features were computed on
    backbone_precision: str | None = None  # and in (fp32, bf16-mixed, bf16)
    executor: str | None = None  # where its training episodes ran: local, ray
    actors: int | None = None  # with ray: how many actors
    nodes: list[str] | None = None  # and on which nodes (host names)
    pid: int | None = None
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON (``pid`` and ``host`` only while they are known)."""
        data = asdict(self)
        for name in ("pid", "host"):
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        """A result from its stored JSON."""
        return cls(
            generations=int(data["generations"]),
            best_validation=data.get("best_validation"),
            best_validation_generation=data.get("best_validation_generation"),
            n_params=int(data.get("n_params") or 0),
            spend=dict(data.get("spend") or {}),
            **{name: data.get(name) for name in _RESULT_OPTIONAL},
        )


@dataclass(frozen=True, kw_only=True)
class GenerationStats:
    """One generation's figures: what the CLI prints, the store keeps and the GUI plots;
    the trainer's event and ``Store.generation_stats`` give this one shape."""

    run_id: str
    generation: int
    best: float
    mean: float
    median: float
    worst: float
    sigma: float
    evaluations: int  # training episodes this generation
    calls: int
    tokens: int
    dollars: float
    cache_hits: int
    wall_s: float
    coordinator_s: float  # backbone busy time
    worker_s: float  # summed worker call latency
    features_requested: int
    features_computed: int
    usage: dict[str, int]  # "worker/role" -> turns
    validation: float | None  # reward of the distribution mean on validation, when evaluated
    best_validation: float | None
    totals: dict[str, float]  # spend so far: episodes, calls, dollars, minutes
    # where the coordinator's time went (defaults: generations recorded before these)
    tokens_forwarded: int = 0  # new tokens through the backbone
    batches: int = 0  # backbone forwards
    mean_batch: float = 0.0  # transcripts per backbone forward
    rechecks: int = 0  # argmax decisions near a tie recomputed in fp32 (bf16-mixed)
    recheck_tokens: int = 0  # new tokens those fp32 recomputations forwarded
    opening_share: float = 0.0  # uniform share of training openings (optimizer.exploring_starts)

    def opening_note(self) -> str:
        """The exploring starts of this generation, for a progress line: ``", openings
        60% uniform"``, or nothing once (or where) the openings are the head's own."""
        return f", openings {self.opening_share:.0%} uniform" if self.opening_share else ""

    def recheck_note(self) -> str:
        """What the coordinator recomputed in fp32, for a progress line: ``", 8 fp32
        rechecks (423 tok)"``, or nothing where no decision was near a tie (or the backbone
        computes in fp32)."""
        if not self.rechecks:
            return ""
        return f", {self.rechecks} fp32 rechecks ({self.recheck_tokens} tok)"

    def to_stored(self) -> dict[str, Any]:
        """The stats as the store keeps them for the run's generation (the run id and the
        generation number are the row's keys; ``Store.generation_stats`` reads them back)."""
        data = asdict(self)
        del data["run_id"], data["generation"]
        return data


@dataclass
class Spend:
    """What a run has used so far: its episodes, worker calls, dollars and seconds (a
    training run's is restored on resume; every ended run stores ``as_totals``)."""

    episodes: int = 0
    calls: int = 0
    dollars: float = 0.0
    seconds: float = 0.0

    def add(
        self, episodes: int = 0, calls: int = 0, dollars: float = 0.0, seconds: float = 0.0
    ) -> None:
        """Count more spend in this one."""
        self.episodes += episodes
        self.calls += calls
        self.dollars += dollars
        self.seconds += seconds

    def as_totals(self) -> dict[str, float]:
        return {
            "episodes": self.episodes,
            "calls": self.calls,
            "dollars": self.dollars,
            "minutes": self.seconds / 60,
        }


def worker_calls(episodes: Sequence[Episode]) -> int:
    """The worker calls ``episodes`` made (a Verifier chosen before any answer makes none)."""
    return sum(len([t for t in e.turns if t.messages]) for e in episodes)
