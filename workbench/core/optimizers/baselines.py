"""Baseline optimizers with the trainer's interface, budget, events and checkpoints, so a
user can reproduce the paper's comparison (docs/METHOD.md) on their own pool:

- random search: each candidate drawn U[-0.5, 0.5]^n, the best one kept;
- REINFORCE: the same linear head as a stochastic policy, a batch of sampled episodes
  per step, reward minus the batch mean as advantage, Adam;
- imitation: run every worker alone (one Worker turn) on the minibatch, label each task
  with a worker that solved it, and fit the head by softmax regression (Adam) on the
  query's feature, role Worker.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import numpy as np

from workbench.core.coordinator import HeadConfig, softmax
from workbench.core.optimizers.base import Features, Proposal
from workbench.core.protocol import render_transcript
from workbench.core.records import ROLES, Episode, Role


class RandomSearch:
    """Each candidate drawn U[-0.5, 0.5]^n; the best by training fitness is kept."""

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
    """Shared by the gradient baselines: the head vector, Adam, and features of turns."""

    def __init__(self, head: HeadConfig, features: Features, lr: float, tasks: dict):
        self.head, self.features, self.tasks = head, features, tasks
        self.theta = np.zeros(head.n_params)
        self.adam = Adam(head.n_params, lr)

    def center(self) -> np.ndarray:
        return self.theta.copy()

    def _log_prob_grad(
        self, feature: np.ndarray, worker_probs, role_probs, worker: int, role: int
    ) -> np.ndarray:
        """d log pi(worker, role | feature) / d W for the linear softmax head."""
        L = self.head.n_workers
        rows = np.concatenate([-np.asarray(worker_probs), -np.asarray(role_probs)])
        rows[worker] += 1.0
        rows[L + role] += 1.0
        return np.outer(rows, feature).reshape(-1)

    def dumps(self) -> bytes:
        return pickle.dumps((self.theta, self.adam.m, self.adam.v, self.adam.t))

    def loads(self, state: bytes) -> None:
        self.theta, self.adam.m, self.adam.v, self.adam.t = pickle.loads(state)


class Reinforce(_HeadLearner):
    """REINFORCE on the head: every proposal is the current policy; one Adam step per
    generation on the batch of its sampled episodes, advantage = reward - batch mean."""

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
            for i, turn in enumerate(e.turns):
                steps.append(
                    (
                        render_transcript(task, e.turns[:i], turn.context_omitted),
                        turn,
                        e.pool.index(turn.worker),
                        advantage,
                    )
                )
        if not steps:
            return
        # the recorded probabilities are the policy's at theta; only the features are recomputed
        # (feature-cache hits: these transcripts were read during the episodes)
        feats = self.features([s[0] for s in steps])
        grad = np.zeros_like(self.theta)
        for (_, turn, worker, advantage), f in zip(steps, feats, strict=True):
            grad += advantage * self._log_prob_grad(
                f, turn.worker_probs, turn.role_probs, worker, ROLES.index(turn.role)
            )
        self.theta = self.adam.step(self.theta, grad / len(flat))

    @property
    def sigma(self) -> float:
        return float(np.sqrt(np.mean(self.theta**2)))


class Imitation(_HeadLearner):
    """Imitation of the best single worker: label collection plus softmax regression."""

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
        self.labels: dict[str, int] = {}  # task id -> a worker that solved it alone

    def ask(self) -> list[Proposal]:
        return [Proposal(fixed_worker=w) for w in range(self.head.n_workers)]

    def tell(self, proposals, fitness, episodes: Sequence[Sequence[Episode]]) -> None:
        for proposal, eps in zip(proposals, episodes, strict=True):
            for e in eps:
                if e.reward >= 1.0 and e.task_id not in self.labels:
                    self.labels[e.task_id] = proposal.fixed_worker
        if not self.labels:
            return
        ids = sorted(self.labels)
        feats = self.features([render_transcript(self.tasks[i], ()) for i in ids])
        L = self.head.n_workers
        role = ROLES.index(Role.WORKER)
        for _ in range(self.epochs):
            W = self.theta.reshape(self.head.shape)
            grad = np.zeros_like(W)
            for f, task_id in zip(feats, ids, strict=True):
                logits = W @ f
                grad += self._log_prob_grad(
                    f, softmax(logits[:L]), softmax(logits[L:]), self.labels[task_id], role
                ).reshape(W.shape)
            self.theta = self.adam.step(self.theta, grad.reshape(-1) / len(ids))

    @property
    def sigma(self) -> float:
        return float(np.sqrt(np.mean(self.theta**2)))

    def dumps(self) -> bytes:
        return pickle.dumps((super().dumps(), self.labels))

    def loads(self, state: bytes) -> None:
        base, self.labels = pickle.loads(state)
        super().loads(base)
