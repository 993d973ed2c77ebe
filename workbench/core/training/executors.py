"""Where a generation's training episodes run: the seam between the trainer's ask / tell
loop and the episodes it scores.

The trainer turns each proposal into a ``Candidate`` (a fixed worker, or a parameter
vector already in head space) and hands the generation's candidates and minibatch
(``GenerationWork``) to an ``Executor``. Whatever runs them, each episode is a function of
the candidate, the task and the seeds ``episode_seeds`` derives from the run's seed, the
generation, the candidate and the task, so every executor gives the same episodes:

- ``LocalExecutor``: all episodes in this process's event loop, their backbone forwards
  batched (the default).
- ``training.ray_executor.RayExecutor``: candidates spread over Ray actors, each with its
  own backbone replica and worker clients (``[run] executor = "ray"``).

Both call ``play_candidate``: one definition of what a candidate's episodes are.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from workbench.core.coordinator import Backbone, Coordinator, Head, HeadConfig
from workbench.core.policies import ExploringStart, FixedPolicy, Policy
from workbench.core.protocol import EpisodeSettings, EpisodeTag, episode_gate, run_episode
from workbench.core.records import Episode
from workbench.core.tasks.model import Task
from workbench.core.training.events import StopToken
from workbench.core.workers.base import Worker


def derived_seed(*parts: object) -> int:
    """A 64-bit seed derived from a run's seed and what it is for (stable across runs)."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big")


def episode_seeds(run_seed: int, g: int, k: int, j: int, common: bool) -> tuple[int, int]:
    """The seeds of candidate ``k``'s episode on minibatch task ``j`` in generation ``g``:
    one for the coordinator's sampled choices, one for the worker calls.

    ``common`` (common random numbers, for optimizers that rank different candidates:
    sep-CMA-ES, random search): every candidate of a generation gets the same seeds on the
    same task, so candidates that make the same choice draw it from the same uniform
    (inverse-CDF sampling) and workers asked the same thing with the same seed answer
    alike (as a real pool's seeded or cached calls do). Each episode's distribution is
    unchanged; what changes is that two candidates' fitness differ by their policies, not
    by independent luck. Without it (REINFORCE, imitation: their candidates are copies of
    one policy, whose episodes must differ) each episode has its own seeds.
    """
    if common:
        return (
            derived_seed(run_seed, "crn", g, j),
            derived_seed(run_seed, "crn-w", g, j) % 2**31,
        )
    return derived_seed(run_seed, g, k, j), derived_seed(run_seed, "w", g, k, j) % 2**31


def coordinator_from_vector(
    backbone: Backbone, n_workers: int, vector: np.ndarray, svf: bool
) -> Coordinator:
    """The coordinator of a parameter vector ``[SVF offsets || head weights]`` (docs/METHOD.md)."""
    n_svf = backbone.svf().n_params if svf else 0
    head = Head(HeadConfig(n_workers, backbone.hidden_size), np.asarray(vector)[n_svf:])
    return Coordinator(backbone, head, np.asarray(vector)[:n_svf] if n_svf else None)


@dataclass(frozen=True)
class Candidate:
    """One candidate as an executor plays it: a fixed worker for one Worker turn (the
    imitation baseline's labels), or a vector ``[SVF offsets || head weights]`` in head
    space, for up to ``max_turns`` turns."""

    index: int
    max_turns: int
    vector: np.ndarray | None = None
    fixed_worker: int | None = None


@dataclass(frozen=True, kw_only=True)
class GenerationWork:
    """What every candidate of generation ``generation`` is scored on: the minibatch, the
    episode settings, the seeds' source and the exploring starts' share. Sent once per
    generation to wherever the episodes run."""

    run_id: str
    generation: int
    run_seed: int
    common_random_numbers: bool
    opening_share: float
    minibatch: tuple[Task, ...]
    settings: EpisodeSettings
    n_workers: int
    svf: bool


def candidate_policy(backbone: Backbone, work: GenerationWork, candidate: Candidate) -> Policy:
    """The policy that plays ``candidate``'s episodes (its openings widened by the
    generation's exploring-starts share, if any)."""
    policy: Policy
    if candidate.fixed_worker is not None:
        policy = FixedPolicy(work.n_workers, candidate.fixed_worker)
    else:
        assert candidate.vector is not None  # a candidate is a vector or a fixed worker
        policy = coordinator_from_vector(backbone, work.n_workers, candidate.vector, work.svf)
    return ExploringStart(policy, work.opening_share) if work.opening_share else policy


async def play_candidate(
    work: GenerationWork,
    candidate: Candidate,
    *,
    backbone: Backbone,
    pool: Sequence[Worker],
    stop: StopToken,
    gate: asyncio.Semaphore,
    on_episode: Callable[[int, Episode], None] | None = None,
) -> list[Episode]:
    """``candidate``'s episodes on every task of the minibatch, in minibatch order."""
    settings = replace(work.settings, max_turns=candidate.max_turns)
    k = candidate.index

    async def one(j: int, task: Task) -> Episode:
        async with gate:
            await stop.checkpoint()
            policy = candidate_policy(backbone, work, candidate)
            rng_seed, worker_seed = episode_seeds(
                work.run_seed, work.generation, k, j, work.common_random_numbers
            )
            episode = await run_episode(
                policy,
                pool,
                task,
                settings,
                rng=np.random.default_rng(rng_seed),
                seed=worker_seed,
                tag=EpisodeTag(run_id=work.run_id, generation=work.generation, candidate=k),
            )
        if on_episode is not None:
            on_episode(k, episode)
        return episode

    return list(await asyncio.gather(*(one(j, t) for j, t in enumerate(work.minibatch))))


@dataclass(frozen=True)
class ExecutorInfo:
    """What a run's record says about where its episodes ran: the executor, and for Ray
    the number of actors and the nodes they run on."""

    executor: str = "local"
    actors: int | None = None
    nodes: tuple[str, ...] = ()


class Executor(Protocol):
    """Runs a generation's candidates; ``on_episode(k, episode)`` is called on the
    caller's loop for each finished episode (for progress), in any order. Returns each
    candidate's episodes in candidate order, each in minibatch order."""

    @property
    def info(self) -> ExecutorInfo: ...

    async def run_generation(
        self,
        work: GenerationWork,
        candidates: Sequence[Candidate],
        on_episode: Callable[[int, Episode], None],
    ) -> list[list[Episode]]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """Every episode in this process: all of a generation's in flight at once (or at most
    ``concurrency``), their backbone forwards batched together."""

    info = ExecutorInfo()

    def __init__(
        self, backbone: Backbone, pool: Sequence[Worker], stop: StopToken, concurrency: int
    ):
        self.backbone = backbone
        self.pool = list(pool)
        self.stop = stop
        self.concurrency = concurrency

    async def run_generation(
        self,
        work: GenerationWork,
        candidates: Sequence[Candidate],
        on_episode: Callable[[int, Episode], None],
    ) -> list[list[Episode]]:
        gate = episode_gate(self.concurrency, len(candidates) * len(work.minibatch))
        return list(
            await asyncio.gather(
                *(
                    play_candidate(
                        work,
                        c,
                        backbone=self.backbone,
                        pool=self.pool,
                        stop=self.stop,
                        gate=gate,
                        on_episode=on_episode,
                    )
                    for c in candidates
                )
            )
        )

    def close(self) -> None:
        """Nothing to release: the backbone and the pool belong to the caller."""
