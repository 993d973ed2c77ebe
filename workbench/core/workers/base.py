"""The Worker protocol and the registry of provider classes.

A provider implements one coroutine, ``complete()``. The registry maps a provider name
(``"local"``, ``"sandbox"``, ``"openai"``, ``"anthropic"``, ``"gemini"``) to its class;
``build_pool`` turns worker ids (built-in ones and those registered in ``workers.toml``,
see ``workbench.core.registry``) into worker objects.

Errors: every failed call raises a ``WorkerError`` subclass whose message names the
worker, the HTTP status when there is one, and what to do next; never a key.
"""

from __future__ import annotations

import abc
import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import httpx

    from workbench.core.registry import Registry, WorkerSpec
    from workbench.core.tasks.model import Task

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}


@dataclass(frozen=True)
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


class WorkerError(Exception):
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


class UnknownWorker(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class EpisodeContext:
    """What run_episode knows at a turn: the task, the role asked for, the latest Worker
    answer and the Thinkers since it. Real workers never read it; only the sandbox
    simulation does, to draw a labelled outcome."""

    task: Task
    role: str
    answer: str | None
    thinkers: tuple[str, ...] = ()


current_episode: contextvars.ContextVar[EpisodeContext | None] = contextvars.ContextVar(
    "current_episode", default=None
)


class Worker(abc.ABC):
    """One model endpoint. Subclasses set ``provider`` and implement ``complete``."""

    provider: ClassVar[str]
    base_url: str | None = None  # the endpoint, for workers that call one

    def __init__(self, worker_id: str, model: str):
        self.id = worker_id
        self.model = model

    @abc.abstractmethod
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
    ) -> Completion:
        """Send ``messages`` and return the reply; raise ``WorkerError`` on failure."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release connections or models; the default holds nothing."""

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


PROVIDERS: dict[str, type[Worker]] = {}


def register_provider(name: str) -> Callable[[type[Worker]], type[Worker]]:
    """Class decorator: make a Worker subclass available under a provider name."""

    def wrap(cls: type[Worker]) -> type[Worker]:
        cls.provider = name
        PROVIDERS[name] = cls
        return cls

    return wrap


# Resolvers for built-in worker ids: prefix -> function(id) -> list of workers.
# Each provider module registers its own; the registered-workers file comes later.
_BUILTIN_RESOLVERS: dict[str, Callable[[str], list[Worker]]] = {}


def register_builtin(prefix: str, resolve: Callable[[str], list[Worker]]) -> None:
    _BUILTIN_RESOLVERS[prefix] = resolve


def builtin_prefixes() -> list[str]:
    _load_builtin_modules()
    return sorted(_BUILTIN_RESOLVERS)


def _load_builtin_modules() -> None:
    # Importing registers the providers; the heavy imports happen inside their classes.
    from workbench.core.workers import local, simulated  # noqa: F401


@dataclass(frozen=True)
class BuiltinWorker:
    """A worker that needs no registration, as listings show it (nothing is loaded)."""

    id: str
    provider: str
    model: str  # what answers, in words


def builtin_workers() -> list[BuiltinWorker]:
    """The built-in workers a pool can name without registering anything: the offline
    local model and each sandbox profile (``local:SOURCE`` names any other local model)."""
    from workbench.core.workers.local import SMOLLM2_ID
    from workbench.core.workers.simulated import PROFILES_BY_ID

    return [
        BuiltinWorker(SMOLLM2_ID, "local", "SmolLM2-135M-Instruct (offline, GGUF)"),
        *(
            BuiltinWorker(wid, "sandbox", f"simulated/{p.name} (a simulation)")
            for wid, p in PROFILES_BY_ID.items()
        ),
    ]


def build_pool(
    worker_ids: Sequence[str],
    *,
    registry: Registry | None = None,
    client: httpx.AsyncClient | None = None,
) -> list[Worker]:
    """Turn worker ids into workers, in order: built-in ids (``local:smollm2``,
    ``local:SOURCE``, ``sandbox``, ``sandbox:<name>``) and ids registered with
    ``trinity-workbench workers add`` (``registry``, default: the user's workers.toml).
    ``sandbox`` expands to the whole built-in sandbox pool.

    ``client`` is the run's shared ``httpx.AsyncClient`` (see
    ``workbench.core.workers.http.open_client``); workers built without one open their
    own on first use and close it in ``aclose()``.
    """
    registry = registry or _registry_if_needed(worker_ids)
    return [
        w if isinstance(w, Worker) else registry.worker_for(w, client=client)
        for w in _expand(worker_ids, registry)
    ]


def describe_pool(
    worker_ids: Sequence[str], *, registry: Registry | None = None
) -> list[tuple[str, str]]:
    """(id, model) of each worker ``worker_ids`` names, in head order, as ``build_pool``
    would build them but without building registered workers: no key is read (listing
    a pool must not touch the keychain)."""
    return [
        (w.id, w.model) for w in _expand(worker_ids, registry or _registry_if_needed(worker_ids))
    ]


def _registry_if_needed(worker_ids: Sequence[str]) -> Registry | None:
    _load_builtin_modules()
    if all(wid.strip().split(":", 1)[0] in _BUILTIN_RESOLVERS for wid in worker_ids):
        return None
    from workbench.core.registry import Registry

    return Registry.open()


def _expand(worker_ids: Sequence[str], registry: Registry | None) -> list[Worker | WorkerSpec]:
    """Built-in workers (cheap: nothing loads until a call) and registered specs, in order."""
    _load_builtin_modules()
    pool: list[Worker | WorkerSpec] = []
    for wid in worker_ids:
        wid = wid.strip()
        prefix = wid.split(":", 1)[0]
        if prefix in _BUILTIN_RESOLVERS:
            pool.extend(_BUILTIN_RESOLVERS[prefix](wid))
            continue
        spec = registry.find(wid) if registry is not None else None
        if spec is None:
            known = ", ".join(
                f"{p}:..." if p != "sandbox" else "sandbox, sandbox:..." for p in builtin_prefixes()
            )
            registered = ", ".join(w.id for w in registry.list()) if registry is not None else ""
            raise UnknownWorker(
                f"unknown worker '{wid}': built-in workers are {known}; registered workers: "
                f"{registered or 'none yet'} (list them with trinity-workbench workers list, add one with "
                "trinity-workbench workers add)"
            )
        pool.append(spec)
    ids = [w.id for w in pool]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(
            f"pool names worker(s) {', '.join(dupes)} twice: each worker may appear once"
        )
    if not pool:
        raise ValueError("empty pool: name at least one worker, e.g. --pool sandbox")
    return pool
