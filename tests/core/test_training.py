"""The trainer, baselines, evaluation and export on the sandbox pool with a tiny backbone
(fast); the offline-backbone runs are in test_training_offline.py."""

import json
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from workbench.core.config import ConfigError, RunConfig
from workbench.core.export import CoordinatorFileError, load_coordinator, read_manifest
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.export import export_run
from workbench.core.jobs.shared import effective_status
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.events import EpisodeDone, GenerationStats, RunStarted, StopToken
from workbench.core.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "run": {"name": "t", "seed": 1},
    "pool": {"workers": ["sandbox"]},
    "tasks": {"suite": "mixed", "train": 24, "validation": 6, "test": 9},
    "optimizer": {"popsize": 4, "rollouts": 3, "validate_every": 2},
    "budget": {"generations": 3},
    "protocol": {"max_turns": 3, "temperature": 0.0},
    "cache": {"policy": "off"},
}


def config(**changes):
    data = {k: dict(v) for k, v in BASE.items()}
    for section, values in changes.items():
        data.setdefault(section, {}).update(values)
    return RunConfig.from_dict(data)


@pytest.fixture()
def ws(tmp_path):
    return Workspace.open(tmp_path / "ws")


def test_run_reports_events_and_keeps_a_gap_free_history(ws, tiny_backbone):
    events = []
    stored_when_announced = []

    def read_the_store(event):  # a listener hears of a generation once it is stored
        if isinstance(event, GenerationStats):
            with Store.open(ws) as store:
                stored_when_announced.append(
                    (
                        [g["generation"] for g in store.generations(event.run_id)],
                        len(store.list_episodes(event.run_id, generation=event.generation)),
                    )
                )

    run_id = train(config(), ws, listeners=[events.append, read_the_store], backbone=tiny_backbone)
    assert stored_when_announced == [([0], 12), ([0, 1], 12 + 6), ([0, 1, 2], 12 + 6)]
    kinds = [type(e).__name__ for e in events if not type(e).__name__.startswith("Episode")]
    assert kinds == [
        "RunStarted",
        "GenerationStats",
        "GenerationStats",
        "GenerationStats",
        "RunFinished",
    ]
    stats = [e for e in events if isinstance(e, GenerationStats)]
    assert [s.generation for s in stats] == [0, 1, 2]
    assert [s.validation is not None for s in stats] == [
        False,
        True,
        True,
    ]  # every 2, and at the end
    assert all(s.evaluations == 12 and s.worst <= s.median <= s.best for s in stats)
    assert sum(stats[0].usage.values()) >= 12 and stats[0].sigma > 0
    assert events[-1].stop_reason == "budget.generations"
    with Store.open(ws) as store:
        record = store.get_run(run_id)
        assert record.status == "finished" and record.stop_reason == "budget.generations"
        assert [g["generation"] for g in store.generations(run_id)] == [0, 1, 2]
        assert store.generation_stats(run_id) == stats  # one shape: the event is what is stored
        assert len(store.list_episodes(run_id)) == 3 * 12 + 2 * 6
        vector, checkpoint = best_vector(store, run_id)
    assert (
        vector.shape == ((3 + 3) * 32,)
        and checkpoint.best_validation == record.result["best_validation"]
    )


@pytest.mark.parametrize(
    "budget,reason,generations",
    [
        ({"generations": 10, "episodes": 30}, "budget.episodes", 2),
        ({"generations": 10, "calls": 1}, "budget.calls", 1),
        ({"generations": 10, "dollars": 1e-6}, "budget.dollars", 1),
        ({"generations": 10, "minutes": 1e-6}, "budget.minutes", 1),
    ],
)
def test_every_budget_stops_the_run_with_its_reason(ws, tiny_backbone, budget, reason, generations):
    run_id = train(config(budget=budget), ws, backbone=tiny_backbone)
    with Store.open(ws) as store:
        record = store.get_run(run_id)
        assert (record.stop_reason, len(store.generations(run_id))) == (reason, generations)


def test_stop_checkpoints_and_resume_continues_without_repeating(ws, tiny_backbone):
    """Stop pressed during the second generation: its episodes in flight are cancelled
    (a stop does not wait for them), the first generation stays stored and the run ends
    there, stopped; what the cut generation paid stays in the run's spend."""
    stop = StopToken()

    def stop_after_first(event):
        if isinstance(event, EpisodeDone) and event.generation == 1:
            stop.stop()

    run_id = train(
        config(budget={"generations": 4}),
        ws,
        listeners=[stop_after_first],
        stop=stop,
        backbone=tiny_backbone,
    )
    with Store.open(ws) as store:
        record = store.get_run(run_id)
        assert (str(record.status), record.stop_reason) == ("stopped", "stopped")
        assert len(store.generations(run_id)) == 1
        stored_episodes = store.generations(run_id)[0]["totals"]["episodes"]
        assert record.result["spend"]["episodes"] > stored_episodes  # the cut one's too
    events = []
    train(None, ws, resume=run_id[:6], listeners=[events.append], backbone=tiny_backbone)
    assert isinstance(events[0], RunStarted) and events[0].start_generation == 1
    with Store.open(ws) as store:
        assert [g["generation"] for g in store.generations(run_id)] == [0, 1, 2, 3]
        assert store.get_run(run_id).status == "finished"


def test_resume_may_extend_the_budget_but_not_change_the_run(ws, tiny_backbone):
    run_id = train(config(budget={"generations": 2}), ws, backbone=tiny_backbone)
    train(config(budget={"generations": 3}), ws, resume=run_id, backbone=tiny_backbone)
    with Store.open(ws) as store:
        assert len(store.generations(run_id)) == 3
    with pytest.raises(ConfigError, match=r"pool.workers"):
        train(
            config(pool={"workers": ["sandbox:coder"]}), ws, resume=run_id, backbone=tiny_backbone
        )


def train_stopped_and_resumed(cfg, ws, backbone, after: int = 1) -> str:
    """Train ``cfg`` in ``ws``, stopped once generation ``after`` is stored, then resumed
    to its end; the run's id."""
    stop = StopToken()

    def stop_after(event):
        if isinstance(event, GenerationStats) and event.generation == after:
            stop.stop()

    run_id = train(cfg, ws, listeners=[stop_after], stop=stop, backbone=backbone)
    train(None, ws, resume=run_id, backbone=backbone)
    return run_id


def test_restarts_start_a_fresh_optimizer_and_resume_where_an_uninterrupted_run_would(
    tmp_path, tiny_backbone
):
    """``optimizer.restarts = 1`` over 4 generations: generation 2 starts a fresh
    optimizer (its pycma state has one iteration after it, not three), the first two
    generations are the single-attempt run's, the best validation spans both attempts,
    and a run stopped before the restart and resumed gives the same history."""
    from workbench.core.training.checkpoint import latest_checkpoint

    def iterations(ws, run_id):
        with Store.open(ws) as store:
            checkpoint = latest_checkpoint(store, run_id)
        return pickle.loads(pickle.loads(checkpoint.optimizer)["es"]).countiter

    def history(ws, run_id):
        with Store.open(ws) as store:
            return [(g["mean"], g["sigma"], g["validation"]) for g in store.generations(run_id)]

    restarted = config(budget={"generations": 4}, optimizer={"restarts": 1})
    single_ws, multi_ws = Workspace.open(tmp_path / "one"), Workspace.open(tmp_path / "multi")
    single = train(config(budget={"generations": 4}), single_ws, backbone=tiny_backbone)
    multi = train(restarted, multi_ws, backbone=tiny_backbone)
    assert iterations(single_ws, single) == 4 and iterations(multi_ws, multi) == 2
    assert history(multi_ws, multi)[:2] == history(single_ws, single)[:2]
    with Store.open(multi_ws) as store:
        best = store.get_run(multi).result["best_validation"]
    assert best == max(v for _, _, v in history(multi_ws, multi) if v is not None)

    resumed_ws = Workspace.open(tmp_path / "resumed")
    resumed = train_stopped_and_resumed(restarted, resumed_ws, tiny_backbone)
    assert history(resumed_ws, resumed) == history(multi_ws, multi)
    with pytest.raises(ConfigError, match=r"optimizer.restarts"):
        config(budget={"generations": 4}, optimizer={"restarts": 4})


def test_exploring_starts_widen_training_openings_on_a_schedule_per_attempt(
    tmp_path, tiny_backbone, capsys
):
    """``optimizer.exploring_starts = 2`` with ``restarts = 1`` over 6 generations: the
    uniform share of the training openings is 1, 0.5, 0 in each attempt (reported in
    GenerationStats and by ``runs show``), a share-1 generation's stored openings were
    drawn from the uniform distributions and its later turns and validation episodes from
    the head's own, and a run stopped mid-schedule resumes with the uninterrupted run's
    history."""
    cfg = config(budget={"generations": 6}, optimizer={"restarts": 1, "exploring_starts": 2})
    ws = Workspace.open(tmp_path / "ws")
    shares = []
    run_id = train(
        cfg,
        ws,
        listeners=[
            lambda e: shares.append(e.opening_share) if isinstance(e, GenerationStats) else None
        ],
        backbone=tiny_backbone,
    )
    assert shares == [1.0, 0.5, 0.0, 1.0, 0.5, 0.0]
    uniform_workers = (1 / 3,) * 3  # the sandbox pool's three workers
    with Store.open(ws) as store:
        history = [(g["mean"], g["sigma"], g["opening_share"]) for g in store.generations(run_id)]

        def turns(generation, candidate):
            summaries = store.list_episodes(run_id, generation=generation)
            return [
                store.get_episode(e.id).turns
                for e in summaries
                if (e.candidate is None) == (candidate is None)
            ]

        opened, validated, settled = turns(0, 0), turns(1, None), turns(2, 0)
        assert opened and validated and settled and any(len(e) > 1 for e in opened)
        for episode in opened:
            assert episode[0].worker_probs == uniform_workers
            assert episode[0].role_probs == (1 / 3,) * 3
            assert all(t.worker_probs != uniform_workers for t in episode[1:])
        for episode in validated:  # validation (every 2nd generation): argmax
            assert episode[0].worker_probs != uniform_workers
        for episode in settled:
            assert episode[0].worker_probs != uniform_workers

    from workbench.cli import main

    main(["runs", "show", run_id, "--workspace", str(ws.root)])
    shown = capsys.readouterr().out.splitlines()
    header = next(line for line in shown if line.startswith("gen "))
    assert header.rstrip().endswith("uniform openings")
    rows = [line.split() for line in shown if line[:1].isdigit()]
    assert [r[-1] for r in rows] == ["100%", "50%", "0%", "100%", "50%", "0%"]

    resumed_ws = Workspace.open(tmp_path / "resumed")
    resumed = train_stopped_and_resumed(cfg, resumed_ws, tiny_backbone)
    with Store.open(resumed_ws) as store:
        again = [(g["mean"], g["sigma"], g["opening_share"]) for g in store.generations(resumed)]
    assert again == history


KILL_SCRIPT = """
import sys
from tests.conftest import build_tiny_lm
from tests.core.test_training import config
from workbench.core.coordinator import Backbone
from workbench.core.jobs.train import train
from workbench.core.workspace import Workspace
model, tok = build_tiny_lm()
train(config(budget={"generations": 30}), Workspace.open(sys.argv[1]), backbone=Backbone("tiny", model=model, tokenizer=tok))
"""


def test_kill_9_mid_run_then_resume_gives_the_same_history_as_an_uninterrupted_run(
    tmp_path, tiny_backbone
):
    killed_ws = Workspace.open(tmp_path / "killed")
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(killed_ws.root)], cwd=ROOT)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            if killed_ws.db_path.exists():
                with Store.open(killed_ws) as store:
                    runs = store.list_runs()
                    if runs and len(store.generations(runs[0].id)) >= 2:
                        break
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    with Store.open(killed_ws) as store:
        (record,) = store.list_runs()
        assert record.status == "running"  # it never got to say otherwise
        assert effective_status(record) == "interrupted"  # but its process is gone
        done = len(store.generations(record.id))
    assert 2 <= done < 30
    target = done + 2
    train(
        config(budget={"generations": target}), killed_ws, resume=record.id, backbone=tiny_backbone
    )
    straight = train(
        config(budget={"generations": target}),
        Workspace.open(tmp_path / "straight"),
        backbone=tiny_backbone,
    )
    with Store.open(killed_ws) as a, Store.open(Workspace.open(tmp_path / "straight")) as b:
        resumed, reference = a.generations(record.id), b.generations(straight)
        assert a.get_run(record.id).status == "finished"
    assert [g["generation"] for g in resumed] == list(range(target))
    keys = ("best", "mean", "median", "worst", "sigma", "evaluations", "usage", "validation")
    assert [{k: g[k] for k in keys} for g in resumed] == [
        {k: g[k] for k in keys} for g in reference
    ]


def test_export_and_load_give_identical_decisions(ws, tiny_backbone, tmp_path):
    run_id = train(config(budget={"generations": 2}), ws, backbone=tiny_backbone)
    path = export_run(ws, run_id, tmp_path / "coord", backbone=tiny_backbone)
    assert path.suffix == ".safetensors"
    (tmp_path / "folder").mkdir()  # a folder: written inside, named after the run
    inside = export_run(ws, run_id, tmp_path / "folder", backbone=tiny_backbone)
    assert inside == tmp_path / "folder" / f"coordinator-{run_id[:8]}.safetensors"
    assert not (tmp_path / "folder.safetensors").exists()
    manifest = read_manifest(path)
    assert [p["id"] for p in manifest["pool"]] == [
        "sandbox:mathlete",
        "sandbox:scholar",
        "sandbox:coder",
    ]
    assert manifest["training"]["run_id"] == run_id and manifest["max_turns"] == 3
    assert manifest["feature"]["token"] == "penultimate"
    loaded, _ = load_coordinator(path, tiny_backbone)
    with Store.open(ws) as store:
        vector, checkpoint = best_vector(store, run_id)
    # counted from 1 in the file, as the GUI counts (the store keeps it from 0): version 2
    assert checkpoint.best_validation_generation is not None
    assert manifest["version"] == 2
    assert manifest["training"]["best_validation_generation"] == (
        checkpoint.best_validation_generation + 1
    )
    assert 1 <= manifest["training"]["best_validation_generation"] <= 2  # of 2 generations
    # a version 1 file (counted from 0) still loads, to the same head
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    with safe_open(str(path), framework="numpy") as f:
        old = json.loads(f.metadata()["manifest"])
    old["version"] = 1
    old["training"]["best_validation_generation"] = checkpoint.best_validation_generation
    version_1 = tmp_path / "version-1.safetensors"
    save_file(load_file(str(path)), str(version_1), metadata={"manifest": json.dumps(old)})
    loaded_1, manifest_1 = load_coordinator(version_1, tiny_backbone)
    assert manifest_1["version"] == 1
    np.testing.assert_array_equal(loaded_1.head.get_flat(), loaded.head.get_flat())
    np.testing.assert_array_equal(loaded.head.get_flat(), vector)
    from workbench.core.training.executors import coordinator_from_vector

    original = coordinator_from_vector(tiny_backbone, 3, vector, svf=False)
    for text in ("Query:\nWhat is 2 + 2?", "Query:\nWrite sq(x).\n\nThinker/sandbox:coder: plan"):
        assert loaded.decide(text) == original.decide(text)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a coordinator")
    with pytest.raises(CoordinatorFileError, match="not a coordinator file"):
        read_manifest(bad)


def test_evaluation_against_single_workers_random_and_oracle(ws, tiny_backbone, tmp_path):
    run_id = train(config(budget={"generations": 2}), ws, backbone=tiny_backbone)
    result = evaluate_run(ws, run=run_id, out_dir=tmp_path / "out", backbone=tiny_backbone)
    names = [s.name for s in result.report.systems]
    assert names == [
        "coordinator",
        "single:sandbox:mathlete",
        "single:sandbox:scholar",
        "single:sandbox:coder",
        "random",
        "oracle",
        "multi-turn oracle",
    ]
    for s in result.report.systems:
        assert s.n == 9 and 0 <= s.ci_low <= s.accuracy <= s.ci_high <= 1
    oracle = result.report.systems[-2]
    assert oracle.accuracy >= max(s.accuracy for s in result.report.systems[1:4])
    assert oracle.avg_turns == 1.0 and result.report.systems[1].usage == {
        "sandbox:mathlete/worker": 9
    }
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "evaluation.json",
        "evaluation.csv",
        "evaluation.md",
    }
    with Store.open(ws) as store:
        assert len(store.list_episodes(result.run_id)) == 7 * 9


@pytest.mark.parametrize("optimizer", ["random-search", "reinforce", "imitation"])
def test_baselines_share_the_loop_budget_and_checkpoints(ws, tiny_backbone, optimizer):
    run_id = train(
        config(optimizer={"name": optimizer}, budget={"generations": 2}), ws, backbone=tiny_backbone
    )
    with Store.open(ws) as store:
        gens = store.generations(run_id)
        assert [g["evaluations"] for g in gens] == [12, 12]  # the same episodes per generation
        _, blob = store.latest_checkpoint(run_id)
    state = pickle.loads(blob)
    assert state["generation"] == 1 and state["best_validation"] is not None
    if optimizer == "imitation":
        assert set(gens[0]["usage"]) <= {
            "sandbox:mathlete/worker",
            "sandbox:scholar/worker",
            "sandbox:coder/worker",
        }
    if optimizer != "random-search":
        assert np.any(state["center"] != 0)  # the gradient baselines moved the head


@pytest.mark.parametrize(
    "optimizer, common", [("sep-cma-es", True), ("random-search", True), ("reinforce", False)]
)
def test_candidates_that_are_ranked_share_their_random_numbers_per_task(
    ws, tiny_backbone, optimizer, common
):
    """sep-CMA-ES and random search rank different candidates: on each task of a generation
    every candidate gets the same seeds (common random numbers), so candidates that make
    the same first choice meet the same worker outcome and differ only by policy.
    REINFORCE's candidates are copies of one policy: their episodes must be independent."""
    run_id = train(
        config(optimizer={"name": optimizer, "popsize": 6}, budget={"generations": 2}),
        ws,
        backbone=tiny_backbone,
    )
    with Store.open(ws) as store:
        summaries = [e for e in store.list_episodes(run_id) if e.candidate is not None]
        episodes = [store.get_episode(e.id) for e in summaries]
    by_task: dict = {}
    for e in episodes:
        by_task.setdefault((e.generation, e.task_id), []).append(e)
    assert len(by_task) == 2 * 3 and all(len(v) == 6 for v in by_task.values())
    for group in by_task.values():
        seeds = {e.seed for e in group}
        assert len(seeds) == (1 if common else len(group))
        if common:  # the same first (worker, role) gets the same reply
            first: dict = {}
            for e in group:
                t = e.turns[0]
                if t.response is not None:
                    first.setdefault((t.worker, t.role), set()).add(t.response)
            assert first and all(len(replies) == 1 for replies in first.values())


def test_every_episode_of_a_generation_is_in_flight_by_default(tmp_path, tiny_lm):
    """``optimizer.concurrency = 0`` (the default) lets all of a generation's episodes ask
    at once, so each turn's new transcripts meet in few forwards; a bound of 1 forwards
    them one by one."""
    from workbench.core.coordinator import Backbone

    assert RunConfig().optimizer.concurrency == 0  # the default a user gets
    rows = {}
    for concurrency in (0, 1):
        ws = Workspace.open(tmp_path / f"ws{concurrency}")
        backbone = Backbone("tiny", model=tiny_lm[0], tokenizer=tiny_lm[1])  # a cold cache
        run_id = train(
            config(
                optimizer={
                    "popsize": 8,
                    "rollouts": 6,
                    "concurrency": concurrency,
                    "validate_every": 10,
                }
            ),
            ws,
            backbone=backbone,
        )
        backbone.close()
        with Store.open(ws) as store:
            rows[concurrency] = store.generations(run_id)
    for all_at_once, one_by_one in zip(rows[0], rows[1], strict=True):
        assert one_by_one["mean_batch"] == 1
        # a few forwards per turn (max_turns = 3) instead of one per new transcript
        # (how few depends on when the replies land)
        assert all_at_once["mean_batch"] > 1
        assert all_at_once["batches"] < one_by_one["batches"]


def test_the_bundled_examples_are_valid_configs_one_turn_and_multi_turn():
    """Every example the CLI's README and the Runs page offer loads; the team example is
    the multi-turn one (the team pool, several turns)."""
    examples = {
        p.name: RunConfig.load(p) for p in (ROOT / "workbench/resources/examples").glob("*.toml")
    }
    assert {"sandbox.toml", "team.toml"} <= set(examples)
    assert examples["sandbox.toml"].protocol.max_turns == 1
    team = examples["team.toml"]
    assert team.pool.workers == ("team",) and team.protocol.max_turns > 1


def test_config_errors_name_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[budget]\ngenerations = "many"\n')
    with pytest.raises(ConfigError, match=r"budget.generations: expected an integer"):
        RunConfig.load(bad)
    bad.write_text("[optimizer]\nnmae = 'x'\n")
    with pytest.raises(ConfigError, match=r"optimizer.nmae: unknown key"):
        RunConfig.load(bad)
    bad.write_text("[optimizer]\nconcurrency = -1\n")
    with pytest.raises(
        ConfigError,
        match=r"optimizer.concurrency: -1 is negative: use 0 or more; 0 means every episode",
    ):
        RunConfig.load(bad)
    bad.write_text("[optimizer]\nname = 'adam'\n")
    with pytest.raises(ConfigError, match=r"unknown optimizer 'adam'"):
        RunConfig.load(bad)
    with pytest.raises(ConfigError, match="not valid TOML"):
        bad.write_text("[run\n")
        RunConfig.load(bad)
    assert (
        RunConfig.load(
            ROOT / "workbench" / "resources" / "examples" / "sandbox.toml"
        ).optimizer.rollouts
        == 16
    )


def test_study_compares_optimizers_under_one_budget(ws, tiny_backbone):
    from workbench.core.jobs.study import study_optimizers
    from workbench.core.stats import mean_ci

    lines = []
    study = study_optimizers(
        config(budget={"generations": 2}),
        ws,
        seeds=2,
        optimizers=("sep-cma-es", "random-search"),
        progress=lines.append,
        backbone=tiny_backbone,
    )
    assert [r.optimizer for r in study.rows] == ["sep-cma-es", "random-search"]
    for row in study.rows:
        assert len(row.runs) == 2 and row.episodes == 2 * 12
        assert row.validation[1] <= row.validation[0] <= row.validation[2]
        assert 0 <= row.test[0] <= 1
    assert len(lines) == 4 and "sep-cma-es" in study.table() and study.to_dict()["seeds"] == 2
    # references on the same test tasks and seeds: the best single worker (chosen on
    # validation: tests/core/test_baselines.py), the sandbox's one-turn oracle and (three
    # turns here) its multi-turn oracle
    oracles: dict[str, list[float]] = {"oracle": [], "multi-turn oracle": []}
    for run_id in study.rows[0].runs:  # evaluation is deterministic: redo it for each seed
        systems = evaluate_run(ws, run=run_id, backbone=tiny_backbone).report.systems
        for name, values in oracles.items():
            values += [x.accuracy for x in systems if x.name == name]
    assert set(study.references) == {"best single", "oracle", "multi-turn oracle"}
    for name, values in oracles.items():
        assert len(values) == 2 and study.references[name] == mean_ci(values)
    assert "oracle" in study.table()
    assert (
        study.to_dict()["references"]["best single"]["test"]["ci_low"]
        == study.references["best single"][1]
    )
    mean, low, high = mean_ci([0.5, 0.7, 0.6])
    # Student's t(2) 97.5% quantile is 4.303 to 3 decimals
    assert mean == pytest.approx(0.6) and low == pytest.approx(0.6 - 4.303 * 0.1 / 3**0.5, abs=1e-4)
    assert (
        mean_ci([0.0, 0.0, 0.1])[1] == 0.0 and mean_ci([1.0, 0.9, 1.0])[2] == 1.0
    )  # rewards stay in [0, 1]
    with pytest.raises(ValueError, match="unknown optimizer"):
        study_optimizers(config(), ws, optimizers=("adam",), backbone=tiny_backbone)


def test_balanced_search_basis_evens_out_an_anisotropic_feature_and_maps_to_an_ordinary_head():
    from workbench.core.training.basis import SearchBasis

    rng = np.random.default_rng(0)
    d = 64
    shared = rng.normal(size=d)
    shared /= np.linalg.norm(shared)
    # 98% of each feature's norm along one shared direction, the rest task-specific
    rest = rng.normal(size=(40, d))
    rest -= np.outer(rest @ shared, shared)
    rest *= 0.2 / np.linalg.norm(rest, axis=1, keepdims=True)
    raw = shared + rest
    raw /= np.sqrt((raw**2).mean(axis=1, keepdims=True))
    basis = SearchBasis.fit(raw)
    assert abs(abs(basis.direction @ shared) - 1) < 1e-3 and 4 < basis.alpha < 6
    seen = basis.features(raw)
    along = np.abs(seen @ basis.direction)
    across = np.linalg.norm(seen - np.outer(seen @ basis.direction, basis.direction), axis=1)
    np.testing.assert_allclose(along.mean() / across.mean(), 1.0, rtol=0.05)  # balanced
    np.testing.assert_allclose(np.sqrt((seen**2).mean(axis=1)).mean(), 1.0, rtol=1e-6)  # unit RMS
    # a search vector V acts on the transformed feature exactly as its head V M acts on the raw one
    vector = rng.normal(size=(5, d))
    head = basis.head(vector.reshape(-1), (5, d)).reshape(5, d)
    np.testing.assert_allclose(head @ raw.T, vector @ seen.T, atol=1e-10)
    identity = SearchBasis()
    np.testing.assert_array_equal(identity.head(vector.reshape(-1), (5, d)), vector.reshape(-1))
    assert SearchBasis.from_dict(basis.to_dict()).alpha == basis.alpha


def test_whitened_search_basis_evens_out_every_leading_direction_and_maps_to_an_ordinary_head():
    """The whitened basis gives each of the calibration features' top-rank directions the
    same second moment (a weak direction, e.g. what a later turn adds to a transcript,
    moves a logit as much per unit step as the shared one), and any search vector still
    maps to a plain head on the raw feature."""
    from workbench.core.training.basis import SearchBasis

    rng = np.random.default_rng(1)
    d, rank = 64, 4
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    # one dominant shared direction, three weaker varying ones (1/10 .. 1/70), then noise
    coef = np.column_stack(
        [
            np.full(200, 8.0),
            rng.normal(size=(200, 3)) * [0.8, 0.3, 0.12],
            rng.normal(size=(200, d - 4)) * 0.005,
        ]
    )
    raw = coef @ q.T
    raw /= np.sqrt((raw**2).mean(axis=1, keepdims=True))
    basis = SearchBasis.fit_whitened(raw, rank)
    assert basis.kind == "whitened" and basis.components.shape == (rank, d)
    np.testing.assert_allclose(basis.components @ basis.components.T, np.eye(rank), atol=1e-10)
    # the leading directions are the planted ones (up to sign and order)
    overlap = np.abs(basis.components @ q[:, :rank])
    np.testing.assert_allclose(overlap.max(axis=1), 1.0, atol=1e-2)
    seen = basis.features(raw)
    moments = ((seen @ basis.components.T) ** 2).mean(axis=0)
    np.testing.assert_allclose(moments / moments[0], 1.0, rtol=1e-6)  # evened out
    np.testing.assert_allclose(np.sqrt((seen**2).mean(axis=1)).mean(), 1.0, rtol=1e-6)
    # a direction outside the leading ones moves like the weakest of them, not more
    assert basis.alpha == pytest.approx(basis.gains[-1])
    vector = rng.normal(size=(5, d))
    head = basis.head(vector.reshape(-1), (5, d)).reshape(5, d)
    np.testing.assert_allclose(head @ raw.T, vector @ seen.T, atol=1e-9)
    again = SearchBasis.from_dict(basis.to_dict())
    np.testing.assert_allclose(again.head(vector.reshape(-1), (5, d)), head.reshape(-1))
    # a checkpoint stored before the whitened basis (balanced: one direction) still loads
    balanced = SearchBasis.fit(raw)
    old = {
        "direction": balanced.direction.tolist(),
        "alpha": balanced.alpha,
        "scale": balanced.scale,
    }
    np.testing.assert_allclose(
        SearchBasis.from_dict(old).head(vector.reshape(-1), (5, d)),
        balanced.head(vector.reshape(-1), (5, d)),
    )
    assert SearchBasis.from_dict({"direction": None, "alpha": 1.0, "scale": 1.0}).kind == "identity"


def test_subspace_search_basis_reads_the_feature_only_through_its_leading_directions():
    """``fit_whitened(rest=False)`` (the bench's ``subspace`` basis): the same evened-out
    leading directions, the rest of the space removed, so a head's logits ignore every
    feature direction outside them; it round-trips through a checkpoint's dict."""
    from workbench.core.training.basis import SearchBasis

    rng = np.random.default_rng(2)
    d, rank = 32, 3
    raw = rng.normal(size=(120, d)) * np.linspace(3.0, 0.1, d)
    raw /= np.sqrt((raw**2).mean(axis=1, keepdims=True))
    basis = SearchBasis.fit_whitened(raw, rank, rest=False)
    whitened = SearchBasis.fit_whitened(raw, rank)
    assert basis.kind == "subspace" and basis.alpha == 0.0
    np.testing.assert_allclose(basis.components, whitened.components)
    seen = basis.features(raw)
    np.testing.assert_allclose(np.sqrt((seen**2).mean(axis=1)).mean(), 1.0, rtol=1e-6)
    moments = ((seen @ basis.components.T) ** 2).mean(axis=0)
    np.testing.assert_allclose(moments / moments[0], 1.0, rtol=1e-6)
    head = basis.head(rng.normal(size=5 * d), (5, d)).reshape(5, d)
    outside = rng.normal(size=d)
    outside -= basis.components.T @ (basis.components @ outside)
    np.testing.assert_allclose(head @ outside, 0.0, atol=1e-9)  # the rest moves nothing
    assert SearchBasis.from_dict(basis.to_dict()).kind == "subspace"


@pytest.mark.parametrize("basis", ["balanced", "whitened", "identity"])
def test_the_stored_result_is_the_coordinator_that_was_validated(ws, tiny_chat_backbone, basis):
    """The recorded decisions of the best validation replay exactly from the stored vector
    (what export and evaluation use), whichever basis the optimizer searched in."""
    from workbench.core.coordinator import softmax
    from workbench.core.tasks.suites import load_suite
    from workbench.core.training.executors import coordinator_from_vector
    from workbench.core.transcript import render_transcript

    cfg = config(
        optimizer={"popsize": 4, "rollouts": 3, "validate_every": 1, "search_basis": basis},
        budget={"generations": 2},
        backbone={"input": "chat"},
    )
    # chat input: the template's shared last tokens make the feature anisotropic, which
    # the balanced basis evens out (alpha > 1)
    run_id = train(cfg, ws, backbone=tiny_chat_backbone)
    tasks = {t.id: t for t in load_suite("mixed").tasks}
    with Store.open(ws) as store:
        vector, checkpoint = best_vector(store, run_id)
        alpha = store.get_run(run_id).result["search_basis_alpha"]
        generation = checkpoint.best_validation_generation
        summaries = store.list_episodes(run_id, generation=generation)
        validation = [store.get_episode(e.id) for e in summaries if e.candidate is None]
        record = store.get_run(run_id)
        stored_episodes = len(store.list_episodes(run_id))
    assert (alpha == 1.0) == (basis == "identity") and alpha >= 1.0
    assert checkpoint.basis.kind == basis
    # the whitened basis (three turns) also calibrates on one turn of each of the 3 workers
    # as Thinker and as Worker on each calibration task (all 24 training tasks): counted
    # in the spend, not stored
    calibration = 24 * 3 * 2 if basis == "whitened" else 0
    assert record.result["spend"]["episodes"] == 2 * 4 * 3 + calibration
    assert stored_episodes == 2 * (4 * 3 + 6)
    if basis == "whitened":
        assert len(checkpoint.basis.components) == 8  # search_rank's default
    stored = coordinator_from_vector(tiny_chat_backbone, 3, vector, svf=False)
    turns = [(e, i) for e in validation for i in range(len(e.turns))]
    assert len(validation) == 6 and turns
    for episode, i in turns:
        logits = stored.head.weights @ tiny_chat_backbone.feature(
            render_transcript(tasks[episode.task_id], episode.turns[:i])
        )
        np.testing.assert_allclose(softmax(logits[:3]), episode.turns[i].worker_probs, atol=1e-6)
        np.testing.assert_allclose(softmax(logits[3:]), episode.turns[i].role_probs, atol=1e-6)


@pytest.mark.parametrize("scale", ["literal", "width"])
@pytest.mark.parametrize("svf", [False, True])
def test_sigma0_is_literal_by_default_and_width_scaled_as_an_option(tiny_backbone, svf, scale):
    """By default (the paper) head weights are explored at sigma0 itself, so a candidate's
    logits on a d-wide unit-RMS feature spread sigma0 sqrt(d); with sigma0_scale = "width"
    at sigma0 sqrt(1024 / d), so they spread sigma0 sqrt(1024) whatever the width. SVF
    offsets (relative changes) keep sigma0 itself either way."""
    from workbench.core.coordinator import HeadConfig
    from workbench.core.optimizers.make import make_optimizer
    from workbench.core.optimizers.sep_cma_es import REFERENCE_WIDTH

    cfg = config(optimizer={"popsize": 64, "sigma0": 0.03, "sigma0_scale": scale})
    assert RunConfig().optimizer.sigma0_scale == "literal"
    head = HeadConfig(3, tiny_backbone.hidden_size)
    n_svf = 50 if svf else 0
    es = make_optimizer(
        cfg.optimizer, cfg.run.seed, n_svf + head.n_params, head, tiny_backbone.features, {}
    )
    vectors = np.array([p.vector for p in es.ask()])
    heads = vectors[:, n_svf:].reshape(-1, *head.shape)
    rng = np.random.default_rng(0)
    feature = rng.normal(size=head.hidden_size)
    feature /= np.sqrt((feature**2).mean())  # unit RMS, as the coordinator normalises it
    logits = heads @ feature
    width = REFERENCE_WIDTH if scale == "width" else head.hidden_size
    np.testing.assert_allclose(logits.std(), 0.03 * np.sqrt(width), rtol=0.1)
    if svf:
        np.testing.assert_allclose(vectors[:, :n_svf].std(), 0.03, rtol=0.1)


def test_new_runs_get_unique_names_and_a_given_name_is_kept(ws, tiny_backbone):
    """Two runs of one config are told apart in every list and legend: the config's name
    and the day, then a counter; a name given to the job is kept as given."""
    from workbench.core.jobs.train import default_run_name

    cfg = config(budget={"generations": 1})
    day = default_run_name(cfg)
    assert day.startswith("t, ") and day.split(", ")[1].split()[0] in (
        "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
    )
    first = train(cfg, ws, backbone=tiny_backbone)
    second = train(cfg, ws, backbone=tiny_backbone)
    mine = [train(cfg, ws, backbone=tiny_backbone, name="mine") for _ in range(2)]
    with Store.open(ws) as store:
        names = {r.id: r.name for r in store.list_runs()}
    assert [names[first], names[second]] == [day, f"{day} (2)"]
    assert [names[r] for r in mine] == ["mine", "mine"]
    events = []
    train(None, ws, resume=second, listeners=[events.append], backbone=tiny_backbone)
    assert events[0].name == f"{day} (2)"  # a resumed run keeps its name
