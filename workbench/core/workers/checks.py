"""Checks a user runs on a worker before training with it: the connection test (one tiny
request, latency, the model that answered, or the error explained) and the model list of
an endpoint. ``workers test`` / ``workers models`` and the Workers page call these."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from workbench.core.workers.base import Worker, WorkerError
from workbench.core.workers.http import HTTPWorker
from workbench.core.workers.pool import build_pool, worker_for
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import WorkerSpec
from workbench.core.workers.transport import open_client


@dataclass(frozen=True, kw_only=True)
class ConnectionReport:
    """The outcome of ``workers test``: one tiny request."""

    worker: str
    ok: bool
    latency_s: float
    model: str | None  # the model the server says answered
    reply: str
    error: str | None
    error_kind: str | None  # the WorkerError subclass name
    status: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "ok": self.ok,
            "latency_s": round(self.latency_s, 4),
            "model": self.model,
            "reply": self.reply,
            "error": self.error,
            "error_kind": self.error_kind,
            "status": self.status,
        }


async def test_connection(worker: Worker) -> ConnectionReport:
    """``workers test``: one tiny request to any worker (HTTP ones: a single attempt)."""
    started = time.perf_counter()
    try:
        if isinstance(worker, HTTPWorker):
            reply = await worker.probe()
        else:
            reply = await worker.complete(
                [{"role": "user", "content": "Reply with the single word: OK"}],
                max_tokens=16,
                temperature=0.0,
            )
    except WorkerError as exc:
        return ConnectionReport(
            worker=worker.id,
            ok=False,
            latency_s=time.perf_counter() - started,
            model=None,
            reply="",
            error=str(exc),
            error_kind=type(exc).__name__,
            status=exc.status,
        )
    return ConnectionReport(
        worker=worker.id,
        ok=True,
        latency_s=time.perf_counter() - started,
        model=reply.model,
        reply=reply.text,
        error=None,
        error_kind=None,
        status=None,
    )


test_connection.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, despite its name


async def test_worker(worker_id: str, *, registry: Registry | None = None) -> ConnectionReport:
    """``workers test`` and the GUI's Workers page: build one worker (built-in or
    registered in ``registry``, default the user's) on a client of its own, send one tiny
    request, close everything. A failed request is a report, not an exception."""
    async with open_client() as client:
        worker = _one_worker(worker_id, registry, client)
        try:
            return await test_connection(worker)
        finally:
            await worker.aclose()


test_worker.__test__ = False  # type: ignore[attr-defined]


async def worker_models(worker_id: str, *, registry: Registry | None = None) -> list[str]:
    """The model ids offered by the endpoint of worker ``worker_id`` (``workers models``)."""
    async with open_client() as client:
        return await _models(_one_worker(worker_id, registry, client))


async def endpoint_models(
    spec: WorkerSpec, *, key: str | None = None, registry: Registry | None = None
) -> list[str]:
    """The model ids offered by the endpoint of ``spec``, which need not be registered
    yet (a worker being added): ``key`` is a key entered but not stored; without one the
    key is resolved as for a call (keychain, then environment)."""
    registry = registry or Registry.open()
    async with open_client() as client:
        return await _models(worker_for(registry, spec, key=key, client=client))


def _one_worker(worker_id: str, registry: Registry | None, client: httpx.AsyncClient) -> Worker:
    pool = build_pool([worker_id], registry=registry, client=client)
    if len(pool) != 1:
        raise ValueError(
            f"'{worker_id}' names {len(pool)} workers: name one of them "
            f"({', '.join(w.id for w in pool)})"
        )
    return pool[0]


async def _models(worker: Worker) -> list[str]:
    try:
        if not isinstance(worker, HTTPWorker):
            raise ValueError(f"worker '{worker.id}' is not behind an API: it has no model list")
        return await worker.list_models()
    finally:
        await worker.aclose()
