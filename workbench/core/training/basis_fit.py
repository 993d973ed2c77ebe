"""Fitting a run's search basis (``basis.py``) before its first generation: from the
opening transcripts of a seeded sample of its training tasks, and for the whitened basis
at two or more turns also from transcripts after one turn of each worker (the trainer
plays those, since they count in the run's spend); the projection basis from every
training task's query feature where a routing table holds them all."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from workbench.core.config import OptimizerSection
from workbench.core.coordinator import Backbone
from workbench.core.policies import FixedPolicy
from workbench.core.protocol import EpisodeSettings, EpisodeTag, episode_gate, run_episode
from workbench.core.records import Episode, Role
from workbench.core.tasks.model import Task
from workbench.core.training.basis import CALIBRATION_ROLES, CALIBRATION_TASKS, SearchBasis
from workbench.core.training.events import StopToken
from workbench.core.training.executors import derived_seed
from workbench.core.transcript import render_transcript
from workbench.core.workers.base import Worker

log = logging.getLogger(__name__)


async def fit_basis(
    settings: OptimizerSection,
    seed: int,
    train: Sequence[Task],
    backbone: Backbone,
    stop: StopToken,
    *,
    max_turns: int,
    calibration: Callable[[list[Task]], Awaitable[list[str]]],
    kept: Mapping[str, np.ndarray] | None = None,
) -> SearchBasis:
    """The search basis ``settings`` ask for (none if not ``SearchBasis.fitted``), seeded
    by the run's ``seed``. ``calibration`` plays one turn of each worker on the sampled
    tasks (the whitened basis at ``max_turns`` of two or more); ``kept``: the query
    features a routing table holds, by task id."""
    if not SearchBasis.fitted(settings.search_basis, settings.name):
        return SearchBasis()
    if settings.search_basis == "projection":
        return await _fit_projection(seed, train, backbone, settings.search_rank, kept)
    rng = np.random.default_rng(derived_seed(seed, "basis"))
    sample = rng.choice(len(train), size=min(CALIBRATION_TASKS, len(train)), replace=False)
    tasks = [train[int(i)] for i in sorted(sample)]
    texts = [render_transcript(task, ()) for task in tasks]
    if settings.search_basis == "whitened" and max_turns > 1:
        texts += await calibration(tasks)
    features = await stop.race(asyncio.to_thread(backbone.features, texts))
    if settings.search_basis == "whitened":
        basis = SearchBasis.fit_whitened(features, settings.search_rank)
    else:
        basis = SearchBasis.fit(features)
    log.info(
        "%s search basis, rank %d, alpha %.2f",
        basis.kind,
        0 if basis.components is None else len(basis.components),
        basis.alpha,
    )
    return basis


async def _fit_projection(
    seed: int,
    train: Sequence[Task],
    backbone: Backbone,
    rank: int,
    kept: Mapping[str, np.ndarray] | None,
) -> SearchBasis:
    """The projection basis, fitted on every training task's query feature where they
    are ``kept`` (a routing table), else on a seeded sample of them."""
    if kept:
        features = np.stack([kept[t.id] for t in train])
    else:
        rng = np.random.default_rng(derived_seed(seed, "basis"))
        size = min(len(train), max(CALIBRATION_TASKS, 4 * (rank + 1)))
        sample = sorted(rng.choice(len(train), size=size, replace=False))
        texts = [render_transcript(train[int(i)], ()) for i in sample]
        features = await asyncio.to_thread(backbone.features, texts)
    basis = SearchBasis.fit_projection(features, rank)
    log.info("projection basis, rank %d, from %d tasks", rank, len(features))
    return basis


async def calibration_episodes(
    pool: Sequence[Worker],
    settings: EpisodeSettings,
    tasks: Sequence[Task],
    stop: StopToken,
    *,
    seed: int,
    concurrency: int,
    run_id: str | None,
    paid: Callable[[Episode], None],
) -> list[Episode]:
    """One turn of each worker as Thinker and as Worker on each calibration task (for the
    whitened basis: what a Thinker's guidance or a first answer adds to a transcript is
    then among the directions it evens out), each told to ``paid`` as it ends."""
    gate = episode_gate(concurrency, len(tasks) * len(pool) * len(CALIBRATION_ROLES))
    one_turn = replace(settings, max_turns=1)

    async def one(j: int, w: int, role: Role, task: Task) -> Episode:
        async with gate:
            await stop.checkpoint()
            episode = await run_episode(
                FixedPolicy(len(pool), w, role),
                pool,
                task,
                one_turn,
                seed=derived_seed(seed, "basis", j, w, str(role)) % 2**31,
                tag=EpisodeTag(run_id=run_id, generation=-1, candidate=None),
            )
        paid(episode)  # a calibration episode counts as a training one
        return episode

    plays = (
        one(j, w, role, task)
        for j, task in enumerate(tasks)
        for w in range(len(pool))
        for role in CALIBRATION_ROLES
    )
    return list(await stop.race(asyncio.gather(*plays)))


__all__ = ["calibration_episodes", "fit_basis"]
