"""run_one_episode: the one episode job the CLI's run-episode (and the self-test)
share, on core's pool session: a sandbox pool, the tiny backbone, the episode stored."""

from __future__ import annotations

import json
import sqlite3
import tempfile

import pytest

from tests.test_cli import GOOD
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
            conn.execute("DROP TABLE turns")
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
