"""The coordinator: a backbone, a head and optional SVF offsets."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.core.coordinator.backbone import Backbone
from workbench.core.coordinator.head import Action, Head, HeadConfig


@dataclass
class Coordinator:
    """A backbone, a head and optional SVF offsets: reads a transcript, picks (worker, role).

    Many coordinators (the candidates of a generation) share one backbone, its feature
    cache and its batching; each passes its own SVF vector with every request.
    """

    backbone: Backbone
    head: Head
    svf_delta: np.ndarray | None = field(default=None)

    @classmethod
    def untrained(
        cls, backbone: Backbone, n_workers: int, seed: int = 0, scale: float = 0.03
    ) -> Coordinator:
        return cls(backbone, Head.random(HeadConfig(n_workers, backbone.hidden_size), seed, scale))

    @property
    def n_workers(self) -> int:
        return self.head.config.n_workers

    def decide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        """One decision, synchronously (for scripts and tests)."""
        feature = self.backbone.feature(transcript, self.svf_delta)
        if self._recheck(feature, rng):
            feature = self.backbone.feature(transcript, self.svf_delta, exact=True)
        return self.head.decide(feature, rng)

    def _recheck(self, feature: np.ndarray, rng: np.random.Generator | None) -> bool:
        """Whether an argmax decision on a lower-precision feature is close enough to a
        tie that the precision's error could flip it: then the feature is recomputed in
        fp32, so argmax decisions are fp32's (docs/results/figures.md, "Precision"). Sampled decisions
        (training) take the fast feature: their probabilities move by at most a few
        hundredths of a logit."""
        error = self.backbone.feature_error
        return rng is None and error > 0 and self.head.near_tie(feature, error)

    def context_fits(self, transcript: str) -> bool:
        """Whether the backbone reads ``transcript`` whole (run_episode drops the oldest
        turns first when it does not: transcript.fit_transcript)."""
        return self.backbone.fits(transcript)

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        """One decision with the forward off the event loop (what run_episode uses)."""
        feature = await self.backbone.afeature(transcript, self.svf_delta)
        if self._recheck(feature, rng):
            feature = await self.backbone.afeature(transcript, self.svf_delta, exact=True)
        return self.head.decide(feature, rng)
