"""The Replay cursor over a stored episode (what the Replay page shows)."""

import asyncio

import numpy as np
import pytest

from workbench.core.coordinator import Coordinator
from workbench.core.protocol import run_episode
from workbench.core.replay import Replay
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.transcript import render_transcript
from workbench.core.workers.pool import build_pool

TASK = Task(id="m", kind="math", prompt="What is 6 * 7?", answer="42", category="math")


@pytest.fixture()
def stored_episode(tiny_backbone, tmp_path):
    pool = build_pool(["sandbox"])
    coordinator = Coordinator.untrained(tiny_backbone, 3, seed=0, scale=0.1)
    for seed in range(20):  # an episode with at least two turns
        episode = asyncio.run(
            run_episode(coordinator, pool, TASK, rng=np.random.default_rng(seed), seed=seed)
        )
        if len(episode.turns) >= 2:
            break
    with Store(tmp_path / "w.sqlite3") as store:
        store.add_episode(episode)
        return store.get_episode(episode.id)


def test_stepping_shows_the_stored_decisions_and_notifies(stored_episode):
    replay = Replay(stored_episode, TASK)
    seen = []
    replay.changed.append(seen.append)
    assert replay.index == 0 and replay.transcript_before() == render_transcript(TASK, ())
    replay.next()
    assert seen == [1] and replay.turn == stored_episode.turns[1]
    decision = replay.decision()
    turn = stored_episode.turns[1]
    assert decision.worker_probs == turn.worker_probs and decision.role_probs == turn.role_probs
    assert decision.workers[decision.chosen_worker] == turn.worker
    assert decision.roles[decision.chosen_role] == str(turn.role)
    assert replay.transcript_before() == render_transcript(TASK, stored_episode.turns[:1])
    replay.go(99)
    assert replay.at_end and replay.index == replay.n_turns - 1
    replay.go(-5)
    assert replay.index == 0 and seen[-1] == 0
    out = replay.outcome()
    assert out.reference == "42" and out.reward == stored_episode.reward
    assert out.stop_reason == stored_episode.stop_reason
    assert out.right == (stored_episode.reward >= 1.0)


def test_prompt_text_is_what_the_worker_received(stored_episode):
    replay = Replay(stored_episode, TASK)
    for i, turn in enumerate(stored_episode.turns):
        replay.go(i)
        for message in turn.messages:
            assert message["content"] in replay.prompt()
