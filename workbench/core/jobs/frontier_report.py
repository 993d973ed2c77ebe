"""What the cost-quality frontier reports (``frontier.py`` runs the study): every system as a
point (accuracy with its 95% Wilson interval against dollars per task with its 95%
interval), the Pareto front among the systems one can deploy, the two sentences with the
paired interval of each difference from the best single worker, the exact values of a
simulated pool at one turn, the SVG plot with its hover details, and the stored frontiers
of the workspace (``list_frontiers``, ``load_frontier``)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.errors import InvalidInput
from workbench.core.evaluate import MULTI_TURN_ORACLE, any_right_index, best_single_index
from workbench.core.jobs.headroom_figures import ONE_POINT, columns, simulated_skills
from workbench.core.oracle import best_plan, random_routing_value
from workbench.core.records import ROLES, RunStatus
from workbench.core.spend import dollars
from workbench.core.stats import SIGNIFICANCE, Paired, mean_ci, paired_values, wilson
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.workspace import Workspace

ANY_RIGHT = "one-turn oracle (any right)"


DEPLOYABLE = ("coordinator", "single", "random")


@dataclass(frozen=True, kw_only=True)
class SystemOutcomes:
    """One system's per-task reward and dollars on the test split."""

    name: str
    kind: str  # coordinator, single, random, oracle
    rewards: dict[str, float]  # task id -> reward
    costs: dict[str, float]  # task id -> dollars
    penalty: float | None = None
    run_id: str | None = None
    exact: float | None = None  # the simulation's expected accuracy (simulated pools)
    training: dict[str, float] = field(default_factory=dict)  # the run's spend


@dataclass(frozen=True, kw_only=True)
class FrontierPoint:
    """One system on the plot: accuracy and dollars per task, each with its 95% interval;
    ``pareto``: on the front of the deployable systems."""

    name: str
    kind: str
    accuracy: float
    ci_low: float
    ci_high: float
    dollars: float
    dollars_low: float
    dollars_high: float
    n: int
    penalty: float | None = None
    run_id: str | None = None
    exact: float | None = None
    pareto: bool = False
    training: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Frontier:
    """The study's points, its two sentences and what it spent (see the module docstring)."""

    suite: str
    pool: tuple[str, ...]
    penalties: tuple[float, ...]
    points: tuple[FrontierPoint, ...]
    best_single: str
    cheapest_within_one_point: str
    best_at_best_single_cost: str
    budget: dict[str, Any]
    spend: str = ""
    cache_policy: str = "read-write"
    wall_s: float = 0.0
    run_id: str | None = None
    # test tasks left out: some worker has no recorded answer for them (a single worker's
    # miss would read as wrong while a coordinator is routed around it)
    left_out: int = 0

    @property
    def dollars_label(self) -> str:
        return f"$ / task ({self.spend})" if self.spend else "$ / task"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spend"] = self.spend or "real"
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Frontier:
        data = dict(data)
        data["spend"] = "" if data.get("spend") == "real" else data.get("spend", "")
        data["pool"] = tuple(data["pool"])
        data["penalties"] = tuple(data["penalties"])
        data["points"] = tuple(FrontierPoint(**p) for p in data["points"])
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def table(self) -> str:
        exact = any(p.exact is not None for p in self.points)
        rows = [
            (
                "system",
                "accuracy",
                "95% CI",
                self.dollars_label,
                "95% CI",
                "front",
                *(("exact",) if exact else ()),
            )
        ]
        for p in sorted(self.points, key=lambda p: (p.dollars, -p.accuracy)):
            rows.append(
                (
                    p.name,
                    f"{p.accuracy:.3f}",
                    f"[{p.ci_low:.3f}, {p.ci_high:.3f}]",
                    f"{p.dollars:.6f}",
                    f"[{p.dollars_low:.6f}, {p.dollars_high:.6f}]",
                    "*" if p.pareto else "",
                    *((f"{p.exact:.3f}" if p.exact is not None else "",) if exact else ()),
                )
            )
        n = self.points[0].n if self.points else 0
        lines = [
            f"Cost-quality frontier on `{self.suite}` (test split, {n} tasks), "
            f"cost penalties {', '.join(f'{x:g}' for x in self.penalties)} per dollar",
            "",
            columns(rows),
            "",
            "front: * on the Pareto front of the deployable systems (point estimates)",
        ]
        if self.left_out:
            lines.append(
                f"on the {n} test tasks every worker has an answer for ({self.left_out} left "
                "out: a recorded worker has none)"
            )
        if exact:
            lines.append("exact: the simulation's expected accuracy on these tasks")
        spent = [p for p in self.points if p.training]
        if spent:
            lines += ["", f"budget per run: {_budget_words(self.budget)}; training spent:"]
            for p in spent:
                t = p.training
                lines.append(
                    f"  {p.name}: {int(t.get('episodes', 0))} episodes, "
                    f"{int(t.get('calls', 0))} calls, {dollars(t.get('dollars', 0.0), self.spend)}, "
                    f"{t.get('minutes', 0.0):.1f} min"
                )
        lines += [
            f"cache: {self.cache_policy}, shared by every run; {self.wall_s:.0f} s in all",
            "",
            self.cheapest_within_one_point,
            self.best_at_best_single_cost,
        ]
        return "\n".join(lines)

    def svg(self) -> str:
        """The plot as an SVG document (``frontier_svg``)."""
        return frontier_svg(self)

    def write(self, folder: str | Path) -> list[Path]:
        """frontier.json, frontier.md (the table) and frontier.svg (the plot) in ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, text in (
            ("frontier.json", self.to_json()),
            ("frontier.md", "```\n" + self.table() + "\n```\n"),
            ("frontier.svg", self.svg()),
        ):
            path = folder / name
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        return paths


def _budget_words(budget: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in budget.items() if v) or "none"


def any_right_oracle(singles: Sequence[SystemOutcomes]) -> SystemOutcomes:
    """The one-turn oracle of the single workers' answers: right when any worker was, at
    the dollars of the cheapest worker that was right (the cheapest when none was)."""
    tasks = [t for t in singles[0].rewards if all(t in s.rewards for s in singles)]
    rewards, costs = {}, {}
    for t in tasks:
        pick = singles[
            any_right_index([s.rewards[t] for s in singles], [s.costs[t] for s in singles])
        ]
        rewards[t], costs[t] = pick.rewards[t], pick.costs[t]
    return SystemOutcomes(name=ANY_RIGHT, kind="oracle", rewards=rewards, costs=costs)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Which (dollars, accuracy) points no other point dominates (as cheap or cheaper and
    as accurate or more, one of them strictly)."""
    out = []
    for i, (c, a) in enumerate(points):
        dominated = any(
            c2 <= c and a2 >= a and (c2 < c or a2 > a)
            for j, (c2, a2) in enumerate(points)
            if j != i
        )
        out.append(not dominated)
    return out


def _point(s: SystemOutcomes, tasks: Sequence[str]) -> FrontierPoint:
    r = np.array([s.rewards[t] for t in tasks])
    c = np.array([s.costs[t] for t in tasks])
    ci_low, ci_high = wilson(float(r.sum()), len(r))
    dollars, dollars_low, dollars_high = mean_ci(list(c), upper=float("inf"))
    return FrontierPoint(
        name=s.name,
        kind=s.kind,
        accuracy=float(r.mean()),
        ci_low=ci_low,
        ci_high=ci_high,
        dollars=dollars,
        dollars_low=dollars_low,
        dollars_high=dollars_high,
        n=len(r),
        penalty=s.penalty,
        run_id=s.run_id,
        exact=s.exact,
        training=dict(s.training),
    )


def _diff(a: SystemOutcomes, b: SystemOutcomes, tasks: Sequence[str], seed: int) -> Paired:
    return paired_values(a.name, b.name, [a.rewards[t] - b.rewards[t] for t in tasks], seed=seed)


def _pts(d: Paired) -> str:
    """A paired difference in points with its interval, its wins and losses and the sign
    test's p-value (the ground of any claim)."""
    return (
        f"{100 * d.difference:+.1f} points [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}], "
        f"won {d.wins} lost {d.losses}, sign test p = {d.p_value:.2g}"
    )


def build_frontier(
    systems: Sequence[SystemOutcomes],
    *,
    suite: str,
    pool: Sequence[str],
    penalties: Sequence[float],
    budget: dict[str, Any],
    spend: str = "",
    seed: int = 0,
    cache_policy: str = "read-write",
    wall_s: float = 0.0,
    covered: Collection[str] | None = None,
) -> Frontier:
    """The frontier of ``systems`` (the coordinators, every single worker, random routing
    and any oracles, measured on the same test tasks); adds the one-turn oracle of the
    single workers, marks the Pareto front and writes the two sentences. Every figure is
    on ``covered`` (the tasks every worker has an answer for; default all)."""
    singles = [s for s in systems if s.kind == "single"]
    if not singles:
        raise InvalidInput("a frontier needs every single worker's answers on the test split")
    systems = [*systems, any_right_oracle(singles)] if len(singles) > 1 else list(systems)
    # sorted: the bootstrap resamples positions, so the tasks' order must not depend on the
    # order the evaluation's episodes were stored in (their finishing order)
    measured = sorted(t for t in singles[0].rewards if all(t in s.rewards for s in systems))
    tasks = [t for t in measured if covered is None or t in covered]
    if not tasks:
        raise InvalidInput("no test task has an answer from every worker of the pool")
    points = [_point(s, tasks) for s in systems]
    deployable = [i for i, p in enumerate(points) if p.kind in DEPLOYABLE]
    front = pareto_front([(points[i].dollars, points[i].accuracy) for i in deployable])
    on_front = {i for i, f in zip(deployable, front, strict=True) if f}
    points = [FrontierPoint(**{**asdict(p), "pareto": i in on_front}) for i, p in enumerate(points)]
    by_name = {s.name: s for s in systems}
    single_points = [p for p in points if p.kind == "single"]
    b = single_points[
        best_single_index([p.accuracy for p in single_points], [p.dollars for p in single_points])
    ]
    best = by_name[b.name]
    label = spend

    coordinators = [p for p in points if p.kind == "coordinator"]
    close = [p for p in coordinators if p.accuracy >= b.accuracy - ONE_POINT - 1e-12]
    if close:
        c = min(close, key=lambda p: (p.dollars, -p.accuracy))
        share = (
            f", {c.dollars / b.dollars:.0%} of {b.name}'s {dollars(b.dollars, label, 6)}"
            if b.dollars > 0
            else f" ({b.name} costs {dollars(0.0, label)})"
        )
        d = _diff(by_name[c.name], best, tasks, seed)
        # "within one point" is claimed only when the paired interval rules out a larger
        # loss; otherwise it is the point estimate, and the interval's loss is said
        within = (
            "within one point"
            if d.ci_low >= -ONE_POINT - 1e-12
            else "whose point estimate is within one point"
        )
        caveat = (
            ""
            if d.ci_low >= -ONE_POINT - 1e-12
            else f"; a loss of up to {-100 * d.ci_low:.1f} points is not ruled out"
        )
        first = (
            f"The cheapest coordinator {within} of the best single worker "
            f"({b.name}, {b.accuracy:.3f} [{b.ci_low:.3f}, {b.ci_high:.3f}]) is {c.name}: "
            f"{c.accuracy:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}], "
            f"{_pts(d)}, at {dollars(c.dollars, label, 6)} per task{share}{caveat}."
        )
    elif coordinators:
        c = max(coordinators, key=lambda p: (p.accuracy, -p.dollars))
        first = (
            f"No coordinator came within one point of the best single worker ({b.name}, "
            f"{b.accuracy:.3f} [{b.ci_low:.3f}, {b.ci_high:.3f}]): the closest, {c.name}, "
            f"reached {c.accuracy:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}], "
            f"{_pts(_diff(by_name[c.name], best, tasks, seed))}, at "
            f"{dollars(c.dollars, label, 6)} per task."
        )
    else:
        first = "No coordinator was measured."
    affordable = [p for p in points if p.kind in DEPLOYABLE and p.dollars <= b.dollars]
    top = max(affordable, key=lambda p: (p.accuracy, -p.dollars))
    at = f"At the best single worker's cost ({dollars(b.dollars, label, 6)} per task)"
    if top.name == b.name:
        second = (
            f"{at} nothing measured beats {b.name} ({b.accuracy:.3f} "
            f"[{b.ci_low:.3f}, {b.ci_high:.3f}])."
        )
    else:
        d = _diff(by_name[top.name], best, tasks, seed)
        # ``top`` is the best of ``m`` systems on these same test tasks: a win must clear
        # the sign test at SIGNIFICANCE / m (Bonferroni), or picking the luckiest of several
        # coordinators on the test split would overstate it
        m = sum(1 for p in affordable if p.name != b.name)
        level = SIGNIFICANCE / max(1, m)
        picked = f"; the best of {m} systems on these tasks, so a win needs p < {level:.2g}"
        verdict = (
            f"above {b.name} by {_pts(d)}{picked if m > 1 else ''}"
            if d.wins > d.losses and d.p_value < level
            else f"not separated from {b.name}'s {b.accuracy:.3f} ({_pts(d)}"
            f"{picked if m > 1 else ''})"
        )
        second = (
            f"{at} the best accuracy reached is {top.accuracy:.3f} "
            f"[{top.ci_low:.3f}, {top.ci_high:.3f}], by {top.name} at "
            f"{dollars(top.dollars, label, 6)}: {verdict}."
        )
    return Frontier(
        suite=suite,
        pool=tuple(pool),
        penalties=tuple(penalties),
        points=tuple(points),
        best_single=b.name,
        cheapest_within_one_point=first,
        best_at_best_single_cost=second,
        budget=dict(budget),
        spend=spend,
        cache_policy=cache_policy,
        wall_s=wall_s,
        left_out=len(measured) - len(tasks),
    )


def exact_accuracies(
    pool: Sequence[str], tasks: Sequence[Task], max_turns: int, roles: Sequence[str]
) -> dict[str, float]:
    """The exact expected test accuracy of the baselines of a simulated pool on ``tasks``:
    each single worker, random routing (all three roles, or the Worker role alone at one
    turn), the sandbox's oracles and
    the one-turn oracle of any worker right; empty for a pool that is not simulated."""
    p = simulated_skills(pool, tasks)
    if p is None:
        return {}
    out = {f"single:{w}": float(p[i].mean()) for i, w in enumerate(pool)}
    out[ANY_RIGHT] = float((1 - np.prod(1 - p, axis=0)).mean())
    keys = [(t.category, t.kind) for t in tasks]
    if tuple(roles) == tuple(str(r) for r in ROLES):
        values = {k: random_routing_value(pool, *k, max_turns) for k in set(keys)}
        out["random"] = float(np.mean([values[k] for k in keys]))
    elif tuple(roles) == ("worker",) and max_turns == 1:
        # the role masked to Worker, the worker drawn uniformly: the workers' mean skill
        out["random"] = float(p.mean())
    one = {k: best_plan(pool, *k, 1).expected_reward for k in set(keys)}
    out["oracle"] = float(np.mean([one[k] for k in keys]))
    if max_turns > 1:
        multi = {k: best_plan(pool, *k, max_turns).expected_reward for k in set(keys)}
        out[MULTI_TURN_ORACLE] = float(np.mean([multi[k] for k in keys]))
    return out


def exact_one_turn_routing(
    pool: Sequence[str], tasks: Sequence[Task], chosen: dict[str, tuple[str, str]]
) -> float | None:
    """The exact expected accuracy of a one-turn routing that sent each task (id) to
    ``chosen[id]`` = (worker, role) on a simulated pool: the worker's skill as Worker, 0 in
    another role (no answer); None for a pool that is not simulated."""
    p = simulated_skills(pool, tasks)
    if p is None:
        return None
    index = {w: i for i, w in enumerate(pool)}
    values = [
        p[index[chosen[t.id][0]], j] if chosen[t.id][1] == "worker" else 0.0
        for j, t in enumerate(tasks)
    ]
    return float(np.mean(values))


@dataclass(frozen=True)
class StoredFrontier:
    """A frontier study stored in the workspace, as a list shows it."""

    run_id: str
    name: str
    created_at: float


def list_frontiers(workspace: Workspace) -> list[StoredFrontier]:
    """The workspace's finished frontier studies, newest first."""
    with Store.open(workspace) as store:
        runs = store.list_runs(kind="frontier")
    return [
        StoredFrontier(r.id, r.name, r.created_at)
        for r in reversed(runs)
        if r.status is RunStatus.FINISHED and (r.result or {}).get("frontier")
    ]


def load_frontier(workspace: Workspace, run_id: str) -> Frontier:
    """A stored frontier study (``list_frontiers``)."""
    with Store.open(workspace) as store:
        record = store.get_run(run_id)
    data = (record.result or {}).get("frontier")
    if record.kind != "frontier" or not data:
        raise InvalidInput(
            f"run {record.id[:8]} is no finished frontier study: list them with "
            "trinity-workbench runs list --all"
        )
    return Frontier.from_dict(data)


COLOURS = {
    "coordinator": "#1f6fb4",
    "single": "#d2691e",
    "random": "#7f7f7f",
    "oracle": "#2e8b57",
}


def frontier_svg(frontier: Frontier, width: int = 760, height: int = 480) -> str:
    """Accuracy against dollars per task, every system with its two 95% intervals, the
    Pareto front as a line through its points, as a standalone SVG document."""
    from xml.sax.saxutils import escape

    left, right, top, bottom = 70, 220, 40, 60
    pw, ph = width - left - right, height - top - bottom
    points = frontier.points
    xmax = max([p.dollars_high for p in points] + [1e-12]) * 1.08
    ymin = max(0.0, min(p.ci_low for p in points) - 0.05) if points else 0.0
    ymax = min(1.0, max(p.ci_high for p in points) + 0.05) if points else 1.0
    if ymax - ymin < 0.1:
        ymax = min(1.0, ymin + 0.1)

    def x(v: float) -> float:
        return left + pw * v / xmax

    def y(v: float) -> float:
        return top + ph * (1 - (v - ymin) / (ymax - ymin))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="13">Accuracy against dollars per task on '
        f"{escape(frontier.suite)} (95% intervals)</text>",
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>',
    ]
    for k in range(6):
        xv, yv = xmax * k / 5, ymin + (ymax - ymin) * k / 5
        out.append(
            f'<text x="{x(xv):.1f}" y="{top + ph + 16}" text-anchor="middle">{xv:.2g}</text>'
        )
        out.append(f'<text x="{left - 6}" y="{y(yv) + 4:.1f}" text-anchor="end">{yv:.2f}</text>')
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 18}" text-anchor="middle">'
        f"{escape(frontier.dollars_label)}</text>"
    )
    out.append(
        f'<text x="16" y="{top + ph / 2}" transform="rotate(-90 16 {top + ph / 2})" '
        'text-anchor="middle">accuracy</text>'
    )
    front = sorted((p for p in points if p.pareto), key=lambda p: p.dollars)
    if len(front) > 1:
        path = " ".join(f"{x(p.dollars):.1f},{y(p.accuracy):.1f}" for p in front)
        out.append(f'<polyline points="{path}" fill="none" stroke="black" stroke-dasharray="4 3"/>')
    for p in points:
        colour = COLOURS.get(p.kind, "black")
        cx, cy = x(p.dollars), y(p.accuracy)
        out.append(
            f'<line x1="{x(p.dollars_low):.1f}" y1="{cy:.1f}" x2="{x(p.dollars_high):.1f}" '
            f'y2="{cy:.1f}" stroke="{colour}"/>'
        )
        out.append(
            f'<line x1="{cx:.1f}" y1="{y(p.ci_low):.1f}" x2="{cx:.1f}" y2="{y(p.ci_high):.1f}" '
            f'stroke="{colour}"/>'
        )
        shape = (
            f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8"'
            if p.pareto
            else f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4"'
        )
        out.append(
            f'{shape} fill="{colour}"><title>{escape(point_details(p, frontier.spend))}'
            "</title></" + ("rect>" if p.pareto else "circle>")
        )
        out.append(f'<text x="{cx + 6:.1f}" y="{cy - 6:.1f}">{escape(p.name)}</text>')
    legend_y = top
    for kind, colour in COLOURS.items():
        out.append(
            f'<circle cx="{left + pw + 20}" cy="{legend_y}" r="4" fill="{colour}"/>'
            f'<text x="{left + pw + 30}" y="{legend_y + 4}">{kind}</text>'
        )
        legend_y += 18
    out.append(
        f'<rect x="{left + pw + 16}" y="{legend_y - 4}" width="8" height="8" fill="black"/>'
        f'<text x="{left + pw + 30}" y="{legend_y + 4}">on the Pareto front</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def point_details(p: FrontierPoint, spend: str = "") -> str:
    """A point's details in words (the plot's hover text)."""
    parts = [
        p.name,
        f"accuracy {p.accuracy:.3f} [{p.ci_low:.3f}, {p.ci_high:.3f}] on {p.n} tasks",
        f"{dollars(p.dollars, spend, 6)} per task [{p.dollars_low:.6f}, {p.dollars_high:.6f}]",
    ]
    if p.exact is not None:
        parts.append(f"exact (simulation) {p.exact:.3f}")
    if p.penalty is not None:
        parts.append(f"cost_penalty {p.penalty:g} per dollar, run {(p.run_id or '')[:8]}")
    if p.pareto:
        parts.append("on the Pareto front")
    return "\n".join(parts)
