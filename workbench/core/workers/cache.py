"""The response cache: worker replies recorded in the workspace database.

A call is keyed by what determines its reply: provider, base URL, model, the decoding
settings actually sent (temperature, max_tokens, seed, extra request fields) and the
messages (a sha256 hex digest of their canonical JSON). The sandbox simulation's reply
also depends on the episode (the task, the role, the answer under review), so for it the
key includes that too.

Policies:

- ``off``: every call goes to the worker; nothing is read or written.
- ``read-write``: a recorded reply is returned without a call; a new one is recorded.
  Identical calls in flight at the same time (the same first turn for every candidate
  of a generation) are made once and shared.
- ``replay-only``: a recorded reply or ``CacheMiss``; never a call, never the network.
  Re-running a recorded training or evaluation this way costs nothing and gives the
  same episodes.

The default (``default_policy``) is read-write at temperature 0, where a reply is meant
to be reproducible, and off otherwise, where a recorded reply would freeze one sample.

A cached reply comes back with the recorded text, token counts and cost (so fitness with
a cost penalty is the same on replay) and ``cached=True`` (so spend accounting can leave
it out); its latency is the lookup's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from workbench.core.store import Store
from workbench.core.workers.base import CacheMiss, Completion, EpisodeContext, Message, Worker

KEY_VERSION = 1  # part of every key: bump it when the key's content changes
# Providers whose reply depends on the episode context, not only on the messages.
CONTEXT_PROVIDERS = frozenset({"sandbox"})
# Providers that make no call to cache: recorded answers are read from their table (by
# task id, which the messages do not determine), never from the cache.
UNCACHED_PROVIDERS = frozenset({"recorded"})


class CachePolicy(StrEnum):
    OFF = "off"
    READ_WRITE = "read-write"
    REPLAY_ONLY = "replay-only"

    @classmethod
    def parse(cls, value: CachePolicy | str) -> CachePolicy:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"unknown cache policy {value!r}: use one of {', '.join(p.value for p in cls)}"
            ) from None


def default_policy(temperature: float) -> CachePolicy:
    """Read-write at temperature 0 (replies meant to be reproducible), else off."""
    return CachePolicy.READ_WRITE if temperature == 0 else CachePolicy.OFF


def request_key(
    identity: dict[str, Any], messages: Sequence[Message], context: dict[str, Any] | None = None
) -> str:
    """The sha256 hex digest of a request's canonical JSON."""
    doc = {
        "v": KEY_VERSION,
        **identity,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
    }
    if context is not None:
        doc["context"] = context
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _episode_context(ctx: EpisodeContext | None) -> dict[str, Any] | None:
    if ctx is None:
        return None
    task = json.dumps(ctx.task.to_dict(), sort_keys=True, default=str)
    return {
        "task": hashlib.sha256(task.encode()).hexdigest(),
        "role": ctx.role,
        "answer": ctx.answer,
        "thinkers": list(ctx.thinkers),
    }


class ResponseCache:
    """Recorded replies in ``store`` under ``policy``, with hit and miss counts.

    ``hits``: calls answered without the worker (recorded, or shared with an identical
    call in flight); ``misses``: calls that found nothing (made under read-write, failed
    with ``CacheMiss`` under replay-only). Off counts neither.
    """

    def __init__(self, store: Store, policy: CachePolicy | str = CachePolicy.READ_WRITE):
        self.store = store
        self.policy = CachePolicy.parse(policy)
        self.hits = 0
        self.misses = 0
        self._inflight: dict[str, asyncio.Future] = {}

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def stats(self) -> dict[str, Any]:
        """The run's figures: policy, hits, misses, hit rate."""
        return {
            "policy": str(self.policy),
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": round(self.hit_rate, 4),
        }

    def key_for(
        self,
        worker: Worker,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        context: EpisodeContext | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """(key, the request as recorded) for a call of ``worker``."""
        identity = worker.request_identity(
            max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        keyed = _episode_context(context) if worker.provider in CONTEXT_PROVIDERS else None
        request = {**identity, "messages": [dict(m) for m in messages]}
        if keyed is not None:
            request["context"] = keyed
        return request_key(identity, messages, keyed), request

    def wrap(self, worker: Worker) -> CachedWorker:
        return CachedWorker(worker, self)

    async def complete(
        self,
        worker: Worker,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        """``worker.complete`` through the cache."""
        if self.policy is CachePolicy.OFF:
            return await worker.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                context=context,
            )
        started = time.perf_counter()
        key, request = self.key_for(
            worker,
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            context=context,
        )
        pending = self._inflight.get(key)
        if pending is not None:
            shared = await asyncio.shield(pending)
            self.hits += 1
            return dataclasses.replace(shared, cached=True, latency_s=time.perf_counter() - started)
        future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            stored = await asyncio.to_thread(self.store.get_response, key)
            if stored is not None:
                self.hits += 1
                # masked on the way out: a row recorded before a key was known (or
                # before masking existed) never hands the key back
                result = _from_record(stored, time.perf_counter() - started)
                result = dataclasses.replace(
                    result,
                    text=worker.redact(result.text),
                    model=worker.redact(result.model) if result.model else result.model,
                )
            elif self.policy is CachePolicy.REPLAY_ONLY:
                self.misses += 1
                raise CacheMiss(
                    worker.id,
                    f"the replay-only cache has no recorded reply for this request (model "
                    f"'{worker.model}', key {key[:12]}): record it first with cache policy "
                    "read-write, or run with policy off",
                )
            else:
                self.misses += 1
                result = await worker.complete(
                    messages,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=seed,
                    context=context,
                )
                await asyncio.to_thread(
                    self.store.put_response,
                    key,
                    provider=worker.provider,
                    model=worker.model,
                    request=request,
                    response=_to_record(result),
                )
            future.set_result(result)
            return result
        except BaseException as exc:
            if not future.done():
                if isinstance(exc, Exception):
                    future.set_exception(exc)
                    future.exception()  # retrieved: no "never retrieved" warning without waiters
                else:
                    future.cancel()
            raise
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]


def _to_record(c: Completion) -> dict[str, Any]:
    return {
        "text": c.text,
        "tokens_in": c.tokens_in,
        "tokens_out": c.tokens_out,
        "cost": c.cost,
        "usage_estimated": c.usage_estimated,
        "model": c.model,
        "latency_s": c.latency_s,
    }


def _from_record(r: dict[str, Any], latency_s: float) -> Completion:
    return Completion(
        text=r["text"],
        tokens_in=r["tokens_in"],
        tokens_out=r["tokens_out"],
        latency_s=latency_s,
        cost=r["cost"],
        usage_estimated=r["usage_estimated"],
        model=r.get("model"),
        attempts=0,
        cached=True,
    )


class CachedWorker(Worker):
    """A worker whose calls go through a ``ResponseCache``. It keeps the wrapped worker's
    ``id``, ``model``, ``provider`` and ``base_url``; other attributes are the wrapped
    worker's too."""

    provider = "cached"  # replaced per instance by the wrapped worker's provider

    def __init__(self, inner: Worker, cache: ResponseCache):
        super().__init__(inner.id, inner.model)
        self.inner = inner
        self.cache = cache
        self.provider = inner.provider  # type: ignore[misc]
        self.base_url = inner.base_url

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        return await self.cache.complete(
            self.inner,
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            context=context,
        )

    @property
    def secrets(self) -> tuple[Any, ...]:
        return self.inner.secrets

    @secrets.setter
    def secrets(self, value: tuple[Any, ...]) -> None:
        self.inner.secrets = value

    def redact(self, text: str) -> str:
        return self.inner.redact(text)

    @property
    def answers_at_no_cost(self) -> bool:  # type: ignore[override]
        return self.inner.answers_at_no_cost

    def covers(self, task: Any) -> bool:
        return self.inner.covers(task)

    def request_identity(
        self, *, max_tokens: int, temperature: float, seed: int | None
    ) -> dict[str, Any]:
        return self.inner.request_identity(
            max_tokens=max_tokens, temperature=temperature, seed=seed
        )

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet: do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"CachedWorker({self.inner!r}, policy={self.cache.policy})"


def cached_pool(
    pool: list[Worker], store: Store, policy: CachePolicy | str
) -> tuple[list[Worker], ResponseCache]:
    """Wrap every worker of ``pool`` so its calls go through one ``ResponseCache`` in
    ``store`` under ``policy``; returns (the wrapped pool, the cache with its counts).
    Recorded workers are left unwrapped (``UNCACHED_PROVIDERS``)."""
    cache = ResponseCache(store, policy)
    return [w if w.provider in UNCACHED_PROVIDERS else cache.wrap(w) for w in pool], cache
