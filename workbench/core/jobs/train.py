"""The train job: a new run from a ``RunConfig``, or a stopped one resumed from its
checkpoint (only the budget and where episodes run may change), on this process or on Ray
actors. It holds the run's lock (``shared.run_lock``) from before it changes anything until
the run stops.

The job is where a run's config is read: the suite, the backbone, the pool and the executor
(with the Ray actors' recipe, ``recipe_for``) each from their own keys, and the trainer's
typed settings (``shared.train_plan``); a resume reads the stored config back and builds
the same from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from workbench.core.config import ConfigError, RunConfig
from workbench.core.coordinator import Backbone
from workbench.core.coordinator.feature_store import FeatureStore
from workbench.core.jobs.shared import (
    backbone_for,
    cache_policy,
    new_train_run,
    open_pool,
    run_day,
    run_lock,
    train_plan,
)
from workbench.core.progress import StageListener
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.events import Listener, StopToken
from workbench.core.training.executors import Executor
from workbench.core.training.ray_executor import ActorRecipe
from workbench.core.training.trainer import Trainer
from workbench.core.workers.recorded import RecordedPool, imported_names_in, load_recorded_pool
from workbench.core.workspace import Workspace


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


def default_run_name(config: RunConfig, when: float | None = None) -> str:
    """A new run's name when none is given: the config's ``run.name`` and the day it
    starts (``sandbox routing, Dec 6``: ``shared.run_day``); the store adds a counter to
    a name the workspace has (``sandbox routing, Dec 6 (2)``)."""
    return f"{config.run.name}, {run_day(when)}"


def train(
    config: RunConfig | None,
    workspace: Workspace,
    *,
    resume: str | None = None,
    name: str | None = None,
    listeners: Sequence[Listener] = (),
    stop: StopToken | None = None,
    backbone: Backbone | None = None,
    ray_address: str | None = None,
    stages: StageListener | None = None,
) -> str:
    """Train a new run from ``config``, or resume run ``resume``; returns the run id.
    A new run is named ``name`` as given, else ``default_run_name`` made unique in the
    workspace; a resumed one keeps its name. ``stages`` hears the steps before the
    first generation (loading the backbone and the workers' models).
    Raises ``RunLocked`` (changing nothing) if another process drives that run. With
    ``run.executor = "ray"`` the training episodes run on Ray actors (``ray_address``, else
    ``RAY_ADDRESS``, else a Ray instance on this machine): an unreachable cluster is an
    ``ExecutorError`` before anything is stored."""
    with Store.open(workspace) as store, contextlib.ExitStack() as held:
        run_id = None
        if resume is not None:
            record = store.get_run(resume)
            run_id = record.id
            held.enter_context(run_lock(workspace, run_id, store))
            record = store.get_run(run_id)  # as the previous holder left it
            config = _check_resume_config(record.config(), config)
            if config.to_dict() != record.config_data:
                store.update_run_config(record.id, config.to_dict())
        assert config is not None
        suite = load_suite(config.tasks.suite, workspace)
        stop = stop or StopToken()
        executor = held.enter_context(open_executor(config, ray_address, stop, workspace))
        backbone = backbone_for(config, backbone, stages=stages)
        session = open_pool(config, store, workspace, stages)
        cache = session.cache
        plan = train_plan(config, suite.name, session.pool)
        # a run on a routing table reads its query features from the workspace, where
        # an earlier run, fold or method on the same questions kept them
        features = (
            held.enter_context(FeatureStore(workspace.features_path))
            if plan.table_reason is None
            else None
        )
        trainer = Trainer(
            plan,
            store,
            suite=suite,
            pool=session.pool,
            backbone=backbone,
            listeners=listeners,
            stop=stop,
            cache_stats=(lambda: cache.hits) if cache is not None else None,
            executor=executor,
            feature_store=features,
        )
        if run_id is None:
            # a new id: no one else can know it yet, so the lock is free
            run_id = new_train_run(store, config, name or default_run_name(config), name is None)
            held.enter_context(run_lock(workspace, run_id))
        trainer.attach(run_id)
        session.run(trainer.run_async())
        return run_id


@contextlib.contextmanager
def open_executor(
    config: RunConfig,
    ray_address: str | None,
    stop: StopToken,
    workspace: Workspace | None = None,
) -> Iterator[Executor | None]:
    """The run's executor: None for ``local`` (the trainer plays episodes itself), the Ray
    executor for ``ray`` (the imported recorded pools the run names, read from
    ``workspace``, travel with it), closed (its actors stopped) when the run ends."""
    if config.run.executor == "local":
        yield None
        return
    from workbench.core.training.ray_executor import ExecutorError, RayExecutor

    if cache_policy(config) == "replay-only":
        raise ExecutorError(
            'cache.policy = "replay-only" cannot be kept on Ray: the actors\' workers do not '
            'read the workspace\'s response cache; use run.executor = "local" to replay it'
        )
    executor = RayExecutor(
        recipe_for(config),
        actors=config.run.actors,
        address=ray_address,
        stop=stop,
        recorded=recorded_pools(config, workspace),
    )
    try:
        yield executor
    finally:
        executor.close()


def recipe_for(config: RunConfig) -> ActorRecipe:
    """The Ray actors' recipe for ``config``: its backbone and the registered specs of its
    pool's workers (read here, on the driver, so every actor builds the same pool)."""
    from workbench.core.workers.pool import registered_specs

    b = config.backbone
    return ActorRecipe(
        model=b.model,
        device=b.device,
        precision=b.precision,
        input=b.input,
        svf_layer=config.optimizer.svf_layer,
        worker_ids=tuple(config.pool.workers),
        specs={wid: s.to_toml() for wid, s in registered_specs(config.pool.workers).items()},
        concurrency=config.optimizer.concurrency,
    )


def recorded_pools(config: RunConfig, workspace: Workspace | None) -> dict[str, RecordedPool]:
    """The imported recorded pools ``config``'s pool names, read from ``workspace`` on the
    driver: they travel with the job to the Ray actors, which have no workspace."""
    from workbench.core.training.ray_executor import ExecutorError

    names = imported_names_in(config.pool.workers)
    if not names:
        return {}
    if workspace is None:
        raise ExecutorError(
            f"the pool names imported recorded pool(s) {', '.join(names)}, and no workspace "
            "was given to read them from: pass --workspace"
        )
    return {name: load_recorded_pool(workspace, name) for name in names}
