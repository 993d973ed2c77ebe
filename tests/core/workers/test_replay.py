"""Replay-only: a run recorded against OpenAI-compatible workers on a loopback server
replays bit-identically after the server is gone (the network unreachable), from the
workspace database on disk, with a fresh coordinator built the same way."""

from __future__ import annotations

import asyncio

import numpy as np

from tests.support.fault_server import FaultServer
from workbench.core.coordinator import Backbone, Coordinator
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.workers.openai import OpenAIWorker
from workbench.core.workers.retry import RetryPolicy
from workbench.core.workers.spec import Timeouts, WorkerSpec
from workbench.core.workers.transport import open_client

TASKS = [
    Task(id=f"q{i}", kind="math", prompt=f"What is {i} * 3?", answer=str(3 * i), category="math")
    for i in range(8)
]


def pool_at(base_url, client):
    return [
        OpenAIWorker(
            WorkerSpec(
                id=wid,
                provider="openai",
                model=f"{wid}-model",
                base_url=base_url,
                price_in=0.5,
                price_out=1.5,
                timeouts=Timeouts(1, 2, 5),
            ),
            key="sk-test-REPLAY-000000000",
            client=client,
            retry=RetryPolicy(attempts=2, backoff=0.01),
        )
        for wid in ("alpha", "beta")
    ]


def evaluate(tiny_lm, db_path, base_url, policy, temperature=0.0, tasks=TASKS):
    """Eight episodes, one after the other, with a fresh backbone and cache; the episodes
    and the cache's counts."""
    from workbench.core.workers.cache import cached_pool

    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer)

    async def go():
        async with open_client() as client:
            with Store(db_path) as store:
                pool, cache = cached_pool(pool_at(base_url, client), store, policy)
                coordinator = Coordinator.untrained(backbone, len(pool), seed=11)
                episodes = [
                    await run_episode(
                        coordinator,
                        pool,
                        task,
                        EpisodeSettings(
                            suite="replay", max_turns=4, max_tokens=32, temperature=temperature
                        ),
                        rng=np.random.default_rng(100 + i),
                        seed=i,
                    )
                    for i, task in enumerate(tasks)
                ]
                return episodes, cache

    try:
        return asyncio.run(go())
    finally:
        backbone.close()


def comparable(episode):
    d = episode.to_dict()
    del d["id"], d["created_at"]
    for turn in d["turns"]:
        del turn["latency_s"]
    return d


def test_a_recorded_run_replays_bit_identically_with_the_network_unreachable(tiny_lm, tmp_path):
    db = tmp_path / "workbench.sqlite3"
    with FaultServer() as server:
        base_url = server.base_url
        recorded, first = evaluate(tiny_lm, db, base_url, "read-write")
        requests = len(server.chat_requests())
    # The server is stopped: its port refuses connections from now on.
    calls = sum(1 for e in recorded for t in e.turns if t.messages)
    assert calls >= 10 and requests == first.misses == calls - first.hits
    assert all(t.error is None for e in recorded for t in e.turns)
    assert {t.worker for e in recorded for t in e.turns if t.messages} == {"alpha", "beta"}

    replayed, second = evaluate(tiny_lm, db, base_url, "replay-only")
    assert (second.hits, second.misses) == (calls, 0)
    assert [comparable(e) for e in replayed] == [comparable(e) for e in recorded]
    assert all(
        t.cost > 0 for e in replayed for t in e.turns if t.messages
    )  # recorded costs, not zero

    # A setting that was never recorded: each call is a CacheMiss on its turn, never a
    # connection attempt (which would say "cannot connect").
    changed, third = evaluate(
        tiny_lm, db, base_url, "replay-only", temperature=0.5, tasks=TASKS[:4]
    )
    errors = [t.error for e in changed for t in e.turns if t.messages]
    assert errors and third.hits == 0 and third.misses == len(errors)
    assert all("replay-only cache has no recorded reply" in err for err in errors)
