"""The Ray executor on a real Ray instance started here (2 CPUs, this machine): a run on
Ray is the run the local executor gives, an actor killed mid-run is replaced without
changing it, a stopped Ray run resumes, and a cluster that cannot be reached is one
sentence before anything is stored."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from workbench.core.config import ConfigError, RunConfig
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.core.training.events import EpisodeDone, GenerationStats, StopToken
from workbench.core.training.ray_executor import ExecutorError, check_reachable
from workbench.core.workers.pool import build_pool
from workbench.core.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ray_instance():
    """A Ray instance on this machine for the module's tests (the executor joins it)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def config(model: Path, executor: str = "local", **changes) -> RunConfig:
    data = {
        "run": {"name": "ray", "seed": 3, "executor": executor, "actors": 2},
        "backbone": {"model": str(model), "device": "cpu", "precision": "fp32"},
        "pool": {"workers": ["sandbox"]},
        "tasks": {"suite": "mixed", "train": 24, "validation": 6, "test": 6},
        "optimizer": {"popsize": 6, "rollouts": 3, "validate_every": 2},
        "budget": {"generations": 3},
        "protocol": {"max_turns": 3, "temperature": 0.0},
        "cache": {"policy": "off"},
    }
    for section, values in changes.items():
        data.setdefault(section, {}).update(values)
    return RunConfig.from_dict(data)


def history(ws: Workspace, run_id: str) -> tuple[list, list]:
    """The run's generation history and its stored episodes, as comparable data (episode
    ids and timings aside, which are fresh in every run)."""
    keys = ("best", "mean", "median", "worst", "sigma", "evaluations", "usage", "validation")
    with Store.open(ws) as store:
        generations = [{k: g[k] for k in keys} for g in store.generations(run_id)]
        episodes = []
        for summary in store.list_episodes(run_id, limit=None):
            e = store.get_episode(summary.id)
            episodes.append(
                (
                    e.generation,
                    e.candidate,
                    e.task_id,
                    e.reward,
                    [(t.worker, str(t.role), t.response) for t in e.turns],
                )
            )
    return generations, sorted(episodes, key=repr)


def test_a_run_on_ray_actors_is_the_run_the_local_executor_gives(
    ray_instance, tiny_model_dir, tmp_path
):
    local_ws, ray_ws = Workspace.open(tmp_path / "local"), Workspace.open(tmp_path / "ray")
    local = train(config(tiny_model_dir), local_ws)
    on_ray = train(config(tiny_model_dir, "ray"), ray_ws)
    assert history(ray_ws, on_ray) == history(local_ws, local)
    with Store.open(ray_ws) as store:
        result = store.get_run(on_ray).run_result()
    assert (result.executor, result.actors) == ("ray", 2)
    assert result.nodes == [socket.gethostname()]
    with Store.open(local_ws) as store:
        assert store.get_run(local).run_result().executor == "local"


def _actor_processes() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(p.info["cmdline"] or ())
        if cmdline.startswith("ray::EpisodeActor"):
            out.append(p)
    return out


def test_an_actor_killed_mid_generation_is_replaced_and_the_run_is_unchanged(
    ray_instance, tiny_model_dir, tmp_path, caplog
):
    killed: list[int] = []

    def kill_one_actor(event):  # the first episode back: others are still in flight
        if isinstance(event, EpisodeDone) and event.generation == 1 and not killed:
            victim = _actor_processes()[0]
            killed.append(victim.pid)
            os.kill(victim.pid, signal.SIGKILL)

    ws, straight_ws = Workspace.open(tmp_path / "killed"), Workspace.open(tmp_path / "straight")
    with caplog.at_level("WARNING", logger="workbench.core.training.ray_executor"):
        run_id = train(config(tiny_model_dir, "ray"), ws, listeners=[kill_one_actor])
    assert killed, "no actor was found to kill"
    assert "died" in caplog.text and "replacing it" in caplog.text
    straight = train(config(tiny_model_dir), straight_ws)
    assert history(ws, run_id) == history(straight_ws, straight)
    with Store.open(ws) as store:
        assert store.get_run(run_id).status == "finished"


def test_a_stopped_ray_run_resumes_to_the_uninterrupted_history(
    ray_instance, tiny_model_dir, tmp_path
):
    stop = StopToken()

    def stop_after_first(event):
        if isinstance(event, GenerationStats) and event.generation == 0:
            stop.stop()

    ws, straight_ws = Workspace.open(tmp_path / "stopped"), Workspace.open(tmp_path / "straight")
    run_id = train(config(tiny_model_dir, "ray"), ws, listeners=[stop_after_first], stop=stop)
    with Store.open(ws) as store:
        assert len(store.generations(run_id)) == 1
        assert store.get_run(run_id).status == "stopped"
    train(None, ws, resume=run_id)  # the stored config: on Ray again
    straight = train(config(tiny_model_dir), straight_ws)
    assert history(ws, run_id) == history(straight_ws, straight)


def test_an_unreachable_cluster_is_one_sentence_before_anything_is_stored(tiny_model_dir, tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ExecutorError, match=rf"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        check_reachable(f"127.0.0.1:{port}")
    with pytest.raises(ExecutorError, match="is not host:port"):
        check_reachable("head-node")

    cfg = tmp_path / "ray.toml"
    import tomli_w

    cfg.write_text(tomli_w.dumps(config(tiny_model_dir, "ray").to_dict()))
    ws = tmp_path / "ws"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "train", str(cfg), "--workspace", str(ws)]
        + ["--ray-address", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in done.stderr
    assert "ray start --head" in done.stderr and "Traceback" not in done.stderr
    with Store.open(Workspace.open(ws)) as store:
        assert store.list_runs() == []


def test_executor_settings_are_checked_and_may_change_on_resume(tiny_model_dir):
    with pytest.raises(ConfigError, match=r"run.executor: unknown executor 'dask'"):
        config(tiny_model_dir, "dask")
    with pytest.raises(ConfigError, match=r"run.actors: -1 is negative"):
        config(tiny_model_dir, "ray", run={"actors": -1})


def test_replaying_the_cache_is_refused_on_ray(tiny_model_dir, tmp_path):
    with pytest.raises(ExecutorError, match="replay-only"):
        train(
            config(tiny_model_dir, "ray", cache={"policy": "replay-only"}),
            Workspace.open(tmp_path / "ws"),
        )


def test_what_actors_receive_holds_no_key(keychain, tmp_path, monkeypatch):
    """The recipe an actor is built from (a task argument, so in Ray's object store) names
    a registered worker's spec but never its key, which the actor reads on its own node."""
    import pickle

    from workbench.core.jobs.train import recipe_for
    from workbench.core.workers.registry import FixedRegistry, Registry
    from workbench.core.workers.spec import WorkerSpec

    key = "sk-test-RAYRECIPE-0123456789abcdef"
    path = tmp_path / "workers.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    registry = Registry(path)
    registry.add(
        WorkerSpec(
            id="gpt", provider="openai", model="gpt-4o-mini", base_url="https://api.openai.com/v1"
        ),
        key=key,
    )
    monkeypatch.setattr("workbench.core.workers.registry.default_file", lambda: path)
    cfg = RunConfig.from_dict({"pool": {"workers": ["gpt", "sandbox:coder"]}})
    recipe = recipe_for(cfg)
    assert list(recipe.specs) == ["gpt"] and recipe.worker_ids == ("gpt", "sandbox:coder")
    shipped = pickle.dumps(recipe)
    assert key.encode() not in shipped and b"RAYRECIPE" not in shipped
    # on the actor's side the same spec resolves its key where the driver's would
    fixed = FixedRegistry(recipe.worker_specs())
    resolved, status = fixed.resolve_key(fixed.get("gpt"))
    assert resolved.reveal() == key and status.source == "keychain"


def _mmlu_pro_file(path, worker_right_on: str, n: int = 30):
    """A hand-made MMLU-Pro output file of ``n`` questions in two categories; the model is
    right on the category ``worker_right_on`` and wrong on the other."""
    import json
    import zipfile

    items = []
    for qid in range(n):
        category = "math" if qid % 2 else "law"
        letter = "B" if category == worker_right_on else "D"
        items.append(
            {
                "question_id": qid,
                "question": f"Question {qid} of {category}: which option is right?",
                "options": ["one", "two", "three", "four"],
                "answer": "B",
                "answer_index": 1,
                "category": category,
                "pred": letter,
                "generated_text": f"Reasoning about {qid}. The answer is ({letter}).",
            }
        )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(path.stem + ".json", json.dumps(items))
    return path


def test_a_ray_run_trains_on_an_imported_pool_that_travels_with_the_job(
    ray_instance, tiny_model_dir, tmp_path
):
    """The actors have no workspace: the driver ships the imported pool once, and the run
    on Ray is the run the local executor gives, each answer the recorded one."""
    import pickle

    from workbench.core.importers.mmlu_pro import import_mmlu_pro
    from workbench.core.jobs.train import recipe_for, recorded_pools

    files = [
        (None, _mmlu_pro_file(tmp_path / "model_outputs_lawyer_5shots.zip", "law")),
        (None, _mmlu_pro_file(tmp_path / "model_outputs_mathematician_5shots.zip", "math")),
    ]
    ray_ws, local_ws = Workspace.open(tmp_path / "ray"), Workspace.open(tmp_path / "local")
    for ws in (ray_ws, local_ws):
        import_mmlu_pro(ws, files, "mini")
    changes = {
        "pool": {"workers": ["recorded:mini"]},
        "tasks": {"suite": "mini", "train": 12, "validation": 4, "test": 4},
        "protocol": {"roles": ["worker"], "max_turns": 1},
        # SVF offsets keep the run off the routing table, which plays no episodes (nothing
        # would reach the actors): each candidate's features are its own
        "optimizer": {"svf": True},
    }
    cfg = config(tiny_model_dir, "ray", **changes)
    shipped = pickle.dumps(recipe_for(cfg))
    assert str(ray_ws.root).encode() not in shipped  # the recipe names no workspace
    assert list(recorded_pools(cfg, ray_ws)) == ["mini"]
    on_ray = train(cfg, ray_ws)
    local = train(config(tiny_model_dir, **changes), local_ws)
    assert history(ray_ws, on_ray) == history(local_ws, local)
    with Store.open(ray_ws) as store:
        assert store.get_run(on_ray).run_result().executor == "ray"
        episodes = [store.get_episode(s.id) for s in store.list_episodes(on_ray, limit=None)]
    pool = {w.id: w for w in build_pool(["recorded:mini"], workspace=ray_ws)}
    trained = [e for e in episodes if e.generation is not None]
    assert trained
    for episode in trained:
        (turn,) = episode.turns
        assert turn.response == pool[turn.worker].table[episode.task_id].response  # type: ignore[attr-defined]
