"""Baseline optimizers with the trainer's interface, budget, events and checkpoints, so a
user can reproduce the paper's comparison (docs/METHOD.md) on their own pool:

- random search: each candidate drawn U[-0.5, 0.5]^n, the best one kept;
- REINFORCE: the same linear head as a stochastic policy, a batch of sampled episodes
  per step, reward minus the batch mean as advantage, Adam;
- imitation: run every worker alone (one Worker turn) on the minibatch, label each task
  with its best worker (``Imitation`` states the rule and its tie-breaks), and fit the
  head by softmax regression (Adam) on the query's feature, role Worker.

Random search draws head weights themselves, never in the trainer's search basis
(the trainer searches random search in the identity basis).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Self

import numpy as np

from workbench.core.coordinator import HeadConfig, softmax
from workbench.core.optimizers.base import Features, OptimizerBuild, Proposal
from workbench.core.records import ROLES, Episode, Role
from workbench.core.transcript import render_transcript


class RandomSearch:
    """Each candidate drawn U[-0.5, 0.5]^n; the best by training fitness is kept."""

    @classmethod
    def from_config(cls, build: OptimizerBuild) -> RandomSearch:
        return cls(
            build.n, popsize=build.popsize, rollouts=build.settings.rollouts, seed=build.seed
        )

    def __init__(self, n: int, *, popsize: int, rollouts: int, seed: int):
        self.n, self.popsize, self.rollouts = n, popsize, rollouts
        self._rng = np.random.default_rng(seed)
        self._best = np.zeros(n)
        self._best_fitness = -np.inf

    def ask(self) -> list[Proposal]:
        return [Proposal(self._rng.uniform(-0.5, 0.5, self.n)) for _ in range(self.popsize)]

    def tell(self, proposals, fitness, episodes) -> None:
        k = int(np.argmax(fitness))
        if fitness[k] > self._best_fitness:
            self._best_fitness, self._best = fitness[k], proposals[k].vector.copy()

    def center(self) -> np.ndarray:
        return self._best.copy()

    @property
    def sigma(self) -> float:
        return 0.5

    def dumps(self) -> bytes:
        return pickle.dumps((self._rng.bit_generator.state, self._best, self._best_fitness))

    def loads(self, state: bytes) -> None:
        rng_state, self._best, self._best_fitness = pickle.loads(state)
        self._rng.bit_generator.state = rng_state


class Adam:
    """Adam on a flat vector (ascent)."""

    def __init__(self, n: int, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m, self.v, self.t = np.zeros(n), np.zeros(n), 0

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad * grad
        m_hat = self.m / (1 - self.b1**self.t)
        v_hat = self.v / (1 - self.b2**self.t)
        return params + self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


class _HeadLearner:
    """Shared by the gradient baselines: the head vector, Adam, features of turns, and how
    a config builds one."""

    def __init__(self, head: HeadConfig, features: Features, lr: float, tasks: dict):
        self.head, self.features, self.tasks = head, features, tasks
        self.theta = np.zeros(head.n_params)
        self.adam = Adam(head.n_params, lr)

    @classmethod
    def from_config(cls, build: OptimizerBuild) -> Self:
        o = build.settings
        return cls(
            build.head,
            build.features,
            popsize=build.popsize,  # type: ignore[call-arg]  # the subclasses take these
            rollouts=o.rollouts,
            lr=o.learning_rate,
            tasks=build.tasks or {},
        )

    def center(self) -> np.ndarray:
        return self.theta.copy()

    def _log_prob_grad(
        self, feature: np.ndarray, worker_probs, role_probs, worker: int, role: int | None
    ) -> np.ndarray:
        """d log pi(worker, role | feature) / d W for the linear softmax head (``role``
        None: the worker's part only, for a turn whose role the policy did not choose)."""
        L = self.head.n_workers
        rows = np.concatenate([-np.asarray(worker_probs), -np.asarray(role_probs)])
        rows[worker] += 1.0
        if role is None:
            rows[L:] = 0.0
        else:
            rows[L + role] += 1.0
        return np.outer(rows, feature).reshape(-1)

    def dumps(self) -> bytes:
        return pickle.dumps((self.theta, self.adam.m, self.adam.v, self.adam.t))

    def loads(self, state: bytes) -> None:
        self.theta, self.adam.m, self.adam.v, self.adam.t = pickle.loads(state)


class Reinforce(_HeadLearner):
    """REINFORCE on the head: every proposal is the current policy, so a generation's
    batch is all its ``popsize x rollouts`` sampled episodes (448 at 28 x 16). One Adam
    step per generation (learning rate ``optimizer.learning_rate``, default 0.01; betas
    0.9 and 0.999) along the batch's mean of ``advantage x sum over the episode's turns
    of grad log pi(worker, role)``, advantage = the episode's reward minus the batch's
    mean reward. Features are in the trainer's search basis."""

    def __init__(
        self,
        head: HeadConfig,
        features: Features,
        *,
        popsize: int,
        rollouts: int,
        lr: float,
        tasks: dict,
    ):
        super().__init__(head, features, lr, tasks)
        self.popsize, self.rollouts = popsize, rollouts

    def ask(self) -> list[Proposal]:
        return [Proposal(self.theta.copy()) for _ in range(self.popsize)]

    def tell(self, proposals, fitness, episodes: Sequence[Sequence[Episode]]) -> None:
        flat = [e for eps in episodes for e in eps]
        baseline = float(np.mean([e.reward for e in flat]))
        steps = []  # (transcript, turn, chosen worker index, advantage)
        for e in flat:
            advantage = e.reward - baseline
            if advantage == 0:
                continue
            task = self.tasks[e.task_id]
            chosen_by_thinker = set(e.grade_details.get("thinker_role_turns", ()))
            for i, turn in enumerate(e.turns):
                steps.append(
                    (
                        render_transcript(task, e.turns[:i], turn.context_omitted),
                        turn,
                        e.pool.index(turn.worker),
                        advantage,
                        i in chosen_by_thinker,  # a Thinker chose this role, not the policy
                    )
                )
        if not steps:
            return
        # the recorded probabilities are the policy's at theta; only the features are recomputed
        # (feature-cache hits: these transcripts were read during the episodes)
        feats = self.features([s[0] for s in steps])
        grad = np.zeros_like(self.theta)
        for (_, turn, worker, advantage, suggested), f in zip(steps, feats, strict=True):
            role = None if suggested else ROLES.index(turn.role)
            grad += advantage * self._log_prob_grad(
                f, turn.worker_probs, turn.role_probs, worker, role
            )
        self.theta = self.adam.step(self.theta, grad / len(flat))

    @property
    def sigma(self) -> float:
        return float(np.sqrt(np.mean(self.theta**2)))


class Imitation(_HeadLearner):
    """Imitation of the best single worker per task: label collection plus softmax
    regression.

    Every generation each worker plays the same minibatch alone (one Worker turn). A
    task's label is its best worker, by one stated rule (``label``): the highest solve
    rate on that task over every play so far; a tie goes to the worker with the highest
    training accuracy on the task's category (``Task.group``), then to the cheaper one
    (mean dollars per episode), then to the earlier one in the pool. A task that no
    worker has solved has no label. The head is then fitted (Adam, ``epochs`` passes) to
    the labels on the query's feature, role Worker.
    """

    def __init__(
        self,
        head: HeadConfig,
        features: Features,
        *,
        popsize: int,
        rollouts: int,
        lr: float,
        tasks: dict,
        epochs: int = 50,
    ):
        super().__init__(head, features, lr, tasks)
        L = head.n_workers
        self.popsize = L  # one proposal per worker
        self.rollouts = max(1, popsize * rollouts // L)  # the same episodes per generation
        self.epochs = epochs
        # what the labels are drawn from: (task id, worker) -> [solved, played];
        # (category, worker) -> [solved, played]; worker -> [dollars, episodes]
        self.solved: dict[tuple[str, int], list[float]] = {}
        self.category: dict[tuple[str, int], list[float]] = {}
        self.cost: dict[int, list[float]] = {}

    def ask(self) -> list[Proposal]:
        return [Proposal(fixed_worker=w) for w in range(self.head.n_workers)]

    def _group(self, task_id: str) -> str:
        task = self.tasks.get(task_id)
        return task.group if task is not None else ""

    def record(self, worker: int, episode: Episode) -> None:
        """Count one play of ``worker`` alone on a task."""
        reward = float(episode.reward >= 1.0)
        for table, key in (
            (self.solved, (episode.task_id, worker)),
            (self.category, (self._group(episode.task_id), worker)),
        ):
            counts = table.setdefault(key, [0.0, 0.0])
            counts[0] += reward
            counts[1] += 1
        spent = self.cost.setdefault(worker, [0.0, 0.0])
        spent[0] += episode.cost
        spent[1] += 1

    def label(self, task_id: str) -> int | None:
        """The task's best worker by the rule in the class docstring (None: unsolved)."""

        def rate(table: dict, key: tuple) -> float:
            solved, played = table.get(key, (0.0, 0.0))
            return solved / played if played else 0.0

        played = [w for w in range(self.head.n_workers) if (task_id, w) in self.solved]
        if not any(self.solved[(task_id, w)][0] for w in played):
            return None
        group = self._group(task_id)

        def key(w: int) -> tuple[float, float, float, int]:
            dollars, episodes = self.cost.get(w, (0.0, 0.0))
            mean_cost = dollars / episodes if episodes else 0.0
            return (
                -rate(self.solved, (task_id, w)),
                -rate(self.category, (group, w)),
                mean_cost,
                w,
            )

        return min(played, key=key)

    @property
    def labels(self) -> dict[str, int]:
        """Task id -> its best worker, for every task some worker has solved."""
        out = {}
        for task_id in sorted({t for t, _ in self.solved}):
            best = self.label(task_id)
            if best is not None:
                out[task_id] = best
        return out

    def tell(self, proposals, fitness, episodes: Sequence[Sequence[Episode]]) -> None:
        for proposal, eps in zip(proposals, episodes, strict=True):
            for e in eps:
                self.record(proposal.fixed_worker, e)
        labels = self.labels
        if not labels:
            return
        ids = sorted(labels)
        feats = self.features([render_transcript(self.tasks[i], ()) for i in ids])
        L = self.head.n_workers
        role = ROLES.index(Role.WORKER)
        for _ in range(self.epochs):
            W = self.theta.reshape(self.head.shape)
            grad = np.zeros_like(W)
            for f, task_id in zip(feats, ids, strict=True):
                logits = W @ f
                grad += self._log_prob_grad(
                    f, softmax(logits[:L]), softmax(logits[L:]), labels[task_id], role
                ).reshape(W.shape)
            self.theta = self.adam.step(self.theta, grad.reshape(-1) / len(ids))

    @property
    def sigma(self) -> float:
        return float(np.sqrt(np.mean(self.theta**2)))

    def dumps(self) -> bytes:
        return pickle.dumps((super().dumps(), (self.solved, self.category, self.cost)))

    def loads(self, state: bytes) -> None:
        base, tables = pickle.loads(state)
        super().loads(base)
        if isinstance(tables, dict):  # a checkpoint from before best-worker labels: task -> worker
            self.solved = {(t, w): [1.0, 1.0] for t, w in tables.items()}
            self.category, self.cost = {}, {}
        else:
            self.solved, self.category, self.cost = tables
