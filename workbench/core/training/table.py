"""A recorded pool routed in one Worker turn, as arrays: the fast path of training and
evaluation on recorded answers.

When every worker of the pool answers from a recorded table, the coordinator may give
the Worker role only, and an episode has one turn, an episode is one decision: the
coordinator reads the task's query (the same text for every candidate), picks a worker,
and the reward is that worker's recorded answer graded. So a task's outcome under each
worker is fixed (``RoutingTable``: reward, cost, tokens, who has an answer), the query's
feature is computed once (``feature_store``), and a generation's candidates are scored on
thousands of tasks with a few matrix products instead of thousands of episodes.

The decisions are the episode path's, draw for draw: ``sampled_choices`` takes the
uniforms an episode's generator would give (``episode_uniforms``: the same seeds as
``executors.episode_seeds`` with common random numbers) and replays ``choose``,
``mask_roles`` and ``mask_workers`` on them; ``argmax_actions`` is the evaluation's
decision. tests/core/training/test_table.py holds the two paths to the same choices and
rewards.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.core.coordinator.head import Action, choose, softmax
from workbench.core.policies import AnyContext
from workbench.core.protocol import (
    EpisodeSettings,
    Prompts,
    build_messages,
    mask_workers,
)
from workbench.core.records import ROLES, Role
from workbench.core.tasks.graders import grade_cached
from workbench.core.tasks.model import Task
from workbench.core.training.executors import derived_seed
from workbench.core.workers.base import EpisodeContext, Worker

UNIFORMS = 4  # draws one turn can take: worker, role, role redrawn, worker redrawn
_WORKER = ROLES.index(Role.WORKER)
_WORKER_ONLY = tuple(1.0 if r is Role.WORKER else 0.0 for r in ROLES)  # the masked roles


@dataclass(frozen=True, kw_only=True)
class RoutingTable:
    """Every task's one-turn Worker outcome under every worker of a recorded pool (rows:
    ``tasks``, columns: the pool's workers in head order). A worker with no recorded
    answer for a task has ``answered`` False there, and reward, cost and tokens 0."""

    tasks: tuple[Task, ...]
    workers: tuple[str, ...]
    reward: np.ndarray  # (T, L) float
    cost: np.ndarray  # (T, L) dollars (recorded)
    tokens: np.ndarray  # (T, L) tokens in and out
    latency: np.ndarray  # (T, L) seconds (recorded)
    answered: np.ndarray  # (T, L) bool
    extracted: tuple[tuple[str | None, ...], ...]  # what the grader read, per task and worker

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rows", {t.id: i for i, t in enumerate(self.tasks)})

    def rows(self, tasks: Sequence[Task]) -> np.ndarray:
        """The table rows of ``tasks`` (every one must be in the table)."""
        index: dict[str, int] = self._rows  # type: ignore[attr-defined]
        return np.array([index[t.id] for t in tasks], dtype=np.int64)

    def outcome(self, rows: np.ndarray, choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Reward and cost of choosing worker ``choices[..., i]`` on row ``rows[i]``
        (``choices`` may carry a leading candidates axis)."""
        return self.reward[rows, choices], self.cost[rows, choices]


def pool_reason(pool: Sequence[Worker]) -> str | None:
    """Why ``pool`` cannot be routed on a table (None: every worker answers from a
    recorded table). The rest of the rule is the config's (``config.routing_table_reason``;
    the train job's ``train_plan`` asks both)."""
    if not all(w.answers_at_no_cost for w in pool):
        return "the pool has live workers"
    return None


async def build_routing_table(
    pool: Sequence[Worker],
    tasks: Sequence[Task],
    settings: EpisodeSettings,
    progress: Callable[[int, int], None] | None = None,
) -> RoutingTable:
    """Ask every recorded worker for its answer to every task it has one for, with the
    Worker prompt an episode's first turn sends, and grade each once (``grade_cached``,
    in threads: a code or math grade may take a subprocess)."""
    prompts = settings.prompts or Prompts.load()
    T, L = len(tasks), len(pool)
    reward, cost = np.zeros((T, L)), np.zeros((T, L))
    tokens, latency = np.zeros((T, L), dtype=np.int64), np.zeros((T, L))
    answered = np.zeros((T, L), dtype=bool)
    extracted: list[list[str | None]] = [[None] * L for _ in range(T)]

    async def one(i: int, task: Task) -> None:
        messages = build_messages(prompts, Role.WORKER, task, (), None)
        context = EpisodeContext(task, str(Role.WORKER), None, ())
        texts: dict[int, str] = {}
        for w, worker in enumerate(pool):
            if not worker.covers(task):
                continue
            reply = await worker.complete(
                messages,
                max_tokens=settings.max_tokens,
                temperature=settings.temperature,
                seed=None,
                context=context,
            )
            texts[w] = worker.redact(reply.text)
            answered[i, w] = True
            cost[i, w] = reply.cost
            tokens[i, w] = reply.tokens_in + reply.tokens_out
            latency[i, w] = reply.latency_s
        for w, text in texts.items():
            graded = await asyncio.to_thread(grade_cached, task, text)
            reward[i, w] = graded.reward
            value = graded.details.get("extracted")
            extracted[i][w] = None if value is None else str(value)

    step = 256
    for start in range(0, T, step):
        await asyncio.gather(*(one(i, tasks[i]) for i in range(start, min(T, start + step))))
        if progress is not None:
            progress(min(T, start + step), T)
    return RoutingTable(
        tasks=tuple(tasks),
        workers=tuple(w.id for w in pool),
        reward=reward,
        cost=cost,
        tokens=tokens,
        latency=latency,
        answered=answered,
        extracted=tuple(tuple(row) for row in extracted),
    )


@functools.lru_cache(maxsize=512)  # about 115 MB at 7,200 tasks a minibatch
def episode_uniforms(run_seed: int, generation: int, n: int) -> np.ndarray:
    """The first ``UNIFORMS`` draws of the generator an episode on minibatch position
    ``j`` < ``n`` of ``generation`` samples with under common random numbers
    (``executors.episode_seeds``): row ``j``. ``Generator.choice`` with ``p`` takes one
    uniform per draw, so these decide what its draws decide. Kept (read-only): seeding
    thousands of generators is most of a generation's time, and every fold of a
    cross-validation draws the same ones."""
    out = np.empty((n, UNIFORMS))
    for j in range(n):
        rng = np.random.default_rng(derived_seed(run_seed, "crn", generation, j))
        out[j] = rng.random(UNIFORMS)
    out.flags.writeable = False
    return out


def _draw(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``Generator.choice(len(p), p=p)`` on each row of ``p`` given its uniform ``u``:
    the normalised cumulative sum searched from the right."""
    cdf = p.cumsum(axis=-1)
    cdf /= cdf[..., -1:]
    return (cdf <= u[..., None]).sum(axis=-1)


def sampled_choices(
    heads: np.ndarray,
    features: np.ndarray,
    answered: np.ndarray,
    uniforms: np.ndarray,
    roles: Sequence[str],
) -> np.ndarray:
    """The workers ``heads`` (K, L + 3, d) pick on ``features`` (T, d) when sampling,
    as episodes would with ``uniforms`` (T, UNIFORMS): (K, T) worker indices. The role
    draw matters only for how many uniforms it takes before a masked worker is drawn
    again (``mask_roles``, ``mask_workers``)."""
    L = answered.shape[1]
    logits = np.einsum("kod,td->kto", heads, features, optimize=True)
    worker_p, role_p = softmax(logits[..., :L]), softmax(logits[..., L:])
    worker = _draw(worker_p, np.broadcast_to(uniforms[:, 0], worker_p.shape[:2]))
    allowed_roles = np.array([str(r) in roles for r in ROLES])
    used = np.full(worker.shape, 2)
    if not allowed_roles.all():
        role = _draw(role_p, np.broadcast_to(uniforms[:, 1], role_p.shape[:2]))
        used = np.where(allowed_roles[role], 2, 3)  # a role drawn again takes one more
    masked = worker_p * answered[None]
    total = masked.sum(axis=-1, keepdims=True)
    usable = (total[..., 0] > 0) & ~np.take_along_axis(answered[None], worker[..., None], -1)[
        ..., 0
    ].astype(bool)
    if usable.any():
        redraw_u = np.take_along_axis(
            np.broadcast_to(uniforms[None], (*worker.shape, UNIFORMS)),
            used[..., None],
            -1,
        )[..., 0]
        again = _draw(np.where(total > 0, masked / np.where(total > 0, total, 1), 1.0), redraw_u)
        worker = np.where(usable, again, worker)
    return worker


def argmax_actions(head: np.ndarray, features: np.ndarray, answered: np.ndarray) -> list[Action]:
    """What ``head`` (L + 3, d) decides on each of ``features`` (T, d) when acting by
    argmax (validation, evaluation): the worker with the highest probability among those
    with an answer (``mask_workers``), as the Worker, with both distributions as an
    episode records them (the worker's masked where some worker has no answer). The
    features are the backbone's in its own precision: with ``bf16-mixed`` an episode
    would recompute a near tie in fp32 first, and about 1% of decisions can differ
    (docs/results/figures.md, "Precision"); with ``fp32`` they are the episode's own."""
    L = answered.shape[1]
    logits = np.asarray(features, dtype=np.float64) @ head.T
    worker_p, role_p = softmax(logits[:, :L]), softmax(logits[:, L:])
    actions = []
    for i in range(len(worker_p)):
        action = choose(worker_p[i], role_p[i])
        action = Action(action.worker, _WORKER, action.worker_probs, _WORKER_ONLY)
        actions.append(mask_workers(action, tuple(bool(a) for a in answered[i]), None))
    return actions


class DecidedPolicy(AnyContext):
    """A policy that plays decisions made beforehand on a routing table: the action for
    each task's opening transcript (``render_transcript(task, ())``). An evaluation of it
    stores the episodes the decisions lead to, as any evaluation does. It reads no model
    (the decisions were made already), so every transcript fits its context."""

    def __init__(self, n_workers: int, actions: Mapping[str, Action]):
        self.n_workers = n_workers
        self._actions = dict(actions)

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        return self._actions[transcript]


__all__ = [
    "UNIFORMS",
    "RoutingTable",
    "DecidedPolicy",
    "argmax_actions",
    "build_routing_table",
    "episode_uniforms",
    "sampled_choices",
    "pool_reason",
]
