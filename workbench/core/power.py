"""How many seeds and test tasks a comparison needs to separate a given margin: a power
estimate by the normal approximation (two-sided test; the normal quantiles are scipy's,
through ``workbench.core.stats.normal_quantile``). The study prints it
(``jobs.study_stats.Study.power``), so a user can tell whether a difference between two
optimizers is real or within the noise.

Formulas (two-sided significance ``alpha``, power ``power``, z = standard normal quantile,
k = z(1 - alpha/2) + z(power)):

- seeds per optimizer to separate two means whose per-seed values have standard deviation
  s by ``margin``: n = 2 k^2 s^2 / margin^2 (two independent samples);
- test tasks per system to separate two accuracies p1 = p - margin/2 and p2 = p + margin/2
  (binary rewards): n = k^2 (p1 (1 - p1) + p2 (1 - p2)) / margin^2 (two independent
  samples: conservative when both systems play the same tasks, as here);
- the smallest margin n seeds separate: k s sqrt(2 / n).

The normal approximation understates what very few seeds need (Student's t is wider);
every count is rounded up and at least 2.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from workbench.core.stats import normal_quantile

ALPHA = 0.05
POWER = 0.8


def _k(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha ({alpha}) and power ({power}) must lie strictly between 0 and 1")
    return normal_quantile(1 - alpha / 2) + normal_quantile(power)


def _check_margin(margin: float) -> None:
    if not 0 < margin <= 1:
        raise ValueError(f"the margin must lie in (0, 1], got {margin}: e.g. --margin 0.05")


def seeds_needed(std: float, margin: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Seeds per optimizer to separate two mean rewards ``margin`` apart, per-seed
    standard deviation ``std``."""
    _check_margin(margin)
    return max(2, math.ceil(2 * (_k(alpha, power) * std / margin) ** 2))


def tasks_needed(mean: float, margin: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Test tasks per system to separate two accuracies ``margin`` apart around ``mean``."""
    _check_margin(margin)
    p1 = min(max(mean - margin / 2, 0.0), 1.0)
    p2 = min(max(mean + margin / 2, 0.0), 1.0)
    variance = p1 * (1 - p1) + p2 * (1 - p2)
    return max(2, math.ceil(_k(alpha, power) ** 2 * variance / margin**2))


def detectable_margin(std: float, seeds: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest difference of mean rewards that ``seeds`` seeds per optimizer separate."""
    return _k(alpha, power) * std * math.sqrt(2 / seeds)


@dataclass(frozen=True, kw_only=True)
class PowerEstimate:
    """What a study needs to separate ``margin``, from its observed variance."""

    margin: float
    alpha: float
    power: float
    seed_std: float | None  # pooled per-seed standard deviation of test reward; None: 1 seed
    mean_reward: float
    seeds: int  # what the study ran
    test_tasks: int
    seeds_needed: int | None
    tasks_needed: int
    detectable_margin: float | None  # with the study's seeds

    @classmethod
    def of(
        cls,
        per_seed: list[list[float]],
        test_tasks: int,
        margin: float,
        alpha: float = ALPHA,
        power: float = POWER,
    ) -> PowerEstimate:
        """From each optimizer's per-seed test rewards (``per_seed``: one list each)."""
        values = [v for row in per_seed for v in row]
        mean = sum(values) / len(values) if values else 0.0
        seeds = min((len(row) for row in per_seed), default=0)
        groups = [row for row in per_seed if len(row) >= 2]
        std = None
        if groups:
            # pooled variance: the optimizers' sample variances weighted by degrees of freedom
            ss = sum(sum((v - sum(r) / len(r)) ** 2 for v in r) for r in groups)
            std = math.sqrt(ss / sum(len(r) - 1 for r in groups))
        return cls(
            margin=margin,
            alpha=alpha,
            power=power,
            seed_std=std,
            mean_reward=mean,
            seeds=seeds,
            test_tasks=test_tasks,
            seeds_needed=None if std is None else seeds_needed(std, margin, alpha, power),
            tasks_needed=tasks_needed(mean, margin, alpha, power),
            detectable_margin=None
            if std is None or seeds < 1
            else detectable_margin(std, seeds, alpha, power),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        head = (
            f"power (two-sided alpha {self.alpha:g}, power {self.power:g}, normal "
            f"approximation) to separate a margin of {self.margin:.3f}:"
        )
        if self.seeds_needed is None:
            seeds = "seeds: unknown with one seed (run --seeds 2 or more)"
        else:
            seeds = (
                f"{self.seeds_needed} seeds per optimizer (seed-to-seed sd {self.seed_std:.3f}; "
                f"with {self.seeds} seeds this study separates {self.detectable_margin:.3f})"
            )
        tasks = (
            f"{self.tasks_needed} test tasks per system (at mean reward "
            f"{self.mean_reward:.3f}; this study has {self.test_tasks})"
        )
        return f"{head}\n  {seeds}\n  {tasks}"
