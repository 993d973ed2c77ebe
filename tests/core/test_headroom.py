"""The headroom check (workbench/core/headroom.py, its figures in headroom_figures.py): on
the sandbox, whose skills are known, the measured figures must hold the exact ones in their
intervals; answers read from the cache or from recorded answers cost nothing; the figures
of hand-made outcomes are exact; the held-out gain finds a known learnable headroom and
finds none where the any-right oracle's gap is all luck."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from workbench.core.config import RunConfig
from workbench.core.jobs.headroom import DEFAULT_SAMPLE, GRADE_CHUNK, check_headroom, check_tasks
from workbench.core.jobs.headroom_figures import (
    CheckCost,
    HeadroomReport,
    Outcomes,
    analyse,
    exact_headroom,
    held_out_gain,
)
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.state import task_splits
from workbench.core.workspace import Workspace


def _config(workers, suite="mixed", **protocol) -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": "headroom", "seed": 0},
            "pool": {"workers": workers},
            "tasks": {"suite": suite},
            "protocol": {"max_turns": 1, "temperature": 0.0, **protocol},
            "cache": {"policy": "off"},
        }
    )


def test_the_sandbox_check_holds_the_exact_figures_in_its_intervals(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    config = _config(["sandbox"])
    report = check_headroom(config, ws, sample=60)
    assert report.n == 60 and report.spend == "simulated"
    train = task_splits(config.tasks, load_suite("mixed"))["train"]
    exact = exact_headroom(report.pool, [t for t in train if t.id in _ids(ws, report)], report.best)
    assert exact is not None
    for w in report.workers:
        assert w.exact == pytest.approx(exact["workers"][w.worker])
        assert w.ci_low <= w.exact <= w.ci_high, w
    assert report.oracle[1] <= exact["oracle"] <= report.oracle[2]
    assert report.gap[1] <= exact["gap"] <= report.gap[2]
    # the held-out gain of routing by category holds the simulation's exact gain, below
    # the any-right oracle's gap (which also counts lucky draws); the sandbox's workers
    # are specialists, so most of the gap is learnable here
    held = report.held_out
    assert held is not None and held.exact == pytest.approx(exact["by_category_gain"])
    assert held.gain_low <= held.exact <= held.gain_high, held
    assert held.exact < exact["gap"] and held.better
    assert held.chosen["code"][0] == "sandbox:coder"
    # the sandbox's specialists: each category's winner is its specialist; on 21-22 tasks
    # the coder's and the scholar's leads are clear by the sign test (p < 0.05), the
    # mathlete's on 17 (8 won, 3 lost: p = 0.23) is not
    winners = {c.category: c.winner for c in report.categories}
    assert winners["math"] == "sandbox:mathlete" and winners["code"] == "sandbox:coder"
    clear = {c.category: c.clear for c in report.categories}
    assert clear == {"choice": True, "code": True, "math": False}, report.categories
    # the check paid for every answer (simulated dollars), and stored them as a run
    assert report.cost.calls == 60 * 3 and report.cost.cached == 0
    # the config says cache "off": the check records its answers anyway, and says so
    assert "(cache: read-write, not the config's off" in report.table()
    assert report.cost.dollars > 0 and "(simulated)" in report.cost_line()
    assert report.sentence.startswith(
        "On tasks it was not chosen on, routing by category gains +"
    ), report.sentence
    assert "a coordinator needs to find at least that" in report.sentence
    assert "a ceiling that also counts lucky draws" in report.sentence
    assert "routing by category, held out" in report.table()
    assert report.to_dict()["held_out"]["better"] is True
    # again: every answer comes from the response cache, and costs nothing
    again = check_headroom(config, ws, sample=60)
    assert again.cost.calls == 0 and again.cost.dollars == 0 and again.cost.cached == 180
    assert [w.accuracy for w in again.workers] == [w.accuracy for w in report.workers]
    # a larger sample keeps the first one (a prefix of the same seeded order)
    larger = check_headroom(config, ws, sample=70)
    assert larger.cost.calls == 10 * 3 and larger.cost.cached == 180


def _ids(ws: Workspace, report) -> set[str]:
    with Store.open(ws) as store:
        return {e.task_id for e in store.list_episodes(report.run_id)}


def test_recorded_answers_cost_nothing_and_cover_the_whole_split(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    config = _config(["recorded:champ/gpt-3.5", "recorded:champ/gpt-4-turbo"], "champ")
    config = config.replace(tasks={"train": 30}, protocol={"roles": ["worker"]})
    report = check_headroom(config, ws, sample=10)
    # every task both recordings cover is checked, whatever the sample size
    from workbench.core.workers.pool import build_pool

    pool = build_pool(list(config.pool.workers))
    train = task_splits(config.tasks, load_suite("champ"))["train"]
    assert report.n == sum(all(w.covers(t) for w in pool) for t in train) >= 25
    assert report.cost.calls == 0 and report.cost.dollars == 0
    assert report.cost.recorded == 2 * report.n
    assert report.spend == "recorded" and report.workers[0].exact is None
    # the recorded workers' own price per task: list prices times the recorded tokens
    cheap, turbo = report.workers
    assert 0 < cheap.dollars_per_task < turbo.dollars_per_task
    assert "0 calls" in report.cost_line() and "from recorded answers" in report.cost_line()
    # recorded answers are read and graded without episodes: none is stored again, and
    # each worker's figures are those of one-turn Worker episodes on the same tasks
    with Store.open(ws) as store:
        assert store.list_episodes(report.run_id) == []
    import asyncio

    from workbench.core.policies import FixedPolicy
    from workbench.core.protocol import EpisodeSettings, run_episode

    covered = [t for t in train if all(w.covers(t) for w in pool)]
    settings = EpisodeSettings(suite="champ", max_turns=1, temperature=0.0)

    async def play(i):
        return [await run_episode(FixedPolicy(2, i), pool, t, settings) for t in covered]

    for i, figures in enumerate(report.workers):
        episodes = asyncio.run(play(i))
        assert figures.accuracy == pytest.approx(np.mean([e.reward for e in episodes]))
        assert figures.dollars_per_task == pytest.approx(np.mean([e.cost for e in episodes]))


def test_a_stopped_check_of_recorded_answers_grades_no_more(tmp_path, monkeypatch):
    """A stop during grading: no answer is graded after it but those already begun (one
    per grading chunk at most), and the check's run is stored as stopped."""
    from workbench.core.evaluate import EvaluationStopped
    from workbench.core.jobs import headroom
    from workbench.core.tasks.graders import grade
    from workbench.core.training.events import StopToken

    ws = Workspace.open(tmp_path / "ws")
    config = _config(["recorded:champ/gpt-3.5", "recorded:champ/gpt-4-turbo"], "champ")
    config = config.replace(protocol={"roles": ["worker"]})
    stop = StopToken()
    graded = []

    def grade_then_stop(task, answer):
        graded.append(task.id)
        stop.stop()  # the user stops while the first answer is graded
        return grade(task, answer)

    monkeypatch.setattr(headroom, "grade", grade_then_stop)
    with pytest.raises(EvaluationStopped):
        check_headroom(config, ws, sample=0, stop=stop)
    answers = 2 * len(task_splits(config.tasks, load_suite("champ"))["train"])
    assert 1 <= len(graded) <= -(-answers // GRADE_CHUNK) < answers
    with Store.open(ws) as store:
        (run,) = store.list_runs("headroom")
        assert run.status == "stopped"


def test_a_live_model_is_paid_once_and_its_answers_are_reused_by_training(tmp_path):
    """The offline model answers for real: the first check calls it, the second reads the
    cache, and a training episode's call with another seed is the same request."""
    import asyncio

    from workbench.core.jobs.shared import open_worker_pool
    from workbench.core.protocol import Prompts, build_messages
    from workbench.core.records import Role
    from workbench.core.workers.base import EpisodeContext
    from workbench.core.workers.cache import ResponseCache

    ws = Workspace.open(tmp_path / "ws")
    config = _config(["local:smollm2", "sandbox:mathlete"], "arithmetic", max_tokens=12)
    config = config.replace(tasks={"train": 3, "validation": 2, "test": 2})
    first = check_headroom(config, ws, sample=0)
    assert first.n == 3 and first.spend == "partly simulated"
    assert first.cost.calls == 6 and first.cost.tokens_out > 0
    second = check_headroom(config, ws, sample=0)
    assert second.cost.calls == 0 and second.cost.cached == 6
    task = task_splits(config.tasks, load_suite("arithmetic"))["train"][0]
    session = open_worker_pool(["local:smollm2"])
    with Store.open(ws) as store:
        cache = ResponseCache(store, "read-write")
        messages = build_messages(Prompts.load(), Role.WORKER, task, (), None)

        async def training_call():
            try:
                return await cache.complete(
                    session.pool[0],
                    messages,
                    max_tokens=12,
                    temperature=0.0,
                    seed=123456,  # a training episode's seed, not the check's
                    context=EpisodeContext(task, "worker", None, ()),
                )
            finally:
                await session.pool[0].aclose()
                await session.client.aclose()

        reply = asyncio.run(training_call())
    assert reply.cached and cache.hits == 1 and cache.misses == 0


def test_figures_of_hand_made_outcomes_are_exact():
    right = np.array(
        [
            [1, 1, 0, 0, 1, 0],  # a
            [0, 1, 1, 0, 0, 0],  # b
        ],
        dtype=bool,
    )
    cost = np.array([[2.0] * 6, [1.0] * 6])
    outcomes = Outcomes(
        workers=("a", "b"),
        tasks=tuple("123456"),
        groups=("x", "x", "x", "y", "y", "y"),
        right=right,
        cost=cost,
    )
    f = analyse(outcomes, resamples=500)
    assert f.best == "a" and f.workers[0].accuracy == pytest.approx(0.5)
    assert f.oracle[0] == pytest.approx(4 / 6)  # tasks 1, 2, 3, 5
    assert f.gap[0] == pytest.approx(1 / 6) and f.gap[1] <= f.gap[0] <= f.gap[2] <= 0.5
    assert f.pairwise["a"]["b"] == pytest.approx(2 / 6)
    assert f.pairwise["b"]["a"] == pytest.approx(1 / 6)
    x, y = f.categories
    assert (x.category, x.winner, x.runner_up) == ("x", "b", "a")  # a tie: the cheaper wins
    assert (y.winner, y.accuracy) == ("a", pytest.approx(1 / 3))


def _outcomes(right: np.ndarray, groups: tuple[str, ...] | None = None) -> Outcomes:
    """Right/wrong answers (workers x tasks) as outcomes: workers a, b, c, ...; one
    category unless ``groups`` are given; every answer costing 1."""
    w, n = right.shape
    return Outcomes(
        workers=tuple("abcdefgh"[:w]),
        tasks=tuple(str(i) for i in range(n)),
        groups=groups or ("x",) * n,
        right=np.asarray(right, dtype=bool),
        cost=np.ones((w, n)),
    )


def _report_on(right: np.ndarray, groups: tuple[str, ...] | None = None) -> HeadroomReport:
    """The check's report on right/wrong answers (see ``_outcomes``)."""
    outcomes = _outcomes(right, groups)
    f = analyse(outcomes, resamples=200)
    return HeadroomReport(
        suite="s",
        pool=outcomes.workers,
        n=len(outcomes.tasks),
        sample="all",
        workers=f.workers,
        best=f.best,
        oracle=f.oracle,
        gap=f.gap,
        pairwise=f.pairwise,
        categories=f.categories,
        held_out=f.held_out,
        cost=CheckCost(),
    )


def test_the_held_out_gain_finds_a_known_learnable_headroom():
    """A simulated pool whose skills per category are set: a and b are strong on one
    category each, c is steady everywhere and the best single worker. Routing by category
    reaches (0.7 + 0.7 + 0.6) / 3, so the learnable gain over c is 1/15 (6.7 points); the
    any-right oracle's gap counts every lucky draw too (about 31 points)."""
    skill = np.array([[0.7, 0.5, 0.4], [0.5, 0.7, 0.4], [0.6, 0.6, 0.6]])
    n = 1000  # tasks per category
    category = np.repeat([0, 1, 2], n)
    right = np.random.default_rng(1).random((3, 3 * n)) < skill[:, category]
    f = analyse(_outcomes(right, tuple(f"c{g}" for g in category)))
    learnable = skill.max(axis=0).mean() - skill[2].mean()
    assert learnable == pytest.approx(1 / 15)
    held = f.held_out
    assert f.best == "c" and held is not None and held.better
    assert held.gain_low <= learnable <= held.gain_high, held
    assert held.gain == pytest.approx(learnable, abs=0.01)
    assert held.chosen == {"c0": ("a", 20), "c1": ("b", 20), "c2": ("c", 20)}
    assert f.gap[0] > 0.25 and f.gap[1] > held.gain_high  # the oracle counts luck too
    assert held.accuracy == pytest.approx(held.best_single + held.gain)


def test_the_held_out_gain_counts_no_lucky_draws():
    """Where the any-right oracle's gap is all luck, the held-out gain is about 0."""
    # by hand: three workers, each task answered right by exactly one of them, in turn;
    # the oracle is right on every task, each worker on a third of each category
    rows = [
        "100100100100" + "010010010010",
        "010010010010" + "001001001001",
        "001001001001" + "100100100100",
    ]
    right = np.array([[int(c) for c in r] for r in rows], dtype=bool)
    report = _report_on(right, ("x",) * 12 + ("y",) * 12)
    assert report.oracle[0] == 1.0 and report.gap[0] == pytest.approx(2 / 3)
    held = report.held_out
    assert held is not None and not held.better
    # a worker that won a category's half by chance has fewer of its right answers left
    # on the other half: the held-out gain is at most 0, nothing like the oracle's gap
    assert -0.15 < held.gain <= 0 and held.gain_high < 0.02
    assert report.sentence.startswith("On tasks it was not chosen on, routing by category")
    assert "too little for a coordinator to be worth training" in report.sentence
    assert "the any-right oracle's 67 points" in report.sentence
    # a report without the held-out figures says so rather than claim the ceiling
    bare = dataclasses.replace(report, held_out=None).sentence
    assert bare.startswith("Nothing was held out") and "is a ceiling" in bare
    # drawn: six equally good workers, each right on 40% of 2,000 questions at random:
    # the any-right oracle gains 1 - 0.6^6 - 0.4 = 55 points, routing nothing
    right = np.random.default_rng(0).random((6, 2000)) < 0.4
    f = analyse(_outcomes(right, tuple(f"c{i % 4}" for i in range(2000))))
    assert f.gap[0] == pytest.approx(1 - 0.6**6 - 0.4, abs=0.03)
    held = f.held_out
    assert held is not None and not held.better
    assert abs(held.gain) < 0.005 and held.gain_low < 0 < held.gain_high, held


def test_the_held_out_halves_split_every_category_evenly():
    from workbench.core.jobs.headroom_figures import halves

    groups = np.array([0] * 7 + [1] * 4 + [2] * 1 + [3] * 1)
    half = halves(groups, 4, seed=5)
    for g in range(4):
        counts = np.bincount(half[groups == g], minlength=2)
        assert abs(counts[0] - counts[1]) <= 1
    assert 0 < half.sum() < len(groups)  # neither half is empty
    assert (halves(groups, 4, seed=5) == half).all()  # seeded
    with pytest.raises(ValueError, match="at least 2 tasks"):
        held_out_gain(_outcomes(np.ones((2, 1), dtype=bool)))
    # one task: no two halves, and no gap either (the best worker is the one right)
    one = _report_on(np.array([[0], [1]], dtype=bool))
    assert one.held_out is None and one.gap[0] == 0
    assert "right whenever any worker is" in one.sentence


def test_the_best_worker_right_whenever_any_is_says_a_coordinator_cannot_help(tmp_path):
    right = np.array([[1, 1, 0, 1], [0, 1, 0, 1]], dtype=bool)
    report = _report_on(right)
    # a gap of 0 on 4 tasks: up to 3/4 is not ruled out (rule of three), so no verdict
    assert report.gap == (0.0, 0.0, 0.75)
    assert "right whenever any worker is" in report.sentence
    assert "up to 75 points is not ruled out" in report.sentence
    assert "check more tasks" in report.sentence
    # on 200 tasks the bound is 1.5 points: below 2, so the coordinator cannot help
    right = np.array([[1] * 150 + [0] * 50, [1] * 100 + [0] * 100], dtype=bool)
    report = _report_on(right)
    assert report.gap == (0.0, 0.0, 0.015)
    assert report.sentence.endswith("training a coordinator cannot help here.")


def test_the_sample_is_a_seeded_prefix_and_uncovered_tasks_are_left_out():
    from workbench.core.workers.pool import build_pool

    train = task_splits(_config(["sandbox"]).tasks, load_suite("mixed"))["train"]
    pool = build_pool(["sandbox:mathlete"])
    small, words, left = check_tasks(train, pool, 10, 0, lambda w, t: False)
    large, _, _ = check_tasks(train, pool, 20, 0, lambda w, t: False)
    assert len(small) == 10 and {t.id for t in small} <= {t.id for t in large}
    assert "seeded sample of 10" in words and left == {}
    every, words, _ = check_tasks(train, pool, 0, 0, lambda w, t: False)
    assert len(every) == len(train) and words.startswith("all")
    at_hand, words, _ = check_tasks(train, pool, 10, 0, lambda w, t: True)
    assert len(at_hand) == len(train) and "already cached or recorded" in words
    # a recorded worker with answers to 5 training tasks only: the others are left out
    from workbench.core.workers.recorded import RecordedWorker, Recording

    table = {t.id: Recording(task_id=t.id, worker="rec", response="\\boxed{1}") for t in train[:5]}
    recorded = [*pool, RecordedWorker("recorded:x/rec", table)]
    kept, _, left = check_tasks(train, recorded, 0, 0, lambda w, t: w.covers(t))
    assert {t.id for t in kept} == set(table)
    assert left == {"no recorded answer from every worker": len(train) - 5}


def test_the_cli_default_sample_is_the_documented_one():
    from workbench.cli import build_parser

    args = build_parser().parse_args(["headroom", "c.toml"])
    assert args.sample == DEFAULT_SAMPLE


def test_a_category_lead_is_clear_only_when_the_sign_test_separates_it():
    # 5 tasks, the winner right on 3 the runner-up missed and no loss: the bootstrap
    # interval of the lead lies above 0, but the sign test gives p = 0.25: not clear
    right = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], dtype=bool)
    outcomes = Outcomes(
        workers=("a", "b"),
        tasks=tuple("12345"),
        groups=("x",) * 5,
        right=right,
        cost=np.ones((2, 5)),
    )
    (small,) = analyse(outcomes).categories
    assert small.lead_low > 0 and (small.wins, small.losses) == (3, 0)
    assert small.p_value == pytest.approx(0.25) and not small.clear
    # 8 wins and 0 losses: p = 0.0078, clear
    right = np.array([[1] * 8 + [0] * 2, [0] * 10], dtype=bool)
    outcomes = Outcomes(
        workers=("a", "b"),
        tasks=tuple("0123456789"),
        groups=("x",) * 10,
        right=right,
        cost=np.ones((2, 10)),
    )
    (large,) = analyse(outcomes).categories
    assert large.p_value == pytest.approx(2 / 2**8) and large.clear


def test_the_check_reads_a_pool_imported_into_the_workspace(tmp_path):
    """An imported recorded pool (``recorded:NAME``) is found in the check's workspace."""
    import json

    from workbench.core.recordings import import_file

    ws = Workspace.open(tmp_path / "ws")
    config = _config(["recorded:mine"], suite="arithmetic")
    train = task_splits(config.tasks, load_suite("arithmetic"))["train"][:12]
    lines = [
        json.dumps({"task_id": t.id, "worker": w, "response": f"\\boxed{{{answer}}}"})
        for t in train
        for w, answer in (("alpha", t.answer), ("beta", "-12345"))
    ]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import_file(ws, tmp_path / "a.jsonl", "mine", "arithmetic")
    report = check_headroom(config, ws, sample=0)
    assert report.pool == ("recorded:mine/alpha", "recorded:mine/beta")
    assert report.n == 12 and report.best == "recorded:mine/alpha"
    assert [w.accuracy for w in report.workers] == [1.0, 0.0]
    assert report.cost.recorded == 24 and report.cost.calls == 0


def test_the_cli_writes_the_report_and_says_where_on_stderr(tmp_path):
    import subprocess
    import sys

    config = tmp_path / "c.toml"
    config.write_text(
        '[run]\nname = "h"\n[pool]\nworkers = ["sandbox"]\n[tasks]\nsuite = "mixed"\n'
        "[protocol]\nmax_turns = 1\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "--workspace", str(tmp_path / "ws"), "headroom"]
        + [str(config), "--sample", "6", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Headroom on `mixed`" in done.stdout and "wrote" not in done.stdout
    assert f"wrote {tmp_path / 'out' / 'headroom.json'}" in done.stderr
    assert (tmp_path / "out" / "headroom.md").read_text(encoding="utf-8").startswith("```")
