"""The sandbox pool: a labelled SIMULATION of workers, for learning the tool at no cost
and for comparing optimizers against a known optimum.

Each sandbox worker has a declared skill per task category. Its outcomes are drawn from
those skills with a generator seeded by (seed, task id, transcript), so episodes are
reproducible, and its text is synthetic (marked ``[sandbox:...]``). The coordinator's
backbone still reads the real task text. Role effects:

- Worker: correct with probability ``skill[category]``, raised by earlier Thinker turns
  since the last Worker answer: ``p + (1 - p) * THINK_GAIN * thinker_skill``.
- Verifier: on a wrong latest answer says REVISE with probability ``skill[category]``
  (its catch rate); on a right one says ACCEPT with probability ``1 - FALSE_REJECT``.
- Thinker: synthetic guidance; its only effect is the boost above.

It never stands in for a real worker in a claim about real models.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.core.workers.base import (
    Completion,
    EpisodeContext,
    Message,
    Worker,
    WorkerError,
    register_builtin,
    register_provider,
)

THINK_GAIN = 0.4
FALSE_REJECT = 0.05
UNKNOWN_SKILL = 0.3  # a category a profile does not list, or a non-sandbox thinker


@dataclass(frozen=True)
class SandboxProfile:
    """A simulated worker: skill per category (kind or category name), price per
    million tokens, and a fixed latency per call (0: instant)."""

    name: str
    skill: dict[str, float] = field(hash=False)
    price_in: float = 0.0
    price_out: float = 0.0
    latency_s: float = 0.0

    def skill_for(self, category: str | None, kind: str) -> float:
        if category is not None and category in self.skill:
            return self.skill[category]
        return self.skill.get(kind, UNKNOWN_SKILL)


# The built-in profile "sandbox": three workers with complementary skills.
SANDBOX_PROFILES: tuple[SandboxProfile, ...] = (
    SandboxProfile("mathlete", {"math": 0.85, "choice": 0.35, "code": 0.25, "text": 0.4}, 1.0, 4.0),
    SandboxProfile("scholar", {"math": 0.3, "choice": 0.85, "code": 0.3, "text": 0.7}, 0.5, 2.0),
    SandboxProfile("coder", {"math": 0.4, "choice": 0.3, "code": 0.85, "text": 0.3}, 2.0, 8.0),
)
PROFILES_BY_ID = {f"sandbox:{p.name}": p for p in SANDBOX_PROFILES}


def oracle_worker(category: str | None, kind: str, pool_ids: Sequence[str]) -> str:
    """The known best sandbox worker of ``pool_ids`` for a category: the sandbox oracle."""
    candidates = [w for w in pool_ids if w in PROFILES_BY_ID]
    if not candidates:
        raise ValueError("the oracle is defined only for pools with sandbox workers")
    return max(candidates, key=lambda w: PROFILES_BY_ID[w].skill_for(category, kind))


def _is_correct(task, answer: str) -> bool:
    from workbench.core.tasks.graders import grade_cached

    return grade_cached(task, answer).reward >= 1.0


def _wrong_answer(task, rng: random.Random) -> str:
    if task.kind == "choice" and task.choices:
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(task.choices)]
        return rng.choice([c for c in letters if c != (task.answer or "").upper()] or ["A"])
    if task.kind == "math":
        answer = (task.answer or "").strip()
        if re.fullmatch(r"-?\d+", answer):
            return str(int(answer) + rng.randint(1, 9))
        return "\\text{unsure}"
    return "I am not sure."


def _right_answer(task) -> str | None:
    if task.kind == "code":
        return task.solution
    return task.answer


def _render_answer(task, answer: str) -> str:
    if task.kind == "code":
        return f"```python\n{answer}\n```"
    if task.kind == "math":
        return f"The answer is \\boxed{{{answer}}}."
    return f"Answer: {answer}"


@register_provider("sandbox")
class SimulatedWorker(Worker):
    """One sandbox worker (see the module docstring: a labelled simulation)."""

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
        task = ctx.task
        rng = self._rng(seed, task.id, messages)
        name = f"[sandbox:{self.profile.name}]"
        p = self.profile.skill_for(task.category, task.kind)
        if ctx.role == "worker":
            for thinker in ctx.thinkers:
                t_skill = (
                    PROFILES_BY_ID[thinker].skill_for(task.category, task.kind)
                    if thinker in PROFILES_BY_ID
                    else UNKNOWN_SKILL
                )
                p += (1 - p) * THINK_GAIN * t_skill
            right = _right_answer(task)
            if right is not None and rng.random() < p:
                text = f"{name} Answer.\n{_render_answer(task, right)}"
            else:  # the same words as a right answer: only a Verifier (or a grader) can tell
                wrong = (
                    _broken_program(task)
                    if task.kind == "code"
                    else _render_answer(task, _wrong_answer(task, rng))
                )
                text = f"{name} Answer.\n{wrong}"
        elif ctx.role == "verifier":
            if ctx.answer is None:
                verdict, why = "REVISE", "there is no answer to check yet"
            else:
                correct = _is_correct(task, ctx.answer)
                if correct:
                    ok = rng.random() >= FALSE_REJECT
                else:
                    ok = rng.random() >= p  # caught with probability p
                verdict, why = (
                    ("ACCEPT", "the answer holds up") if ok else ("REVISE", "a step looks wrong")
                )
            text = f"{verdict}\n{name} {why}."
        else:
            text = (
                f"{name} Plan: identify the {task.group} problem type, solve the "
                "smallest case first, then check the result against the question."
            )
        if self.profile.latency_s:
            await asyncio.sleep(self.profile.latency_s)
        tokens_in = sum(len(m["content"]) for m in messages) // 4 + 1
        tokens_out = min(len(text) // 4 + 1, max_tokens)
        cost = (tokens_in * self.profile.price_in + tokens_out * self.profile.price_out) / 1e6
        return Completion(
            text, tokens_in, tokens_out, self.profile.latency_s, cost, False, self.model
        )


def _broken_program(task) -> str:
    entry = (task.tests or {}).get("entry_point", "solve")
    return f"```python\ndef {entry}(*args, **kwargs):\n    return None\n```"


def _resolve(worker_id: str) -> list[Worker]:
    if worker_id == "sandbox":
        return [SimulatedWorker(wid, p) for wid, p in PROFILES_BY_ID.items()]
    if worker_id not in PROFILES_BY_ID:
        raise ValueError(
            f"unknown sandbox worker '{worker_id}': the sandbox pool has "
            f"{', '.join(PROFILES_BY_ID)} (or 'sandbox' for all of them)"
        )
    return [SimulatedWorker(worker_id, PROFILES_BY_ID[worker_id])]


register_builtin("sandbox", _resolve)
