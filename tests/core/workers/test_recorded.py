"""The recorded provider: answers from a recorded table, a typed miss the turn records,
recorded and live workers in one pool, and the CHAMP recordings' counts."""

from __future__ import annotations

import asyncio

import pytest

from workbench.core.policies import FixedPolicy
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.tasks.model import Task
from workbench.core.workers.base import WorkerError
from workbench.core.workers.pool import build_pool
from workbench.core.workers.recorded import (
    CHAMP_MODELS,
    NotRecorded,
    RecordedWorker,
    Recording,
    champ_tables,
)

TASK = Task(id="t1", kind="math", prompt="What is 2+3?", answer="5")
OTHER = Task(id="t2", kind="math", prompt="What is 2+4?", answer="6")


def _worker(response: str = r"The answer is \boxed{5}.") -> RecordedWorker:
    rec = Recording("t1", "rec", response, tokens_in=10, tokens_out=4, cost=0.25, latency_s=1.5)
    return RecordedWorker("rec", {"t1": rec})


def _settings() -> EpisodeSettings:
    return EpisodeSettings(max_turns=1)


def test_hit_returns_the_recorded_answer_and_its_usage():
    ep = asyncio.run(run_episode(FixedPolicy(1, 0), [_worker()], TASK, _settings()))
    turn = ep.turns[0]
    assert turn.error is None
    assert turn.response == r"The answer is \boxed{5}."
    assert (turn.tokens_in, turn.tokens_out, turn.cost, turn.latency_s) == (10, 4, 0.25, 1.5)
    assert ep.reward == 1.0


def test_a_wrong_recorded_answer_is_graded_wrong():
    ep = asyncio.run(run_episode(FixedPolicy(1, 0), [_worker(r"\boxed{7}")], TASK, _settings()))
    assert ep.turns[0].error is None and ep.reward == 0.0


def test_miss_is_a_typed_worker_error_the_turn_records():
    assert issubclass(NotRecorded, WorkerError)
    ep = asyncio.run(run_episode(FixedPolicy(1, 0), [_worker()], OTHER, _settings()))
    turn = ep.turns[0]
    assert turn.error is not None and "no recorded answer for task 't2'" in turn.error
    assert turn.response == ""
    assert ep.reward == 0.0 and ep.answer is None


def test_outside_an_episode_a_recorded_worker_refuses():
    with pytest.raises(NotRecorded, match="only inside an episode"):
        asyncio.run(_worker().complete([], max_tokens=10, temperature=0.0))


def test_recorded_and_simulated_workers_mix_in_one_pool():
    pool = build_pool(["recorded:champ/gpt-4-turbo", "sandbox:mathlete"])
    assert [w.id for w in pool] == ["recorded:champ/gpt-4-turbo", "sandbox:mathlete"]
    table = champ_tables()["recorded:champ/gpt-4-turbo"]
    pid = sorted(table)[0]
    task = Task(id=pid, kind="math", prompt="p", answer="1")
    for index in (0, 1):
        ep = asyncio.run(run_episode(FixedPolicy(2, index), pool, task, _settings()))
        assert ep.turns[0].worker == pool[index].id and ep.turns[0].error is None
    assert (
        asyncio.run(run_episode(FixedPolicy(2, 0), pool, task, _settings())).turns[0].response
        == table[pid].response
    )


def test_champ_recordings_cover_270_problems_from_4_models():
    tables = champ_tables()
    assert len(CHAMP_MODELS) == 4
    assert len(tables) == 8  # 4 models x (0-shot, 5-shot)
    problems = set().union(*(set(t) for t in tables.values()))
    assert len(problems) == 270
    for wid, table in tables.items():
        assert 260 <= len(table) <= 270, wid  # a few conversations end without an answer
    assert [w.id for w in build_pool(["recorded:champ"])] == [
        f"recorded:champ/{m}" for m in CHAMP_MODELS
    ]


def test_an_unknown_recorded_worker_names_the_known_ones():
    with pytest.raises(ValueError, match="recorded:champ/gpt-4-turbo"):
        build_pool(["recorded:champ/gpt-5"])
