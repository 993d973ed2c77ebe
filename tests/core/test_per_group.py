"""Per-benchmark reporting (issue 15): evaluation and the study give one row per category
(a suite's benchmark) beside the total, and a task file's explicit splits are honoured.
Real runs on the sandbox pool with the tiny backbone, on a mixed suite written here."""

import csv
import io
import json

import pytest

from tests.core.test_training import config
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.study import study_optimizers
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.state import task_splits
from workbench.core.workspace import Workspace


def _write_suite(path, explicit=True, benches=(("arith", "math"), ("trivia", "choice"))):
    """36 tasks of two benchmarks ("arith", "trivia"); with ``explicit`` the first six of
    each carry a test split and the next two a validation split."""
    lines = []
    for i in range(18):
        for bench, kind in benches:
            task = {"id": f"{bench}-{i:02d}", "kind": kind, "category": bench}
            if kind == "math":
                task.update(prompt=f"What is {i} + {i}?", answer=str(2 * i))
            else:
                task.update(prompt=f"Pick option {i % 4}.", choices=["a", "b", "c", "d"])
                task["answer"] = "ABCD"[i % 4]
            if explicit and i < 6:
                task["split"] = "test"
            elif explicit and i < 8:
                task["split"] = "validation"
            lines.append(json.dumps(task))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_task_files_explicit_splits_are_honoured_whatever_the_split_seed(tmp_path):
    path = _write_suite(tmp_path / "bench.jsonl")
    suite = load_suite(str(path))
    marked_test = {t.id for t in suite.tasks if t.split == "test"}
    marked_val = {t.id for t in suite.tasks if t.split == "validation"}
    assert len(marked_test) == 12 and len(marked_val) == 4
    for seed in (0, 1, 7):
        cfg = config(
            tasks={"suite": str(path), "train": 0, "validation": 0, "test": 0, "split_seed": seed}
        )
        splits = task_splits(cfg.tasks, suite)
        ids = {name: {t.id for t in tasks} for name, tasks in splits.items()}
        assert marked_test <= ids["test"] and marked_val <= ids["validation"]
        assert not (marked_test | marked_val) & ids["train"]
        # a size cut keeps the explicit tasks first: test = 12 is exactly the file's test split
        cut = task_splits(cfg.replace(tasks={"test": 12, "validation": 4}).tasks, suite)
        assert {t.id for t in cut["test"]} == marked_test
        assert {t.id for t in cut["validation"]} == marked_val


def test_evaluation_reports_each_category_beside_the_total(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    path = _write_suite(tmp_path / "bench.jsonl")
    cfg = config(
        tasks={"suite": str(path), "train": 0, "validation": 0, "test": 12},
        budget={"generations": 1},
    )
    run_id = train(cfg, ws, backbone=tiny_backbone)
    result = evaluate_run(ws, run=run_id, backbone=tiny_backbone)
    report = result.report
    assert report.groups == ["arith", "trivia"]
    with Store.open(ws) as store:
        episodes = [store.get_episode(e.id) for e in store.list_episodes(result.run_id)]
    for index, system in enumerate(report.systems):
        mine = [e for e in episodes if e.candidate == index]
        for group in report.groups:
            rewards = [e.reward for e in mine if e.task_id.startswith(group)]
            got = system.by_group[group]
            assert got.n == len(rewards) == 6
            assert got.accuracy == pytest.approx(sum(rewards) / 6)
            assert got.ci_low <= got.accuracy <= got.ci_high
        assert sum(g.n for g in system.by_group.values()) == system.n
    rows = report.group_rows()
    assert [r[1] for r in rows[:3]] == ["arith", "trivia", "all"] and rows[0][0] == "coordinator"
    assert len(rows) == 3 * len(report.systems)
    assert "per category:" in report.table()
    assert "| coordinator | trivia |" in report.to_markdown()
    table = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert float(table[0]["accuracy:arith"]) == pytest.approx(
        report.systems[0].by_group["arith"].accuracy, abs=1e-4
    )
    assert table[0]["n:trivia"] == "6" and report.to_csv().splitlines()[1].endswith(",simulated")
    assert json.loads(report.to_json())["systems"][0]["by_group"]["arith"]["n"] == 6


def test_a_single_category_needs_no_per_category_rows(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    path = _write_suite(tmp_path / "one.jsonl", benches=(("arith", "math"),))
    run_id = train(
        config(
            tasks={"suite": str(path), "train": 0, "validation": 0, "test": 0},
            budget={"generations": 1},
        ),
        ws,
        backbone=tiny_backbone,
    )
    report = evaluate_run(ws, run=run_id, baselines=False, backbone=tiny_backbone).report
    assert report.groups == ["arith"] and report.group_rows() == []
    assert "per category" not in report.table() and "Per category" not in report.to_markdown()


def test_the_study_reports_each_category_for_every_optimizer_and_reference(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    path = _write_suite(tmp_path / "bench.jsonl")
    cfg = config(
        tasks={"suite": str(path), "train": 0, "validation": 0, "test": 12},
        budget={"generations": 1},
    )
    study = study_optimizers(
        cfg, ws, seeds=1, optimizers=("sep-cma-es", "random-search"), backbone=tiny_backbone
    )
    for row in study.rows:
        report = evaluate_run(ws, run=row.runs[0], baselines=False, backbone=tiny_backbone).report
        assert set(row.test_by_group) == {"arith", "trivia"}
        for group, (mean, _, _) in row.test_by_group.items():
            assert mean == pytest.approx(report.systems[0].by_group[group].accuracy)
    names = [r[0] for r in study.group_rows()]
    assert names.count("sep-cma-es") == 3 and names.count("best single") == 3
    assert "test per category" in study.table()
    assert set(study.to_dict()["references"]["oracle"]["test_by_group"]) == {"arith", "trivia"}
