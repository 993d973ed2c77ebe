"""The cost-quality frontier (workbench/core/frontier.py): on the sandbox, whose skills are
known, every measured accuracy holds its exact value in its interval (each coordinator's
the exact value of the routing it played); the Pareto front and the two sentences follow
from the points; the stored study loads back and draws."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from workbench.core.config import RunConfig
from workbench.core.errors import InvalidInput
from workbench.core.frontier import (
    ANY_RIGHT,
    SystemOutcomes,
    build_frontier,
    check_penalties,
    list_frontiers,
    load_frontier,
    pareto_front,
    study_frontier,
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
    assert frontier.cache_policy == "read-write"
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


def _system(name, kind, rewards, cost, penalty=None):
    ids = [str(i) for i in range(len(rewards))]
    return SystemOutcomes(
        name=name,
        kind=kind,
        rewards=dict(zip(ids, map(float, rewards), strict=True)),
        costs=dict.fromkeys(ids, cost),
        penalty=penalty,
    )


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
    second = frontier.best_at_best_single_cost
    assert "by cost_penalty 0" in second
    # +5 points on 100 tasks, paired: the interval includes 0, so no win is claimed
    assert "not separated from single:big" in second
    # right wherever big is and on 5 more: the paired interval lies above 0
    better = _system("cost_penalty 0", "coordinator", [1] * 85 + [0] * 15, 9.0, 0.0)
    won = build_frontier(
        [better, cheap, best, small], suite="s", pool=("big", "small"), penalties=(0, 5), budget={}
    )
    assert "above single:big by +5.0 points [+1.0" in won.best_at_best_single_cost
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
