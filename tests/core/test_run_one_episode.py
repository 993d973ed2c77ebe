"""runs.run_one_episode: the one episode job the CLI's run-episode (and the self-test)
share, on core's pool session: a sandbox pool, the tiny backbone, the episode stored."""

from __future__ import annotations

import json

from tests.test_cli import GOOD
from workbench.core import runs
from workbench.core.store import Store
from workbench.core.workspace import Workspace


def test_one_episode_runs_on_the_sandbox_pool_and_is_stored(tmp_path, tiny_model_dir):
    suite = tmp_path / "tiny.jsonl"
    suite.write_text("\n".join(json.dumps(t) for t in GOOD) + "\n")
    ws = Workspace.open(tmp_path / "ws")
    episode = runs.run_one_episode(
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
    again = runs.run_one_episode(
        ws,
        suite=str(suite),
        task="add",
        pool=["sandbox"],
        seed=3,
        backbone=str(tiny_model_dir),
        device="cpu",
    )
    assert [(t.role, t.worker) for t in again.turns] == [(t.role, t.worker) for t in episode.turns]
