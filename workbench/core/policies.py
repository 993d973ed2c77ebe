"""Policies: what chooses the (worker, role) of each turn of an episode.

``Policy`` is the one protocol ``run_episode`` drives. The coordinator
(``workbench.core.coordinator.Coordinator``) implements it with a backbone and a head;
``FixedPolicy`` always gives one worker one role (single-worker baselines, imitation
labels, the sandbox oracle); ``RandomPolicy`` draws uniformly (the random-routing baseline);
``ExploringStart`` widens another policy's first decision of a training episode.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from workbench.core.coordinator import Action, explore
from workbench.core.records import ROLES, Role


@runtime_checkable
class Policy(Protocol):
    """Chooses a turn's worker and role from the transcript so far. ``rng`` samples (a
    training rollout); ``None`` acts greedily (evaluation). ``n_workers`` is the size of
    the pool it chooses from."""

    @property
    def n_workers(self) -> int:
        """The size of the pool the policy chooses from."""
        ...

    def context_fits(self, transcript: str) -> bool:
        """Whether the policy reads ``transcript`` whole. The coordinator reads it through
        a backbone of bounded context; while this says no, ``run_episode`` drops the
        oldest turns first from what it reads (``transcript.fit_transcript``). A policy that
        reads no model fits any (``AnyContext``)."""
        ...

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        """The action for the next turn, with both probability vectors."""
        ...


class AnyContext:
    """``Policy.context_fits`` of a policy that reads no model: every transcript fits."""

    def context_fits(self, transcript: str) -> bool:
        return True


class FixedPolicy(AnyContext):
    """A coordinator stand-in that always gives one worker one role (single-worker
    baselines, imitation labels, the sandbox oracle)."""

    def __init__(self, n_workers: int, worker: int, role: Role = Role.WORKER):
        self.n_workers = n_workers
        probs = tuple(1.0 if i == worker else 0.0 for i in range(n_workers))
        r = ROLES.index(role)
        self._action = Action(worker, r, probs, tuple(1.0 if i == r else 0.0 for i in range(3)))

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        return self._action


class RandomPolicy(AnyContext):
    """Uniformly random (worker, role) at every turn, from the episode's generator."""

    def __init__(self, n_workers: int):
        self.n_workers = n_workers

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        rng = rng if rng is not None else np.random.default_rng()
        w, r = int(rng.integers(self.n_workers)), int(rng.integers(3))
        return Action(w, r, tuple([1.0 / self.n_workers] * self.n_workers), (1 / 3, 1 / 3, 1 / 3))


class ExploringStart:
    """``policy`` for ONE training episode, its first decision drawn from its own
    distributions mixed with the uniform ones (``share`` of uniform); later decisions are
    the policy's own. Exploring starts (Monte Carlo control's remedy for a first choice
    the policy stops trying): while ``share`` is high, a candidate's fitness measures what
    it does after every opening, so what pays after a Thinker turn is learned before the
    opening's role settles (``optimizer.exploring_starts``, docs/guides/training.md, "Exploring starts").
    Sampled decisions only: with ``rng`` None (argmax: validation, evaluation) it is the
    policy itself. Other attributes are the policy's."""

    def __init__(self, policy: Policy, share: float):
        self.policy, self.share, self._opened = policy, share, False

    def __getattr__(self, name: str):
        return getattr(self.policy, name)

    def context_fits(self, transcript: str) -> bool:
        return self.policy.context_fits(transcript)

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        if self._opened or rng is None:
            return await self.policy.adecide(transcript, rng)
        self._opened = True
        # the policy's distributions, from a generator of its own: the episode's generator
        # makes the one draw per choice that an unwidened decision makes, so candidates
        # sharing random numbers (``training.executors.episode_seeds``) still draw alike
        own = await self.policy.adecide(transcript, np.random.default_rng(0))
        return explore(own, self.share, rng)
