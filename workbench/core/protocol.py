"""The multi-turn Thinker / Worker / Verifier protocol (docs/METHOD.md).

Each turn the coordinator reads the transcript (the query, then every earlier turn as
``role/worker: content``) and picks (worker, role); the chosen worker gets its role's
prompt, built from the query and the earlier turns it needs; its reply is appended.
The episode stops at the first Verifier ACCEPT or after K turns; its answer is the
latest Worker output. Role prompts are templates in ``resources/prompts`` (editable, or
pass another folder).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import string
import time
import tomllib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.config import ProtocolSection
from workbench.core.coordinator import Action
from workbench.core.policies import Policy
from workbench.core.records import ROLES, Episode, Role, StopReason, Turn, Verdict
from workbench.core.tasks.graders import grade_cached
from workbench.core.tasks.model import Task
from workbench.core.transcript import fit_transcript
from workbench.core.workers.base import EpisodeContext, Worker
from workbench.core.workspace import resources_dir

log = logging.getLogger(__name__)

# [protocol] thinker_suggests_role: what the Thinker is asked, and how its reply is read
SUGGEST_ROLE_INSTRUCTION = (
    "\n\nEnd your reply with one line naming the role that should act next: "
    "`Next role: Thinker`, `Next role: Worker` or `Next role: Verifier`."
)
_SUGGESTED = re.compile(
    r"next\s+role\s*[:=\-]\s*[*_`\s]*(thinker|worker|verifier)\b", re.IGNORECASE
)


# --------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class Prompts:
    """The three role templates (``string.Template``: ``$query``, ``$history``,
    ``$answer``, ``$format``) and the closing instruction per task kind."""

    thinker: str
    worker: str
    verifier: str
    formats: dict[str, str]

    @classmethod
    def load(cls, folder: str | Path | None = None) -> Prompts:
        folder = Path(folder) if folder is not None else resources_dir() / "prompts"
        texts = {}
        for role in ("thinker", "worker", "verifier"):
            path = folder / f"{role}.txt"
            if not path.is_file():
                raise FileNotFoundError(
                    f"role prompt {path} is missing: copy it from {resources_dir() / 'prompts'}"
                )
            texts[role] = path.read_text(encoding="utf-8")
        formats_path = folder / "formats.toml"
        if not formats_path.is_file():
            formats_path = resources_dir() / "prompts" / "formats.toml"
        formats = tomllib.loads(formats_path.read_text(encoding="utf-8"))
        return cls(texts["thinker"], texts["worker"], texts["verifier"], formats)

    def template(self, role: Role) -> string.Template:
        return string.Template(
            {Role.THINKER: self.thinker, Role.WORKER: self.worker, Role.VERIFIER: self.verifier}[
                role
            ]
        )


def _history_for(role: Role, turns: Sequence[Turn]) -> str:
    """The earlier turns a role sees: a Thinker sees everything; a Worker sees the
    guidance and critiques and its team's previous answer; a Verifier sees only the
    answer under review (it judges independently)."""
    if role is Role.VERIFIER:
        return ""
    lines = []
    last_answer = max(
        (i for i, t in enumerate(turns) if t.role is Role.WORKER and t.error is None), default=None
    )
    for i, turn in enumerate(turns):
        if turn.error is not None or not turn.response:
            continue
        if role is Role.WORKER and turn.role is Role.WORKER and i != last_answer:
            continue
        title = {
            Role.THINKER: "Guidance",
            Role.WORKER: "Previous answer",
            Role.VERIFIER: "Critique",
        }[turn.role]
        lines.append(f"{title} ({turn.worker}):\n{turn.response}")
    return ("\n" + "\n\n".join(lines) + "\n") if lines else ""


def build_messages(
    prompts: Prompts, role: Role, task: Task, turns: Sequence[Turn], answer: str | None
) -> tuple[dict[str, str], ...]:
    """The chat messages a worker receives for ``role`` at this point of the episode."""
    content = prompts.template(role).safe_substitute(
        query=task.full_prompt(),
        history=_history_for(role, turns),
        answer=answer or "",
        format=prompts.formats.get(task.kind, ""),
    )
    return ({"role": "user", "content": content.strip()},)


# --------------------------------------------------------------------------- verdicts

_VERDICT = re.compile(r"^(?:verdict[\s*_:\-]*)?[\s*_`]*(accept|revise)(?![a-z])", re.IGNORECASE)
_LEAD = re.compile(r"^[\s*_#>`'\"\[\(]+")


def parse_verdict(text: str) -> tuple[Verdict, bool]:
    """(``ACCEPT`` or ``REVISE``, parsed). Tolerates case, markdown and leading space;
    a reply that does not start with a verdict counts as REVISE, unparsed."""
    head = _LEAD.sub("", text or "")
    match = _VERDICT.match(head)
    if match is None:
        return Verdict.REVISE, False
    return Verdict(match.group(1).upper()), True


def suggested_role(text: str) -> Role | None:
    """The role a Thinker's reply names for the next turn (its last ``Next role: X``
    line), or None when it names none."""
    found = _SUGGESTED.findall(text or "")
    return Role(found[-1].lower()) if found else None


# --------------------------------------------------------------------------- episode


def turn_seed(seed: int | None, index: int) -> int | None:
    """The seed sent with turn ``index``'s call of an episode seeded ``seed`` (a response
    cache key holds it: ``headroom`` asks whether a call is already recorded)."""
    if seed is None:
        return None
    return int.from_bytes(hashlib.sha256(f"{seed}:{index}".encode()).digest()[:4], "big")


FINAL_TURNS = ("free", "worker")


def worker_only_turn(settings: EpisodeSettings, index: int, role: Role, answer: str | None) -> bool:
    """Whether turn ``index`` is restricted to the Worker role (``final_turn = "worker"``):
    no Worker has answered yet and the turn would otherwise end the episode without an
    answer, being the last of K or a Verifier's. The coordinator's worker choice stands."""
    return (
        settings.final_turn == "worker"
        and answer is None
        and role is not Role.WORKER
        and (index == settings.max_turns - 1 or role is Role.VERIFIER)
    )


_PROTOCOL = ProtocolSection()


@dataclass(frozen=True, kw_only=True)
class EpisodeSettings:
    """How episodes are played, the same for every episode of a run: the suite name they
    are recorded under, the turn limit K, the worker calls' output limit and temperature,
    and the role prompts (None: the bundled ones). ``thinker_suggests_role`` (off by
    default; the released code's option): a Thinker is asked to name the next role, and
    the role it names replaces the coordinator's role choice for the next turn (the
    coordinator still picks the worker)."""

    # a run's [protocol] defaults are the defaults here too (one source: config.py)
    suite: str = ""
    max_turns: int = _PROTOCOL.max_turns
    max_tokens: int = _PROTOCOL.max_tokens
    temperature: float = _PROTOCOL.temperature
    prompts: Prompts | None = None
    thinker_suggests_role: bool = _PROTOCOL.thinker_suggests_role
    final_turn: str = "free"
    # the roles the coordinator may choose (``[protocol] roles``); the head keeps a row
    # for every role of ROLES and the others' probabilities are masked to zero
    roles: tuple[str, ...] = _PROTOCOL.roles

    @classmethod
    def of(
        cls,
        protocol: ProtocolSection,
        suite: str,
        *,
        prompts: Prompts | None = None,
        max_turns: int | None = None,
        final_turn: str = "free",
    ) -> EpisodeSettings:
        """The settings of a run's ``[protocol]`` section, the one place they are read:
        its turn limit (``max_turns`` instead where a caller plays fewer, as the headroom
        check's one turn or a served team's own limit), output limit, temperature,
        Thinker's role suggestion and roles, for episodes recorded under ``suite``."""
        return cls(
            suite=suite,
            max_turns=protocol.max_turns if max_turns is None else max_turns,
            max_tokens=protocol.max_tokens,
            temperature=protocol.temperature,
            prompts=prompts,
            thinker_suggests_role=protocol.thinker_suggests_role,
            final_turn=final_turn,
            roles=protocol.roles,
        )

    def __post_init__(self) -> None:
        if self.final_turn not in FINAL_TURNS:
            raise ValueError(
                f"unknown final_turn '{self.final_turn}': use {' or '.join(FINAL_TURNS)}"
            )
        check_roles(self.roles)


def check_roles(roles: Sequence[str]) -> tuple[str, ...]:
    """``roles`` checked: a non-empty set of the protocol's roles, each once."""
    names = [str(r) for r in ROLES]
    bad = [r for r in roles if r not in names]
    if bad or not roles or len(set(roles)) != len(roles):
        raise ValueError(
            f"protocol roles {list(roles)!r} are invalid: name each of {', '.join(names)} "
            'at most once, at least one (e.g. roles = ["worker"] for a pool of final answers)'
        )
    return tuple(roles)


def mask_roles(action: Action, roles: Sequence[str], rng: np.random.Generator | None) -> Action:
    """``action`` with its role distribution restricted to ``roles`` (the other roles'
    logits masked to minus infinity: their probabilities zeroed, the rest renormalised).
    A chosen role that is allowed stands; otherwise the role is drawn again from the
    masked distribution (with ``rng``) or its argmax taken (without): together, a draw
    from the masked distribution. Unchanged when every role is allowed."""
    if len(roles) == len(ROLES):
        return action
    allowed = np.array([str(r) in roles for r in ROLES])
    p = np.asarray(action.role_probs, dtype=np.float64) * allowed
    total = p.sum()
    p = p / total if total > 0 else allowed / allowed.sum()
    role = action.role
    if not allowed[role]:
        role = int(rng.choice(len(p), p=p)) if rng is not None else int(np.argmax(p))
    return Action(action.worker, role, action.worker_probs, tuple(float(x) for x in p))


def mask_workers(
    action: Action, answers: Sequence[bool], rng: np.random.Generator | None
) -> Action:
    """``action`` with its worker distribution restricted to the workers that can answer
    this task (``answers``: a recorded worker without a recorded answer for it cannot),
    as ``mask_roles`` restricts roles: the others' probabilities zeroed and the rest
    renormalised, a chosen worker that can answer kept, otherwise one drawn from the
    masked distribution (with ``rng``) or its argmax taken. Unchanged when every worker
    can answer, or when the policy gives those that can no probability at all (a single
    worker's baseline): that worker is called and its miss recorded on the turn."""
    if all(answers):
        return action
    allowed = np.array(answers, dtype=bool)
    p = np.asarray(action.worker_probs, dtype=np.float64) * allowed
    total = p.sum()
    if total <= 0:
        return action
    p = p / total
    worker = action.worker
    if not allowed[worker]:
        worker = int(rng.choice(len(p), p=p)) if rng is not None else int(np.argmax(p))
    return Action(worker, action.role, tuple(float(x) for x in p), action.role_probs)


@dataclass(frozen=True)
class EpisodeTag:
    """Where an episode is recorded: its run, generation and candidate (training), and its
    id (default: a fresh one)."""

    run_id: str | None = None
    generation: int | None = None
    candidate: int | None = None
    episode_id: str | None = None


def episode_gate(concurrency: int, episodes: int) -> asyncio.Semaphore:
    """The gate for ``episodes`` episodes run together: at most ``concurrency`` in flight,
    or all of them when ``concurrency`` is 0 (``optimizer.concurrency``'s default), so
    their coordinator decisions meet in few, large backbone forwards."""
    return asyncio.Semaphore(concurrency or max(episodes, 1))


async def run_episode(
    policy: Policy,
    pool: Sequence[Worker],
    task: Task,
    settings: EpisodeSettings = EpisodeSettings(),
    *,
    rng: np.random.Generator | None = None,
    seed: int | None = None,
    tag: EpisodeTag = EpisodeTag(),
    on_turn: Callable[[Turn], None] | None = None,
) -> Episode:
    """Solve ``task`` with ``pool`` over at most ``settings.max_turns`` turns and grade it.

    ``policy`` chooses each turn's worker and role: ``rng`` samples its choices
    (training); None takes the argmax (evaluation). ``seed`` seeds each worker call. Each
    call carries the turn's ``EpisodeContext`` (the task among it). A failed call is
    recorded on its turn and the episode goes on; an episode whose every call failed ends
    with reward 0. With ``settings.thinker_suggests_role`` the turns whose role a
    Thinker's suggestion replaced are listed in ``grade_details["thinker_role_turns"]``
    (their ``role_probs`` stay the coordinator's); with ``settings.final_turn`` ``worker``
    the turns restricted to the Worker role are in ``grade_details["worker_only_turns"]``.
    A worker that cannot answer ``task`` (a recorded worker without its answer) is masked
    out of the policy's worker choice (``mask_workers``) while another can; when none of
    the policy's choices can, the call is made and its ``NotRecorded`` miss recorded.
    ``on_turn`` hears each turn once recorded (a caller that cancels the episode keeps
    the turns already played).
    """
    coordinator = policy
    max_turns, max_tokens, temperature = (
        settings.max_turns,
        settings.max_tokens,
        settings.temperature,
    )
    if len(pool) != coordinator.n_workers:
        raise ValueError(
            f"the coordinator's head has {coordinator.n_workers} worker rows but the pool has "
            f"{len(pool)} workers: build the coordinator for this pool"
        )
    if max_turns < 1:
        raise ValueError("max_turns must be at least 1")
    prompts = settings.prompts or Prompts.load()
    answer: str | None = None
    thinkers: list[str] = []
    stop = StopReason.MAX_TURNS
    suggested: Role | None = None  # the last Thinker's suggestion for this turn
    overridden: list[int] = []
    forced: list[int] = []  # turns restricted to the Worker role (final_turn = "worker")
    turns: list[Turn] = _Turns(on_turn) if on_turn is not None else []
    answering = tuple(w.covers(task) for w in pool)  # recorded ones may lack this task
    for index in range(max_turns):
        transcript, omitted = fit_transcript(task, turns, coordinator.context_fits)
        action = mask_roles(await coordinator.adecide(transcript, rng), settings.roles, rng)
        action = mask_workers(action, answering, rng)
        worker, role = pool[action.worker], ROLES[action.role]
        if suggested is not None and str(suggested) not in settings.roles:
            suggested = None  # a suggestion of a role this run does not use is ignored
        if suggested is not None:
            if suggested is not role:
                overridden.append(index)
            role, suggested = suggested, None
        if worker_only_turn(settings, index, role, answer):
            role = Role.WORKER
            forced.append(index)
        decision: dict[str, Any] = dict(
            index=index,
            context_omitted=omitted,
            worker=worker.id,
            role=role,
            worker_probs=action.worker_probs,
            role_probs=action.role_probs,
        )
        if role is Role.VERIFIER and answer is None:
            turns.append(Turn(**decision, messages=(), error=None))
            stop = StopReason.VERIFIER_WITHOUT_ANSWER
            break
        messages = build_messages(prompts, role, task, turns, answer)
        if role is Role.THINKER and settings.thinker_suggests_role:
            messages = tuple(
                {**m, "content": m["content"] + SUGGEST_ROLE_INSTRUCTION} for m in messages
            )
        context = EpisodeContext(task, str(role), answer, tuple(thinkers))
        started = time.perf_counter()
        try:
            reply = await worker.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=turn_seed(seed, index),
                context=context,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # recorded on the turn; the episode goes on
            # masked as the turn's error is: a log line leaves the worker too
            log.warning(
                "turn %d of task %s: %s",
                index,
                task.id,
                worker.redact(str(exc)),
                exc_info=not _is_worker_error(exc),
            )
            turns.append(
                Turn(
                    **decision,
                    messages=messages,
                    error=worker.redact(_describe(exc)),
                    latency_s=time.perf_counter() - started,
                )
            )
            continue
        # every key of the pool masked (a worker masks its own; this catches the rest)
        text = worker.redact(reply.text)
        verdict: Verdict | None = None
        parsed = True
        if role is Role.VERIFIER:
            verdict, parsed = parse_verdict(text)
        turns.append(
            Turn(
                **decision,
                messages=messages,
                response=text,
                verdict=verdict,
                verdict_parsed=parsed,
                tokens_in=reply.tokens_in,
                tokens_out=reply.tokens_out,
                latency_s=reply.latency_s,
                cost=reply.cost,
                usage_estimated=reply.usage_estimated,
            )
        )
        if role is Role.THINKER:
            thinkers.append(worker.id)
            if settings.thinker_suggests_role:
                suggested = suggested_role(text)
        elif role is Role.WORKER:
            answer, thinkers = text, []
        elif verdict is Verdict.ACCEPT:
            stop = StopReason.ACCEPTED
            break
    called = [t for t in turns if t.messages]
    if called and all(t.error is not None for t in called):
        stop = StopReason.WORKER_ERRORS
    details: dict[str, Any]
    if stop in (StopReason.VERIFIER_WITHOUT_ANSWER, StopReason.WORKER_ERRORS) or answer is None:
        reward, details = 0.0, {"reason": _no_answer_reason(stop)}
    else:
        graded = await asyncio.to_thread(grade_cached, task, answer)
        reward, details = graded.reward, graded.details
    if overridden:
        details = {**details, "thinker_role_turns": overridden}
    if forced:
        details = {**details, "worker_only_turns": forced}
    return Episode(
        id=tag.episode_id or uuid.uuid4().hex,
        suite=settings.suite,
        task_id=task.id,
        pool=tuple(w.id for w in pool),
        max_turns=max_turns,
        turns=tuple(turns),
        answer=answer,
        reward=float(reward),
        stop_reason=stop,
        grade_details=dict(details),
        seed=seed,
        run_id=tag.run_id,
        generation=tag.generation,
        candidate=tag.candidate,
        created_at=time.time(),
    )


class _Turns(list[Turn]):
    """The episode's turn list, telling ``on_turn`` each turn appended."""

    def __init__(self, on_turn: Callable[[Turn], None]):
        super().__init__()
        self._on_turn = on_turn

    def append(self, turn: Turn) -> None:
        super().append(turn)
        self._on_turn(turn)


def _is_worker_error(exc: Exception) -> bool:
    from workbench.core.workers.base import WorkerError

    return isinstance(exc, WorkerError)


def _describe(exc: Exception) -> str:
    return str(exc) if _is_worker_error(exc) else f"{type(exc).__name__}: {exc}"


def _no_answer_reason(stop: StopReason) -> str:
    return {
        StopReason.VERIFIER_WITHOUT_ANSWER: "a Verifier was chosen before any Worker answer (reward 0)",
        StopReason.WORKER_ERRORS: "every worker call failed (reward 0)",
    }.get(stop, "no Worker produced an answer (reward 0)")
