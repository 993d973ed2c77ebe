"""What a coordinator learned (issue 17): the sequences its result head played per category
on validation, beside the oracle's plan, from a real short training run on the sandbox
pool (real SQLite store, the tiny backbone), in `runs show` and in an evaluation's report."""

import json
import subprocess
import sys

import pytest

from tests.core.test_training import config
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.learned import RunLearned, run_learned
from workbench.core.jobs.train import train
from workbench.core.learned import describe_learned, summarise_learned
from workbench.core.oracle import Step, best_plan
from workbench.core.records import Episode, Role, StopReason, Turn
from workbench.core.spend import Spend
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.tasks.suites import load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.workspace import Workspace

POOL = ("sandbox:mathlete", "sandbox:scholar", "sandbox:coder")


def _episode(task_id: str, steps: list[tuple[str, Role]], reward: float) -> Episode:
    turns = tuple(
        Turn(
            index=i,
            worker=w,
            role=role,
            worker_probs=(1 / 3,) * 3,
            role_probs=(1 / 3,) * 3,
            messages=({"role": "user", "content": "q"},),
        )
        for i, (w, role) in enumerate(steps)
    )
    return Episode(
        id=task_id,
        suite="s",
        task_id=task_id,
        pool=POOL,
        max_turns=3,
        turns=turns,
        answer="x",
        reward=reward,
        stop_reason=StopReason.MAX_TURNS,
    )


def test_sequences_are_counted_per_category_with_share_reward_and_the_oracles_plan():
    tasks = {
        "m1": Task(id="m1", kind="math", prompt="1+1?", answer="2", category="arithmetic"),
        "m2": Task(id="m2", kind="math", prompt="2+2?", answer="4", category="arithmetic"),
        "m3": Task(id="m3", kind="math", prompt="3+3?", answer="6", category="arithmetic"),
        "c1": Task(
            id="c1", kind="choice", prompt="?", answer="A", choices=("a", "b"), category="trivia"
        ),
    }
    solve = [("sandbox:mathlete", Role.WORKER)]
    check = [("sandbox:scholar", Role.WORKER), ("sandbox:coder", Role.VERIFIER)]
    episodes = [
        _episode("m1", solve, 1.0),
        _episode("m2", solve, 0.0),
        _episode("m3", check, 1.0),
        _episode("c1", check, 1.0),
        _episode("gone", solve, 1.0),  # a task no longer in the suite: left out
    ]
    learned = summarise_learned(episodes, tasks, POOL, max_turns=3)
    assert [c.category for c in learned] == ["arithmetic", "trivia"]
    arithmetic = learned[0]
    assert (arithmetic.episodes, arithmetic.mean_reward) == (3, pytest.approx(2 / 3))
    top, second = arithmetic.sequences
    assert top.steps == (Step("sandbox:mathlete", Role.WORKER),)
    assert (top.count, top.share, top.mean_reward) == (2, pytest.approx(2 / 3), 0.5)
    assert second.describe() == "Worker sandbox:scholar -> Verifier sandbox:coder"
    assert arithmetic.oracle == best_plan(list(POOL), "arithmetic", "math", 3)
    text = "\n".join(describe_learned(learned))
    assert "arithmetic: 3 episodes, mean reward 0.667" in text
    assert "66.7%  Worker sandbox:mathlete  (reward 0.50, 2x)" in text
    assert "oracle: " in text
    # a pool with a real worker has no oracle
    real = summarise_learned(episodes[:1], tasks, (*POOL[:2], "gpt"), max_turns=3)
    assert real[0].oracle is None and "oracle" not in "\n".join(describe_learned(real))


def test_workers_of_one_recorded_pool_are_named_once_above_the_lines():
    """A recorded pool's workers share ``recorded:NAME/``: the lines say it once, first,
    and name each worker by what follows it; workers with nothing in common keep their
    whole ids, and so does a category where one worker is all that played."""
    tasks = {
        f"q{i}": Task(id=f"q{i}", kind="choice", prompt="?", answer="A", choices=("a", "b"))
        for i in range(3)
    }
    alpha, beta = "recorded:small-6/Meta-Llama-3_1-8B-Instruct", "recorded:small-6/gemma-7b"
    episodes = [
        _episode("q0", [(alpha, Role.WORKER)], 1.0),
        _episode("q1", [(alpha, Role.WORKER)], 0.0),
        _episode("q2", [(beta, Role.WORKER)], 1.0),
    ]
    lines = describe_learned(summarise_learned(episodes, tasks, (alpha, beta), max_turns=1))
    assert lines[0] == "every worker's id below starts with recorded:small-6/"
    assert "   66.7%  Worker Meta-Llama-3_1-8B-Instruct  (reward 0.50, 2x)" in lines
    assert "   33.3%  Worker gemma-7b  (reward 1.00, 1x)" in lines
    assert not any("recorded:" in line for line in lines[1:])
    alone = describe_learned(summarise_learned(episodes[:1], tasks, (alpha, beta), max_turns=1))
    assert alone == [
        "choice: 1 episodes, mean reward 1.000",
        f"  100.0%  Worker {alpha}  (reward 1.00, 1x)",
    ]


@pytest.fixture()
def trained(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    run_id = train(
        config(budget={"generations": 2}, optimizer={"validate_every": 1}),
        ws,
        backbone=tiny_backbone,
    )
    return ws, run_id


def test_a_run_shows_what_its_result_head_played_on_validation(trained):
    ws, run_id = trained
    learned = run_learned(ws, run_id).categories
    assert not run_learned(ws, run_id).unplayed
    with Store.open(ws) as store:
        _, checkpoint = best_vector(store, run_id)
        validation = [
            store.get_episode(e.id)
            for e in store.list_episodes(run_id, generation=checkpoint.best_validation_generation)
            if e.candidate is None
        ]
    tasks = {t.id: t for t in load_suite("mixed").tasks}
    assert sum(c.episodes for c in learned) == len(validation) == 6
    played = {tuple(Step(t.worker, t.role) for t in e.turns) for e in validation}
    for c in learned:
        assert c.oracle is not None and c.oracle.max_turns == 3
        assert all(q.steps in played for q in c.sequences)
        groups = [e for e in validation if tasks[e.task_id].group == c.category]
        assert c.episodes == len(groups)
        assert sum(q.count for q in c.sequences) <= c.episodes

    def cli(*args):
        out = subprocess.run(
            [sys.executable, "-m", "workbench", *args, "--workspace", str(ws.root)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    shown = cli("runs", "show", run_id)
    assert "what it learned" in shown
    # a sandbox run's dollars are simulated, and said to be
    spent = next(line for line in shown.splitlines() if line.startswith("spent: "))
    assert spent.count("$") == 1 and "(simulated)" in spent
    assert all(line in shown for line in describe_learned(learned))
    data = json.loads(cli("runs", "show", run_id, "--json"))
    assert data["learned"] == [c.to_json() for c in learned]
    assert data["spend"] == "simulated"
    # in the Runs page's words (a thousands separator from 1,000 episodes on)
    assert spent == f"spent: {Spend.of(data['spent']).words('simulated')}"


def test_an_evaluation_reports_what_the_coordinator_played(trained, tiny_backbone):
    ws, run_id = trained
    report = evaluate_run(ws, run=run_id, baselines=False, backbone=tiny_backbone).report
    assert report.learned and sum(c.episodes for c in report.learned) == report.systems[0].n
    assert json.loads(report.to_json())["learned"] == [c.to_json() for c in report.learned]
    assert "What the coordinator played" in report.to_markdown()
    assert describe_learned(report.learned)[0] in report.table()


def test_a_run_whose_config_no_longer_loads_has_learned_nothing_when_gone_ok(tmp_path):
    """The Runs page and `runs show` still show a run whose stored config no longer loads
    (or whose suite is gone): ``gone_ok`` reads what it learned as nothing."""
    import pytest

    from workbench.core.config import ConfigError
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        run_id = store.create_run("old", "train", {"optimizer": {"popsize": 1}})
    with pytest.raises(ConfigError, match="popsize"):
        run_learned(ws, run_id)
    assert run_learned(ws, run_id, gone_ok=True) == RunLearned()


def test_a_run_on_a_routing_table_shows_the_models_its_validation_chose(tmp_path, tiny_backbone):
    """A run scored on CHAMP's routing table plays no validation episode; its checkpoint
    keeps the best validation's choices, and what it learned is read from them. The
    reference is the same head playing real episodes on the validation tasks over the
    recorded pool: the same models, counts and rewards per category, and the stored
    validation score is their mean."""
    from tests.core.training.test_table import _config
    from workbench.core.jobs.shared import open_worker_pool
    from workbench.core.protocol import EpisodeSettings, run_episode
    from workbench.core.training.executors import coordinator_from_vector
    from workbench.core.training.state import task_splits

    ws = Workspace.open(tmp_path / "ws")
    cfg = _config()
    run_id = train(cfg, ws, backbone=tiny_backbone)
    learned = run_learned(ws, run_id)
    assert not learned.unplayed and learned.categories
    with Store.open(ws) as store:
        assert not store.list_episodes(run_id)  # scored on the table: nothing played
        vector, checkpoint = best_vector(store, run_id)
        result = store.get_run(run_id).run_result()
        assert result is not None
        best = result.best_validation
    suite = load_suite("champ", ws)
    validation = task_splits(cfg.tasks, suite)["validation"]
    session = open_worker_pool(cfg.pool.workers, ws)
    coordinator = coordinator_from_vector(tiny_backbone, len(session.pool), vector, svf=False)
    settings = EpisodeSettings.of(cfg.protocol, suite.name)
    episodes = [
        session.run(run_episode(coordinator, session.pool, t, settings)) for t in validation
    ]
    pool = tuple(w.id for w in session.pool)
    reference = summarise_learned(episodes, {t.id: t for t in suite.tasks}, pool, max_turns=1)
    assert learned.categories == reference
    assert sum(c.episodes for c in learned.categories) == len(validation) == 20
    assert all(q.steps[0].role is Role.WORKER for c in learned.categories for q in c.sequences)
    assert best == pytest.approx(sum(e.reward for e in episodes) / len(episodes))
    assert checkpoint.best_choices is not None and len(checkpoint.best_choices) == 20


def test_a_table_run_from_before_its_choices_were_kept_says_there_is_nothing_to_read(
    tmp_path, tiny_backbone
):
    """A checkpoint written without the table's choices (as versions before them did)
    still loads; the run then has nothing to read what it learned from, and says so."""
    from tests.core.training.test_table import _config

    ws = Workspace.open(tmp_path / "ws")
    run_id = train(_config(), ws, backbone=tiny_backbone)
    assert run_learned(ws, run_id).categories
    forget_table_choices(ws, run_id)
    assert run_learned(ws, run_id) == RunLearned(unplayed=True)


def forget_table_choices(ws: Workspace, run_id: str) -> None:
    """Rewrite run ``run_id``'s stored checkpoints as a version that kept no routing
    table's choices wrote them (the same keys without ``best_choices``)."""
    import pickle
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(ws.db_path)) as db, db:
        rows = db.execute(
            "SELECT generation, state FROM checkpoints WHERE run_id = ?", (run_id,)
        ).fetchall()
        assert rows
        for generation, state in rows:
            data = pickle.loads(state)
            assert data.pop("best_choices")  # a table run's checkpoint keeps them now
            db.execute(
                "UPDATE checkpoints SET state = ? WHERE run_id = ? AND generation = ?",
                (pickle.dumps(data), run_id, generation),
            )
