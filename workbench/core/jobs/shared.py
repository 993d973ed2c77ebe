"""What the jobs share: the runs registry as lists show it (``list_runs``,
``RunSummary``, ``run_title``, ``effective_status``, ``can_resume``, the day a new run's
name carries: ``run_day``, ``named_for_its_day``) and one stored run as
its page shows it (``read_run``, ``StoredRun``), the lock that lets one process
drive a run (``run_lock``, ``RunLocked``), the backbone loaded once per process
(``shared_backbone``, ``backbone_for``), a job's pool over one HTTP client with its
response cache (``open_pool``, ``open_worker_pool``, ``PoolSession``) and a training
run's typed settings read from its config (``train_plan``: the trainer never sees the
config).

One process drives a run: ``train`` holds the run's lock (an OS file lock that the system
releases when the process ends, however it ends) from before it changes anything until the
run stops; a second ``train --resume`` of the same run is refused with ``RunLocked`` and
leaves the run as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.config import RunConfig, routing_table_reason, table_optimizer
from workbench.core.coordinator import Backbone
from workbench.core.coordinator.feature_store import FeatureStore, stored_features
from workbench.core.errors import BadInput, InvalidInput
from workbench.core.models import loading_words
from workbench.core.progress import StageListener, tell
from workbench.core.protocol import EpisodeSettings, Prompts
from workbench.core.records import GenerationStats, RunStatus, RunStopReason
from workbench.core.spend import Spend, recorded_spend, spend_kind
from workbench.core.store import RunRecord, Store, StoreError
from workbench.core.tasks.model import Task
from workbench.core.training.plan import TrainPlan
from workbench.core.training.table import pool_reason
from workbench.core.transcript import render_transcript
from workbench.core.workers.base import Worker
from workbench.core.workers.pool import build_pool
from workbench.core.workers.recorded import check_recorded_roles
from workbench.core.workspace import Workspace

_backbones: dict[tuple[str, str, int, str, str], Backbone] = {}


def shared_backbone(
    config: RunConfig, model: str | None = None, stages: StageListener | None = None
) -> Backbone:
    """The backbone ``config`` names (``model`` instead of its model when given: a
    coordinator file's), loaded once per (model, device, SVF layer, precision, input) in
    this process; ``stages`` hears when it is loaded (the first time: converted)."""
    b = config.backbone
    key = (model or b.model, b.device, config.optimizer.svf_layer, b.precision, b.input)
    if key not in _backbones:
        tell(stages, loading_words(key[0]))
        _backbones[key] = Backbone(
            key[0], device=b.device, precision=b.precision, input=b.input, svf_layer=key[2]
        )
    return _backbones[key]


def backbone_for(
    config: RunConfig,
    given: Backbone | None = None,
    model: str | None = None,
    stages: StageListener | None = None,
) -> Backbone:
    """``given`` (a caller's own backbone) if it reads transcripts the way ``config``
    says, else ``ValueError``; with none given, ``shared_backbone(config, model)``. A head
    trained on raw transcripts is meaningless on chat-wrapped ones and the other way round,
    so the two are never mixed silently."""
    if given is None:
        return shared_backbone(config, model, stages)
    if given.input != config.backbone.input:
        raise InvalidInput(
            f"the backbone reads transcripts as {given.input!r} but the run's config says "
            f"backbone.input = {config.backbone.input!r}: use a backbone loaded with "
            f"input={config.backbone.input!r} (or none: the run's own is loaded)"
        )
    return given


def effective_status(record: RunRecord) -> RunStatus:
    """A run's status, except that a ``running`` run whose process is gone (killed, or the
    machine restarted) reads ``interrupted`` (a training run resumes with ``train
    --resume``). Every kind of run names its process while it runs (``RunLife``)."""
    import os
    import socket

    status = record.status
    result = record.result or {}
    pid = result.get("pid")
    if status is not RunStatus.RUNNING or not isinstance(pid, int):
        return status
    if result.get("host") != socket.gethostname():
        return status  # another machine's run: we cannot tell
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return RunStatus.INTERRUPTED
    except PermissionError:
        pass
    return status


class RunLocked(StoreError, BadInput):
    """Another process is driving this run (training or resuming it)."""


@contextlib.contextmanager
def run_lock(workspace: Workspace, run_id: str, store: Store | None = None) -> Iterator[None]:
    """Hold the lock that lets one process drive ``run_id`` (a file in the workspace's
    ``locks`` folder); raises ``RunLocked`` at once if another process holds it."""
    from filelock import FileLock, Timeout

    folder = workspace.root / "locks"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as error:
        raise StoreError(
            f"cannot create the run lock folder {folder}: {error.strerror}: check that the "
            "workspace folder is writable"
        ) from None
    lock = FileLock(folder / f"run-{run_id}.lock", mode=0o600, thread_local=False)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        who = ""
        if store is not None:
            result = store.get_run(run_id).result or {}
            if "pid" in result:
                who = f" (process {result['pid']} on {result.get('host', 'this machine')})"
        raise RunLocked(
            f"run {run_id[:8]} is being trained by another process{who}: wait for it to end, "
            "or stop it first (Runs page, or Ctrl+C in its terminal); nothing was changed"
        ) from None
    try:
        yield
    finally:
        lock.release()


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def run_day(when: float | None = None) -> str:
    """The day ``when`` (default: now) as a new run's name carries it: ``Dec 6``. Month
    names are spelled here, not by the locale, so every process names runs alike."""
    day = time.localtime(when)
    return f"{MONTHS[day.tm_mon - 1]} {day.tm_mday}"


def named_for_its_day(title: str, created_at: float) -> bool:
    """Whether a run's name ends with the day it started, as ``train`` names a run when
    none is given (``sandbox routing, Dec 6``, ``sandbox routing, Dec 6 (2)``): a list
    that shows its name need not say the day again."""
    return re.search(rf", {re.escape(run_day(created_at))}(?: \(\d+\))?$", title) is not None


NO_EPISODES_WHY = "training on a routing table scores recorded answers without playing episodes"
"""Why a run may have no episode to replay (the Replay page and ``replay`` say it)."""

RESUMABLE = (RunStatus.STOPPED, RunStatus.INTERRUPTED, RunStatus.FAILED)


def can_resume(status: RunStatus) -> bool:
    """Whether a training run in ``status`` (as ``effective_status`` reads it) can be
    resumed from its checkpoint: stopped, interrupted and failed runs can."""
    return status in RESUMABLE


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One run as a runs list shows it (the GUI's and the CLI's): the status is the
    effective one, ``generations`` the generations committed so far."""

    id: str
    name: str
    status: RunStatus
    stop_reason: RunStopReason | None
    generations: int
    kind: str = "train"
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    title: str = ""  # how lists name it (``run_title``); the name when empty

    @property
    def resumable(self) -> bool:
        return can_resume(self.status)

    def to_json(self) -> dict[str, Any]:
        """The run as ``runs list --json`` and ``runs show --json`` print it (without its
        generations, which each adds in its own shape)."""
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


def evaluation_title(evaluated: str, coordinator_file: str | None = None) -> str:
    """An evaluation's name in lists: what it evaluated, the trained run's name (and the
    coordinator file's, when it evaluated one)."""
    name = f"'{evaluated}'" if evaluated else "a coordinator"
    return f"evaluation of {name}" + (
        f" ({Path(coordinator_file).name})" if coordinator_file else ""
    )


def run_title(record: RunRecord) -> str:
    """How a list names ``record``: its name, and an evaluation by what it evaluated, read
    from its stored config (the evaluated run's own, with the ``evaluation`` section the
    evaluation adds), whatever name it was stored under."""
    if record.kind != "eval":
        return record.name or record.id[:8]
    reference = record.config_data.get("evaluation") or {}
    return evaluation_title(evaluated_name(record), reference.get("coordinator_file"))


def evaluated_name(record: RunRecord) -> str:
    """What evaluation ``record`` evaluated, by name: the trained run's own name as the
    evaluation stored it, else (a coordinator file, a cross-validation's fold) the name in
    the config it was trained under; empty when neither says."""
    reference = record.config_data.get("evaluation") or {}
    evaluated = record.config_data.get("run") or {}
    return str(reference.get("run_name") or evaluated.get("name") or "")


def summarise_run(record: RunRecord, generations: int) -> RunSummary:
    """``record`` as a runs list shows it, with ``generations`` committed."""
    return RunSummary(
        id=record.id,
        name=record.name,
        title=run_title(record),
        status=effective_status(record),
        stop_reason=record.stop_reason,
        generations=generations,
        kind=record.kind,
        error=record.error,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def list_runs(workspace: Workspace, kind: str | None = "train") -> list[RunSummary]:
    """The workspace's runs of ``kind`` (training runs by default; None: every kind),
    newest first, with their effective status and the generations they have committed."""
    with Store.open(workspace) as store:
        runs = store.list_runs(kind=kind)
        counts = store.generation_counts()
    return [summarise_run(r, counts.get(r.id, 0)) for r in reversed(runs)]


@dataclass(frozen=True, kw_only=True)
class StoredRun:
    """A stored training run as its page shows it: the run as lists show it, every stored
    generation from the first (a resumed run's whole history), the generations its budget
    allows (0 when its config is of a version that no longer reads), its pool, what it
    used (``Spend``, from its stored records: a killed run's too) and where its episodes
    ran, in words (empty for this computer)."""

    summary: RunSummary
    generations: list[GenerationStats]
    budget_generations: int
    pool: tuple[str, ...]
    spend: Spend
    where: str

    @property
    def spend_kind(self) -> str:
        """What kind of dollars it spent (``spend.spend_kind``: "simulated", "recorded"...)."""
        return spend_kind(self.pool)


def read_run(workspace: Workspace, run_id: str) -> StoredRun:
    """Read run ``run_id`` (an id or a prefix) for its page: ``StoredRun``."""
    from workbench.core.config import ConfigError
    from workbench.core.training.events import where_episodes_ran

    with Store.open(workspace) as store:
        record = store.get_run(run_id)
        stats = store.generation_stats(record.id)
        stored = recorded_spend(
            store.generations(record.id),
            store.stored_spend(record.id),
            (record.result or {}).get("spend"),
        )
    try:
        config = record.config()
        budget, pool = config.budget.generations, tuple(config.pool.workers)
    except ConfigError:  # a config of long ago: the plots show, the progress has no end
        budget, pool = 0, tuple((record.config_data.get("pool") or {}).get("workers") or ())
    result = record.run_result()
    return StoredRun(
        summary=summarise_run(record, len(stats)),
        generations=stats,
        budget_generations=budget,
        pool=pool,
        spend=Spend.of(stored),
        where=where_episodes_ran(result.executor, result.actors, result.nodes or ())
        if result is not None
        else "",
    )


def cache_policy(config: RunConfig) -> str:
    """The config's cache policy with ``auto`` resolved by the one rule,
    ``workers.cache.default_policy`` (read-write at temperature 0, else off)."""
    from workbench.core.workers.cache import default_policy

    if config.cache.policy != "auto":
        return config.cache.policy
    return str(default_policy(config.protocol.temperature))


class UnwaitedExecutor(ThreadPoolExecutor):
    """A job's executor for blocking calls (``asyncio.to_thread``) that its loop's close
    does not wait for: a stopped run abandons a forward of the backbone in a thread
    (``StopToken.race``), which may take a minute on a busy CPU, and the job returns at
    once; the thread ends with its call (the CLI's stopped ``train`` exits without it)."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="job")

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=cancel_futures)


@dataclass
class PoolSession:
    """A job's pool over one shared HTTP client, with its response cache (if any).
    ``run(coro)`` runs the job in an event loop and closes the workers and the client
    in that same loop."""

    pool: list[Worker]
    cache: Any
    client: Any

    def run(self, coro: Any) -> Any:
        async def job() -> Any:
            asyncio.get_running_loop().set_default_executor(UnwaitedExecutor())
            try:
                return await coro
            finally:
                for worker in self.pool:
                    await worker.aclose()
                await self.client.aclose()

        return asyncio.run(job())


def open_pool(
    config: RunConfig,
    store: Store,
    workspace: Workspace | None = None,
    stages: StageListener | None = None,
) -> PoolSession:
    """The config's pool (registered and built-in workers, recorded pools imported into
    ``workspace``) behind the config's cache policy; ``stages`` hears of a worker's model
    being loaded."""
    session = open_worker_pool(config.pool.workers, workspace, stages)
    try:
        check_recorded_roles(session.pool, config.protocol.roles)
    except InvalidInput:
        session.run(asyncio.sleep(0))  # closes the workers and the client
        raise
    pool, cache = session.pool, None
    policy = cache_policy(config)
    if policy != "off":
        from workbench.core.workers.cache import cached_pool

        pool, cache = cached_pool(pool, store, policy)
    return PoolSession(pool, cache, session.client)


def open_worker_pool(
    worker_ids: Sequence[str],
    workspace: Workspace | None = None,
    stages: StageListener | None = None,
) -> PoolSession:
    """Workers by id (built-in and registered) over one shared HTTP client, uncached: a
    single episode outside a run has no cache policy. Each worker is prepared first
    (``Worker.prepare``: a local model is loaded, which ``stages`` hears of), so a worker
    that cannot serve is an error here, before a job stores anything."""
    from workbench.core.workers.local import LocalWorker
    from workbench.core.workers.transport import open_client

    client = open_client()
    try:
        pool = build_pool(worker_ids, client=client, workspace=workspace)
        for worker in pool:
            if isinstance(worker, LocalWorker):
                tell(stages, f"worker {worker.id}: {loading_words(worker.source)}")
            worker.prepare()
    except BaseException:
        asyncio.run(client.aclose())
        raise
    return PoolSession(pool, None, client)


def table_reason(config: RunConfig, pool: Sequence[Worker]) -> str | None:
    """Why a run of ``config`` with ``pool`` plays its episodes, or None when it is a
    routing table's (a recorded pool routed in one Worker turn: ``training/table.py``)."""
    return routing_table_reason(config) or pool_reason(pool)


def read_kept_features(
    backbone: Backbone,
    workspace: Workspace,
    tasks: Sequence[Task],
    stages: StageListener | None = None,
) -> None:
    """Put ``tasks``' query features kept in ``workspace`` into ``backbone``'s memory,
    the rest computed and kept: the features a routing table's run trained and was
    validated on, which its one-turn episodes then read instead of computing their own."""
    count = "1 question" if len(tasks) == 1 else f"{len(tasks):,} questions"
    tell(stages, f"reading the kept query features of {count}")
    with FeatureStore(workspace.features_path) as kept:
        stored_features(backbone, kept, [render_transcript(t, ()) for t in tasks])


def train_plan(
    config: RunConfig,
    suite: str,
    pool: Sequence[Worker],
) -> TrainPlan:
    """The settings a training run of ``config`` on ``suite`` with ``pool`` trains with,
    read once: on a routing table (a recorded pool routed in one Worker turn) the
    recorded-pool settings (``config.table_optimizer``) when the config asks for them, the
    config as given otherwise (the run's record stores ``config`` as given:
    ``new_train_run``). Episodes are played with the bundled role prompts."""
    reason = table_reason(config, pool)
    return TrainPlan(
        seed=config.run.seed,
        optimizer=table_optimizer(config) if reason is None else config.optimizer,
        budget=config.budget,
        tasks=config.tasks,
        episode=EpisodeSettings.of(config.protocol, suite, prompts=Prompts.load()),
        table_reason=reason,
    )


def new_train_run(
    store: Store, config: RunConfig, name: str | None = None, unique: bool = False
) -> str:
    """Create a training run's record in ``store``: ``config`` as given, named ``name`` (else
    its ``run.name``; ``unique``: a counter follows a name the workspace has,
    ``Store.create_run``); returns its id, which the trainer attaches to."""
    return store.create_run(name or config.run.name, "train", config.to_dict(), unique=unique)
