"""The cost-quality frontier (workbench/core/frontier.py): on the sandbox, whose skills are
known, every measured accuracy holds its exact value in its interval (each coordinator's
the exact value of the routing it played); the Pareto front and the two sentences follow
from the points; the stored study loads back and draws."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from workbench.core.config import RunConfig
from workbench.core.errors import InvalidInput
from workbench.core.jobs.frontier import check_penalties, study_frontier
from workbench.core.jobs.frontier_report import (
    ANY_RIGHT,
    SystemOutcomes,
    build_frontier,
    list_frontiers,
    load_frontier,
    pareto_front,
)
from workbench.core.workspace import Workspace


def _config() -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": "frontier", "seed": 0},
            "backbone": {"model": "tiny", "input": "raw"},
            "pool": {"workers": ["sandbox"]},
            "tasks": {"suite": "mixed", "train": 40, "validation": 8, "test": 0},
            "optimizer": {"popsize": 4, "rollouts": 4, "validate_every": 1000},
            "budget": {"generations": 2},
            "protocol": {"max_turns": 1, "temperature": 0.0},
            "cache": {"policy": "off"},
        }
    )


def test_a_sandbox_frontier_holds_the_exact_accuracies_in_its_intervals(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    lines: list[str] = []
    frontier = study_frontier(
        _config(), ws, [0, 2000], backbone=tiny_backbone, progress=lines.append
    )
    assert len(lines) == 2 and frontier.spend == "simulated"
    names = {p.name for p in frontier.points}
    assert {"cost_penalty 0", "cost_penalty 2000", "random", "oracle", ANY_RIGHT} <= names
    assert {f"single:sandbox:{w}" for w in ("mathlete", "scholar", "coder")} <= names
    for p in frontier.points:
        assert p.exact is not None, p.name  # every accuracy has its exact value here
        assert p.ci_low <= p.exact <= p.ci_high, p
        assert p.dollars_low <= p.dollars <= p.dollars_high
        assert p.pareto == (p.pareto and p.kind in ("coordinator", "single", "random"))
    coordinators = [p for p in frontier.points if p.kind == "coordinator"]
    assert {p.penalty for p in coordinators} == {0.0, 2000.0}
    assert all(p.training["episodes"] > 0 for p in coordinators)
    # the config's "off" is overridden (the runs share the cache), and the table says so
    assert frontier.cache_policy.startswith("read-write, not the config's off")
    assert "not the config's off" in frontier.table()
    text = frontier.table()
    assert "(simulated)" in text and frontier.cheapest_within_one_point in text
    # stored, listed and loaded back as it was
    (stored,) = list_frontiers(ws)
    assert stored.run_id == frontier.run_id
    assert load_frontier(ws, stored.run_id) == frontier
    svg = ET.fromstring(frontier.svg())
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert len(titles) == len(frontier.points) and all("per task" in t for t in titles)
    paths = frontier.write(tmp_path / "out")
    assert [p.name for p in paths] == ["frontier.json", "frontier.md", "frontier.svg"]


def test_random_routing_over_the_worker_role_alone_has_its_exact_value(tmp_path, tiny_backbone):
    # roles = ["worker"] at one turn: random routing draws the worker uniformly (the role
    # is masked to Worker), so its exact accuracy is the workers' mean skill, and the
    # measured random point's interval must hold it
    config = _config().replace(
        protocol={"roles": ["worker"]}, tasks={"train": 20, "validation": 4, "test": 0}
    )
    frontier = study_frontier(config, Workspace.open(tmp_path / "ws"), [0], backbone=tiny_backbone)
    points = {p.name: p for p in frontier.points}
    singles = [p.exact for name, p in points.items() if name.startswith("single:")]
    random = points["random"]
    assert random.exact == pytest.approx(sum(singles) / len(singles))
    assert random.ci_low <= random.exact <= random.ci_high, random


def _system(name, kind, rewards, cost, penalty=None):
    ids = [str(i) for i in range(len(rewards))]
    return SystemOutcomes(
        name=name,
        kind=kind,
        rewards=dict(zip(ids, map(float, rewards), strict=True)),
        costs=dict.fromkeys(ids, cost),
        penalty=penalty,
    )


def test_the_same_outcomes_in_another_order_give_the_same_frontier():
    # an evaluation stores its episodes as they finish: the order of a system's rewards
    # varies from run to run, and the paired bootstrap's interval must not
    rng = np.random.default_rng(3)
    right = {name: rng.random(400) < p for name, p in (("a", 0.5), ("b", 0.6), ("c", 0.65))}

    def systems(order):
        out = []
        for name, kind in (("a", "single"), ("b", "single"), ("c", "coordinator")):
            ids = [str(i) for i in order]
            out.append(
                SystemOutcomes(
                    name=f"single:{name}" if kind == "single" else "cost_penalty 0",
                    kind=kind,
                    rewards={i: float(right[name][int(i)]) for i in ids},
                    costs={i: 1.0 if name == "a" else 2.0 for i in ids},
                    penalty=0.0 if kind == "coordinator" else None,
                )
            )
        return out

    kwargs = {"suite": "s", "pool": ("a", "b"), "penalties": (0.0,), "budget": {}}
    first = build_frontier(systems(range(400)), **kwargs)
    again = build_frontier(systems(rng.permutation(400)), **kwargs)
    assert first.cheapest_within_one_point == again.cheapest_within_one_point
    assert first.best_at_best_single_cost == again.best_at_best_single_cost
    assert first.points == again.points
    assert "points [" in first.cheapest_within_one_point  # an interval, stated


def test_the_front_and_the_two_sentences_follow_from_the_points():
    n = 100
    best = _system("single:big", "single", [1] * 80 + [0] * 20, 10.0)
    small = _system("single:small", "single", [1] * 50 + [0] * 50, 1.0)
    cheap = _system("cost_penalty 5", "coordinator", [1] * 79 + [0] * 21, 4.0, 5.0)
    # right on 85 tasks: 10 that big misses, but not 5 that big gets right
    dear = _system("cost_penalty 0", "coordinator", [0] * 5 + [1] * 85 + [0] * 10, 9.0, 0.0)
    frontier = build_frontier(
        [dear, cheap, best, small],
        suite="s",
        pool=("big", "small"),
        penalties=(0.0, 5.0),
        budget={"generations": 1},
    )
    front = {p.name for p in frontier.points if p.pareto}
    assert front == {"single:small", "cost_penalty 5", "cost_penalty 0"}  # big is dominated
    assert frontier.best_single == "single:big"
    first = frontier.cheapest_within_one_point
    assert "is cost_penalty 5" in first and "40% of single:big's" in first
    # 79 against 80, one task lost: the interval reaches below -1 point, so "within one
    # point" is the point estimate only, and the loss the interval allows is said
    assert first.startswith("The cheapest coordinator whose point estimate is within one")
    assert "a loss of up to 3.0 points is not ruled out" in first
    # right on exactly big's tasks: the paired interval is [0, 0], within one point stands
    same = _system("cost_penalty 5", "coordinator", [1] * 80 + [0] * 20, 4.0, 5.0)
    tied = build_frontier(
        [same, best, small], suite="s", pool=("big", "small"), penalties=(5.0,), budget={}
    )
    assert tied.cheapest_within_one_point.startswith(
        "The cheapest coordinator within one point of the best single worker"
    )
    assert "not ruled out" not in tied.cheapest_within_one_point
    second = frontier.best_at_best_single_cost
    assert "by cost_penalty 0" in second
    # +5 points on 100 tasks, paired: the interval includes 0, so no win is claimed
    assert "not separated from single:big" in second
    # right wherever big is and on 5 more: the bootstrap interval lies above 0 ([+1, +10]),
    # but 5 wins and 0 losses is p = 0.0625 by the exact sign test: no win is claimed
    five = _system("cost_penalty 0", "coordinator", [1] * 85 + [0] * 15, 9.0, 0.0)
    not_won = build_frontier(
        [five, cheap, best, small], suite="s", pool=("big", "small"), penalties=(0, 5), budget={}
    )
    assert "not separated from single:big" in not_won.best_at_best_single_cost
    assert "won 5 lost 0, sign test p = 0.062" in not_won.best_at_best_single_cost
    # right wherever big is and on 8 more: 8 wins, 0 losses is p = 0.0078, a win
    better = _system("cost_penalty 0", "coordinator", [1] * 88 + [0] * 12, 9.0, 0.0)
    won = build_frontier(
        [better, cheap, best, small], suite="s", pool=("big", "small"), penalties=(0, 5), budget={}
    )
    assert "above single:big by +8.0 points [" in won.best_at_best_single_cost
    assert "won 8 lost 0, sign test p = 0.0078" in won.best_at_best_single_cost
    # 6 wins, 0 losses is p = 0.031, but the winner is the best of 3 systems at big's cost
    # on the same test tasks: Bonferroni asks p < 0.017, so no win is claimed
    six = _system("cost_penalty 0", "coordinator", [1] * 86 + [0] * 14, 9.0, 0.0)
    picked = build_frontier(
        [six, cheap, best, small], suite="s", pool=("big", "small"), penalties=(0, 5), budget={}
    )
    assert "not separated from single:big" in picked.best_at_best_single_cost
    assert "the best of 3 systems on these tasks, so a win needs p < 0.017" in (
        picked.best_at_best_single_cost
    )
    alone = build_frontier([six, best], suite="s", pool=("big",), penalties=(0,), budget={})
    assert "above single:big by +6.0 points" in alone.best_at_best_single_cost
    oracle = next(p for p in frontier.points if p.name == ANY_RIGHT)
    assert oracle.accuracy == pytest.approx(0.80) and oracle.n == n and not oracle.pareto


def test_no_coordinator_within_one_point_is_said_so():
    best = _system("single:big", "single", [1] * 8 + [0] * 2, 1.0)
    weak = _system("cost_penalty 0", "coordinator", [1] * 5 + [0] * 5, 0.5, 0.0)
    frontier = build_frontier([weak, best], suite="s", pool=("big",), penalties=(0.0,), budget={})
    assert frontier.cheapest_within_one_point.startswith("No coordinator came within one point")
    assert "nothing measured beats single:big" in frontier.best_at_best_single_cost


def test_pareto_front_and_penalties_are_checked():
    assert pareto_front([(1, 0.5), (2, 0.5), (2, 0.6), (0.5, 0.1)]) == [True, False, True, True]
    assert check_penalties(["0", 1.5]) == (0.0, 1.5)
    for bad in ([], [-1], [1, 1], [float("nan")]):
        with pytest.raises(InvalidInput):
            check_penalties(bad)


def test_the_frontier_is_measured_on_the_tasks_every_worker_covers():
    # small has no recorded answer for the last 10 tasks (read as wrong), where the
    # coordinator was routed to big: on all 100 tasks it would be 10 points above small
    big = _system("single:big", "single", [1] * 50 + [0] * 40 + [1] * 10, 2.0)
    small = _system("single:small", "single", [1] * 60 + [0] * 40, 1.0)
    coordinator = _system("cost_penalty 0", "coordinator", [1] * 60 + [0] * 30 + [1] * 10, 1.0, 0)
    covered = {str(i) for i in range(90)}
    frontier = build_frontier(
        [coordinator, big, small],
        suite="s",
        pool=("big", "small"),
        penalties=(0.0,),
        budget={},
        covered=covered,
    )
    assert frontier.left_out == 10 and all(p.n == 90 for p in frontier.points)
    assert frontier.best_single == "single:small"  # 60 of 90 against big's 50
    by_name = {p.name: p for p in frontier.points}
    assert by_name["cost_penalty 0"].accuracy == pytest.approx(60 / 90)
    assert "10 left out" in frontier.table()
    everything = build_frontier(
        [coordinator, big, small], suite="s", pool=("big", "small"), penalties=(0.0,), budget={}
    )
    assert everything.left_out == 0 and everything.points[0].n == 100
