"""The Worker protocol and the registry of provider classes.

A provider implements one coroutine, ``complete()``. The registry maps a provider name
(``"local"``, ``"sandbox"``, and with the workers issue ``"openai"``, ``"anthropic"``,
``"gemini"``) to its class; ``build_pool`` turns worker ids into worker objects.
"""

from __future__ import annotations

import abc
import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
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


class WorkerError(Exception):
    """A worker call failed after the client's own retries. The message names the worker
    and what to do next, and never contains a key."""

    def __init__(self, worker_id: str, message: str):
        super().__init__(f"worker '{worker_id}': {message}")
        self.worker_id = worker_id


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


def build_pool(worker_ids: Sequence[str]) -> list[Worker]:
    """Turn worker ids (``local:smollm2``, ``sandbox``, ``sandbox:<name>``) into workers,
    in order. ``sandbox`` expands to the whole built-in sandbox pool."""
    _load_builtin_modules()
    pool: list[Worker] = []
    for wid in worker_ids:
        wid = wid.strip()
        prefix = wid.split(":", 1)[0]
        if prefix not in _BUILTIN_RESOLVERS:
            known = ", ".join(f"{p}:..." if p != "sandbox" else "sandbox, sandbox:..." for p in builtin_prefixes())
            raise UnknownWorker(
                f"unknown worker '{wid}': built-in workers are {known} "
                "(list them with trinity-workbench workers list)"
            )
        pool.extend(_BUILTIN_RESOLVERS[prefix](wid))
    ids = [w.id for w in pool]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"pool names worker(s) {', '.join(dupes)} twice: each worker may appear once")
    if not pool:
        raise ValueError("empty pool: name at least one worker, e.g. --pool sandbox")
    return pool
