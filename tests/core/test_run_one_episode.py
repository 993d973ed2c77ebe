"""run_one_episode: the one episode job the CLI's run-episode (and the self-test)
share, on core's pool session: a sandbox pool, the tiny backbone, the episode stored."""

from __future__ import annotations

import json
import sqlite3
import tempfile

import pytest

from tests.test_cli import GOOD
from workbench.core.errors import InvalidInput
from workbench.core.jobs.episode import run_one_episode
from workbench.core.store import Store, StoreDamaged, parse_episode_json
from workbench.core.workspace import Workspace


def test_one_episode_runs_on_the_sandbox_pool_and_is_stored(tmp_path, tiny_model_dir):
    suite = tmp_path / "tiny.jsonl"
    suite.write_text("\n".join(json.dumps(t) for t in GOOD) + "\n")
    ws = Workspace.open(tmp_path / "ws")
    episode = run_one_episode(
        ws,
        suite=str(suite),
        task="add",
        pool=["sandbox"],
        seed=3,
        backbone=str(tiny_model_dir),
        device="cpu",
    )
    assert episode.task_id == "add"
    assert episode.pool == ("sandbox:mathlete", "sandbox:scholar", "sandbox:coder")
    assert 1 <= len(episode.turns) <= 5
    assert all(t.worker in episode.pool for t in episode.turns)
    with Store.open(ws) as store:
        stored = store.get_episode(episode.id)
    assert stored.to_dict() == episode.to_dict()
    # the same seed and acting give the same decisions (argmax over the same head)
    again = run_one_episode(
        ws,
        suite=str(suite),
        task="add",
        pool=["sandbox"],
        seed=3,
        backbone=str(tiny_model_dir),
        device="cpu",
    )
    assert [(t.role, t.worker) for t in again.turns] == [(t.role, t.worker) for t in episode.turns]


def test_an_episode_the_database_refuses_after_it_played_is_kept(
    tmp_path, tiny_model_dir, monkeypatch
):
    """The database is damaged by another program while the episode plays (its turns
    table dropped once the store is open): the error says so and where the episode went."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    suite = tmp_path / "tiny.jsonl"
    suite.write_text("\n".join(json.dumps(t) for t in GOOD) + "\n")
    ws = Workspace.open(tmp_path / "ws")

    def damage(_message: str) -> None:  # heard after the store is open, before the play
        with sqlite3.connect(ws.db_path) as conn:
            conn.execute("DROP TABLE IF EXISTS turns")  # heard at each step: once is enough
        conn.close()

    with pytest.raises(StoreDamaged, match="was saved to") as caught:
        run_one_episode(
            ws,
            suite=str(suite),
            task="add",
            pool=["sandbox"],
            seed=3,
            backbone=str(tiny_model_dir),
            device="cpu",
            progress=damage,
        )
    (saved,) = (tmp_path / "tmp").glob("trinity-workbench-episode-*.json")
    assert str(saved) in str(caught.value) and "doctor" in str(caught.value)
    # the rescued file is an episode export (docs/guides/replay.md): it counts turns from 1,
    # and reading it back gives the episode as it played, counted from 0 as stored
    document = json.loads(saved.read_text())
    assert [t["index"] for t in document["turns"]] == list(range(1, len(document["turns"]) + 1))
    episode = parse_episode_json(saved.read_text())
    assert episode.task_id == "add" and episode.turns
    assert [t.index for t in episode.turns] == list(range(len(episode.turns)))
    assert saved.stat().st_mode & 0o077 == 0  # private to the user


def test_a_trained_runs_episode_plays_what_the_run_validated(tmp_path, tiny_model_dir):
    """``run=``: the run's result coordinator over the run's pool, acting by argmax as
    validation did: on a validation task its first decision is the one the run's best
    validation recorded (the same head on the same transcript), not an untrained head's."""
    from tests.core.test_training import config
    from workbench.core.jobs.train import train

    ws = Workspace.open(tmp_path / "ws")
    run_id = train(config(budget={"generations": 2}, backbone={"model": str(tiny_model_dir)}), ws)
    with Store.open(ws) as store:
        result = store.get_run(run_id).run_result()
        assert result is not None and result.best_validation_generation is not None
        validated = [
            store.get_episode(e.id)
            for e in store.list_episodes(run_id, generation=result.best_validation_generation)
            if e.candidate is None
        ]
    told: list[str] = []
    played = run_one_episode(
        ws, run=run_id[:6], task=validated[0].task_id, stages=lambda s: told.append(s.text)
    )
    first, recorded = played.turns[0], validated[0].turns[0]
    assert played.pool == validated[0].pool
    assert (first.worker, first.role) == (recorded.worker, recorded.role)
    assert first.worker_probs == pytest.approx(recorded.worker_probs, abs=1e-5)
    assert first.role_probs == pytest.approx(recorded.role_probs, abs=1e-5)
    untrained = run_one_episode(
        ws,
        task=validated[0].task_id,
        pool=["sandbox"],
        suite="mixed",
        backbone=str(tiny_model_dir),
        device="cpu",
    )
    assert untrained.turns[0].worker_probs != pytest.approx(first.worker_probs, abs=1e-3)
    assert any(t.startswith("playing task ") for t in told)
    with Store.open(ws) as store:
        assert store.get_episode(played.id).to_dict() == played.to_dict()


def test_without_a_run_the_pool_and_suite_are_needed(tmp_path):
    with pytest.raises(InvalidInput, match="give a trained run"):
        run_one_episode(Workspace.open(tmp_path / "ws"), task="add", pool=["sandbox"])
