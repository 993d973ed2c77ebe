"""The OpenAI-compatible client against a real OpenAI-compatible server on loopback:
``transformers serve`` serving the offline SmolLM2 model (started once per session).
A completion, the model list, the connection test and a full episode through it."""

from __future__ import annotations

import asyncio

from workbench.core.coordinator import Coordinator
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.records import Role
from workbench.core.tasks.model import Task
from workbench.core.transcript import render_transcript
from workbench.core.workers.checks import test_connection
from workbench.core.workers.openai import OpenAIWorker
from workbench.core.workers.spec import Timeouts, WorkerSpec
from workbench.core.workers.transport import open_client

TASK = Task(id="add", kind="math", prompt="What is 2 + 2?", answer="4", category="math")


def served_worker(served, client=None, **spec):
    return OpenAIWorker(
        WorkerSpec(
            id="smol",
            provider="openai",
            model=served.model,
            base_url=served.base_url,
            price_in=0.1,
            price_out=0.2,
            timeouts=Timeouts(5, 120, 180),
            **spec,
        ),
        client=client,
    )


def test_a_completion_from_transformers_serve_has_real_usage_and_cost(transformers_server):
    worker = served_worker(transformers_server)

    async def go():
        try:
            return await worker.complete(
                [{"role": "user", "content": "What is 2 + 2? Answer briefly."}],
                max_tokens=12,
                temperature=0.0,
                seed=1,
            )
        finally:
            await worker.aclose()

    reply = asyncio.run(go())
    assert reply.text.strip() and reply.usage_estimated is False
    assert reply.tokens_in > 5 and 0 < reply.tokens_out <= 12
    assert reply.model == transformers_server.model
    assert reply.cost == (reply.tokens_in * 0.1 + reply.tokens_out * 0.2) / 1e6


def test_models_and_the_connection_test_against_transformers_serve(transformers_server):
    async def go():
        async with open_client() as client:
            worker = served_worker(transformers_server, client)
            return await worker.list_models(), await test_connection(worker)

    models, report = asyncio.run(go())
    assert transformers_server.model in models
    assert report.ok and report.error is None and report.model == transformers_server.model
    assert report.reply.strip() and report.latency_s > 0


def test_a_wrong_model_name_is_explained(transformers_server):
    worker = OpenAIWorker(
        WorkerSpec(
            id="smol",
            provider="openai",
            model="no-such-model",
            base_url=transformers_server.base_url,
        )
    )
    report = asyncio.run(test_connection(worker))
    assert not report.ok and report.status is not None and 400 <= report.status < 500
    assert "worker 'smol'" in report.error and "no-such-model" in report.error


def test_a_full_episode_through_transformers_serve(transformers_server, tiny_backbone):
    # A real (untrained) coordinator; take the first head seed whose first decision,
    # argmax, is the Worker role, so that the served model is surely called.
    transcript = render_transcript(TASK, [])
    seed = next(
        s
        for s in range(50)
        if Coordinator.untrained(tiny_backbone, 1, seed=s).decide(transcript).role == 1
    )
    coordinator = Coordinator.untrained(tiny_backbone, 1, seed=seed)

    async def go():
        async with open_client() as client:
            pool = [served_worker(transformers_server, client)]
            return await run_episode(
                coordinator,
                pool,
                TASK,
                EpisodeSettings(suite="t", max_turns=1, max_tokens=16, temperature=0.0),
                rng=None,
                seed=3,
            )

    episode = asyncio.run(go())
    first = episode.turns[0]
    assert (first.worker, first.role, first.error) == ("smol", Role.WORKER, None)
    assert first.response.strip() and first.tokens_out > 0 and first.cost > 0
    assert episode.answer is not None and episode.stop_reason is not None
