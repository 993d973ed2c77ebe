"""The response cache on a real SQLite workspace database: keys, the three policies, hit
and miss counts, sharing of identical calls in flight, and every kind of worker (an
OpenAI-compatible worker on a loopback server, the sandbox simulation, a real local
model)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import numpy as np
import pytest

from tests.support.fault_server import MODEL, Fault
from workbench.core.coordinator import Coordinator
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.workers.base import CacheMiss, EpisodeContext, ProviderError
from workbench.core.workers.cache import (
    CachedWorker,
    CachePolicy,
    ResponseCache,
    cached_pool,
    default_policy,
    request_key,
)
from workbench.core.workers.local import LocalWorker
from workbench.core.workers.openai import OpenAIWorker
from workbench.core.workers.pool import build_pool
from workbench.core.workers.retry import RetryPolicy
from workbench.core.workers.spec import Timeouts, WorkerSpec

KEY = "sk-test-CACHE-0123456789abcdef"
MESSAGES = ({"role": "user", "content": "What is 6 * 7?"},)


@pytest.fixture()
def store(tmp_path):
    with Store(tmp_path / "workbench.sqlite3") as s:
        yield s


def loop_worker(server, wid="loop", **spec):
    return OpenAIWorker(
        WorkerSpec(
            id=wid,
            provider="openai",
            model=MODEL,
            base_url=server.base_url,
            timeouts=Timeouts(2, 2, 5),
            price_in=1.0,
            price_out=2.0,
            **spec,
        ),
        key=KEY,
        retry=RetryPolicy(attempts=1),
    )


def calls(worker, n=1, messages=MESSAGES, **kw):
    async def go():
        try:
            return await asyncio.gather(
                *(
                    worker.complete(
                        messages,
                        max_tokens=kw.get("max_tokens", 16),
                        temperature=kw.get("temperature", 0.0),
                        seed=kw.get("seed", 1),
                    )
                    for _ in range(n)
                )
            )
        finally:
            await worker.aclose()

    return asyncio.run(go())


IDENTITY = {
    "provider": "openai",
    "base_url": "http://h/v1",
    "model": "m",
    "temperature": 0.0,
    "max_tokens": 16,
    "seed": 1,
    "extra": {},
}


@pytest.mark.parametrize(
    "change",
    [
        {"provider": "anthropic"},
        {"base_url": "http://other/v1"},
        {"model": "m2"},
        {"temperature": 0.1},
        {"max_tokens": 17},
        {"seed": 2},
        {"extra": {"reasoning_effort": "low"}},
    ],
)
def test_every_part_of_a_request_changes_its_key(change):
    base = request_key(IDENTITY, MESSAGES)
    assert base == request_key(dict(IDENTITY), [dict(m) for m in MESSAGES])  # stable
    assert len(base) == 64 and int(base, 16) >= 0  # a sha256 hex digest
    assert request_key({**IDENTITY, **change}, MESSAGES) != base
    assert request_key(IDENTITY, [{"role": "user", "content": "What is 6 * 8?"}]) != base


def test_default_policy_and_policy_names():
    assert default_policy(0.0) is CachePolicy.READ_WRITE and default_policy(0.1) is CachePolicy.OFF
    assert CachePolicy.parse("replay-only") is CachePolicy.REPLAY_ONLY
    with pytest.raises(
        ValueError,
        match="unknown cache policy 'sometimes': use one of off, read-write, replay-only",
    ):
        cached_pool([], None, "sometimes")


def test_read_write_records_then_answers_without_a_call(fault_server, store):
    (pool, cache) = cached_pool([loop_worker(fault_server)], store, "read-write")
    (first,) = calls(pool[0])
    (second,) = calls(pool[0])
    assert len(fault_server.chat_requests()) == 1
    assert (cache.hits, cache.misses) == (1, 1) and cache.stats()["hit_rate"] == 0.5
    assert first.cached is False and second.cached is True and second.attempts == 0
    assert (second.text, second.tokens_in, second.tokens_out, second.cost, second.model) == (
        first.text,
        first.tokens_in,
        first.tokens_out,
        first.cost,
        first.model,
    )
    store.flush()
    db = sqlite3.connect(store.path)
    ((provider, model, request, hits),) = db.execute(
        "SELECT provider, model, request, hits FROM responses"
    )
    db.close()
    assert (provider, model, hits) == ("openai", MODEL, 1)
    recorded = json.loads(request)
    assert recorded["messages"] == list(MESSAGES) and recorded["base_url"] == fault_server.base_url
    assert KEY not in request


def test_replay_only_never_calls_and_a_missing_entry_is_a_clear_error(fault_server, store):
    worker = loop_worker(fault_server)
    pool, cache = cached_pool([worker], store, CachePolicy.REPLAY_ONLY)
    with pytest.raises(CacheMiss) as info:
        calls(pool[0])
    assert "replay-only cache has no recorded reply" in str(info.value) and "read-write" in str(
        info.value
    )
    assert fault_server.requests == [] and worker._state is None  # no client was even opened
    assert (cache.hits, cache.misses) == (0, 1)


def test_off_passes_every_call_through_and_records_nothing(fault_server, store):
    pool, cache = cached_pool([loop_worker(fault_server)], store, "off")
    calls(pool[0], n=2)
    assert len(fault_server.chat_requests()) == 2 and store.response_count() == 0
    assert (cache.hits, cache.misses) == (0, 0)


def test_identical_calls_in_flight_are_made_once(fault_server, store):
    fault_server.latency = 0.2
    pool, cache = cached_pool([loop_worker(fault_server)], store, "read-write")
    replies = calls(pool[0], n=5)
    assert len(fault_server.chat_requests()) == 1
    assert len({r.text for r in replies}) == 1 and sum(r.cached for r in replies) == 4
    assert (cache.hits, cache.misses) == (4, 1) and store.response_count() == 1


def test_failed_calls_are_not_recorded(fault_server, store):
    fault_server.script(Fault.status_code(400, "bad field"))
    pool, cache = cached_pool([loop_worker(fault_server)], store, "read-write")
    with pytest.raises(ProviderError):
        calls(pool[0])
    assert store.response_count() == 0
    calls(pool[0])
    assert len(fault_server.chat_requests()) == 2 and (cache.hits, cache.misses) == (0, 2)


def test_the_wrapper_keeps_the_workers_identity(fault_server, store):
    inner = loop_worker(fault_server, extra={"top_p": 0.5})
    (wrapped,), _ = cached_pool([inner], store, "read-write")
    assert isinstance(wrapped, CachedWorker)
    assert (wrapped.id, wrapped.model, wrapped.provider, wrapped.base_url) == (
        "loop",
        MODEL,
        "openai",
        fault_server.base_url,
    )
    assert wrapped.spec is inner.spec  # other attributes are the wrapped worker's
    assert wrapped.request_identity(max_tokens=8, temperature=0.0, seed=None)["extra"] == {
        "top_p": 0.5
    }


TWIN_A = Task(id="a", kind="math", prompt="What is x?", answer="1", category="math")
TWIN_B = Task(id="b", kind="math", prompt="What is x?", answer="2", category="math")


def test_sandbox_keys_include_the_episode_because_its_replies_depend_on_it(store):
    cache = ResponseCache(store, "read-write")
    (worker,) = build_pool(["sandbox:mathlete"])
    keys = []
    for task in (TWIN_A, TWIN_B):
        context = EpisodeContext(task, "worker", None)
        keys.append(
            cache.key_for(worker, MESSAGES, max_tokens=8, temperature=0.0, seed=1, context=context)[
                0
            ]
        )
    assert keys[0] != keys[1]  # same messages, different tasks: different replies


def test_sandbox_episodes_replay_from_the_cache(tiny_backbone, store):
    tasks = [
        Task(
            id=f"m{i}",
            kind="math",
            prompt=f"What is {i} + {i}?",
            answer=str(2 * i),
            category="math",
        )
        for i in range(4)
    ]

    def episodes(policy):
        pool, cache = cached_pool(build_pool(["sandbox"]), store, policy)
        coordinator = Coordinator.untrained(tiny_backbone, len(pool), seed=3)

        async def go():
            return [
                await run_episode(
                    coordinator,
                    pool,
                    t,
                    EpisodeSettings(max_turns=4, temperature=0.0),
                    rng=np.random.default_rng(i),
                    seed=i,
                )
                for i, t in enumerate(tasks)
            ]

        return asyncio.run(go()), cache

    recorded, first = episodes("read-write")
    replayed, second = episodes("replay-only")
    n_calls = sum(1 for e in recorded for t in e.turns if t.messages)
    assert n_calls >= 4 and first.misses == n_calls
    assert (second.hits, second.misses) == (n_calls, 0)
    assert [strip(e) for e in replayed] == [strip(e) for e in recorded]


def test_a_local_model_worker_is_cached(tiny_lm, tmp_path, store):
    model, tokenizer = tiny_lm
    folder = tmp_path / "tiny-model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (worker,), cache = cached_pool([LocalWorker("local:tiny", str(folder))], store, "read-write")
    (first,) = calls(worker, max_tokens=6)
    (second,) = calls(worker, max_tokens=6)
    assert worker.provider == "local" and second.cached and second.text == first.text
    assert (cache.hits, cache.misses) == (1, 1)


def strip(episode):
    """An episode as a dict without what differs between two runs by nature."""
    d = episode.to_dict()
    for key in ("id", "created_at"):
        d.pop(key)
    for turn in d["turns"]:
        turn.pop("latency_s")
    return d
