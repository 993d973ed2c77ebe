"""Retries and pacing of HTTP calls: the retry policy (tenacity: exponential backoff with
jitter, ``Retry-After`` honoured, a cap on waits) and the requests-per-minute limiter.
Nothing here knows HTTP shapes; it sees ``WorkerError`` and its ``retryable`` flag."""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)
from tenacity.wait import wait_base

from workbench.core.workers.base import WorkerError


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``attempts`` tries. Waits grow as ``backoff * 2**n`` plus up to
    ``jitter`` seconds of random jitter, each at most ``max_wait``. A ``Retry-After``
    from the server is honoured (seconds or an HTTP date); one longer than ``max_wait``
    is not waited for: the call fails at once with ``RateLimited`` saying when to retry."""

    attempts: int = 5
    backoff: float = 0.5
    jitter: float = 0.5
    max_wait: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.backoff < 0 or self.jitter < 0 or self.max_wait <= 0:
            raise ValueError(f"invalid retry policy {self}: attempts >= 1, waits >= 0")


class WaitRetryAfter(wait_base):
    """tenacity wait: the server's Retry-After when it gave one, else exponential backoff
    with jitter."""

    def __init__(self, policy: RetryPolicy):
        self.policy = policy
        # backoff * 2**n, capped, plus uniform jitter (tenacity's own strategies, combined)
        self.backoff = wait_exponential(
            multiplier=policy.backoff, max=policy.max_wait
        ) + wait_random(0, policy.jitter)

    def __call__(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(retry_after, self.policy.max_wait)
        return min(self.backoff(retry_state), self.policy.max_wait)


def should_retry(policy: RetryPolicy) -> Callable[[BaseException], bool]:
    """Whether a failed attempt is worth another: a retryable ``WorkerError`` whose
    Retry-After (if any) is within ``policy.max_wait``."""

    def check(exc: BaseException) -> bool:
        if not isinstance(exc, WorkerError) or not exc.retryable:
            return False
        retry_after = getattr(exc, "retry_after", None)
        return retry_after is None or retry_after <= policy.max_wait

    return check


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


# --------------------------------------------------------------------------- limits


class RateLimiter:
    """At most ``rpm`` requests per minute, spaced evenly (no bursts at minute starts)."""

    def __init__(self, rpm: float):
        self.interval = 60.0 / rpm
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        async with self._lock:
            now = loop.time()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def retrying(
    policy: RetryPolicy, before_sleep: Callable[[RetryCallState], None] | None = None
) -> AsyncRetrying:
    """tenacity's retry loop for ``policy``: stop after ``policy.attempts``, wait as
    ``WaitRetryAfter`` says, retry what ``should_retry`` accepts, re-raise the last error."""
    return AsyncRetrying(
        stop=stop_after_attempt(policy.attempts),
        wait=WaitRetryAfter(policy),
        retry=retry_if_exception(should_retry(policy)),
        reraise=True,
        before_sleep=before_sleep,
    )
