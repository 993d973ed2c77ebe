"""The sandbox pools: labelled SIMULATIONS of workers, for learning the tool at no cost
and for comparing optimizers against a known optimum (``workbench.core.oracle``).

Two built-in pools: ``sandbox`` (three workers with complementary skills: one-turn
routing by category is nearly all there is to learn) and ``team`` (specialists, a
planner and a checker: delegation across roles and turns pays; see ``TEAM_PROFILES``).
Each simulated worker declares, per task category, its solve skill, its catch rate as a
Verifier and its guidance gain as a Thinker, plus a false-reject rate. Outcomes are drawn
from those probabilities with a generator seeded by (seed, worker, task id, transcript),
so episodes are reproducible. The text is synthetic and a function of (task, worker,
role, outcome) only: candidates that make the same choices with the same outcomes read
the same transcript, so the backbone forwards it once (its feature and prefix caches are
keyed by the text). The coordinator reads every reply whole, so the sandbox's are as
short as that reading allows: a bare answer (``\\boxed{}`` for math, the letter for a
choice, the function's body for code), ``ACCEPT`` / ``REVISE``, ``Plan (category).``;
the turn's header names the simulated worker. The team's keep their labelled words. The
coordinator's backbone still reads the real task text. Role effects:

- Worker: correct with probability ``1 - (1 - skill) * prod(1 - gain_t)`` over the Thinker
  turns ``t`` since the last Worker answer (``solve_probability``); each answer is drawn
  afresh, whatever came before.
- Verifier: on a wrong latest answer says REVISE with probability ``catch``; on a right
  one says REVISE with probability ``false_reject`` (``revise_probability``).
- Thinker: synthetic guidance; its only effect is the gain above.

The ``sandbox`` profiles keep their original definition: catch = skill, gain =
``THINK_GAIN * skill``, false reject ``FALSE_REJECT``. Outcomes are pure functions of an
explicit ``TurnContext`` (``simulate_turn``), which ``SimulatedWorker.complete`` fills in.
It never stands in for a real worker in a claim about real models.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import random
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.core.records import Verdict
from workbench.core.workers.base import (
    Completion,
    EpisodeContext,
    Message,
    Worker,
    WorkerError,
)

if TYPE_CHECKING:
    from workbench.core.workspace import Workspace

THINK_GAIN = 0.4
FALSE_REJECT = 0.05
UNKNOWN_SKILL = 0.3  # a category a profile does not list, or a non-sandbox thinker


def _per_category(table: dict[str, float], category: str | None, kind: str, default: float):
    if category is not None and category in table:
        return table[category]
    return table.get(kind, table.get("*", default))


@dataclass(frozen=True, kw_only=True)
class SandboxProfile:
    """A simulated worker: solve skill per category (kind or category name; ``"*"``: any
    other), price per million tokens, a fixed latency per call (0: instant) and its other
    roles' parameters. ``catch`` (P(REVISE) on a wrong answer, per category) defaults to
    the skill; ``gain`` (the share of the next answer's error a Thinker turn removes, per
    category) defaults to ``THINK_GAIN * skill``; ``false_reject`` is P(REVISE) on a right
    answer. ``prefix`` names the pool (``sandbox:<name>``, ``team:<name>``).
    ``guidance_repeats``: whether a second Thinker turn of this worker before the same
    answer helps again (the sandbox's rule) or adds nothing (the team's: the same plan
    twice is one plan)."""

    name: str
    skill: dict[str, float] = field(hash=False)
    price_in: float = 0.0
    price_out: float = 0.0
    latency_s: float = 0.0
    catch: dict[str, float] | None = field(default=None, hash=False)
    gain: dict[str, float] | None = field(default=None, hash=False)
    false_reject: float = FALSE_REJECT
    prefix: str = "sandbox"
    guidance_repeats: bool = True  # False: its Thinker turns count once per answer

    @property
    def id(self) -> str:
        return f"{self.prefix}:{self.name}"

    def skill_for(self, category: str | None, kind: str) -> float:
        """P(a right answer) as Worker, without guidance."""
        return _per_category(self.skill, category, kind, UNKNOWN_SKILL)

    def catch_for(self, category: str | None, kind: str) -> float:
        """P(REVISE) as Verifier of a wrong answer."""
        if self.catch is None:
            return self.skill_for(category, kind)
        return _per_category(self.catch, category, kind, UNKNOWN_SKILL)

    def gain_for(self, category: str | None, kind: str) -> float:
        """The share of the next Worker's error one Thinker turn of this worker removes."""
        if self.gain is None:
            return THINK_GAIN * self.skill_for(category, kind)
        return _per_category(self.gain, category, kind, 0.0)


# The built-in profile "sandbox": three workers with complementary skills.
SANDBOX_PROFILES: tuple[SandboxProfile, ...] = (
    SandboxProfile(
        name="mathlete",
        skill={"math": 0.85, "choice": 0.35, "code": 0.25, "text": 0.4},
        price_in=1.0,
        price_out=4.0,
    ),
    SandboxProfile(
        name="scholar",
        skill={"math": 0.3, "choice": 0.85, "code": 0.3, "text": 0.7},
        price_in=0.5,
        price_out=2.0,
    ),
    SandboxProfile(
        name="coder",
        skill={"math": 0.4, "choice": 0.3, "code": 0.85, "text": 0.3},
        price_in=2.0,
        price_out=8.0,
    ),
)

# The built-in profile "team" (frozen before any training experiment; designed from the
# intent "delegation across roles pays", never tuned to a trained result). Categories are
# the mixed suite's: math, choice, code ("*": anything else). The reasoning per parameter:
# - Specialists (mathlete, scholar, coder) answer their own category right 70% of the time
#   and any other 20%: routing by category matters, and no single worker is good overall.
#   Alone they are mediocre checkers (catch 30%, false reject 10%) and weak planners
#   (gain 0.1): a specialist is worth calling as Worker in its category only.
# - planner: a poor solver (20%) whose plan removes half of the next answer's error
#   (gain 0.5: a specialist goes from 70% to 85%). Thinking first pays, but only when the
#   right specialist answers next.
# - checker: solves almost nothing (10%) but catches 90% of wrong answers and rejects only
#   5% of right ones: a Verifier turn makes a wrong answer visible (REVISE), so a retry
#   pays, and an ACCEPT is trustworthy.
# - A team member's guidance counts once per answer (guidance_repeats=False): the same plan
#   twice is one plan. Under the sandbox's compounding rule the exact oracle's best team
#   plan at K = 5 was four planner turns and one answer (0.981), no checking at all: a
#   degenerate simulation, not the intended team.
# With these, one turn at best reaches 70% (the right specialist), the best single worker
# 37% over the three categories, and at K = 5 plan -> answer -> check -> plan -> answer
# lifts the expected reward well above one-turn routing (workbench.core.oracle computes it).
SPECIALIST_SKILL, OFF_SKILL = 0.7, 0.2


def _specialist(name: str, category: str, price_in: float, price_out: float) -> SandboxProfile:
    return SandboxProfile(
        name=name,
        skill={category: SPECIALIST_SKILL, "*": OFF_SKILL},
        price_in=price_in,
        price_out=price_out,
        catch={"*": 0.3},
        gain={"*": 0.1},
        false_reject=0.1,
        prefix="team",
        guidance_repeats=False,
    )


TEAM_PROFILES: tuple[SandboxProfile, ...] = (
    _specialist("mathlete", "math", 1.0, 4.0),
    _specialist("scholar", "choice", 0.5, 2.0),
    _specialist("coder", "code", 2.0, 8.0),
    SandboxProfile(
        name="planner",
        skill={"*": 0.2},
        price_in=3.0,
        price_out=12.0,
        catch={"*": 0.3},
        gain={"*": 0.5},
        false_reject=0.1,
        prefix="team",
        guidance_repeats=False,
    ),
    SandboxProfile(
        name="checker",
        skill={"*": 0.1},
        price_in=1.0,
        price_out=2.0,
        catch={"*": 0.9},
        gain={"*": 0.0},
        false_reject=0.05,
        prefix="team",
        guidance_repeats=False,
    ),
)
POOLS: dict[str, tuple[SandboxProfile, ...]] = {"sandbox": SANDBOX_PROFILES, "team": TEAM_PROFILES}
PROFILES_BY_ID = {p.id: p for profiles in POOLS.values() for p in profiles}


def solve_probability(
    profile: SandboxProfile, category: str | None, kind: str, thinkers: Sequence[str]
) -> float:
    """P(a right answer) of ``profile`` as Worker after the Thinker turns ``thinkers``
    (worker ids, since the last Worker answer); a non-simulated thinker counts as
    ``UNKNOWN_SKILL`` of the old sandbox rule."""
    p = profile.skill_for(category, kind)
    seen: set[str] = set()
    for thinker in thinkers:
        guide = PROFILES_BY_ID.get(thinker)
        if guide is not None and not guide.guidance_repeats and thinker in seen:
            continue
        seen.add(thinker)
        gain = guide.gain_for(category, kind) if guide else THINK_GAIN * UNKNOWN_SKILL
        p += (1 - p) * gain
    return p


def revise_probability(
    profile: SandboxProfile, category: str | None, kind: str, answer_correct: bool
) -> float:
    """P(REVISE) of ``profile`` as Verifier of an answer that is right or wrong."""
    return profile.false_reject if answer_correct else profile.catch_for(category, kind)


def oracle_worker(category: str | None, kind: str, pool_ids: Sequence[str]) -> str:
    """The known best sandbox worker of ``pool_ids`` for a category as one-turn Worker:
    the one-turn oracle (``workbench.core.oracle`` gives the multi-turn one)."""
    candidates = [w for w in pool_ids if w in PROFILES_BY_ID]
    if not candidates:
        raise ValueError("the oracle is defined only for pools with sandbox workers")
    return max(candidates, key=lambda w: PROFILES_BY_ID[w].skill_for(category, kind))


def _is_correct(task, answer: str) -> bool:
    from workbench.core.tasks.graders import grade_cached

    return grade_cached(task, answer).reward >= 1.0


def _wrong_answer(task, worker_id: str) -> str:
    """A wrong answer of ``worker_id`` to ``task``, written like the right one (another
    letter; the number, or a fraction's first number, moved by 1-9): always the same one
    (a function of the task and the worker, not of the episode), so that a transcript is
    a function of the choices and outcomes that made it."""
    rng = random.Random(f"{task.id}|{worker_id}")
    if task.kind == "choice" and task.choices:
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(task.choices)]
        return rng.choice([c for c in letters if c != (task.answer or "").upper()] or ["A"])
    if task.kind == "math":
        answer = (task.answer or "").strip()
        number = re.search(r"-?\d+", answer)
        if number is not None:
            first = rng.randint(1, 9)  # the first try is the wrong number it always was
            for step in [first, *(s for s in range(1, 10) if s != first)]:
                value = int(number.group()) + step
                moved = f"{answer[: number.start()]}{value}{answer[number.end() :]}"
                if not _is_correct(task, f"\\boxed{{{moved}}}"):
                    return moved
        return "\\text{unsure}"
    return "I am not sure."


# One token of a program changed: an operator into its neighbour, True/False/and/or into
# the other, a whole number into the next or the one before. A wrong program written like a right one.
_SWAPS = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+": "-",
    "-": "+", "*": "+", "//": "*", "%": "//", "and": "or", "or": "and",
    "True": "False", "False": "True",
}  # fmt: skip
_MUTANT_TRIES = 8  # mutants graded before a wrong code answer falls back to a stub
_wrong_programs: dict[tuple[str, str, str], str | None] = {}


def _mutants(code: str, seed: str) -> list[str]:
    """Every program one token away from ``code`` (``_SWAPS``), in an order seeded by
    ``seed``; none when ``code`` does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out: list[str] = []
    for token in tokens:
        if token.type in (tokenize.OP, tokenize.NAME) and token.string in _SWAPS:
            news = [_SWAPS[token.string]]
        elif token.type == tokenize.NUMBER and token.string.isdigit():
            news = [str(int(token.string) + 1), str(int(token.string) - 1)]
        else:
            news = []
        begin = starts[token.start[0] - 1] + token.start[1]
        end = starts[token.end[0] - 1] + token.end[1]
        out.extend(code[:begin] + new + code[end:] for new in news)
    random.Random(seed).shuffle(out)
    return out


def _wrong_program(task, worker_id: str, head: str, body: str, as_text) -> str | None:
    """``body`` (the solution after ``head``) with one token changed so that the program
    still compiles and fails the task's tests (graded in the sandbox, as the reward will
    be), the same one for every call with this task and worker; None when none of the
    first ``_MUTANT_TRIES`` does. ``as_text`` turns a body into the reply to grade."""
    key = (task.id, worker_id, head + body)
    if key not in _wrong_programs:
        found = None
        tries = 0
        for mutant in _mutants(body, f"{task.id}|{worker_id}"):
            try:
                compile(head + mutant, "<answer>", "exec")
            except (SyntaxError, ValueError):
                continue
            tries += 1
            if not _is_correct(task, as_text(mutant)):
                found = mutant
                break
            if tries >= _MUTANT_TRIES:
                break
        _wrong_programs[key] = found
    return _wrong_programs[key]


def _right_answer(task) -> str | None:
    if task.kind == "code":
        return task.solution
    return task.answer


def _answer_text(task, right: bool, worker_id: str, short: bool) -> str:
    """A right or wrong answer, in the same words either way (only a Verifier or a grader
    can tell them apart: a wrong program is the solution with one token changed, a wrong
    number the right one moved). ``short`` (the sandbox): the bare answer, which the
    graders read as they read a worded one; otherwise (the team) worded: ``\\boxed{}``,
    ``Answer:``, a fenced program."""
    if task.kind == "code":
        completion = _completion(task, right, worker_id) if short else None
        if completion is not None:
            return completion
        if right:
            program = task.solution
        else:
            fence = (lambda p: p) if short else (lambda p: f"```python\n{p}\n```")
            program = _wrong_program(task, worker_id, "", task.solution or "", fence)
            program = program if program is not None else _broken_program(task)
        return program if short else f"```python\n{program}\n```"
    answer = task.answer if right else _wrong_answer(task, worker_id)
    if short:
        return answer if task.kind != "math" else f"\\boxed{{{answer}}}"
    if task.kind == "math":
        return f"The answer is \\boxed{{{answer}}}."
    return f"Answer: {answer}"


@dataclass(frozen=True)
class TurnContext:
    """What a simulated worker's outcome depends on: the task, the role asked for, the
    latest Worker answer (None before any) and the Thinkers (worker ids) since it."""

    task: Any
    role: str
    answer: str | None
    thinkers: tuple[str, ...] = ()


def simulate_turn(profile: SandboxProfile, ctx: TurnContext, rng: random.Random) -> str:
    """The synthetic reply of ``profile`` in ``ctx``: a right or wrong answer (Worker), a
    verdict (Verifier) or guidance (Thinker). The outcome (right or wrong, ACCEPT or
    REVISE) is drawn with ``rng``, one ``rng.random()`` per turn; the text is a function of
    (task, worker, role, outcome) only, so candidates that make the same choices with the
    same outcomes read the same transcript, and the backbone forwards it once."""
    task = ctx.task
    if profile.prefix == "sandbox":
        # the coordinator reads every reply whole: the sandbox's say what a reply is and
        # nothing more (the turn's header already names the simulated worker)
        if ctx.role == "worker":
            p = solve_probability(profile, task.category, task.kind, ctx.thinkers)
            right = _right_answer(task) is not None and rng.random() < p
            return _answer_text(task, right, profile.id, short=True)
        if ctx.role == "verifier":
            return _verdict(profile, ctx, rng)
        return f"Plan ({task.group})."
    # the team's keep their labels and words, so its measured example replays as measured
    name = f"[simulated {profile.id}]"
    if ctx.role == "worker":
        p = solve_probability(profile, task.category, task.kind, ctx.thinkers)
        right = _right_answer(task) is not None and rng.random() < p
        return f"{name}\n{_answer_text(task, right, profile.id, short=False)}"
    if ctx.role == "verifier":
        return f"{_verdict(profile, ctx, rng)}\n{name}"
    return f"{name} plan"


def _verdict(profile: SandboxProfile, ctx: TurnContext, rng: random.Random) -> Verdict:
    """ACCEPT or REVISE on the latest answer (REVISE when there is none yet)."""
    if ctx.answer is None:
        return Verdict.REVISE
    task = ctx.task
    correct = _is_correct(task, ctx.answer)
    revise = rng.random() < revise_probability(profile, task.category, task.kind, correct)
    return Verdict.REVISE if revise else Verdict.ACCEPT


class SimulatedWorker(Worker):
    """One simulated worker (see the module docstring: a labelled simulation)."""

    provider = "sandbox"

    def __init__(self, worker_id: str, profile: SandboxProfile):
        super().__init__(worker_id, f"simulated/{profile.name}")
        self.profile = profile

    def _rng(self, seed: int | None, task_id: str, messages: Sequence[Message]) -> random.Random:
        transcript = "\x1e".join(m["content"] for m in messages)
        digest = hashlib.sha256(f"{seed}|{self.id}|{task_id}|{transcript}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        ctx = context
        if ctx is None:
            raise WorkerError(
                self.id, "sandbox workers answer only inside an episode (run_episode)"
            )
        turn = TurnContext(ctx.task, ctx.role, ctx.answer, tuple(ctx.thinkers))
        text = simulate_turn(self.profile, turn, self._rng(seed, ctx.task.id, messages))
        if self.profile.latency_s:
            await asyncio.sleep(self.profile.latency_s)
        tokens_in = sum(len(m["content"]) for m in messages) // 4 + 1
        tokens_out = min(len(text) // 4 + 1, max_tokens)
        cost = (tokens_in * self.profile.price_in + tokens_out * self.profile.price_out) / 1e6
        return Completion(
            text=text,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_s=self.profile.latency_s,
            cost=cost,
            usage_estimated=False,
            model=self.model,
        )


def _completion(task, right: bool, worker_id: str) -> str | None:
    """A code answer as a completion of the prompt's function (its body, which the grader
    appends to the prompt's code, as HumanEval's completions are): the solution's body,
    or, wrong, that body with one token changed (``_wrong_program``; ``return None`` in
    its indentation when no change fails the tests); None when the solution does not
    continue the prompt's code."""
    from workbench.core.tasks.graders import prompt_code

    head, solution = prompt_code(task), task.solution or ""
    if not head or not solution.startswith(head):
        return None
    body = solution[len(head) :].rstrip()
    first = next((line for line in body.splitlines() if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    if not indent:  # not a completion: the grader would read it as a whole program
        return None
    if right:
        return body
    wrong = _wrong_program(task, worker_id, head, body, lambda b: b)
    if wrong is not None:
        return wrong
    blank_lines = body[: len(body) - len(body.lstrip("\n"))]  # those the body starts with
    return f"{blank_lines}{indent}return None"


def _broken_program(task) -> str:
    entry = (task.tests or {}).get("entry_point", "solve")
    return f"def {entry}(*args, **kwargs):\n    return None"


def resolve(worker_id: str, workspace: Workspace | None = None) -> list[Worker]:
    """The workers built-in id ``worker_id`` names: ``sandbox``, ``team`` or one of their workers (``sandbox:NAME``) (``spec.BUILTIN_RESOLVERS``)."""
    prefix = worker_id.split(":", 1)[0]
    profiles = POOLS[prefix]
    if worker_id == prefix:
        return [SimulatedWorker(p.id, p) for p in profiles]
    if worker_id not in PROFILES_BY_ID or PROFILES_BY_ID[worker_id].prefix != prefix:
        raise ValueError(
            f"unknown {prefix} worker '{worker_id}': the {prefix} pool has "
            f"{', '.join(p.id for p in profiles)} (or '{prefix}' for all of them)"
        )
    return [SimulatedWorker(worker_id, PROFILES_BY_ID[worker_id])]
