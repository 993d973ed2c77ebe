"""The baselines as the paper defines them (issue 15): imitation of the best worker per
task, random search on head weights, the same SVF setting for every optimizer, the final
validation whatever budget ends a run, and the study's best single worker chosen on
validation. Runs use the sandbox pool and the tiny backbone (fast)."""

import numpy as np
import pytest

from tests.core.test_training import config
from workbench.core.coordinator import HeadConfig
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.study import study_optimizers
from workbench.core.jobs.train import train
from workbench.core.optimizers.baselines import Imitation
from workbench.core.records import Episode, Role, StopReason, Turn
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.training.checkpoint import best_vector, latest_checkpoint
from workbench.core.workspace import Workspace


@pytest.fixture()
def ws(tmp_path):
    return Workspace.open(tmp_path / "ws")


def _play(task: str, worker: int, reward: float, cost: float = 0.0) -> Episode:
    turn = Turn(
        index=0,
        worker=f"w{worker}",
        role=Role.WORKER,
        worker_probs=(1.0,),
        role_probs=(0.0, 1.0, 0.0),
        messages=(),
        cost=cost,
    )
    return Episode(
        id="e",
        suite="s",
        task_id=task,
        pool=("w0", "w1", "w2"),
        max_turns=1,
        turns=(turn,),
        answer="x",
        reward=reward,
        stop_reason=StopReason.MAX_TURNS,
    )


def _imitation(tasks):
    return Imitation(
        HeadConfig(3, 4),
        lambda texts: np.ones((len(texts), 4)),
        popsize=3,
        rollouts=2,
        lr=0.01,
        tasks={t.id: t for t in tasks},
    )


def test_imitation_labels_the_best_worker_per_task_with_stated_tie_breaks():
    tasks = [
        Task(id="c1", kind="choice", prompt="q1", answer="A"),
        Task(id="c2", kind="choice", prompt="q2", answer="A"),
        Task(id="c3", kind="choice", prompt="q3", answer="A"),
        Task(id="m1", kind="math", prompt="q4", answer="1"),
        Task(id="m2", kind="math", prompt="q5", answer="1"),
    ]
    im = _imitation(tasks)
    plays = [
        # c1: solved by all three; worker 1 is best on choice tasks overall (c2, c3)
        ("c1", 0, 1),
        ("c1", 1, 1),
        ("c1", 2, 1),
        ("c2", 0, 0),
        ("c2", 1, 1),
        ("c2", 2, 0),
        ("c3", 0, 0),
        ("c3", 1, 1),
        ("c3", 2, 1),
        # m1: worker 2 solved it twice out of two, worker 0 once out of two: the rate decides
        ("m1", 0, 1),
        ("m1", 0, 0),
        ("m1", 2, 1),
        ("m1", 2, 1),
        # m2: nobody solved it: no label
        ("m2", 0, 0),
        ("m2", 1, 0),
        ("m2", 2, 0),
    ]
    for task, worker, reward in plays:
        im.record(worker, _play(task, worker, reward))
    assert im.labels == {"c1": 1, "c2": 1, "c3": 1, "m1": 2}
    # the lowest index that solved c1 (worker 0) is no longer the label: the old rule's bias


def test_imitation_ties_on_task_and_category_go_to_the_cheaper_worker_then_pool_order():
    tasks = [Task(id="t", kind="math", prompt="q", answer="1")]
    im = _imitation(tasks)
    for worker, cost in ((0, 0.02), (1, 0.01), (2, 0.01)):
        im.record(worker, _play("t", worker, 1, cost))
    assert im.label("t") == 1  # 1 and 2 are as cheap; 1 comes first
    # the state survives a checkpoint
    again = _imitation(tasks)
    again.loads(im.dumps())
    assert again.labels == {"t": 1}


def test_imitation_on_the_sandbox_labels_choice_tasks_mostly_with_the_scholar(ws, tiny_backbone):
    """The old rule gave ties to worker 0 (mathlete, 0.35 on choice); the best worker per
    task gives them to the scholar (0.85 on choice)."""
    run_id = train(
        config(
            optimizer={"name": "imitation", "popsize": 6, "rollouts": 8},
            budget={"generations": 3},
            protocol={"max_turns": 1},
        ),
        ws,
        backbone=tiny_backbone,
    )
    from workbench.core.tasks.suites import load_suite

    suite = load_suite("mixed")
    im = _imitation(suite.tasks)
    with Store.open(ws) as store:
        im.loads(latest_checkpoint(store, run_id).optimizer)
    groups = {t.id: t.group for t in suite.tasks}
    choice = [w for t, w in im.labels.items() if groups[t] == "choice"]
    assert choice and choice.count(1) / len(choice) > 0.6  # scholar is worker 1


def test_random_search_draws_head_weights_not_the_search_basis(ws, tiny_backbone):
    run_id = train(
        config(
            optimizer={"name": "random-search", "search_basis": "balanced", "validate_every": 1},
            budget={"generations": 2},
        ),
        ws,
        backbone=tiny_backbone,
    )
    with Store.open(ws) as store:
        record = store.get_run(run_id)
        vector, _ = best_vector(store, run_id)
    assert record.result["search_basis_alpha"] == 1.0  # identity: no balanced basis fitted
    assert np.all(np.abs(vector) <= 0.5) and np.abs(vector).max() > 0.3  # U[-0.5, 0.5]


@pytest.mark.parametrize(
    "budget",
    [
        {"generations": 10, "episodes": 30},
        {"generations": 10, "calls": 1},
        {"generations": 10, "dollars": 1e-6},
        {"generations": 10, "minutes": 1e-6},
    ],
)
def test_a_run_ended_by_any_budget_still_validates_its_last_generation(ws, tiny_backbone, budget):
    run_id = train(
        config(optimizer={"validate_every": 50}, budget=budget), ws, backbone=tiny_backbone
    )
    with Store.open(ws) as store:
        record = store.get_run(run_id)
        gens = store.generations(run_id)
    assert record.stop_reason.startswith("budget.") and record.stop_reason != "budget.generations"
    assert gens[-1]["validation"] is not None
    assert record.result["best_validation"] is not None
    assert all(g["validation"] is None for g in gens[:-1])  # validate_every 50: only the last


def test_svf_is_one_setting_for_every_optimizer(ws, tiny_backbone):
    from workbench.core.config import ConfigError

    with pytest.raises(ConfigError, match="optimizer.svf: reinforce cannot search SVF"):
        config(optimizer={"name": "reinforce", "svf": True})
    with pytest.raises(ConfigError, match="imitation cannot search SVF offsets.*set svf = false"):
        study_optimizers(
            config(optimizer={"svf": True}),
            ws,
            seeds=1,
            optimizers=("sep-cma-es", "imitation"),
            backbone=tiny_backbone,
        )
    # exploring starts likewise (REINFORCE and imitation follow their own policy's gradient)
    with pytest.raises(
        ConfigError, match="exploring_starts = 1, but reinforce cannot widen.*exploring_starts = 0"
    ):
        study_optimizers(
            config(optimizer={"exploring_starts": 1}, budget={"generations": 2}),
            ws,
            seeds=1,
            optimizers=("random-search", "reinforce"),
            backbone=tiny_backbone,
        )


def test_the_study_chooses_its_best_single_worker_on_validation_and_reports_it_on_test(
    ws, tiny_backbone
):
    study = study_optimizers(
        config(budget={"generations": 1}),
        ws,
        seeds=2,
        optimizers=("sep-cma-es",),
        backbone=tiny_backbone,
    )
    assert len(study.best_single) == 2
    tests = []
    for run_id, chosen in zip(study.rows[0].runs, study.best_single, strict=True):
        # evaluation is deterministic: redo it on both splits
        val = evaluate_run(ws, run=run_id, split="validation", backbone=tiny_backbone).report
        singles = [s for s in val.systems if s.kind == "single"]
        best = max(s.accuracy for s in singles)
        assert chosen == next(s.name for s in singles if s.accuracy == best)
        test = evaluate_run(ws, run=run_id, backbone=tiny_backbone).report
        tests.append(next(s.accuracy for s in test.systems if s.name == chosen))
    from workbench.core.stats import mean_ci

    assert study.references["best single"] == mean_ci(tests)
    assert "chosen on validation" in study.table()


def test_a_paper_faithful_study_gives_every_optimizer_the_same_settings_svf_and_episodes(
    ws, tiny_backbone
):
    cfg = config(
        optimizer={
            "search_basis": "balanced",
            "turn_penalty": 0.1,
            "svf": True,
            "exploring_starts": 1,
        },
        budget={"generations": 2},
    )
    study = study_optimizers(
        cfg,
        ws,
        seeds=1,
        optimizers=("sep-cma-es", "reinforce", "imitation"),
        backbone=tiny_backbone,
        paper=True,
    )
    budget = 2 * 4 * 3  # generations x popsize x rollouts of sep-CMA-ES
    assert study.paper_settings["budget.episodes"] == budget
    assert study.paper_settings["optimizer.svf"] is False  # reinforce cannot: off for all
    assert study.paper_settings["optimizer.search_basis"] == "identity"
    assert study.paper_settings["optimizer.exploring_starts"] == 0  # the paper samples every turn
    assert "paper-faithful: for every optimizer" in study.table()
    with Store.open(ws) as store:
        for row in study.rows:
            record = store.get_run(row.runs[0])
            o = record.config().optimizer
            assert (o.search_basis, o.svf, o.turn_penalty) == ("identity", False, 0.0)
            assert (o.exploring_starts, o.restarts) == (0, 0)
            assert record.config().budget.episodes == budget
            assert record.stop_reason == "budget.episodes"
            assert row.episodes == budget  # imitation's smaller generations run longer
    # without --paper the same config is refused: SVF would be given to some optimizers only
    from workbench.core.config import ConfigError

    with pytest.raises(ConfigError, match="cannot search SVF offsets"):
        study_optimizers(
            cfg, ws, seeds=1, optimizers=("sep-cma-es", "reinforce"), backbone=tiny_backbone
        )


def test_a_paper_study_keeps_svf_when_every_optimizer_can_search_it(ws, tiny_backbone):
    cfg = config(optimizer={"svf": True}, budget={"generations": 1, "episodes": 20})
    study = study_optimizers(
        cfg,
        ws,
        seeds=1,
        optimizers=("sep-cma-es", "random-search"),
        backbone=tiny_backbone,
        paper=True,
    )
    assert study.paper_settings["optimizer.svf"] is True
    assert study.paper_settings["budget.episodes"] == 20  # a given episode budget is kept
    assert all(r.episodes == 12 for r in study.rows)  # 12 per generation: the next would pass 20


def test_a_multi_turn_study_on_a_simulated_pool_reports_both_oracles(ws, tiny_backbone):
    """Over more than one turn the study's references are the best single worker, the
    one-turn oracle and the multi-turn oracle (the exact best plan), on the same test tasks."""
    cfg = config(
        pool={"workers": ["team"]},
        protocol={"max_turns": 2},
        budget={"generations": 1},
    )
    study = study_optimizers(cfg, ws, seeds=1, optimizers=("sep-cma-es",), backbone=tiny_backbone)
    assert set(study.references) == {"best single", "oracle", "multi-turn oracle"}
    report = evaluate_run(ws, run=study.rows[0].runs[0], backbone=tiny_backbone).report
    exact = {s.name: s.accuracy for s in report.systems}
    assert study.references["multi-turn oracle"][0] == exact["multi-turn oracle"]
    assert study.references["oracle"][0] == exact["oracle"]
    assert "multi-turn oracle" in study.table()
    assert "multi-turn oracle" in study.to_dict()["references"]
