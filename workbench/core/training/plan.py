"""What a training run takes from its config, typed: ``TrainPlan``, built once by the job
that loaded the config (``jobs.shared.train_plan``) and handed to the trainer, with the
rules that read only these settings (fitness, the restarts' and exploring starts'
schedules). Nothing below the jobs reads a whole run config.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.config import (
    BudgetSection,
    OptimizerSection,
    TasksSection,
    attempt_generations,
)
from workbench.core.protocol import EpisodeSettings
from workbench.core.records import Episode


@dataclass(frozen=True, kw_only=True)
class TrainPlan:
    """A training run's settings: its seed, the optimizer settings it trains with (on a
    routing table with the recorded-pool settings applied), its budget, its task splits'
    sizes and seed, and how its episodes are played. (The config itself stays with the
    job, which stores it in the run's record; a resume builds the same plan from it.)

    ``table_reason``: why the run plays its episodes, or None when it trains on its
    recorded pool's routing table (``training/table.py``)."""

    seed: int
    optimizer: OptimizerSection
    budget: BudgetSection
    tasks: TasksSection
    episode: EpisodeSettings
    table_reason: str | None = "the pool has live workers"

    @property
    def attempt_generations(self) -> int:
        """Generations per attempt of ``optimizer.restarts`` (``config.attempt_generations``)."""
        return attempt_generations(self.budget, self.optimizer)

    def fitness(self, episode: Episode) -> float:
        """One episode's contribution to a candidate's fitness: the reward, minus the cost
        and turn penalties, plus the released run's optional shaping (``diversity_bonus``
        when the episode called two or more distinct workers, ``turn_bonus`` per turn)."""
        o = self.optimizer
        turns = len(episode.turns)
        score = episode.reward - o.cost_penalty * episode.cost - o.turn_penalty * turns
        if o.diversity_bonus and len({t.worker for t in episode.turns if t.messages}) >= 2:
            score += o.diversity_bonus
        return score + o.turn_bonus * turns

    def opening_share(self, g: int) -> float:
        """The uniform share mixed into generation ``g``'s training openings: with
        ``optimizer.exploring_starts`` N, 1 at an attempt's first generation falling
        linearly to 0 at its N-th; 0 after, and without the option. A function of ``g``,
        so a resumed run explores as an uninterrupted one would."""
        n = self.optimizer.exploring_starts
        if not n:
            return 0.0
        length = self.attempt_generations
        attempt = min(g // length, self.optimizer.restarts)
        return max(0.0, 1.0 - (g - attempt * length) / n)

    def restart_attempt(self, g: int) -> int | None:
        """The attempt that starts at generation ``g`` with ``optimizer.restarts`` r > 0,
        or None: attempts start at generations L, 2L, ..., rL, L = ``budget.generations //
        (r + 1)`` (a multi-start, as CMA-ES restarts are). Validation and the best vector
        span every attempt, so a run keeps the best coordinator of any of them. Why: on
        the team at two turns a run settles in the first ~100 generations either in the
        planner's plan or in the one-turn plan, which its logits then hold too firmly for
        its samples to leave (docs/results/multi-turn.md). A function of ``g``, so a
        resumed run restarts where an uninterrupted one would (the checkpoint holds the
        current attempt's optimizer)."""
        restarts, length = self.optimizer.restarts, self.attempt_generations
        if not restarts or g == 0 or g % length or g // length > restarts:
            return None
        return g // length
