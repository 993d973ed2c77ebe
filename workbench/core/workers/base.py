"""The Worker protocol and its small types: the completion, the error hierarchy and the
episode context.

A provider implements one coroutine, ``complete()``. ``spec.PROVIDER_CLASSES`` names each
provider's class (``"local"``, ``"sandbox"``, ``"recorded"``, ``"openai"``, ``"anthropic"``,
``"gemini"``); ``workbench.core.workers.pool`` turns worker ids into worker objects.

Errors: every failed call raises a ``WorkerError`` subclass whose message names the
worker, the HTTP status when there is one, and what to do next; never a key.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.core.errors import BadInput, WorkFailed

if TYPE_CHECKING:
    from workbench.core.keychain import Secret
    from workbench.core.tasks.model import Task

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One worker reply with what it cost."""

    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    cost: float = 0.0
    usage_estimated: bool = False  # True when the provider reported no token usage
    model: str | None = None
    attempts: int = 1  # HTTP attempts it took (retries after 429, 5xx, timeouts, drops)
    cached: bool = False  # served from the response cache: no call was made, nothing spent


class WorkerError(WorkFailed):
    """A worker call failed after the client's own retries. The message names the worker
    and what to do next, and never contains a key.

    ``status`` is the HTTP status when the server answered; ``attempts`` how many tries
    were made; ``retryable`` whether trying again later may help (used by the retry
    policy: 429, 5xx, timeouts and dropped connections are, 400/401/403/404 are not).
    """

    retryable: bool = False

    def __init__(
        self,
        worker_id: str,
        message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
    ):
        super().__init__(worker_id, message)
        self.worker_id = worker_id
        self.message = message
        self.status = status
        self.attempts = 1
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        tail = f" (gave up after {self.attempts} attempts)" if self.attempts > 1 else ""
        return f"worker '{self.worker_id}': {self.message}{tail}"


class AuthError(WorkerError):
    """The provider rejected the key (401), or the key has no access (403)."""


class RateLimited(WorkerError):
    """429 Too Many Requests; ``retry_after`` is the server's Retry-After in seconds."""

    retryable = True

    def __init__(
        self,
        worker_id: str,
        message: str,
        *,
        status: int | None = 429,
        retry_after: float | None = None,
    ):
        super().__init__(worker_id, message, status=status)
        self.retry_after = retry_after


class ProviderError(WorkerError):
    """The provider answered with an error status (5xx: retryable; other 4xx: not)."""


class WorkerUnreachable(ProviderError):
    """No answer at all: the connection was refused or dropped (retryable)."""

    retryable = True


class BadResponse(WorkerError):
    """The reply could not be used: not JSON, truncated, missing fields, empty content.
    The message shows the first bytes of the body."""


class WorkerTimeout(WorkerError):
    """Connect, read or total timeout (retryable)."""

    retryable = True


class CacheMiss(WorkerError):
    """Replay-only cache policy and no recorded response for this request."""


class UnknownWorker(BadInput, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class EpisodeContext:
    """What run_episode knows at a turn: the task, the role asked for, the latest Worker
    answer and the Thinkers since it. ``run_episode`` passes it to every call
    (``Worker.complete(..., context=...)``); real workers ignore it; the sandbox
    simulation draws its labelled outcome from it, and the response cache keys the
    sandbox's replies on it."""

    task: Task
    role: str
    answer: str | None
    thinkers: tuple[str, ...] = ()


class Worker(abc.ABC):
    """One model endpoint. Subclasses set ``provider`` and implement ``complete``."""

    provider: ClassVar[str]
    base_url: str | None = None  # the endpoint, for workers that call one
    # the keys whose echoes ``redact`` masks: a worker's own key, and once ``build_pool``
    # has shared them, the keys of every worker of its pool
    secrets: tuple[Secret, ...] = ()
    # True for a worker that reads recorded answers (``recorded.py``): a call spends
    # nothing, so a check or a study counts its answers at no cost (``headroom.py``)
    answers_at_no_cost: bool = False

    def __init__(self, worker_id: str, model: str):
        self.id = worker_id
        self.model = model

    def redact(self, text: str) -> str:
        """``text`` with every echo of every key in ``secrets`` masked (see
        ``Secret.redact``); applied to all a worker returns before it is stored or shown."""
        for secret in self.secrets:
            text = secret.redact(text)
        return text

    @abc.abstractmethod
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        """Send ``messages`` and return the reply; raise ``WorkerError`` on failure.
        ``context`` is the episode the call belongs to (None outside one)."""

    def covers(self, task: Task) -> bool:
        """Whether this worker can answer ``task`` at all: a live model can answer
        anything; a worker of recorded answers only the tasks it has a recording for (an
        episode's worker mask reads it: ``protocol.mask_workers``)."""
        return True

    async def aclose(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release connections or models; the default holds nothing."""

    def prepare(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Make sure, before a job stores anything, that this worker can serve at all; raise
        the error a call would meet otherwise (a local worker loads its model here, so a
        missing model is refused up front instead of failing every episode). The default
        checks nothing: a remote endpoint is only tested by calling it."""

    def request_identity(
        self, *, max_tokens: int, temperature: float, seed: int | None
    ) -> dict[str, Any]:
        """What determines this worker's reply besides the messages: provider, endpoint,
        model and the decoding settings it would actually send. The response cache keys
        on it; providers that override settings (per-worker temperature, extra fields)
        say so here."""
        return {
            "provider": self.provider,
            "base_url": self.base_url,
            "model": self.model,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "extra": {},
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, model={self.model!r})"


def pool_covers(pool: Sequence[Worker], task: Task) -> bool:
    """Whether every worker of ``pool`` can answer ``task`` (``Worker.covers``): the tasks
    a comparison of a recorded pool's systems is made on."""
    return all(worker.covers(task) for worker in pool)
