"""The exact multi-turn oracle of a simulated pool: the best policy the protocol allows,
computed from the simulation's known probabilities (``workbench.core.workers.simulated``).

What the oracle may condition on: what the coordinator's transcript shows, i.e. the roles
and workers of earlier turns and the Verifiers' verdicts, never whether an answer is in
fact right (the simulation writes right and wrong answers in the same words: another
number or letter, a program with one token changed; only where no one-token change fails
a code task's tests, about 1% of the bundled ones, does a stub stand in). In the
protocol (``workbench.core.protocol``) an ACCEPT ends the episode and a Thinker or Worker
turn reveals nothing about correctness, so at every turn there is exactly one reachable
history per plan: its earlier turns with every Verifier saying REVISE. The best policy is
therefore a fixed sequence of (worker, role) steps, followed until the first ACCEPT.

Dynamic programming over the belief state finds it: (turns left, P(the latest answer is
right | history) or no answer yet, the share of the next answer's error left by the
Thinker turns since the last answer). Transitions, as the protocol and simulation run:

- Thinker w: the pending error share is multiplied by ``1 - gain_w`` (once per answer
  for a worker whose guidance does not repeat: the state also holds those already used).
- Worker w: a fresh answer, right with ``1 - (1 - skill_w) * pending``; pending resets.
- Verifier w: before any answer the episode ends with reward 0; otherwise ACCEPT (reward:
  the answer's correctness) with ``b (1 - false_reject_w) + (1 - b)(1 - catch_w)``, else
  REVISE and Bayes' rule updates b.
- After K turns the reward is the latest answer's correctness (0 without one).

At K = 1 the plan is the one-turn oracle: the best single Worker for the category.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.core.coordinator import Action
from workbench.core.policies import AnyContext
from workbench.core.records import ROLES, Role
from workbench.core.workers.simulated import PROFILES_BY_ID

_TIE = 1e-12  # a later action replaces the best only when strictly better by this much


@dataclass(frozen=True)
class Step:
    """One turn of a plan: ``worker`` (id) acts as ``role``."""

    worker: str
    role: Role

    def __str__(self) -> str:
        return f"{self.role.value.capitalize()} {self.worker}"


@dataclass(frozen=True, kw_only=True)
class OraclePlan:
    """The best policy for one task category: ``steps`` followed in order until the first
    Verifier ACCEPT; ``expected_reward`` is its exact expected reward."""

    category: str | None
    kind: str
    max_turns: int
    steps: tuple[Step, ...]
    expected_reward: float

    def describe(self) -> str:
        """The plan in words, e.g. ``math: Thinker team:planner -> Worker team:mathlete ->
        Verifier team:checker; on REVISE: Thinker ...``."""
        parts: list[str] = []
        chunk: list[str] = []
        for step in self.steps:
            chunk.append(str(step))
            if step.role is Role.VERIFIER:
                parts.append(" -> ".join(chunk))
                chunk = []
        if chunk:
            parts.append(" -> ".join(chunk))
        label = self.category or self.kind
        return (
            f"{label}: " + "; on REVISE: ".join(parts) + f" (expected {self.expected_reward:.3f})"
        )


def _params(pool_ids: Sequence[str], category: str | None, kind: str):
    missing = [w for w in pool_ids if w not in PROFILES_BY_ID]
    if missing:
        raise ValueError(
            f"the oracle is defined only for simulated workers; {', '.join(missing)} "
            "is not one (use a pool of sandbox:... or team:... workers)"
        )
    profiles = [PROFILES_BY_ID[w] for w in pool_ids]
    return (
        tuple(p.skill_for(category, kind) for p in profiles),
        tuple(p.catch_for(category, kind) for p in profiles),
        tuple(p.false_reject for p in profiles),
        tuple(p.gain_for(category, kind) for p in profiles),
        tuple(p.guidance_repeats for p in profiles),
    )


_NONE: frozenset[int] = frozenset()


def _step(params, belief: float | None, pending: float, used: frozenset[int], role: Role, w: int):
    """(reward collected now, [(probability, next belief, next pending, next used)]) of one
    step; no branch means the episode ended. ``used``: the Thinkers since the last answer
    whose guidance does not repeat."""
    skill, catch, false_reject, gain, repeats = params
    if role is Role.THINKER:
        if not repeats[w] and w in used:
            return 0.0, [(1.0, belief, pending, used)]
        return 0.0, [(1.0, belief, pending * (1 - gain[w]), used | {w})]
    if role is Role.WORKER:
        return 0.0, [(1.0, 1 - (1 - skill[w]) * pending, 1.0, _NONE)]
    if belief is None:  # a Verifier before any answer: the episode ends with reward 0
        return 0.0, []
    revise = belief * false_reject[w] + (1 - belief) * catch[w]
    accepted = belief * (1 - false_reject[w])
    if revise <= 0.0:
        return accepted, []
    return accepted, [(revise, belief * false_reject[w] / revise, pending, used)]


def best_plan(
    pool_ids: Sequence[str], category: str | None, kind: str, max_turns: int
) -> OraclePlan:
    """The exact best plan for tasks of ``category`` (and ``kind``) with ``pool_ids`` (all
    simulated) over at most ``max_turns`` turns, and its expected reward."""
    if max_turns < 1:
        raise ValueError("max_turns must be at least 1")
    params = _params(pool_ids, category, kind)
    # among equally good steps prefer Worker, then Verifier, then Thinker: a Thinker turn
    # only where it strictly helps (so a plan reads plan -> answer -> check -> plan -> answer)
    order = (Role.WORKER, Role.VERIFIER, Role.THINKER)
    actions = [(role, w) for role in order for w in range(len(pool_ids))]

    @functools.cache
    def value(
        turns_left: int, belief: float | None, pending: float, used: frozenset[int]
    ) -> tuple[float, tuple[tuple[Role, int], ...]]:
        if turns_left == 0:
            return (belief or 0.0), ()
        best_steps: tuple[tuple[Role, int], ...] = ()
        best = -1.0
        for role, w in actions:
            now, branches = _step(params, belief, pending, used, role, w)
            total = now
            tail: tuple[tuple[Role, int], ...] = ()
            for prob, *state in branches:
                v, tail = value(turns_left - 1, *state)
                total += prob * v
            if not branches:
                tail = ()
            if total > best + _TIE:
                best, best_steps = total, ((role, w), *tail)
        return best, best_steps

    reward, steps = value(max_turns, None, 1.0, _NONE)
    return OraclePlan(
        category=category,
        kind=kind,
        max_turns=max_turns,
        steps=tuple(Step(pool_ids[w], role) for role, w in steps),
        expected_reward=reward,
    )


def random_routing_value(
    pool_ids: Sequence[str], category: str | None, kind: str, max_turns: int
) -> float:
    """The exact expected reward of uniformly random (worker, role) choices at every turn
    (the ``random`` baseline of an evaluation) for tasks of ``category``."""
    params = _params(pool_ids, category, kind)
    actions = [(role, w) for role in ROLES for w in range(len(pool_ids))]

    @functools.cache
    def value(turns_left: int, belief: float | None, pending: float, used: frozenset[int]):
        if turns_left == 0:
            return belief or 0.0
        total = 0.0
        for role, w in actions:
            now, branches = _step(params, belief, pending, used, role, w)
            total += now + sum(p * value(turns_left - 1, *state) for p, *state in branches)
        return total / len(actions)

    return value(max_turns, None, 1.0, _NONE)


def plan_value(
    pool_ids: Sequence[str], category: str | None, kind: str, steps: Sequence[Step]
) -> float:
    """The exact expected reward of following ``steps`` until the first ACCEPT."""
    params = _params(pool_ids, category, kind)
    index = {w: i for i, w in enumerate(pool_ids)}

    def value(i: int, belief: float | None, pending: float, used: frozenset[int]) -> float:
        if i == len(steps):
            return belief or 0.0
        step = steps[i]
        now, branches = _step(params, belief, pending, used, step.role, index[step.worker])
        return now + sum(p * value(i + 1, *state) for p, *state in branches)

    return value(0, None, 1.0, _NONE)


def oracle_plans(
    pool_ids: Sequence[str], tasks: Iterable, max_turns: int
) -> dict[tuple[str | None, str], OraclePlan]:
    """The best plan per (category, kind) present in ``tasks``."""
    keys = dict.fromkeys((t.category, t.kind) for t in tasks)
    return {key: best_plan(pool_ids, *key, max_turns) for key in keys}


def expected_reward(pool_ids: Sequence[str], tasks: Sequence, max_turns: int) -> float:
    """The oracle's exact expected reward averaged over ``tasks``."""
    plans = oracle_plans(pool_ids, tasks, max_turns)
    return float(np.mean([plans[(t.category, t.kind)].expected_reward for t in tasks]))


class PlanPolicy(AnyContext):
    """A coordinator stand-in that follows one plan, turn by turn, for ONE episode (it
    counts its decisions): the oracle as a system ``run_episode`` can run."""

    def __init__(self, pool_ids: Sequence[str], steps: Sequence[Step]):
        self.n_workers = len(pool_ids)
        self._actions = [
            Action(
                pool_ids.index(s.worker),
                ROLES.index(s.role),
                tuple(1.0 if w == s.worker else 0.0 for w in pool_ids),
                tuple(1.0 if r is s.role else 0.0 for r in ROLES),
            )
            for s in steps
        ]
        self._turn = 0

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        action = self._actions[min(self._turn, len(self._actions) - 1)]
        self._turn += 1
        return action
