"""The headroom check's figures and its report, from every worker's one-turn answers on
the same tasks (``Outcomes``): no worker and no store here (the check that collects the
answers is ``workbench.core.jobs.headroom``). ``analyse`` measures:

- each worker's accuracy (95% Wilson interval) and dollars per task;
- the any-right oracle (a task counts as solved when ANY worker answered it right) and its
  gap over the best single worker, with a paired bootstrap interval over tasks. It is an
  upper bound that counts luck: on real pools much of it is questions a weak worker got
  right by chance, which no router can foresee;
- the held-out routing gain (``HeldOut``): routing by category, chosen on one half of the
  tasks and measured on the other, against the best single worker chosen on the same half;
  the halves swapped and the split repeated over seeds. It counts only what carried over to
  questions the choice was not made on: what a router that learns which worker is strong
  on which category gains, without the oracle's lucky draws;
- the pairwise table (the share of tasks A answered right and B wrong);
- each category's winner, its lead over the runner-up and whether the sign test separates
  them;
- on a simulated pool, every figure's exact value from the simulation's declared skills
  (``with_exact``).

``HeadroomReport`` holds them with what the check cost, and gives them as a table, as JSON
and in plain words (``sentence``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.errors import InvalidInput
from workbench.core.evaluate import best_single_index
from workbench.core.spend import dollars
from workbench.core.stats import (
    BOOTSTRAP,
    SIGNIFICANCE,
    bootstrap_mean,
    paired_values,
    sign_test,
    wilson,
)
from workbench.core.tasks.model import Task
from workbench.core.training.executors import derived_seed
from workbench.core.workers.simulated import PROFILES_BY_ID

RESAMPLES = BOOTSTRAP  # bootstrap resamples of the tasks (the workbench's one bootstrap)
ONE_POINT = 0.01
# Splits of the tasks into two halves the held-out gain averages over. A split costs a few
# array operations on workers x tasks (milliseconds at 12,000 tasks), and averaging over
# ten takes most of the noise of one split's choices out of the estimate.
REPEATS = 10


@dataclass(frozen=True, kw_only=True)
class Outcomes:
    """One-turn answers of every worker on every task: ``right[w, t]`` and ``cost[w, t]``
    (the answer's dollars, what the worker costs to run, recorded or cached or not)."""

    workers: tuple[str, ...]
    tasks: tuple[str, ...]  # task ids
    groups: tuple[str, ...]  # each task's category (``Task.group``)
    right: np.ndarray = field(repr=False)  # bool, workers x tasks
    cost: np.ndarray = field(repr=False)  # float, workers x tasks


@dataclass(frozen=True, kw_only=True)
class WorkerFigures:
    """One worker's figures on the check's tasks; ``exact``: the simulation's expected
    accuracy on them (simulated workers only)."""

    worker: str
    accuracy: float
    ci_low: float
    ci_high: float
    n: int
    dollars_per_task: float
    exact: float | None = None


@dataclass(frozen=True, kw_only=True)
class CategoryWinner:
    """The best worker of one category, the runner-up, and the winner's lead over it with
    a paired bootstrap interval, its tasks won and lost against the runner-up and the exact
    sign test's p-value on them: ``clear`` only when that test separates the two
    (p < 0.05, which takes at least 6 tasks won and none lost), whatever the interval."""

    category: str
    n: int
    winner: str
    accuracy: float
    ci_low: float
    ci_high: float
    runner_up: str | None
    lead: float
    lead_low: float
    lead_high: float
    wins: int = 0  # tasks the winner got right and the runner-up wrong
    losses: int = 0  # and the other way round
    p_value: float = 1.0  # the exact two-sided sign test on wins and losses

    @property
    def clear(self) -> bool:
        return self.runner_up is None or (self.p_value < SIGNIFICANCE and self.wins > self.losses)


@dataclass(frozen=True, kw_only=True)
class HeldOut:
    """Routing by category measured on tasks it was not chosen on.

    Each of ``repeats`` seeded splits deals every category's tasks into two halves. On one
    half the router picks each category's best worker and the best single worker is picked
    (both by the workbench's one rule: the highest accuracy, a tie to the cheaper); both are
    then measured on the other half, and the halves swap, so each task is measured once per
    split by choices made without it (a category with no task on the choosing half gets the
    best single worker). A task's difference (router minus best single, each
    right 1 or wrong 0) is averaged over the splits; ``gain`` is the mean over tasks with a
    95% paired bootstrap interval, and ``wins`` / ``losses`` count the tasks whose averaged
    difference is above / below 0, with the exact sign test's ``p_value``. The interval
    is over tasks: it holds the choices fixed, as a cross-validated comparison does."""

    repeats: int
    n: int
    accuracy: float  # the router's held-out accuracy, averaged over the splits
    best_single: float  # the best single worker's (chosen on the other half), the same way
    gain: float
    gain_low: float
    gain_high: float
    wins: int
    losses: int
    p_value: float
    dollars_per_task: float  # the router's, held out
    per_split: tuple[float, ...]  # each split's gain (both halves)
    # category -> (the worker chosen most often, in how many of the 2 x repeats choices)
    chosen: dict[str, tuple[str, int]] = field(default_factory=dict)
    exact: float | None = None  # on a simulated pool: the exact gain of routing by category

    @property
    def better(self) -> bool:
        """A gain that may be claimed: the sign test separates it (p < 0.05), upwards."""
        return self.p_value < SIGNIFICANCE and self.wins > self.losses

    def words(self) -> str:
        """The gain in points with its interval and test, for a sentence."""
        return (
            f"{100 * self.gain:+.1f} points [{100 * self.gain_low:+.1f}, "
            f"{100 * self.gain_high:+.1f}] over the best single worker (sign test p = "
            f"{self.p_value:.2g})"
        )


@dataclass(frozen=True, kw_only=True)
class Figures:
    """What ``analyse`` measures on one set of outcomes (see the module docstring)."""

    workers: tuple[WorkerFigures, ...]
    best: str
    oracle: tuple[float, float, float]  # accuracy, 95% Wilson interval
    gap: tuple[float, float, float]  # oracle - best single, paired bootstrap interval
    pairwise: dict[str, dict[str, float]]  # A -> B -> share of tasks A right and B wrong
    categories: tuple[CategoryWinner, ...]
    held_out: HeldOut | None  # None on fewer than 2 tasks (no two halves)


def analyse(
    outcomes: Outcomes, *, seed: int = 0, resamples: int = RESAMPLES, repeats: int = REPEATS
) -> Figures:
    """Every figure of the check on ``outcomes`` (see ``Figures``)."""
    right = np.asarray(outcomes.right, dtype=bool)
    n_workers, n = right.shape
    if n == 0:
        raise InvalidInput("the headroom check has no task to measure on")
    acc = right.mean(axis=1)
    per_task = np.asarray(outcomes.cost, dtype=float).mean(axis=1)
    workers = tuple(
        WorkerFigures(
            worker=w,
            accuracy=float(acc[i]),
            ci_low=low,
            ci_high=high,
            n=n,
            dollars_per_task=float(per_task[i]),
        )
        for i, w in enumerate(outcomes.workers)
        for low, high in (wilson(int(right[i].sum()), n),)
    )
    b = best_single_index(list(acc), list(per_task))
    any_right = right.any(axis=0)
    oracle = (float(any_right.mean()), *wilson(int(any_right.sum()), n))
    gap = bootstrap_mean(
        any_right.astype(np.int8) - right[b].astype(np.int8), seed=seed, resamples=resamples
    )
    if gap[0] == 0:
        # no task where another worker was right and the best wrong: the bootstrap interval
        # is [0, 0], but with n tasks a gap up to 3/n is not ruled out (95%, rule of three)
        gap = (0.0, 0.0, min(1.0, 3 / n))
    pairwise = {
        a: {
            c: float((right[i] & ~right[j]).mean())
            for j, c in enumerate(outcomes.workers)
            if j != i
        }
        for i, a in enumerate(outcomes.workers)
    }
    return Figures(
        workers=workers,
        best=outcomes.workers[b],
        oracle=oracle,
        gap=gap,
        pairwise=pairwise,
        categories=_categories(outcomes, right, per_task, seed, resamples),
        held_out=held_out_gain(outcomes, seed=seed, resamples=resamples, repeats=repeats)
        if n >= 2
        else None,
    )


def _categories(
    outcomes: Outcomes, right: np.ndarray, per_task: np.ndarray, seed: int, resamples: int
) -> tuple[CategoryWinner, ...]:
    n_workers = right.shape[0]
    groups = np.asarray(outcomes.groups)
    categories = []
    for g in sorted(set(outcomes.groups)):
        mask = groups == g
        sub = right[:, mask]
        cat_acc = sub.mean(axis=1)
        order = sorted(range(n_workers), key=lambda i: (-cat_acc[i], per_task[i], i))
        win = order[0]
        m = int(mask.sum())
        low, high = wilson(int(sub[win].sum()), m)
        if n_workers > 1:
            nxt: int | None = order[1]
            d = paired_values(
                outcomes.workers[win],
                outcomes.workers[order[1]],
                sub[win].astype(np.int8) - sub[order[1]].astype(np.int8),
                seed=seed,
                resamples=resamples,
            )
        else:
            nxt, d = None, paired_values(outcomes.workers[win], "", [])
        categories.append(
            CategoryWinner(
                category=g,
                n=m,
                winner=outcomes.workers[win],
                accuracy=float(cat_acc[win]),
                ci_low=low,
                ci_high=high,
                runner_up=None if nxt is None else outcomes.workers[nxt],
                lead=d.difference,
                lead_low=d.ci_low,
                lead_high=d.ci_high,
                wins=d.wins,
                losses=d.losses,
                p_value=d.p_value,
            )
        )
    return tuple(categories)


def halves(groups: np.ndarray, n_groups: int, seed: int) -> np.ndarray:
    """Each task's half (0 or 1): every category's tasks shuffled with ``seed`` and dealt
    in turn, so each half holds half of every category (one more in one of them, the
    first half for even categories and the second for odd, to keep the halves even)."""
    rng = np.random.default_rng(seed)
    half = np.empty(len(groups), dtype=np.int8)
    for g in range(n_groups):
        members = np.flatnonzero(groups == g)
        half[rng.permutation(members)] = (np.arange(len(members)) + g) % 2
    return half


def held_out_gain(
    outcomes: Outcomes, *, seed: int = 0, resamples: int = RESAMPLES, repeats: int = REPEATS
) -> HeldOut:
    """Routing by category against the best single worker on held-out halves (``HeldOut``);
    ``repeats`` splits, each seeded from ``seed``."""
    right = np.asarray(outcomes.right, dtype=bool)
    cost = np.asarray(outcomes.cost, dtype=float)
    n_workers, n = right.shape
    if n < 2 or repeats < 1:
        raise ValueError("the held-out gain needs at least 2 tasks and 1 split")
    names, groups = np.unique(np.asarray(outcomes.groups), return_inverse=True)
    onehot = np.zeros((n, len(names)))
    onehot[np.arange(n), groups] = 1.0
    right_f = right.astype(float)
    diff = np.zeros(n)  # summed over the splits
    routed_right = np.zeros(n)
    base_right = np.zeros(n)
    routed_cost = np.zeros(n)
    per_split = []
    chosen: list[Counter[int]] = [Counter() for _ in names]
    for r in range(repeats):
        half = halves(groups, len(names), derived_seed(seed, "headroom-halves", r))
        split_diff = np.zeros(n)
        for h in (0, 1):
            # neither half is empty: a category of 2 or more tasks has a task in each, and
            # categories of one task alternate between the halves
            choose = half == h
            measure = ~choose
            b = best_single_index(
                list(right_f[:, choose].mean(axis=1)), list(cost[:, choose].mean(axis=1))
            )
            # per category on the choosing half: right answers and dollars of each worker
            counts = right_f[:, choose] @ onehot[choose]  # workers x categories
            dollars = cost[:, choose] @ onehot[choose]
            sizes = onehot[choose].sum(axis=0)
            pick = np.full(len(names), b)
            for g in np.flatnonzero(sizes):
                pick[g] = best_single_index(list(counts[:, g] / sizes[g]), list(dollars[:, g]))
                chosen[g][int(pick[g])] += 1
            target = np.flatnonzero(measure)
            routed = pick[groups[target]]
            got = right_f[routed, target]
            split_diff[target] = got - right_f[b, target]
            routed_right[target] += got
            base_right[target] += right_f[b, target]
            routed_cost[target] += cost[routed, target]
        diff += split_diff
        per_split.append(float(split_diff.mean()))
    mean_diff = diff / repeats
    gain, low, high = bootstrap_mean(mean_diff, seed=seed, resamples=resamples)
    wins, losses = int((mean_diff > 0).sum()), int((mean_diff < 0).sum())
    return HeldOut(
        repeats=repeats,
        n=n,
        accuracy=float(routed_right.mean() / repeats),
        best_single=float(base_right.mean() / repeats),
        gain=gain,
        gain_low=low,
        gain_high=high,
        wins=wins,
        losses=losses,
        p_value=sign_test(wins, losses),
        dollars_per_task=float(routed_cost.mean() / repeats),
        per_split=tuple(per_split),
        chosen={
            str(names[g]): (outcomes.workers[c.most_common(1)[0][0]], c.most_common(1)[0][1])
            for g, c in enumerate(chosen)
            if c
        },
    )


def with_exact(
    figures: Figures, pool: Sequence[str], tasks: Sequence[Task]
) -> tuple[Figures, dict[str, Any] | None]:
    """``figures`` with the exact values of a simulated pool on ``tasks`` filled in (each
    worker's, the held-out gain's), and ``exact_headroom``'s values; unchanged and None
    for a pool with a worker that is not simulated."""
    exact = exact_headroom(pool, tasks, figures.best)
    if exact is None:
        return figures, None
    workers = tuple(replace(w, exact=exact["workers"][w.worker]) for w in figures.workers)
    held = figures.held_out
    if held is not None:
        held = replace(held, exact=exact["by_category_gain"])
    return replace(figures, workers=workers, held_out=held), exact


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True, kw_only=True)
class CheckCost:
    """What the check itself spent: ``calls`` made to a worker (neither read from the
    cache nor from recorded answers), their tokens and dollars; ``cached`` and
    ``recorded`` count the answers that cost nothing."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    dollars: float = 0.0
    cached: int = 0
    recorded: int = 0


@dataclass(frozen=True, kw_only=True)
class HeadroomReport:
    """The check's figures (see the module docstring)."""

    suite: str
    pool: tuple[str, ...]
    n: int
    sample: str  # how the tasks were chosen, in words
    workers: tuple[WorkerFigures, ...]
    best: str
    oracle: tuple[float, float, float]  # any right: accuracy, 95% Wilson interval
    # oracle - best single, paired bootstrap interval: an upper bound that counts luck
    gap: tuple[float, float, float]
    pairwise: dict[str, dict[str, float]]  # A -> B -> share of tasks A right and B wrong
    categories: tuple[CategoryWinner, ...]
    cost: CheckCost
    spend: str = ""  # spend_kind: "simulated", "recorded", a mix of them, or "" (real dollars)
    wall_s: float = 0.0
    left_out: dict[str, int] = field(default_factory=dict)  # why -> tasks left out
    cache_policy: str = "read-write"
    run_id: str | None = None  # the stored run of the check's episodes (replayable)
    # on a simulated pool: the exact oracle and gap on the same tasks
    exact_oracle: float | None = None
    exact_gap: float | None = None
    # on a simulated pool: the exact accuracy of routing by category alone (the best
    # worker per category), below the any-right oracle, which also counts lucky draws
    exact_by_category: float | None = None
    # routing by category chosen on half the tasks and measured on the other half
    held_out: HeldOut | None = None

    @property
    def sentence(self) -> str:
        """The check's conclusion in plain words, claiming nothing the intervals and the
        sign test do not show: led by what routing gains on tasks it was not chosen on
        (``held_out``), with the any-right oracle's gap as the ceiling it is."""
        gap, low, high = (100 * x for x in self.gap)
        if self.gap[0] == 0 and high < 100 * 2 * ONE_POINT:
            return (
                f"The best worker ({self.best}) is right whenever any worker is, on these "
                f"{self.n} tasks (a gap above {high:.1f} points is ruled out): training a "
                "coordinator cannot help here."
            )
        if self.gap[0] == 0:
            return (
                f"The best worker ({self.best}) is right whenever any worker is, on these "
                f"{self.n} tasks, but on so few a gap of up to {high:.0f} points is not ruled "
                "out (95%): check more tasks (--sample) before concluding a coordinator "
                "cannot help."
            )
        ceiling = (
            f"the any-right oracle's {gap:.0f} points [{low:.0f}, {high:.0f}] over "
            f"{self.best} is a ceiling that also counts lucky draws no router can foresee"
        )
        h = self.held_out
        if h is None:  # one task (its gap is 0, above) or a report made without it
            return f"Nothing was held out to measure what routing gains; {ceiling}."
        held = f"On tasks it was not chosen on, routing by category gains {h.words()}"
        if h.gain_high < 2 * ONE_POINT:
            return (
                f"{held}: too little for a coordinator to be worth training, unless it can "
                f"tell question by question which worker will be right ({ceiling})."
            )
        if h.better:
            return (
                f"{held}: a coordinator needs to find at least that to be worth training, "
                f"and {ceiling}."
            )
        return (
            f"{held}, not separated from no gain: check more tasks (--sample) before "
            f"training; {ceiling}."
        )

    def cost_line(self) -> str:
        c = self.cost
        free = []
        if c.cached:
            free.append(f"{c.cached} answers from the response cache")
        if c.recorded:
            free.append(f"{c.recorded} from recorded answers")
        return (
            f"this check cost {c.calls} calls, {c.tokens_in + c.tokens_out} tokens "
            f"({c.tokens_in} in, {c.tokens_out} out), {dollars(c.dollars, self.spend)}"
            + (f"; free: {', '.join(free)}" if free else "")
            + f"; {self.wall_s:.1f} s"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spend"] = self.spend or "real"
        data["sentence"] = self.sentence
        data["categories"] = [{**asdict(c), "clear": c.clear} for c in self.categories]
        if self.held_out is not None:
            data["held_out"] = {**asdict(self.held_out), "better": self.held_out.better}
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def write(self, folder: str | Path) -> list[Path]:
        """headroom.json and headroom.md (the table) in ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / "headroom.json", folder / "headroom.md"]
        paths[0].write_text(self.to_json(), encoding="utf-8")
        paths[1].write_text("```\n" + self.table() + "\n```\n", encoding="utf-8")
        return paths

    def table(self) -> str:
        """The report as text: the workers, the oracle and its gap, the pairwise table,
        the categories, the cost and the sentence."""
        exact = any(w.exact is not None for w in self.workers)
        spend = f" ({self.spend})" if self.spend else ""
        lines = [
            f"Headroom on `{self.suite}`: {self.n} training tasks ({self.sample})",
            "",
        ]
        rows = [
            ("worker", "accuracy", "95% CI", f"$ / task{spend}", *(("exact",) if exact else ()))
        ]
        for w in self.workers:
            rows.append(
                (
                    w.worker + (" (best)" if w.worker == self.best else ""),
                    f"{w.accuracy:.3f}",
                    f"[{w.ci_low:.3f}, {w.ci_high:.3f}]",
                    f"{w.dollars_per_task:.6f}",
                    *((f"{w.exact:.3f}" if w.exact is not None else "",) if exact else ()),
                )
            )
        o, g = self.oracle, self.gap
        rows.append(
            (
                "one-turn oracle (any right)",
                f"{o[0]:.3f}",
                f"[{o[1]:.3f}, {o[2]:.3f}]",
                "",
                *((_fmt(self.exact_oracle),) if exact else ()),
            )
        )
        rows.append(
            (
                f"gap over {self.best} (a ceiling)",
                f"{g[0]:+.3f}",
                f"[{g[1]:+.3f}, {g[2]:+.3f}]",
                "",
                *((_fmt(self.exact_gap, "+.3f"),) if exact else ()),
            )
        )
        h = self.held_out
        if h is not None:
            rows.append(
                (
                    "routing by category, held out",
                    f"{h.accuracy:.3f}",
                    "",
                    f"{h.dollars_per_task:.6f}",
                    *((_fmt(self.exact_by_category),) if exact else ()),
                )
            )
            rows.append(
                (
                    "gain over the best single, held out",
                    f"{h.gain:+.3f}",
                    f"[{h.gain_low:+.3f}, {h.gain_high:+.3f}]",
                    "",
                    *((_fmt(h.exact, "+.3f"),) if exact else ()),
                )
            )
        lines.append(columns(rows))
        lines.append(
            "the any-right oracle counts a task as solved when any worker was right: an upper "
            "bound that also counts lucky draws"
        )
        if h is not None:
            chosen = ", ".join(
                f"{g} {w} ({k} of {2 * h.repeats})" for g, (w, k) in h.chosen.items()
            )
            lines += [
                f"held out: routing by category chosen on one half of the tasks (each "
                f"category's best worker) and measured on the other, against the best single "
                f"worker chosen on the same half (held out: {h.best_single:.3f}); halves "
                f"swapped, {h.repeats} seeded splits averaged; tasks won {h.wins}, lost "
                f"{h.losses}, sign test p={h.p_value:.2g}",
                f"chosen per category (most often): {chosen}",
            ]
        lines += ["", "A right and B wrong (share of tasks; rows A, columns B):"]
        header = ("A \\ B", *self.pool)
        pair_rows = [header] + [
            (a, *("-" if a == b else f"{self.pairwise[a][b]:.3f}" for b in self.pool))
            for a in self.pool
        ]
        lines.append(columns(pair_rows))
        if len(self.categories) > 1:
            lines += ["", "per category:"]
            cat_rows = [("category", "n", "winner", "accuracy", "95% CI", "lead over next")]
            for c in self.categories:
                lead = (
                    f"{c.lead:+.3f} [{c.lead_low:+.3f}, {c.lead_high:+.3f}] over {c.runner_up}"
                    f", won {c.wins} lost {c.losses}, p={c.p_value:.2g}"
                    + ("" if c.clear else " (not separated)")
                    if c.runner_up
                    else ""
                )
                cat_rows.append(
                    (
                        c.category,
                        str(c.n),
                        c.winner,
                        f"{c.accuracy:.3f}",
                        f"[{c.ci_low:.3f}, {c.ci_high:.3f}]",
                        lead,
                    )
                )
            lines.append(columns(cat_rows))
        if self.left_out:
            lines += [""] + [f"left out: {n} tasks ({why})" for why, n in self.left_out.items()]
        if exact:
            lines += ["", "exact: the simulation's expected values on these tasks"]
        if self.exact_by_category is not None:
            lines.append(
                f"routing by category alone (the best worker per category) reaches "
                f"{self.exact_by_category:.3f} exactly: the simulation draws each answer "
                "afresh, so the any-right oracle also counts lucky draws no router can foresee"
            )
        lines += ["", self.cost_line()]
        if self.run_id:
            # a live worker's answers are stored as the run's episodes, not recorded ones
            lines.append(f"check stored as run {self.run_id[:8]} (cache: {self.cache_policy})")
        lines += ["", self.sentence]
        return "\n".join(lines)


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "" if value is None else format(value, spec)


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as left-aligned text columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


# --------------------------------------------------------------------------- exact values


def simulated_skills(pool: Sequence[str], tasks: Sequence[Task]) -> np.ndarray | None:
    """P(right) of each simulated worker's one-turn Worker answer on each task (workers x
    tasks), from the simulation's declared skills; None unless every worker is simulated.
    A task without a reference answer is never answered right."""
    if not pool or not all(w in PROFILES_BY_ID for w in pool):
        return None
    out = np.zeros((len(pool), len(tasks)))
    for j, task in enumerate(tasks):
        answerable = (task.solution if task.kind == "code" else task.answer) is not None
        for i, w in enumerate(pool):
            out[i, j] = PROFILES_BY_ID[w].skill_for(task.category, task.kind) if answerable else 0
    return out


def exact_headroom(pool: Sequence[str], tasks: Sequence[Task], best: str) -> dict[str, Any] | None:
    """The exact expected figures of a simulated pool on ``tasks``: each worker's accuracy,
    the one-turn oracle (any worker right: the simulation draws each worker's outcome on
    its own, so 1 - prod(1 - skill)), its gap over ``best``, routing by category (the best
    worker per task's category and kind, what the simulation's skills depend on) and its
    gain over ``best``, and the pairwise shares; None for a pool with a worker that is not
    simulated."""
    p = simulated_skills(pool, tasks)
    if p is None:
        return None
    oracle = 1 - np.prod(1 - p, axis=0)
    b = list(pool).index(best)
    by_category = p.max(axis=0)
    return {
        "by_category": float(by_category.mean()),
        "by_category_gain": float((by_category - p[b]).mean()),
        "workers": {w: float(p[i].mean()) for i, w in enumerate(pool)},
        "oracle": float(oracle.mean()),
        "gap": float((oracle - p[b]).mean()),
        "pairwise": {
            a: {c: float((p[i] * (1 - p[j])).mean()) for j, c in enumerate(pool) if j != i}
            for i, a in enumerate(pool)
        },
    }
