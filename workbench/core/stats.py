"""The workbench's statistics, all from ``scipy.stats``, in one place: every interval, test
and resampling that evaluation, the study, cross-validation, the headroom check, the
frontier and the power estimate report goes through here.

- ``wilson``: a proportion's 95% Wilson score interval (``binomtest(...).proportion_ci``);
- ``mean_ci``: a mean's 95% t-interval (``scipy.stats.t``), clipped to the values' range;
- ``bootstrap_mean``: a mean's 95% percentile bootstrap interval over tasks
  (``scipy.stats.bootstrap``, seeded, in batches so 12,000 tasks take little memory);
- ``sign_test``: the exact two-sided sign test (``binomtest`` at p = 1/2; McNemar's exact
  test for right/wrong rewards);
- ``Paired``, ``paired_values``, ``paired``: a system against a reference task by task,
  the difference with its bootstrap interval and the sign test on its wins and losses;
- ``normal_quantile``: the standard normal's quantile (the power estimate's z).

scipy is imported inside the functions: importing the CLI stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95  # every interval of the workbench
BOOTSTRAP = 10_000  # resamples of a bootstrap interval
# resamples drawn at once: 500 x 12,000 tasks is 48 MB of indices; all 10,000 at once would
# be nearly 1 GB. The batches draw the same stream, so the interval does not depend on it.
BATCH = 500
# A difference is claimed (a win, a "clear" lead, "above") only when the exact two-sided
# sign test on its paired wins and losses gives p below this: a percentile bootstrap
# interval of right/wrong differences is too narrow at small counts (4 wins, 0 losses out
# of 100 gives [+1, +8] points, at p = 0.125). The interval is still shown beside it.
SIGNIFICANCE = 0.05


def wilson(successes: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval of ``successes`` out of ``n`` (sensible at 0 and n, unlike
    Wald's); (0, 1) when nothing was measured. ``successes`` is a whole number (a sum of
    right/wrong rewards may come as a float)."""
    if n == 0:
        return 0.0, 1.0
    k = round(successes)
    if abs(successes - k) > 1e-9 or not 0 <= k <= n:
        raise ValueError(
            f"a Wilson interval needs a whole number of successes between 0 and {n}, "
            f"got {successes}: it is the interval of right (1) or wrong (0) rewards; for "
            "rewards averaged over seeds use mean_ci or bootstrap_mean over the tasks"
        )
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    p = k / n
    # the interval always holds p; min/max keep rounding (1 - 1e-16 at p = 1) from losing it
    return max(0.0, min(p, float(ci.low))), min(1.0, max(p, float(ci.high)))


def mean_ci(values: Sequence[float], *, upper: float = 1.0) -> tuple[float, float, float]:
    """Mean and its 95% t-interval, clipped to [0, ``upper``] (rewards over seeds: [0, 1];
    dollars per task: ``upper=inf``), the workbench's one interval of a mean (one value:
    the interval is the point)."""
    n = len(values)
    if n == 0:
        raise ValueError("a mean's interval needs at least one value")
    x = np.asarray(values, dtype=np.float64)
    mean = float(x.mean())
    if n < 2:
        return mean, mean, mean
    from scipy.stats import t

    half = float(t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * float(x.std(ddof=1)) / np.sqrt(n)
    return mean, max(0.0, mean - half), min(upper, mean + half)


def bootstrap_mean(
    values: Sequence[float] | np.ndarray, *, seed: int = 0, resamples: int = BOOTSTRAP
) -> tuple[float, float, float]:
    """The mean of ``values`` (one per task) and its 95% percentile bootstrap interval,
    resampling tasks with ``seed``; the interval always holds the mean (and is the point
    itself for fewer than two tasks). The one bootstrap of the workbench: paired
    differences, the headroom check's gaps and leads."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return 0.0, 0.0, 0.0
    mean = float(x.mean())
    if len(x) < 2 or np.all(x == x[0]):
        # one task, or every task the same: every resample is the sample itself
        return mean, mean, mean
    from scipy.stats import bootstrap

    result = bootstrap(
        (x,),
        np.mean,
        n_resamples=resamples,
        batch=BATCH,
        vectorized=True,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return mean, min(mean, float(ci.low)), max(mean, float(ci.high))


def sign_test(wins: int, losses: int) -> float:
    """The exact two-sided sign test's p-value of ``wins`` against ``losses`` (ties left
    out): the chance of a split at least this uneven if either side were as likely."""
    m = wins + losses
    if m == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(wins, m, 0.5, alternative="two-sided").pvalue)


def normal_quantile(p: float) -> float:
    """The standard normal distribution's ``p`` quantile."""
    from scipy.stats import norm

    return float(norm.ppf(p))


@dataclass(frozen=True, kw_only=True)
class Paired:
    """A system against a reference, task by task: the mean per-task difference with its
    bootstrap 95% interval, the tasks it wins and loses, and the exact two-sided sign
    test's p-value on those (McNemar's exact test for right/wrong rewards)."""

    system: str
    against: str
    difference: float
    ci_low: float
    ci_high: float
    wins: int
    losses: int
    n: int
    p_value: float

    @property
    def significant(self) -> bool:
        """Whether the sign test separates the two (p < ``SIGNIFICANCE``): the only
        ground on which a win or a loss is claimed."""
        return self.p_value < SIGNIFICANCE

    @property
    def better(self) -> bool:
        """A win that may be claimed: more wins than losses, and significant."""
        return self.significant and self.wins > self.losses


def paired_values(
    system: str,
    against: str,
    differences: Sequence[float] | np.ndarray,
    *,
    seed: int = 0,
    resamples: int = BOOTSTRAP,
) -> Paired:
    """``Paired`` from the per-task differences (system minus reference)."""
    d = np.asarray(differences, dtype=np.float64)
    mean, low, high = bootstrap_mean(d, seed=seed, resamples=resamples)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    return Paired(
        system=system,
        against=against,
        difference=mean,
        ci_low=low,
        ci_high=high,
        wins=wins,
        losses=losses,
        n=len(d),
        p_value=sign_test(wins, losses),
    )


def paired(
    system: str,
    against: str,
    a: Mapping[str, float],
    b: Mapping[str, float],
    ids: Sequence[str],
    seed: int = 0,
) -> Paired:
    """``a`` against ``b`` (task id -> reward) on the tasks ``ids``."""
    return paired_values(system, against, [a[i] - b[i] for i in ids], seed=seed)
