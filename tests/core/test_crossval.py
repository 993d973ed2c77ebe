"""k-fold cross-validation: the folds (every task tested exactly once, seeded,
stratified), the paired statistics, and an end-to-end cross-validated training and
evaluation of a tiny coordinator on an imported recorded pool (tiny backbone, seconds)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from workbench.core.config import RunConfig
from workbench.core.errors import InvalidInput
from workbench.core.jobs.crossval import cross_validate, fold_suite, make_folds
from workbench.core.jobs.crossval_report import list_crossvals, load_crossval, summarise_folds
from workbench.core.recordings import import_file
from workbench.core.stats import paired, sign_test
from workbench.core.store import Store
from workbench.core.tasks.model import Suite, Task
from workbench.core.tasks.suites import import_suite, load_suite
from workbench.core.workspace import Workspace


def _tasks(n: int = 23) -> list[Task]:
    return [
        Task(
            id=f"t{i:02d}", kind="math", prompt=f"{i} + 1?", answer=str(i + 1), category="ab"[i % 2]
        )
        for i in range(n)
    ]


def test_every_task_is_in_exactly_one_fold_and_folds_are_balanced_and_seeded():
    tasks = _tasks(23)
    folds = make_folds(tasks, 5, seed=7)
    ids = [t.id for f in folds for t in f]
    assert sorted(ids) == sorted(t.id for t in tasks)  # each task once
    assert max(map(len, folds)) - min(map(len, folds)) <= 1
    for category in "ab":  # each category spread evenly over the folds
        counts = [sum(t.category == category for t in fold) for fold in folds]
        assert max(counts) - min(counts) <= 1, (category, counts)
    # an uneven suite: 3 of category a, 17 of b over 4 folds
    uneven = [
        Task(id=f"u{i:02d}", kind="math", prompt="p", answer="1", category="a" if i < 3 else "b")
        for i in range(20)
    ]
    for category in "ab":
        counts = [sum(t.category == category for t in f) for f in make_folds(uneven, 4, 1)]
        assert max(counts) - min(counts) <= 1, (category, counts)
    assert make_folds(list(reversed(tasks)), 5, seed=7) == folds  # file order does not matter
    assert make_folds(tasks, 5, seed=8) != folds
    with pytest.raises(InvalidInput, match="at least 2 folds"):
        make_folds(tasks, 1, 0)
    with pytest.raises(InvalidInput, match="one per task"):
        make_folds(tasks[:3], 4, 0)


def test_a_folds_suite_tests_the_fold_and_trains_and_validates_on_the_rest():
    tasks = _tasks(20)
    suite = Suite(name="s", tasks=tuple(tasks))
    folds = make_folds(tasks, 4, seed=0)
    tested = []
    for index in range(4):
        splits = fold_suite(suite, folds, index, seed=0).splits()
        assert {t.id for t in splits["test"]} == {t.id for t in folds[index]}
        assert len(splits["validation"]) == round(15 * 0.25)
        assert len(splits["train"]) + len(splits["validation"]) + len(splits["test"]) == 20
        tested += [t.id for t in splits["test"]]
    assert sorted(tested) == sorted(t.id for t in tasks)


def test_paired_difference_interval_and_exact_sign_test():
    assert sign_test(0, 0) == 1.0
    assert sign_test(34, 0) == pytest.approx(2 / 2**34)
    assert sign_test(3, 3) == 1.0
    # 8 wins, 2 losses: P(X <= 2 | n=10, p=1/2) * 2
    assert sign_test(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    ids = [f"t{i}" for i in range(40)]
    a = {i: 1.0 for i in ids}
    b = {i: 1.0 if n < 30 else 0.0 for n, i in enumerate(ids)}
    p = paired("a", "b", a, b, ids, seed=0)
    assert p.difference == pytest.approx(0.25) and (p.wins, p.losses, p.n) == (10, 0, 40)
    assert 0.1 < p.ci_low < 0.25 < p.ci_high < 0.4
    same = paired("b", "b", b, b, ids)
    assert (same.difference, same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_the_report_pairs_every_system_with_the_best_single_worker_per_category():
    groups = {"t1": "x", "t2": "x", "t3": "y", "t4": "y"}
    rewards = {
        "coordinator": {"t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 0.0},
        "single:a": {"t1": 1.0, "t2": 1.0, "t3": 0.0, "t4": 0.0},
        "single:b": {"t1": 0.0, "t2": 0.0, "t3": 1.0, "t4": 0.0},
        "recorded oracle": {"t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 0.0},
    }
    kinds = {"coordinator": "coordinator", "single:a": "single", "single:b": "single"}
    kinds["recorded oracle"] = "oracle"
    report = summarise_folds("s", 2, 0, rewards, kinds, groups)
    assert report.best_single == "single:a"
    coordinator = next(p for p in report.paired if p.system == "coordinator")
    assert coordinator.difference == pytest.approx(0.25) and coordinator.wins == 1
    assert report.system("coordinator").by_group["y"][0] == pytest.approx(0.5)
    per_y = next(p for p in report.paired_by_group["y"] if p.system == "coordinator")
    assert (per_y.n, per_y.wins, per_y.difference) == (2, 1, 0.5)
    assert "single:a" in report.table() and json.loads(report.to_json())["folds"] == 2
    assert report.paired_left_out == 0


def test_the_paired_comparison_is_on_the_tasks_every_worker_covers():
    # single:b has no recorded answer for t3 and t4 (a miss reads as wrong); the
    # coordinator was routed around it there. On all tasks the coordinator would "win" 2-0
    # against b; on the covered tasks t1, t2 the two are equal and b (cheaper) is the best
    groups = dict.fromkeys(("t1", "t2", "t3", "t4"), "x")
    rewards = {
        "coordinator": {"t1": 1.0, "t2": 0.0, "t3": 1.0, "t4": 1.0},
        "single:a": {"t1": 1.0, "t2": 0.0, "t3": 0.0, "t4": 0.0},
        "single:b": {"t1": 1.0, "t2": 0.0, "t3": 0.0, "t4": 0.0},
    }
    kinds = {"coordinator": "coordinator", "single:a": "single", "single:b": "single"}
    costs = {
        "single:a": dict.fromkeys(groups, 2.0),
        "single:b": dict.fromkeys(groups, 1.0),
        "coordinator": dict.fromkeys(groups, 1.0),
    }
    report = summarise_folds("s", 2, 0, rewards, kinds, groups, covered={"t1", "t2"}, costs=costs)
    assert report.best_single == "single:b"  # a tie in accuracy: the cheaper (one rule)
    coordinator = next(p for p in report.paired if p.system == "coordinator")
    assert (coordinator.n, coordinator.wins, coordinator.losses) == (2, 0, 0)
    assert report.paired_left_out == 2 and "(2 left out" in report.table()
    everything = summarise_folds("s", 2, 0, rewards, kinds, groups)
    assert next(p for p in everything.paired if p.system == "coordinator").wins == 2


def _parity(tmp_path) -> tuple[Workspace, list[Task]]:
    """A 12-task suite and a recorded pool of two workers, each right on one category."""
    ws = Workspace.open(tmp_path / "ws")
    tasks = _tasks(12)
    suite_file = tmp_path / "s.jsonl"
    suite_file.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    import_suite(suite_file, "tiny", ws)
    lines = []
    for t in tasks:
        for worker, right in (("even", t.category == "a"), ("odd", t.category == "b")):
            answer = t.answer if right else "0"
            lines.append(
                json.dumps({"task_id": t.id, "worker": worker, "response": f"\\boxed{{{answer}}}"})
            )
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    import_file(ws, tmp_path / "r.jsonl", "parity", "tiny")
    return ws, tasks


def _parity_config(max_turns: int) -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": "cv", "seed": 0},
            "pool": {"workers": ["recorded:parity"]},
            "tasks": {"suite": "tiny"},
            "optimizer": {
                "popsize": 4,
                "rollouts": 2,
                "validate_every": 1,
                "recorded_defaults": False,
            },
            "budget": {"generations": 2},
            "protocol": {"max_turns": max_turns, "temperature": 0.0, "roles": ["worker"]},
            "cache": {"policy": "off"},
        }
    )


def test_cross_validated_training_on_a_recorded_pool_tests_every_task_once(tmp_path, tiny_backbone):
    """Played as episodes (two turns: no routing table), 3 folds: 3 training runs and 3
    evaluations stored, every system scored once per task, the recorded oracle right
    everywhere and each single worker on its category."""
    ws, tasks = _parity(tmp_path)
    config = _parity_config(max_turns=2)
    seen = []
    report = cross_validate(
        config, ws, folds=3, seed=1, backbone=tiny_backbone, progress=seen.append
    )
    assert [(e.fold, e.stage) for e in seen if e.stage != "training"] == [
        (f, s) for f in (1, 2, 3) for s in ("trained", "evaluated")
    ]
    names = [s.name for s in report.systems]
    assert names == [
        "coordinator",
        "single:recorded:parity/even",
        "single:recorded:parity/odd",
        "random",
        "recorded oracle",
    ]
    ids = {t.id for t in tasks}
    for system in report.systems:
        assert set(system.rewards) == ids and system.n == 12  # every task tested once
    assert report.system("recorded oracle").accuracy == 1.0
    assert report.system("single:recorded:parity/even").by_group == {
        "a": (1.0, *report.system("single:recorded:parity/even").by_group["a"][1:3], 6),
        "b": (0.0, *report.system("single:recorded:parity/even").by_group["b"][1:3], 6),
    }
    assert report.best_single == "single:recorded:parity/even"  # a tie: the first in the pool
    oracle = next(p for p in report.paired if p.system == "recorded oracle")
    assert (oracle.wins, oracle.losses, oracle.difference) == (6, 0, 0.5)
    assert math.isclose(oracle.p_value, 2 / 2**6)
    with Store.open(ws) as store:
        trained = [r for r in store.list_runs("train") if r.name.startswith("cv (cv ")]
        assert len(trained) == 3 and {r.id for r in trained} == set(report.runs)
        evaluations = store.list_runs("eval")
        assert {r.id for r in evaluations} == set(report.evaluations)
        for r in evaluations:  # recorded dollars are labelled so, not read as real ones
            assert r.status == "finished"
            assert json.loads(r.result["report"])["spend"] == "recorded", r.result
        # the folds' test tasks: disjoint, together the suite
        tested = [
            e.task_id
            for r in report.evaluations
            for e in store.list_episodes(r)
            if e.candidate == 0
        ]
    assert sorted(tested) == sorted(ids)
    assert np.isfinite(report.train_seconds) and report.train_seconds > 0
    assert load_suite("tiny", ws).tasks == tuple(tasks)  # the stored suite is unchanged


def test_cross_validation_on_the_routing_table_compares_every_router(tmp_path, tiny_backbone):
    """One turn of recorded answers: the routing table. Two repeats of 3 folds: each fold's
    coordinator trained on the table and its test episodes stored (replayable), every
    simple router and reference beside it on the same folds, a task's reward its mean over
    the repeats, the report stored as a crossval run and the features kept."""
    ws, tasks = _parity(tmp_path)
    config = _parity_config(max_turns=1)
    seen = []
    report = cross_validate(
        config, ws, folds=3, seed=1, repeats=2, backbone=tiny_backbone, progress=seen.append
    )
    assert report.seeds == (1, 2)
    assert [(e.repeat, e.fold, e.stage) for e in seen if e.stage in ("trained", "evaluated")] == [
        (r, f, s) for r in (1, 2) for f in (1, 2, 3) for s in ("trained", "evaluated")
    ]
    assert [s.name for s in report.systems] == [
        "coordinator",
        "best model per category",
        "logistic regression",
        "kNN",
        "imitation",
        "single:recorded:parity/even",
        "single:recorded:parity/odd",
        "random",
        "majority vote",
        "recorded oracle",
    ]
    ids = {t.id for t in tasks}
    for system in report.systems:
        assert set(system.rewards) == ids
        # each task tested once per repeat: a mean of two rewards of 0 or 1
        assert set(system.rewards.values()) <= {0.0, 0.5, 1.0}
    assert report.system("recorded oracle").accuracy == 1.0
    assert report.system("random").accuracy == 0.5
    assert report.system("majority vote").calls == 2
    # each category has one right worker: routing by category is perfect
    assert report.system("best model per category").accuracy == 1.0
    assert report.gap_share("best model per category") == 1.0
    assert report.routing["best model per category"] == {
        "a": {"recorded:parity/even": 12},  # 6 tasks, twice
        "b": {"recorded:parity/odd": 12},
    }
    with Store.open(ws) as store:
        assert len(report.runs) == 6 and len(report.evaluations) == 6
        tested = [e.task_id for r in report.evaluations for e in store.list_episodes(r)]
        assert sorted(tested) == sorted(list(ids) * 2)
        stored = store.get_run(report.run_id)
        assert stored.kind == "crossval" and stored.status == "finished"
        assert stored.result["crossval"]["systems"][0]["name"] == "coordinator"
    coordinator = report.system("coordinator")
    episodes_mean = np.mean(list(coordinator.rewards.values()))
    assert coordinator.accuracy == pytest.approx(episodes_mean)


def test_repeats_need_the_routing_table(tmp_path, tiny_backbone):
    ws, _ = _parity(tmp_path)
    with pytest.raises(InvalidInput, match="--repeats and --paper-settings need"):
        cross_validate(_parity_config(max_turns=2), ws, folds=3, repeats=2, backbone=tiny_backbone)


def test_a_stored_evaluation_that_fails_is_marked_failed_not_left_running(tmp_path):
    import asyncio

    from workbench.core.jobs.evaluate import stored_evaluation

    ws = Workspace.open(tmp_path / "ws")

    async def broken():
        raise RuntimeError("the pool went away")

    with Store.open(ws) as store:
        eval_id = store.create_run("eval of x", "eval", {})
        with pytest.raises(RuntimeError):
            asyncio.run(stored_evaluation(store, eval_id, ["recorded:champ/gpt-4"], broken()))
        record = store.get_run(eval_id)
    assert record.status == "failed" and "the pool went away" in (record.error or "")


def test_a_stored_cross_validation_reads_back_whole(tmp_path, tiny_backbone):
    ws, _ = _parity(tmp_path)
    report = cross_validate(
        _parity_config(max_turns=1), ws, folds=3, seed=1, backbone=tiny_backbone
    )
    (stored,) = list_crossvals(ws)
    assert stored.run_id == report.run_id and "cross-validation of cv" in stored.name
    again = load_crossval(ws, stored.run_id)
    assert again.train_seconds == round(report.train_seconds, 1)  # stored to a tenth
    assert dataclasses.replace(again, train_seconds=report.train_seconds) == report
    with pytest.raises(InvalidInput, match="no finished cross-validation"):
        load_crossval(ws, report.runs[0])


def test_the_crossval_command_counts_the_questions_it_reads_once(tmp_path, tiny_model_dir):
    """``trinity-workbench crossval`` in a pipe (plain lines): the backbone's reading of
    every question, before the folds, is counted to its end once; a step done in one go
    (grading 12 recorded answers) and the folds' own reading of features already kept
    draw nothing; run again, the kept features are read back without a line. The report
    is printed."""
    import subprocess
    import sys

    ws, _ = _parity(tmp_path)
    config = _parity_config(max_turns=1).replace(
        backbone={"model": str(tiny_model_dir), "device": "cpu", "precision": "fp32"}
    )
    path = tmp_path / "cv.toml"
    path.write_text(config.to_toml(), encoding="utf-8")

    def crossval() -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "workbench", "--workspace", str(ws.root), "crossval"]
        done = subprocess.run(
            [*command, str(path), "--folds", "3", "--progress", "plain"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    first = crossval()
    reading = "reading every question with the backbone"
    assert [line.split(",")[0] for line in first.stderr.splitlines() if reading in line] == [
        f"{reading}: 12/12 questions"
    ]
    assert "grading the recorded answers" not in first.stderr
    assert "coordinator" in first.stdout and "recorded oracle" in first.stdout
    assert reading not in crossval().stderr
