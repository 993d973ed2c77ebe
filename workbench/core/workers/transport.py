"""The HTTP transport the API workers share: the run's ``httpx.AsyncClient``, the
per-loop concurrency and rate-limit state, timeouts in httpx's terms, and the mapping of
network failures (no reply at all) to ``WorkerError`` subclasses. Nothing here knows a
worker, a provider's shapes or API keys; the worker is ``workbench.core.workers.http``.

One client per run::

    async with open_client() as client:
        pool = build_pool(["gpt", "claude", "sandbox"], client=client)
        ...  # run episodes; every worker shares the client's connection pool
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from workbench import __version__
from workbench.core.workers.base import (
    ProviderError,
    WorkerError,
    WorkerTimeout,
    WorkerUnreachable,
)
from workbench.core.workers.retry import RateLimiter
from workbench.core.workers.spec import Timeouts

PREVIEW_BYTES = 200  # how much of a bad body an error shows


def open_client(
    *,
    max_connections: int = 128,
    max_keepalive: int = 64,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The shared client of a run, with explicit connection limits. Use it with
    ``async with`` and pass it to ``build_pool(..., client=client)``. Per-worker
    timeouts are set on each request; ``transport`` is for tests (``httpx.MockTransport``)."""
    return httpx.AsyncClient(
        limits=httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max_keepalive,
            keepalive_expiry=30.0,
        ),
        timeout=httpx.Timeout(120.0, connect=10.0),
        headers={"user-agent": f"trinity-workbench/{__version__}"},
        follow_redirects=False,  # a redirect would carry the key to another host
        transport=transport,
    )


@dataclass
class LoopState:
    """Asyncio primitives belong to one event loop; a worker used from a new loop (a new
    ``asyncio.run``) gets fresh ones."""

    loop: asyncio.AbstractEventLoop
    semaphore: asyncio.Semaphore
    limiter: RateLimiter | None
    own_client: httpx.AsyncClient | None = None


def httpx_timeout(t: Timeouts) -> httpx.Timeout:
    """A worker's timeouts as one request's httpx timeout."""
    return httpx.Timeout(connect=t.connect, read=t.read, write=t.read, pool=t.total)


def preview(raw: bytes, redact: Callable[[str], str]) -> str:
    """The start of a body for an error message, secrets masked by ``redact``."""
    # masked before it is cut, so no piece of a key is left at the cut
    head = redact(raw[: 2 * PREVIEW_BYTES].decode("utf-8", errors="replace"))
    head = head[:PREVIEW_BYTES]
    more = f" ... ({len(raw)} bytes in all)" if len(raw) > PREVIEW_BYTES else ""
    return f"{head!r}{more}"


def transport_error(
    worker_id: str,
    base_url: str,
    t: Timeouts,
    exc: Exception,
    redact: Callable[[str], str],
) -> WorkerError:
    """The ``WorkerError`` for an exchange that got no reply (``exc`` from httpx)."""
    text = redact(str(exc)) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return WorkerTimeout(
            worker_id,
            f"could not connect to {base_url} within {t.connect:g} s "
            "(timeouts.connect): check the network and the base URL",
        )
    if isinstance(exc, httpx.ReadTimeout):
        return WorkerTimeout(
            worker_id,
            f"no data from {base_url} for {t.read:g} s (timeouts.read): the "
            "server is slow or stuck; raise timeouts.read in workers.toml if the "
            "model is just slow",
        )
    if isinstance(exc, httpx.TimeoutException):
        return WorkerTimeout(
            worker_id, f"timed out talking to {base_url} ({type(exc).__name__}): {text}"
        )
    if isinstance(exc, httpx.ConnectError):
        return WorkerUnreachable(
            worker_id,
            f"cannot connect to {base_url} ({text}): check that the server "
            "runs and the base URL is right",
        )
    if isinstance(exc, httpx.TransportError):
        return WorkerUnreachable(
            worker_id,
            f"the connection to {base_url} dropped before a full reply "
            f"({type(exc).__name__}: {text})",
        )
    return ProviderError(worker_id, f"request to {base_url} failed ({type(exc).__name__}: {text})")
