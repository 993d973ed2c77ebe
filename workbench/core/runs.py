"""Whole jobs as one call each, for the CLI and the GUI alike: train (new or resumed),
evaluate a run or a coordinator file, export a run, compare optimizers.

They build what a job needs from a ``RunConfig`` and a workspace (suite, pool, backbone,
response cache, store) and hand events to listeners.

One process drives a run: ``train`` holds the run's lock (``run_lock``, an OS file lock
that the system releases when the process ends, however it ends) from before it changes
anything until the run stops; a second ``train --resume`` of the same run is refused with
``RunLocked`` and leaves the run as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.config import ConfigError, RunConfig
from workbench.core.coordinator import Backbone
from workbench.core.errors import BadInput, InvalidInput
from workbench.core.evaluate import MULTI_TURN_ORACLE
from workbench.core.learned import CategoryLearned, summarise_learned
from workbench.core.power import PowerEstimate
from workbench.core.records import Episode
from workbench.core.spend import spend_kind
from workbench.core.store import RunRecord, Store, StoreError
from workbench.core.tasks.suites import SuiteNotFound, load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.events import Listener, StopToken
from workbench.core.training.executors import Executor
from workbench.core.training.trainer import Trainer, coordinator_from_vector, task_splits
from workbench.core.workers.base import Worker
from workbench.core.workers.pool import build_pool, describe_pool
from workbench.core.workspace import Workspace

log = logging.getLogger(__name__)

_backbones: dict[tuple[str, str, int, str, str], Backbone] = {}


def shared_backbone(config: RunConfig, model: str | None = None) -> Backbone:
    """The backbone ``config`` names (``model`` instead of its model when given: a
    coordinator file's), loaded once per (model, device, SVF layer, precision, input) in
    this process."""
    b = config.backbone
    key = (model or b.model, b.device, config.optimizer.svf_layer, b.precision, b.input)
    if key not in _backbones:
        _backbones[key] = Backbone(
            key[0], device=b.device, precision=b.precision, input=b.input, svf_layer=key[2]
        )
    return _backbones[key]


def backbone_for(
    config: RunConfig, given: Backbone | None = None, model: str | None = None
) -> Backbone:
    """``given`` (a caller's own backbone) if it reads transcripts the way ``config``
    says, else ``ValueError``; with none given, ``shared_backbone(config, model)``. A head
    trained on raw transcripts is meaningless on chat-wrapped ones and the other way round,
    so the two are never mixed silently."""
    if given is None:
        return shared_backbone(config, model)
    if given.input != config.backbone.input:
        raise InvalidInput(
            f"the backbone reads transcripts as {given.input!r} but the run's config says "
            f"backbone.input = {config.backbone.input!r}: use a backbone loaded with "
            f"input={config.backbone.input!r} (or none: the run's own is loaded)"
        )
    return given


def run_learned(workspace: Workspace, run: str, *, gone_ok: bool = False) -> list[CategoryLearned]:
    """What training run ``run`` learned (``workbench.core.learned``): the sequences its
    result head played on validation, in the generation that head was validated, per
    category, beside the oracle's plan for simulated pools. Empty before any validation.
    Raises ``SuiteNotFound`` when the run's suite is no longer installed and
    ``ConfigError`` when its stored config no longer loads; ``gone_ok``: empty then (a
    runs list or ``runs show`` still shows the rest of the run)."""
    if gone_ok:
        try:
            return run_learned(workspace, run)
        except (SuiteNotFound, ConfigError):  # a suite since removed, a config of long ago
            return []
    with Store.open(workspace) as store:
        record = store.get_run(run)
        config = record.config()
        try:
            _, checkpoint = best_vector(store, record.id)
        except ValueError:  # no completed generation yet
            return []
        generation = checkpoint.best_validation_generation
        if generation is None:
            return []
        episodes = [
            store.get_episode(e.id)
            for e in store.list_episodes(record.id, generation=generation)
            if e.candidate is None
        ]
    if not episodes:
        return []
    tasks = {t.id: t for t in load_suite(config.tasks.suite, workspace).tasks}
    return summarise_learned(episodes, tasks, episodes[0].pool, config.protocol.max_turns)


def effective_status(record: RunRecord) -> str:
    """A run's status, except that a ``running`` run whose process is gone (killed, or the
    machine restarted) reads ``interrupted``: resume it with ``train --resume``."""
    import os
    import socket

    status = str(record.status)
    result = record.run_result()
    if status != "running" or result is None or result.pid is None:
        return status
    if result.host != socket.gethostname():
        return status  # another machine's run: we cannot tell
    try:
        os.kill(result.pid, 0)
    except ProcessLookupError:
        return "interrupted"
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


RESUMABLE = ("stopped", "interrupted", "failed")


def can_resume(status: str) -> bool:
    """Whether a training run in ``status`` (as ``effective_status`` reads it) can be
    resumed from its checkpoint: stopped, interrupted and failed runs can."""
    return status in RESUMABLE


@dataclass(frozen=True)
class RunSummary:
    """One run as a runs list shows it (the GUI's and the CLI's): the status is the
    effective one, ``generations`` the generations committed so far."""

    id: str
    name: str
    status: str
    stop_reason: str
    generations: int
    kind: str = "train"
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0

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
            "stop_reason": self.stop_reason or None,
            "error": self.error,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


def summarise_run(record: RunRecord, generations: int) -> RunSummary:
    """``record`` as a runs list shows it, with ``generations`` committed."""
    return RunSummary(
        record.id,
        record.name,
        effective_status(record),
        record.stop_reason or "",
        generations,
        record.kind,
        record.error,
        record.created_at,
        record.updated_at,
    )


def list_runs(workspace: Workspace, kind: str | None = "train") -> list[RunSummary]:
    """The workspace's runs of ``kind`` (training runs by default; None: every kind),
    newest first, with their effective status and the generations they have committed."""
    with Store.open(workspace) as store:
        runs = store.list_runs(kind=kind)
        counts = store.generation_counts()
    return [summarise_run(r, counts.get(r.id, 0)) for r in reversed(runs)]


def cache_policy(config: RunConfig) -> str:
    """The config's cache policy with ``auto`` resolved by the one rule,
    ``workers.cache.default_policy`` (read-write at temperature 0, else off)."""
    from workbench.core.workers.cache import default_policy

    if config.cache.policy != "auto":
        return config.cache.policy
    return str(default_policy(config.protocol.temperature))


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
            try:
                return await coro
            finally:
                for worker in self.pool:
                    await worker.aclose()
                await self.client.aclose()

        return asyncio.run(job())


def open_pool(config: RunConfig, store: Store, workspace: Workspace | None = None) -> PoolSession:
    """The config's pool (registered and built-in workers, recorded pools imported into
    ``workspace``) behind the config's cache policy."""
    session = open_worker_pool(config.pool.workers, workspace)
    pool, cache = session.pool, None
    policy = cache_policy(config)
    if policy != "off":
        from workbench.core.workers.cache import cached_pool

        pool, cache = cached_pool(pool, store, policy)
    return PoolSession(pool, cache, session.client)


def open_worker_pool(worker_ids: Sequence[str], workspace: Workspace | None = None) -> PoolSession:
    """Workers by id (built-in and registered) over one shared HTTP client, uncached: a
    single episode outside a run has no cache policy. Each worker is prepared first
    (``Worker.prepare``: a local model is loaded), so a worker that cannot serve is an
    error here, before a job stores anything."""
    from workbench.core.workers.transport import open_client

    client = open_client()
    try:
        pool = build_pool(worker_ids, client=client, workspace=workspace)
        for worker in pool:
            worker.prepare()
    except BaseException:
        asyncio.run(client.aclose())
        raise
    return PoolSession(pool, None, client)


def run_one_episode(
    workspace: Workspace,
    *,
    pool: Sequence[str],
    suite: str,
    task: str,
    backbone: str | None = "offline",
    device: str = "auto",
    seed: int = 0,
    sample: bool = False,
    max_turns: int = 5,
    max_tokens: int = 1024,
    temperature: float = 0.1,
    prompts: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Episode:
    """Play one episode of ``task`` (from ``suite``) with the workers ``pool`` names, and
    store it in the workspace; returns it.

    The coordinator is an untrained head (seeded by ``seed``) on ``backbone``, acting by
    argmax or, with ``sample``, by seeded sampling. ``backbone=None`` routes with the
    uniformly random policy instead, which needs no model (the self-test of an edition
    without the offline model). ``progress`` hears what takes time (loading the backbone).
    """
    import numpy as np

    from workbench.core.coordinator import Coordinator
    from workbench.core.policies import Policy, RandomPolicy
    from workbench.core.protocol import EpisodeSettings, Prompts, run_episode

    task_suite = load_suite(suite, workspace)
    the_task = task_suite.get(task)
    # Opened first: a database that cannot store the episode is refused before it plays.
    with Store.open(workspace) as store:
        session = open_worker_pool([p for p in pool if p.strip()], workspace)
        loaded = Prompts.load(prompts)
        model: Backbone | None = None
        if backbone is not None:
            if progress is not None:
                progress(f"loading backbone '{backbone}' ...")
            model = Backbone(backbone, device=device)
        try:
            policy: Policy
            if model is not None:
                policy = Coordinator.untrained(model, len(session.pool), seed=seed)
            else:
                policy = RandomPolicy(len(session.pool))
            rng = np.random.default_rng(seed) if sample or model is None else None
            episode = session.run(
                run_episode(
                    policy,
                    session.pool,
                    the_task,
                    EpisodeSettings(
                        suite=task_suite.name,
                        max_turns=max_turns,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        prompts=loaded,
                    ),
                    rng=rng,
                    seed=seed,
                )
            )
        finally:
            if model is not None:
                model.close()
        try:
            store.add_episode(episode)
        except StoreError as exc:  # the database broke while it played: keep the episode
            raise type(exc)(f"{exc}; {_rescue_episode(episode)}") from exc
    return episode


def _rescue_episode(episode: Episode) -> str:
    """Write an episode the database refused to a private file in the temporary folder;
    returns what to tell the user (where it is, or that it could not be kept)."""
    import json
    import tempfile

    from workbench.core.outputs import OutputError, write_text

    path = Path(tempfile.gettempdir()) / f"trinity-workbench-episode-{episode.id}.json"
    try:
        write_text(path, json.dumps(episode.to_dict(), indent=2, ensure_ascii=False))
    except OutputError as exc:
        return f"the episode could not be kept either ({exc})"
    return f"the episode that played was saved to {path} instead"


def _check_resume_config(stored: RunConfig, given: RunConfig | None) -> RunConfig:
    """Resuming uses the stored config; only the budget may change (to extend a run)."""
    if given is None:
        return stored
    a, b = stored.to_dict(), given.to_dict()
    changed = [
        f"{s}.{k}" for s in a if s not in ("budget", "run") for k in a[s] if a[s][k] != b[s][k]
    ]
    # where episodes run changes no result (training.executors): it may change on resume
    free = ("name", "executor", "actors")
    changed += [f"run.{k}" for k in a["run"] if k not in free and a["run"][k] != b["run"][k]]
    if changed:
        raise ConfigError(
            f"the config differs from the run's stored config in {', '.join(changed)}: "
            "only [budget], run.executor and run.actors may change on resume (start a new "
            "run for anything else)"
        )
    run = {**a["run"], "executor": b["run"]["executor"], "actors": b["run"]["actors"]}
    return stored.replace(budget=b["budget"], run=run)


def train(
    config: RunConfig | None,
    workspace: Workspace,
    *,
    resume: str | None = None,
    listeners: Sequence[Listener] = (),
    stop: StopToken | None = None,
    backbone: Backbone | None = None,
    ray_address: str | None = None,
) -> str:
    """Train a new run from ``config``, or resume run ``resume``; returns the run id.
    Raises ``RunLocked`` (changing nothing) if another process drives that run. With
    ``run.executor = "ray"`` the training episodes run on Ray actors (``ray_address``, else
    ``RAY_ADDRESS``, else a Ray instance on this machine): an unreachable cluster is an
    ``ExecutorError`` before anything is stored."""
    with Store.open(workspace) as store, contextlib.ExitStack() as held:
        if resume is not None:
            record = store.get_run(resume)
            held.enter_context(run_lock(workspace, record.id, store))
            record = store.get_run(record.id)  # as the previous holder left it
            config = _check_resume_config(record.config(), config)
            if config.to_dict() != record.config_data:
                store.update_run_config(record.id, config.to_dict())
        assert config is not None
        suite = load_suite(config.tasks.suite, workspace)
        stop = stop or StopToken()
        executor = held.enter_context(open_executor(config, ray_address, stop))
        backbone = backbone_for(config, backbone)
        session = open_pool(config, store, workspace)
        cache = session.cache
        trainer = Trainer(
            config,
            store,
            suite=suite,
            pool=session.pool,
            backbone=backbone,
            listeners=listeners,
            stop=stop,
            cache_stats=(lambda: cache.hits) if cache is not None else None,
            executor=executor,
        )
        if resume is not None:
            trainer.resume(resume)
        else:
            # a new id: no one else can know it yet, so the lock is free
            held.enter_context(run_lock(workspace, trainer.start()))
        session.run(trainer.run_async())
        return trainer.current_run_id


@contextlib.contextmanager
def open_executor(
    config: RunConfig, ray_address: str | None, stop: StopToken
) -> Iterator[Executor | None]:
    """The run's executor: None for ``local`` (the trainer plays episodes itself), the Ray
    executor for ``ray``, closed (its actors stopped) when the run ends."""
    if config.run.executor == "local":
        yield None
        return
    from workbench.core.training.ray_executor import ExecutorError, RayExecutor, recipe_for

    if cache_policy(config) == "replay-only":
        raise ExecutorError(
            'cache.policy = "replay-only" cannot be kept on Ray: the actors\' workers do not '
            'read the workspace\'s response cache; use run.executor = "local" to replay it'
        )
    executor = RayExecutor(
        recipe_for(config), actors=config.run.actors, address=ray_address, stop=stop
    )
    try:
        yield executor
    finally:
        executor.close()


@dataclass(frozen=True)
class EvaluationResult:
    report: Any  # evaluate.Report
    run_id: str  # the evaluation's own run record (its episodes are replayable)


@dataclass(frozen=True)
class EvaluationSource:
    """What an evaluation evaluates: a trained run's best vector or a coordinator file,
    with the config it was trained under and its pool (worker ids, in the head's order)."""

    config: RunConfig
    pool: tuple[str, ...]
    backbone_model: str
    run_id: str | None = None
    coordinator_file: str | None = None

    @property
    def reference(self) -> dict[str, str]:
        """How the evaluation's run record names its source."""
        if self.run_id is not None:
            return {"run": self.run_id}
        return {"coordinator_file": str(self.coordinator_file)}

    @property
    def baselines(self) -> list[str]:
        """The baselines an evaluation of this source can run (see ``evaluate.baseline_names``)."""
        from workbench.core.evaluate import baseline_names

        return baseline_names(self.pool, self.config.protocol.max_turns)


EVALUABLE = ("finished", "stopped")


def evaluable_runs(workspace: Workspace) -> list[Any]:
    """The training runs an evaluation can take (finished or stopped), newest first."""
    with Store.open(workspace) as store:
        runs = store.list_runs(kind="train")
    return [r for r in reversed(runs) if effective_status(r) in EVALUABLE]


def evaluation_source(
    workspace: Workspace, *, run: str | None = None, coordinator_file: str | Path | None = None
) -> EvaluationSource:
    """Describe a run (id or prefix) or a coordinator file for evaluation, without loading
    a backbone; raises ``RunNotFound``, ``ConfigError`` or ``CoordinatorFileError`` with a
    readable message."""
    with Store.open(workspace) as store:
        return _evaluation_source(store, run, coordinator_file, workspace)


def _evaluation_source(
    store: Store,
    run: str | None,
    coordinator_file: str | Path | None,
    workspace: Workspace | None = None,
) -> EvaluationSource:
    from workbench.core.export import read_manifest

    if run is not None:
        record = store.get_run(run)
        config = record.config()
        pool = tuple(wid for wid, _ in describe_pool(config.pool.workers, workspace=workspace))
        return EvaluationSource(config, pool, config.backbone.model, run_id=record.id)
    if coordinator_file is not None:
        manifest = read_manifest(coordinator_file)
        config = RunConfig.from_stored(manifest["training"]["config"], str(coordinator_file))
        pool = tuple(w["id"] for w in manifest["pool"])
        return EvaluationSource(
            config, pool, manifest["backbone"]["model"], coordinator_file=str(coordinator_file)
        )
    raise InvalidInput(
        "evaluate what? give a run (--run RUN) or a coordinator file (--coordinator FILE)"
    )


def evaluate_run(
    workspace: Workspace,
    *,
    run: str | None = None,
    coordinator_file: str | None = None,
    suite: str | None = None,
    split: str = "test",
    baselines: bool | Sequence[str] = True,
    out_dir: str | Path | None = None,
    backbone: Backbone | None = None,
    progress: Callable[[Any], None] | None = None,
    stop: StopToken | None = None,
    final_turn: str = "free",
) -> EvaluationResult:
    """Evaluate a trained run's best vector, or a coordinator file, on a split.

    ``baselines``: all (True), none (False) or the names to run (``EvaluationSource.baselines``).
    ``progress`` hears an ``EvaluationProgress`` per episode; ``stop`` ends the evaluation
    early: its run record is then ``stopped`` and ``EvaluationStopped`` is raised.
    ``final_turn``: ``free`` (the paper's protocol) or ``worker`` (an episode's turn that
    would end it without a Worker's answer is played as a Worker, as ``serve`` does).
    """
    from workbench.core.evaluate import EvaluationStopped, evaluate
    from workbench.core.export import load_coordinator

    with Store.open(workspace) as store:
        source = _evaluation_source(store, run, coordinator_file, workspace)
        config = source.config
        if split not in ("train", "validation", "test"):
            raise InvalidInput(f"unknown split '{split}': use train, validation or test")
        if suite is not None:
            config = config.replace(tasks={"suite": suite})
        task_suite = load_suite(config.tasks.suite, workspace)
        tasks = task_splits(config, task_suite)[split]
        backbone = backbone_for(config, backbone, source.backbone_model)
        if source.run_id is not None:
            vector, _ = best_vector(store, source.run_id)
            coordinator = coordinator_from_vector(
                backbone, len(source.pool), vector, config.optimizer.svf
            )
        else:
            assert source.coordinator_file is not None  # a source is a run or a file
            coordinator, _ = load_coordinator(source.coordinator_file, backbone)
        session = open_pool(config, store, workspace)  # a worker that cannot serve: nothing stored
        eval_id = store.create_run(
            f"eval of {source.reference}",
            "eval",
            {
                **config.to_dict(),
                "evaluation": {**source.reference, "split": split, "final_turn": final_turn},
            },
        )
        try:
            p = config.protocol
            report, episodes = session.run(
                evaluate(
                    coordinator,
                    session.pool,
                    tasks,
                    suite=task_suite.name,
                    split=split,
                    max_turns=p.max_turns,
                    temperature=p.temperature,
                    max_tokens=p.max_tokens,
                    seed=config.run.seed,
                    concurrency=config.optimizer.concurrency,
                    baselines=baselines,
                    run_id=eval_id,
                    progress=progress,
                    stop=stop,
                    thinker_suggests_role=p.thinker_suggests_role,
                    final_turn=final_turn,
                    roles=p.roles,
                )
            )
        except EvaluationStopped:
            store.set_run_status(eval_id, "stopped", stop_reason="stopped")
            raise
        except Exception as exc:
            store.set_run_status(
                eval_id, "failed", stop_reason="error", error=f"{type(exc).__name__}: {exc}"
            )
            raise
        report = dataclasses.replace(report, spend=spend_kind(source.pool))
        store.add_episodes(episodes)
        store.set_run_status(
            eval_id, "finished", stop_reason="done", result={"report": report.to_json()}
        )
    if out_dir is not None:
        report.write(out_dir)
    return EvaluationResult(report, eval_id)


def export_run(
    workspace: Workspace, run: str, out: str | Path, backbone: Backbone | None = None
) -> Path:
    """Write a run's best-on-validation coordinator to a coordinator file; ``out`` is a
    file, or a folder to write ``coordinator-RUNID.safetensors`` in (``export.resolve_out``)."""
    from workbench.core.export import resolve_out, save_coordinator

    with Store.open(workspace) as store:
        record = store.get_run(run)
        default_name = f"coordinator-{record.id[:8]}"
        out = resolve_out(out, default_name)  # a bad place fails before the backbone loads
        config = record.config()
        vector, checkpoint = best_vector(store, record.id)
        backbone = backbone_for(config, backbone)
        pool = describe_pool(config.pool.workers, workspace=workspace)
        coordinator = coordinator_from_vector(backbone, len(pool), vector, config.optimizer.svf)
        training = {
            "run_id": record.id,
            "name": record.name,
            "optimizer": config.optimizer.name,
            "generations": checkpoint.generation + 1,
            "best_validation": checkpoint.best_validation,
            "best_validation_generation": checkpoint.best_validation_generation,
            "spend": asdict(checkpoint.spend),
            "config": config.to_dict(),
        }
        return save_coordinator(
            out,
            coordinator,
            pool=[{"id": wid, "model": model} for wid, model in pool],
            backbone_source=config.backbone.model,
            max_turns=config.protocol.max_turns,
            training=training,
            default_name=default_name,
        )


# 97.5% quantiles of Student's t for 1..30 degrees of freedom (two-sided 95% intervals)
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean reward and its 95% t-interval over seeds, clipped to the rewards' range [0, 1]
    (one value: the interval is the point)."""
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return mean, mean, mean
    half = (_T975[n - 2] if n - 1 <= len(_T975) else 1.96) * statistics.stdev(values) / math.sqrt(n)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


@dataclass(frozen=True)
class StudyRow:
    optimizer: str
    validation: tuple[float, float, float]  # mean, ci_low, ci_high over seeds
    test: tuple[float, float, float]
    runs: tuple[str, ...]
    episodes: int  # training episodes per run (the shared budget)
    # test reward per category (suite, benchmark) over seeds: name -> mean, ci_low, ci_high
    test_by_group: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    tests: tuple[float, ...] = ()  # each seed's test reward


@dataclass(frozen=True)
class Study:
    """Each optimizer's final validation and test reward over seeds, with the test reward of
    the references a reader needs to judge them, measured on the same test tasks and seeds
    (``references``: name -> mean, ci_low, ci_high): the best single worker, chosen per
    seed on the VALIDATION split (``best_single``: the chosen worker of each seed) and
    reported on test, and, on a simulated pool, the one-turn oracle ("oracle") and, over
    more than one turn, the multi-turn oracle."""

    rows: tuple[StudyRow, ...]
    seeds: int
    budget: dict[str, Any]
    references: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    best_single: tuple[str, ...] = ()
    # the references' test reward per category: reference -> category -> interval
    reference_groups: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)
    power: PowerEstimate | None = None  # seeds and test tasks needed for a margin
    # what a paper-faithful study (``paper=True``) set for every optimizer: "section.key" -> value
    paper_settings: dict[str, Any] = field(default_factory=dict)

    def group_rows(self) -> list[tuple[str, str, tuple[float, float, float]]]:
        """(optimizer or reference, category, test interval): one row per category and
        the total ("all"); empty when the test tasks have a single category."""
        named = [(r.optimizer, r.test_by_group, r.test) for r in self.rows]
        named += [
            (name, self.reference_groups.get(name, {}), ci) for name, ci in self.references.items()
        ]
        groups = sorted({g for _, by, _ in named for g in by})
        if len(groups) < 2:
            return []
        rows = []
        for name, by, total in named:
            rows += [(name, g, by[g]) for g in groups if g in by]
            rows.append((name, "all", total))
        return rows

    def to_dict(self) -> dict[str, Any]:
        interval = ("mean", "ci_low", "ci_high")
        return {
            "seeds": self.seeds,
            "budget": self.budget,
            "optimizers": [
                {
                    "optimizer": r.optimizer,
                    "validation": dict(zip(interval, r.validation, strict=True)),
                    "test": dict(zip(interval, r.test, strict=True)),
                    "runs": list(r.runs),
                    "episodes": r.episodes,
                    "test_by_group": {
                        g: dict(zip(interval, ci, strict=True)) for g, ci in r.test_by_group.items()
                    },
                }
                for r in self.rows
            ],
            "references": {
                name: {
                    "test": dict(zip(interval, ci, strict=True)),
                    "test_by_group": {
                        g: dict(zip(interval, c, strict=True))
                        for g, c in self.reference_groups.get(name, {}).items()
                    },
                }
                for name, ci in self.references.items()
            },
            "best_single_chosen_on_validation": list(self.best_single),
            "power": None if self.power is None else self.power.to_dict(),
            "paper": bool(self.paper_settings),
            "paper_settings": dict(self.paper_settings),
        }

    def table(self) -> str:
        lines = [f"{self.seeds} seeds each; budget {self.budget}"]
        if self.paper_settings:
            same = ", ".join(f"{k} = {v}" for k, v in self.paper_settings.items())
            lines.append(f"paper-faithful: for every optimizer {same}")
        lines += [
            "",
            f"{'optimizer':17s} {'validation (95% CI)':26s} {'test (95% CI)':26s} episodes/run",
        ]
        for r in self.rows:
            v, t = r.validation, r.test
            lines.append(
                f"{r.optimizer:17s} {v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]      "
                f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]      {r.episodes}"
            )
        for name, t in self.references.items():
            lines.append(f"{name:17s} {'':26s} {t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]")
        if self.best_single:
            chosen = ", ".join(dict.fromkeys(self.best_single))
            lines.append(f"(best single: chosen on validation, per seed: {chosen})")
        if self.group_rows():
            lines += ["", f"{'test per category':17s} {'category':12s} test (95% CI)"]
            for name, g, t in self.group_rows():
                lines.append(f"{name:17s} {g:12s} {t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]")
        if self.power is not None:
            lines += ["", self.power.text()]
        return "\n".join(lines)


# study rows that are not optimizers: on a simulated pool "oracle" is the one-turn oracle
# (the best worker per category) and, at max_turns > 1, MULTI_TURN_ORACLE the exact best plan
REFERENCES = ("best single", "oracle", MULTI_TURN_ORACLE)


def study_optimizers(
    config: RunConfig,
    workspace: Workspace,
    *,
    seeds: int = 3,
    optimizers: Sequence[str] | None = None,
    progress=None,
    backbone: Backbone | None = None,
    margin: float = 0.05,
    paper: bool = False,
) -> Study:
    """Train every optimizer under the same config and budget with ``seeds`` seeds, and
    report the final validation and test reward of each with 95% intervals.

    The first optimizer's runs also evaluate every single worker on the validation split
    and on the test split (and the sandbox oracle on test): the worker best on validation
    is each seed's "best single" reference, reported on test. With ``optimizer.svf``
    every optimizer must be able to search SVF offsets (no optimizer is given a setting
    the others lack). ``margin``: the difference of test reward the power estimate
    (``power.PowerEstimate``) sizes seeds and test tasks for.

    ``paper``: a paper-faithful study (``paper_config``): the paper's settings, one SVF
    setting and one budget in episodes (and calls) for every optimizer."""
    from workbench.core.config import OPTIMIZERS, RANKING_OPTIMIZERS

    optimizers = tuple(optimizers or OPTIMIZERS)
    unknown = [o for o in optimizers if o not in OPTIMIZERS]
    if unknown:
        raise InvalidInput(
            f"unknown optimizer(s) {', '.join(unknown)}: choose from {', '.join(OPTIMIZERS)}"
        )
    if seeds < 1:
        raise InvalidInput("--seeds must be at least 1")
    if not 0 < margin <= 1:
        raise InvalidInput(f"--margin must lie in (0, 1], got {margin}: e.g. 0.05")
    test_tasks = 0
    backbone = backbone_for(config, backbone)
    forced: dict[str, Any] = {}
    if paper:
        config, forced = paper_config(config, optimizers, backbone)
        if backbone.input != config.backbone.input:  # the paper reads raw text
            backbone = backbone_for(config)
    others = [o for o in optimizers if o not in RANKING_OPTIMIZERS]
    for key, can, off in (
        ("svf", "search SVF offsets", "false"),
        ("exploring_starts", "widen their openings", "0"),
    ):
        value = getattr(config.optimizer, key)
        if value and others:
            raise ConfigError(
                f"optimizer.{key} = {str(value).lower()}, but {', '.join(others)} cannot "
                f"{can}: a study gives every optimizer the same setting, so set {key} = "
                f"{off}, or compare only {','.join(RANKING_OPTIMIZERS)} (--optimizers)"
            )
    rows: list[Any] = []
    references: dict[str, list[Any]] = {name: [] for name in REFERENCES}
    best_single: list[str] = []
    ref_groups: dict[str, dict[str, list[float]]] = {name: {} for name in REFERENCES}
    for name in optimizers:
        vals, tests, run_ids, episodes = [], [], [], 0
        test_groups: dict[str, list[float]] = {}
        for s in range(seeds):
            cfg = config.replace(
                run={"name": f"study {name} seed {s}", "seed": config.run.seed + s},
                optimizer={"name": name},
            )
            run_id = train(cfg, workspace, backbone=backbone)
            with Store.open(workspace) as store:
                result = store.get_run(run_id).run_result()
            val = (result.best_validation if result is not None else None) or 0.0
            first = name == optimizers[0]  # the same test tasks and seed for every optimizer
            systems = evaluate_run(
                workspace, run=run_id, baselines=first, backbone=backbone
            ).report.systems
            test, test_tasks = systems[0].accuracy, systems[0].n
            _add_groups(test_groups, systems[0].by_group)
            if first:
                chosen = _best_single_on_validation(workspace, run_id, backbone)
                best_single.append(chosen)
                for ref, system_name in (
                    ("best single", chosen),
                    ("oracle", "oracle"),
                    (MULTI_TURN_ORACLE, MULTI_TURN_ORACLE),
                ):
                    for x in systems:
                        if x.name == system_name:
                            references[ref].append(x.accuracy)
                            _add_groups(ref_groups[ref], x.by_group)
            vals.append(val)
            tests.append(test)
            run_ids.append(run_id)
            episodes = int(result.spend.get("episodes", 0)) if result is not None else 0
            if progress:
                progress(
                    f"{name} seed {s}: validation {val:.3f}, test {test:.3f} (run {run_id[:8]})"
                )
        rows.append(
            StudyRow(
                name,
                mean_ci(vals),
                mean_ci(tests),
                tuple(run_ids),
                episodes,
                {g: mean_ci(v) for g, v in test_groups.items()},
                tuple(tests),
            )
        )
    return Study(
        tuple(rows),
        seeds,
        dict(config.to_dict()["budget"]),
        {name: mean_ci(values) for name, values in references.items() if values},
        tuple(best_single),
        {
            name: {g: mean_ci(v) for g, v in groups.items()}
            for name, groups in ref_groups.items()
            if groups
        },
        PowerEstimate.of([list(r.tests) for r in rows], test_tasks, margin),
        forced,
    )


# What a paper-faithful study sets for every optimizer (keys a config lacks are skipped):
# the paper's parametrisation and fitness, none of the project's or the released run's
# options (docs/METHOD.md).
PAPER_SETTINGS: dict[str, dict[str, Any]] = {
    "backbone": {"input": "raw"},
    "optimizer": {
        "search_basis": "identity",
        "sigma0_scale": "literal",
        "cost_penalty": 0.0,
        "turn_penalty": 0.0,
        "diversity_bonus": 0.0,
        "turn_bonus": 0.0,
        "restarts": 0,
        "exploring_starts": 0,
    },
    "protocol": {"thinker_suggests_role": False},
}


def paper_config(
    config: RunConfig, optimizers: Sequence[str], backbone: Backbone
) -> tuple[RunConfig, dict[str, Any]]:
    """The config a paper-faithful study gives every optimizer, and what it set
    ("section.key" -> value):

    - ``PAPER_SETTINGS`` (identity search basis, plain mean reward as fitness, ...);
    - SVF as the config says when every optimizer can search it, else off for all;
    - one budget in episodes for all: ``budget.episodes`` if set, else ``generations`` x
      sep-CMA-ES's episodes per generation (population x rollouts); ``budget.calls``
      stays as given, the same for all; the generation limit is lifted (set to the
      episode budget), so no optimizer stops early because its generations are smaller.
    """
    from workbench.core.config import SVF_OPTIMIZERS
    from workbench.core.coordinator import HeadConfig
    from workbench.core.optimizers.base import default_popsize

    data = config.to_dict()
    forced: dict[str, Any] = {}
    for section, values in PAPER_SETTINGS.items():
        for key, value in values.items():
            if key in data[section]:
                data[section][key] = value
                forced[f"{section}.{key}"] = value
    svf = config.optimizer.svf and all(o in SVF_OPTIMIZERS for o in optimizers)
    data["optimizer"]["svf"] = svf
    forced["optimizer.svf"] = svf
    b = config.budget
    episodes = b.episodes
    if not episodes:
        n = HeadConfig(len(describe_pool(config.pool.workers)), backbone.hidden_size).n_params
        if svf:
            n += backbone.svf().n_params
        popsize = config.optimizer.popsize or default_popsize(n)
        episodes = b.generations * popsize * config.optimizer.rollouts
    data["budget"].update(episodes=episodes, generations=episodes)
    forced["budget.episodes"] = episodes
    if b.calls:
        forced["budget.calls"] = b.calls
    return RunConfig.from_dict(data), forced


def _add_groups(into: dict[str, list[float]], by_group: dict[str, Any]) -> None:
    """Append one evaluation's accuracy per category to ``into`` (category -> values)."""
    for group, result in sorted(by_group.items()):
        into.setdefault(group, []).append(result.accuracy)


def _best_single_on_validation(workspace: Workspace, run_id: str, backbone: Backbone) -> str:
    """The single worker (``single:<id>``) with the highest accuracy on the run's
    validation split; a tie goes to the earlier worker in the pool."""
    source = evaluation_source(workspace, run=run_id)
    singles = [b for b in source.baselines if b.startswith("single:")]
    report = evaluate_run(
        workspace, run=run_id, split="validation", baselines=singles, backbone=backbone
    ).report
    scored = [x for x in report.systems if x.kind == "single"]
    return max(scored, key=lambda x: (x.accuracy, -scored.index(x))).name
