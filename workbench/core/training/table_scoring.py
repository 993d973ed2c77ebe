"""A training run's routing table and its query features, as the trainer scores
candidates on them (``table.py`` has the table and the decisions replayed on it).

A run on a recorded pool routed in one Worker turn builds this once, before its first
generation: the table of its training and validation tasks (or the one cross-validation
built for the fold) and each task's query feature, read from the workspace's feature
store where kept, else computed once and kept. Every candidate of every generation is
then scored on arrays, without playing an episode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core.config import OptimizerSection
from workbench.core.coordinator import Action, Backbone
from workbench.core.coordinator.feature_store import FeatureStore, stored_features
from workbench.core.protocol import EpisodeSettings
from workbench.core.records import Role
from workbench.core.tasks.model import Task
from workbench.core.training.checkpoint import TableChoice
from workbench.core.training.events import PreparingStage, Stopped, StopToken
from workbench.core.training.table import (
    RoutingTable,
    argmax_actions,
    build_routing_table,
    episode_uniforms,
    sampled_choices,
)
from workbench.core.transcript import render_transcript
from workbench.core.workers.base import Worker


class TableScoring:
    """The routing table of a run's tasks and their query features; ``head_shape`` and
    ``n_svf`` place the head's weights in a stored vector (``[SVF offsets || head]``)."""

    def __init__(
        self,
        pool: Sequence[Worker],
        settings: EpisodeSettings,
        backbone: Backbone,
        feature_store: FeatureStore | None,
        *,
        head_shape: tuple[int, int],
        n_svf: int,
        table: RoutingTable | None = None,
    ):
        self.pool, self.settings, self.backbone = list(pool), settings, backbone
        self.feature_store = feature_store
        self.head_shape, self.n_svf = head_shape, n_svf
        self.table = table  # a table built by the caller (cross-validation, each fold)
        self.features: dict[str, np.ndarray] = {}  # task id -> query feature

    @property
    def built(self) -> bool:
        return bool(self.features)

    async def build(
        self,
        tasks: Sequence[Task],
        progress: Callable[[PreparingStage, int, int], None] | None = None,
        stop: StopToken | None = None,
    ) -> None:
        """The table of ``tasks`` (unless given) and their query features;
        ``progress(stage, done, total)`` as each is built ("table", "features": the keys of
        ``events.PREPARING_WORDS``), called in the event loop's thread. A ``stop`` ends the
        work at its next step (``Stopped``; a chunk of features, the rows read so far
        kept), not after minutes of reading."""
        loop = asyncio.get_running_loop()

        def told(stage: PreparingStage) -> Callable[[int, int], None]:
            def said(done: int, total: int) -> None:  # in the loop's thread or the reader's
                if stop is not None and stop.stopped:
                    raise Stopped
                if progress is not None:
                    loop.call_soon_threadsafe(progress, stage, done, total)

            return said

        if self.table is None:
            self.table = await build_routing_table(
                self.pool, tasks, self.settings, progress=told("table")
            )
        texts = [render_transcript(t, ()) for t in tasks]
        rows = await asyncio.to_thread(
            stored_features, self.backbone, self.feature_store, texts, told("features")
        )
        self.features.update(zip((t.id for t in tasks), rows, strict=True))

    def rows(self, tasks: Sequence[Task]) -> tuple[np.ndarray, np.ndarray]:
        """The table rows and query features of ``tasks``."""
        assert self.table is not None
        return self.table.rows(tasks), np.stack([self.features[t.id] for t in tasks])

    def sampled(
        self, heads: np.ndarray, tasks: Sequence[Task], seed: int, generation: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The table rows of ``tasks`` and each head's sampled choice on each task: the
        decisions its training episodes would make (``table.sampled_choices`` with the
        generation's episode draws)."""
        assert self.table is not None
        rows, features = self.rows(tasks)
        uniforms = episode_uniforms(seed, generation, len(tasks))
        choices = sampled_choices(
            heads, features, self.table.answered[rows], uniforms, self.settings.roles
        )
        return rows, choices

    def generation(
        self,
        heads: np.ndarray,
        tasks: Sequence[Task],
        seed: int,
        generation: int,
        shaping: OptimizerSection,
    ) -> tuple[list[float], dict[str, Any]]:
        """A generation's candidates (their ``heads``) scored on ``tasks``: each one's
        fitness (its sampled decisions' mean reward with the optimizer's cost and turn
        shaping) and what the generation's statistics count (``GenerationStats`` fields:
        a decision is one episode and one call)."""
        assert self.table is not None
        rows, choices = self.sampled(heads, tasks, seed, generation)
        reward, cost = self.table.outcome(rows, choices)
        o = shaping
        scores = reward - o.cost_penalty * cost - o.turn_penalty + o.turn_bonus
        n = int(choices.size)
        return [float(x) for x in scores.mean(axis=1)], {
            "evaluations": n,
            "calls": n,
            "dollars": float(cost.sum()),
            "tokens": int(self.table.tokens[rows, choices].sum()),
            "cache_hits": 0,
            "coordinator_s": 0.0,
            "worker_s": float(self.table.latency[rows, choices].sum()),
            "features_requested": n,
            "features_computed": 0,
            "usage": self.usage(choices),
            "opening_share": 0.0,
        }

    def actions(self, vector: np.ndarray, tasks: Sequence[Task]) -> list[Action]:
        """What a head-space ``vector`` (as stored) decides for each task by argmax
        (``table.argmax_actions``). Tasks whose features were not read yet are read from
        the feature store (or computed and kept)."""
        assert self.table is not None
        missing = [t for t in tasks if t.id not in self.features]
        if missing:
            rows = stored_features(
                self.backbone, self.feature_store, [render_transcript(t, ()) for t in missing]
            )
            self.features.update(zip((t.id for t in missing), rows, strict=True))
        rows, features = self.rows(tasks)
        head = np.asarray(vector)[self.n_svf :].reshape(self.head_shape)
        return argmax_actions(head, features, self.table.answered[rows])

    def choices(self, vector: np.ndarray, tasks: Sequence[Task]) -> np.ndarray:
        """The worker each task goes to under ``actions``."""
        return np.array([a.worker for a in self.actions(vector, tasks)], dtype=np.int64)

    def decisions(self, vector: np.ndarray, tasks: Sequence[Task]) -> tuple[TableChoice, ...]:
        """``vector``'s argmax decision on each of ``tasks``: the worker it asks and that
        answer's reward (their mean is the head's validation score)."""
        assert self.table is not None
        rows, _ = self.rows(tasks)
        choices = self.choices(vector, tasks)
        rewards = self.table.outcome(rows, choices)[0]
        return tuple(
            TableChoice(t.id, self.pool[int(w)].id, float(r))
            for t, w, r in zip(tasks, choices, rewards, strict=True)
        )

    def usage(self, choices: np.ndarray) -> dict[str, int]:
        """Calls per worker and role, as a generation's statistics count them."""
        workers, counts = np.unique(choices.reshape(-1), return_counts=True)
        return {
            f"{self.pool[int(w)].id}/{Role.WORKER}": int(c)
            for w, c in zip(workers, counts, strict=True)
        }


__all__ = ["TableScoring"]
