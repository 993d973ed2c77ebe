"""The workbench's statistics held to the figures it printed before they came from a
library: Wilson intervals, t-intervals of a mean, the paired bootstrap and the exact sign
test, on fixed inputs (several sizes, ties, 0 and n successes, one and two values).

Where the expected values come from: each was printed by the hand-written implementations
(``workbench/core/evaluate.py``'s ``wilson``, ``bootstrap_mean``, ``sign_test`` and
``workbench/core/jobs/study_stats.py``'s ``mean_ci`` with its table of t quantiles) at
commit f8b567f, on exactly these inputs, and pasted here. The workbench prints these
figures with 3 decimals in its tables and 4 in its CSV files, so an implementation is held
to them within half a unit of the 4th decimal (5e-5); a p-value is printed with 2 or 3
significant digits and is held to 1e-9 relative. The t-intervals are held to the rounding
of the old table's quantiles, except past 31 values, where the old table used 1.96 and the
library's interval is wider by the size the test states.
"""

from __future__ import annotations

import math
import statistics

import pytest

from workbench.core.stats import bootstrap_mean, mean_ci, paired_values, sign_test, wilson

PRINTED = 5e-5  # half a unit of the finest printed decimal (the CSV's 4th)

# (successes, n, today's interval)
WILSON = [
    (0, 1, (0.0, 0.7934567085261071)),
    (1, 1, (0.20654329147389294, 1.0)),
    (0, 5, (0.0, 0.43449149475208104)),
    (5, 5, (0.5655085052479191, 1.0)),
    (2, 5, (0.1176182311592533, 0.769280067791163)),
    (0, 10, (0.0, 0.2775401687666166)),
    (3, 10, (0.10778928748621183, 0.6032267800204347)),
    (10, 10, (0.7224598312333834, 1.0)),
    (50, 100, (0.40382982859014716, 0.5961701714098528)),
    (1, 100, (0.0017673865655472645, 0.0544875247609346)),
    (99, 100, (0.9455124752390653, 0.9982326134344526)),
    (0, 270, (0.0, 0.014028547890459302)),
    (117, 270, (0.3755688037760219, 0.492968335942706)),
    (270, 270, (0.9859714521095407, 1.0)),
    (5318, 12032, (0.43313405248519604, 0.45087904386529093)),
    (0, 0, (0.0, 1.0)),  # nothing measured: the interval is everything
]


@pytest.mark.parametrize(("k", "n", "expected"), WILSON)
def test_wilson_intervals_print_as_before(k, n, expected):
    low, high = wilson(k, n)
    assert low == pytest.approx(expected[0], abs=PRINTED)
    assert high == pytest.approx(expected[1], abs=PRINTED)
    # the interval holds the proportion, and 0 and n reach the ends exactly
    if n:
        assert low <= k / n <= high
        assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)


def test_a_wilson_interval_of_a_fraction_of_a_success_says_what_to_use_instead():
    assert wilson(3.0, 10) == wilson(3, 10)  # a sum of right/wrong rewards is a float
    with pytest.raises(ValueError, match="whole number of successes.*mean_ci or bootstrap_mean"):
        wilson(2.5, 10)
    with pytest.raises(ValueError, match="between 0 and 10"):
        wilson(11, 10)


# (values, upper clip, today's mean and 95% t-interval): rewards over seeds (few values,
# clipped to [0, 1]) and dollars per task (many values, not clipped above)
MEAN_CI = [
    ([0.5], 1.0, (0.5, 0.5, 0.5)),  # one value: the interval is the point
    ([0.5, 0.7], 1.0, (0.6, 0.0, 1.0)),  # t(1) = 12.7: clipped at both ends
    ([0.5, 0.7, 0.6], 1.0, (0.6, 0.35156617916770405, 0.8484338208322959)),
    ([0.0, 0.0, 0.1], 1.0, (0.03333333333333333, 0.0, 0.17676666666666668)),
    ([1.0, 0.9, 1.0], 1.0, (0.9666666666666667, 0.8232333333333334, 1.0)),
    ([0.2] * 4 + [0.3] * 3, 1.0, (0.24285714285714285, 0.19342027732675768, 0.29229400838752806)),
    (
        [0.61, 0.64, 0.59, 0.66, 0.62, 0.60, 0.63, 0.65, 0.58, 0.67],
        1.0,
        (0.625, 0.6033429988225516, 0.6466570011774484),
    ),
    ([0.4 + 0.01 * i for i in range(31)], 1.0, (0.55, 0.5166542796349117, 0.5833457203650884)),
    ([2.0, 4.0], float("inf"), (3.0, 0.0, 15.706)),
]


@pytest.mark.parametrize(("values", "upper", "expected"), MEAN_CI)
def test_t_intervals_of_a_mean_print_as_before(values, upper, expected):
    # the hand-written table held each t quantile to 3 decimals, so its half-width was off
    # by up to 0.0005 standard errors: the new figures are held to that (for rewards in
    # [0, 1] less than 0.0002, within the study table's 3 printed decimals)
    sem = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    got = mean_ci(values, upper=upper)
    assert got == pytest.approx(expected, abs=0.0005 * sem + 1e-12)
    if upper == 1.0:
        assert got == pytest.approx(expected, abs=0.0002)


# More than 31 values: the hand-written table's last row was the normal quantile 1.96 for
# every larger count, which understated the interval; scipy's t quantile is exact. The
# half-width differs by t(n - 1) / 1.96: 4.1% wider at 32 values (t(31) = 2.0395, as
# printed in any t table), 2.1% at 60 (t(59) = 2.0010), 1.2% at 100, 0.1% at 1,000.
# (values, upper, the hand-written figures, the published 97.5% t quantile)
WIDER = [
    (
        [0.4 + 0.01 * (i % 7) for i in range(32)],
        1.0,
        (0.42812500000000003, 0.42117094716683495, 0.4350790528331651),
        2.0395,
    ),
    (
        [0.001 * (i % 5) for i in range(60)],
        float("inf"),
        (0.002, 0.0016391347497838574, 0.0023608652502161427),
        2.0010,
    ),
]


@pytest.mark.parametrize(("values", "upper", "before", "t975"), WIDER)
def test_t_intervals_of_more_than_31_values_widen_by_t_over_1_96(values, upper, before, t975):
    mean, low, high = mean_ci(values, upper=upper)
    assert mean == pytest.approx(before[0], abs=1e-15)
    ratio = (high - low) / (before[2] - before[1])
    assert ratio == pytest.approx(t975 / 1.96, abs=1e-4)
    assert ratio > 1.02  # beyond the printed rounding: the difference is the fix


# (wins, losses, today's exact two-sided p-value)
SIGN = [
    (0, 0, 1.0),
    (3, 0, 0.25),
    (0, 3, 0.25),
    (3, 3, 1.0),
    (8, 2, 0.109375),
    (2, 8, 0.109375),
    (6, 0, 0.03125),
    (5, 0, 0.0625),
    (8, 3, 0.2265625),
    (34, 0, 1.1641532182693481e-10),
    (60, 40, 0.05688793364098079),
    (120, 80, 0.0056851559967503055),
    (500, 470, 0.3517898735413354),
]


@pytest.mark.parametrize(("wins", "losses", "expected"), SIGN)
def test_sign_test_p_values_print_as_before(wins, losses, expected):
    assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-9)


def pattern(n: int) -> list[float]:
    """A fixed run of per-task differences in {-1, 0, +1} (no random generator, so the
    input cannot change with a library's version)."""
    return [float((i * 37 + 11) % 17 % 3 - 1) for i in range(n)]


# (name, per-task differences, today's mean and 95% bootstrap interval at seed 3 with
# 10,000 resamples, wins, losses, the sign test's p-value)
BOOTSTRAP = [
    ("3 wins of 100", [1.0] * 3 + [0.0] * 97, (0.03, 0.0, 0.07), 3, 0, 0.25),
    ("all ties", [0.0] * 20, (0.0, 0.0, 0.0), 0, 0, 1.0),
    ("two", [1.0, -1.0], (0.0, -1.0, 1.0), 1, 1, 1.0),
    ("one", [1.0], (1.0, 1.0, 1.0), 1, 0, 1.0),
    ("five", [1.0, 0.0, -1.0, 1.0, 1.0], (0.4, -0.4, 1.0), 3, 1, 0.625),
    ("all wins", [1.0] * 12, (1.0, 1.0, 1.0), 12, 0, 0.00048828125),
    ("pattern 10", pattern(10), (-0.4, -0.9, 0.1), 2, 6, 0.2890625),
    (
        "pattern 57",
        pattern(57),
        (-0.08771929824561403, -0.2982456140350877, 0.12280701754385964),
        17,
        22,
        0.5223973804968409,
    ),
    ("pattern 400", pattern(400), (-0.0675, -0.145, 0.0125), 117, 144, 0.10735914272088999),
    ("pattern 2000", pattern(2000), (-0.0605, -0.0955, -0.0255), 587, 708, 0.000847494268397486),
]


@pytest.mark.parametrize(
    ("name", "values", "expected", "wins", "losses", "p"), BOOTSTRAP, ids=[b[0] for b in BOOTSTRAP]
)
def test_paired_bootstrap_and_sign_test_print_as_before(name, values, expected, wins, losses, p):
    # not only within rounding: scipy.stats.bootstrap draws the same task indices from the
    # same seeded generator (in batches, which continue one stream) and takes the same
    # linear percentiles, so the interval is the one printed before to the last bit
    assert bootstrap_mean(values, seed=3) == pytest.approx(expected, abs=1e-12)
    d = paired_values("a", "b", values, seed=3)
    assert (d.difference, d.ci_low, d.ci_high) == pytest.approx(expected, abs=1e-12)
    assert (d.wins, d.losses, d.n) == (wins, losses, len(values))
    assert d.p_value == pytest.approx(p, rel=1e-9)
