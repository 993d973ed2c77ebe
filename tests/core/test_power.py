"""The study's power estimate (issue 15): how many seeds and test tasks separate a margin.
The formulas are checked against simulated experiments (their rejection rate is the
power), and the study prints the estimate from its own observed variance."""

import math
import subprocess
import sys

import numpy as np
import pytest

from tests.core.test_training import config
from workbench.core.jobs.study import study_optimizers
from workbench.core.power import (
    PowerEstimate,
    detectable_margin,
    seeds_needed,
    tasks_needed,
)
from workbench.core.workspace import Workspace

Z975 = 1.959963984540054


def _rejection_rate(a: np.ndarray, b: np.ndarray) -> float:
    """Share of simulated experiments (rows) where a two-sided z-test at 0.05 separates a and b."""
    n = a.shape[1]
    se = np.sqrt((a.var(axis=1, ddof=1) + b.var(axis=1, ddof=1)) / n)
    return float(np.mean(np.abs(a.mean(axis=1) - b.mean(axis=1)) / se > Z975))


def test_tasks_needed_gives_the_stated_power_in_simulated_evaluations():
    n = tasks_needed(0.6, 0.1)
    # k = z(0.975) + z(0.8) = 2.8016; (k^2 (0.55 x 0.45 + 0.65 x 0.35)) / 0.01
    assert n == math.ceil(2.8016**2 * (0.2475 + 0.2275) / 0.01 - 1e-3)
    rng = np.random.default_rng(0)
    a = rng.binomial(1, 0.55, size=(4000, n)).astype(float)
    b = rng.binomial(1, 0.65, size=(4000, n)).astype(float)
    assert _rejection_rate(a, b) == pytest.approx(0.8, abs=0.03)
    # and a quarter of the tasks gives far less power
    assert _rejection_rate(a[:, : n // 4], b[:, : n // 4]) < 0.4


def test_seeds_needed_gives_the_stated_power_in_simulated_studies():
    std, margin = 0.08, 0.1
    n = seeds_needed(std, margin)
    assert n == math.ceil(2 * (2.8016 * std / margin) ** 2 - 1e-3) == 11
    rng = np.random.default_rng(1)
    a = rng.normal(0.6, std, size=(4000, n))
    b = rng.normal(0.7, std, size=(4000, n))
    # the normal approximation is a little optimistic at few seeds (Student's t is wider)
    assert 0.74 <= _rejection_rate(a, b) <= 0.86
    assert detectable_margin(std, n) <= margin < detectable_margin(std, n - 1)


def test_the_estimate_pools_the_optimizers_seed_variance_and_says_when_it_cannot():
    est = PowerEstimate.of([[0.5, 0.7], [0.6, 0.6, 0.9]], test_tasks=60, margin=0.05)
    pooled = math.sqrt(((0.1**2 * 2) + (0.01 + 0.01 + 0.04)) / (1 + 2))
    assert est.seed_std == pytest.approx(pooled)
    assert est.seeds == 2 and est.seeds_needed == seeds_needed(pooled, 0.05)
    assert est.mean_reward == pytest.approx(3.3 / 5)
    assert est.tasks_needed == tasks_needed(3.3 / 5, 0.05)
    assert "this study has 60" in est.text() and f"{est.seeds_needed} seeds" in est.text()
    one = PowerEstimate.of([[0.5], [0.6]], test_tasks=60, margin=0.05)
    assert one.seeds_needed is None and "unknown with one seed" in one.text()
    with pytest.raises(ValueError, match="margin must lie in"):
        seeds_needed(0.1, 0.0)


def test_the_study_prints_its_power_estimate(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    study = study_optimizers(
        config(budget={"generations": 1}),
        ws,
        seeds=2,
        optimizers=("sep-cma-es", "random-search"),
        backbone=tiny_backbone,
        margin=0.1,
    )
    power = study.power
    assert power is not None and power.margin == 0.1 and power.test_tasks == 9
    expected = PowerEstimate.of([list(r.tests) for r in study.rows], 9, 0.1)
    assert power == expected and all(len(r.tests) == 2 for r in study.rows)
    assert [r.test[0] for r in study.rows] == pytest.approx([np.mean(r.tests) for r in study.rows])
    assert "power (two-sided alpha 0.05, power 0.8" in study.table()
    assert study.to_dict()["power"]["tasks_needed"] == power.tasks_needed


def test_the_cli_refuses_a_margin_outside_0_1(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[pool]\nworkers = ["sandbox"]\n')
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "study", "optimizers", str(cfg), "--margin", "0"]
        + ["--workspace", str(tmp_path / "ws")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "--margin must lie in (0, 1]" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_cli_runs_a_paper_faithful_study_and_prints_its_power(tmp_path, tiny_model_dir):
    import json

    cfg = tmp_path / "study.toml"
    cfg.write_text(
        f'[backbone]\nmodel = "{tiny_model_dir}"\ndevice = "cpu"\ninput = "chat"\n'
        '[pool]\nworkers = ["sandbox"]\n'
        '[tasks]\nsuite = "mixed"\ntrain = 24\nvalidation = 6\ntest = 9\n'
        '[optimizer]\npopsize = 4\nrollouts = 3\nsearch_basis = "balanced"\n'
        "[budget]\ngenerations = 1\n"
        '[protocol]\nmax_turns = 1\ntemperature = 0.0\n[cache]\npolicy = "off"\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "study", "optimizers", str(cfg), "--paper"]
        + ["--seeds", "2", "--optimizers", "sep-cma-es,imitation", "--margin", "0.1", "--json"]
        + ["--workspace", str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    study = json.loads(result.stdout)
    assert study["paper"] is True and study["paper_settings"]["budget.episodes"] == 12
    assert study["paper_settings"]["optimizer.search_basis"] == "identity"
    # a chat-input config is studied on raw text, with a backbone that reads it so
    assert study["paper_settings"]["backbone.input"] == "raw"
    assert [r["episodes"] for r in study["optimizers"]] == [12, 12]
    assert study["power"]["margin"] == 0.1 and study["power"]["test_tasks"] == 9
    assert study["power"]["seeds"] == 2 and study["power"]["tasks_needed"] >= 2
    assert len(study["best_single_chosen_on_validation"]) == 2
