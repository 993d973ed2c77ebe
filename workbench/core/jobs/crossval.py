"""k-fold cross-validated training and evaluation, for seeing a small effect on a small
suite (docs/guides/recorded-pools.md, "Cross-validated evaluation").

The suite's tasks are dealt into k folds, seeded and stratified by category, so every
task is tested exactly once. For each fold a coordinator is trained on the other folds
(a seeded quarter of them for validation, which picks the result head) and evaluated on
the fold beside every single worker, random routing and, on a recorded pool, the
recorded oracle (any single worker right). The k test folds together give one result per
task and system, so systems are compared task by task: the paired difference against the
best single worker, with a bootstrap 95% interval and an exact sign test, overall and
per category. Each fold's training run and evaluation are stored like any other.

A run that routes a recorded pool in one Worker turn (``training/table.py``) is
cross-validated on its routing table: the table and the query features are built once
(the features kept in the workspace's feature store), every fold's coordinator trains on
the table, and beside it every simple router of ``routers.py`` learns from the same
training share and makes its own choices on the same validation share; ``repeats`` deals
the folds again with the next seeds and a task's reward is its mean over them. The report
is stored as a ``crossval`` run. What the report holds and says is ``crossval_report.py``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.config import RunConfig, routing_table_reason
from workbench.core.coordinator import Backbone
from workbench.core.coordinator.feature_store import FeatureStore, stored_features
from workbench.core.errors import InvalidInput
from workbench.core.evaluate import baseline_names, evaluate
from workbench.core.jobs.crossval_report import (
    CrossValReport,
    summarise_folds,
)
from workbench.core.jobs.evaluate import stored_evaluation
from workbench.core.jobs.shared import backbone_for, new_train_run, open_pool, train_plan
from workbench.core.protocol import EpisodeSettings
from workbench.core.records import Episode, RunStopReason
from workbench.core.routers import Routed, Split, simple_routers
from workbench.core.store import Store
from workbench.core.store.lifecycle import RunLife
from workbench.core.tasks.model import Suite, Task
from workbench.core.tasks.suites import load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.events import Listener
from workbench.core.training.executors import coordinator_from_vector
from workbench.core.training.table import DecidedPolicy, RoutingTable, build_routing_table
from workbench.core.training.trainer import Trainer
from workbench.core.transcript import render_transcript
from workbench.core.workers.base import pool_covers
from workbench.core.workspace import Workspace

VALIDATION_SHARE = 0.25  # of a fold's training tasks: the paper's 20/60 split's ratio
# the coordinator at the paper's settings, beside the config's own (``paper_settings``)
PAPER_SETTINGS: dict[str, dict[str, Any]] = {
    "optimizer": {"recorded_defaults": False, "rollouts": 16, "search_basis": "identity"},
    "budget": {"generations": 60},
}


# --------------------------------------------------------------------------- folds


def make_folds(tasks: Sequence[Task], k: int, seed: int) -> list[tuple[Task, ...]]:
    """``tasks`` dealt into ``k`` folds: each category's tasks (in id order) shuffled with
    ``seed`` and dealt in turn, continuing where the previous category stopped, so the
    folds' sizes differ by at most one and each holds its share of every category. Every
    task is in exactly one fold."""
    if not 2 <= k <= len(tasks):
        raise InvalidInput(f"--folds {k}: use at least 2 folds and at most one per task")
    rng = random.Random(seed)
    by_group: dict[str, list[Task]] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        by_group.setdefault(task.group, []).append(task)
    folds: list[list[Task]] = [[] for _ in range(k)]
    dealt = 0
    for group in sorted(by_group):
        members = by_group[group]
        rng.shuffle(members)
        for task in members:
            folds[dealt % k].append(task)
            dealt += 1
    return [tuple(f) for f in folds]


def fold_suite(suite: Suite, folds: Sequence[Sequence[Task]], index: int, seed: int) -> Suite:
    """``suite`` with fold ``index`` as its test split and the other folds as training
    and validation (a seeded ``VALIDATION_SHARE`` of them), each task's split set."""
    test = {t.id for t in folds[index]}
    rest = sorted((t for i, f in enumerate(folds) if i != index for t in f), key=lambda t: t.id)
    random.Random(f"{seed}:{index}").shuffle(rest)
    n_val = max(1, round(len(rest) * VALIDATION_SHARE))
    validation = {t.id for t in rest[:n_val]}
    tasks = tuple(
        dataclasses.replace(
            t, split="test" if t.id in test else "validation" if t.id in validation else "train"
        )
        for t in suite.tasks
    )
    return dataclasses.replace(suite, tasks=tasks)


# --------------------------------------------------------------------------- the job


@dataclass(frozen=True, kw_only=True)
class FoldProgress:
    """A fold's training or evaluation started or ended; or (``stage`` "table",
    "features") the routing table or the query features built so far (``done`` of
    ``total`` tasks)."""

    fold: int  # 1-based
    folds: int
    stage: str  # "table", "features", "training", "trained", "evaluated"
    run_id: str | None = None
    seconds: float = 0.0
    repeat: int = 1  # 1-based, of ``repeats``
    repeats: int = 1
    done: int = 0
    total: int = 0


def cross_validate(
    config: RunConfig,
    workspace: Workspace,
    *,
    folds: int = 5,
    seed: int | None = None,
    repeats: int = 1,
    paper_settings: bool = False,
    backbone: Backbone | None = None,
    listeners: Sequence[Listener] = (),
    progress: Callable[[FoldProgress], None] | None = None,
) -> CrossValReport:
    """Train and evaluate ``config`` with k-fold cross-validation on its suite (its
    tasks.train / validation / test sizes are ignored: every task is used, each tested
    once). ``seed`` deals the folds (default ``config.tasks.split_seed``); each fold's run
    is trained with ``config.run.seed``. On a routing table (a recorded pool in one
    Worker turn) every simple router is compared too, ``repeats`` deals the folds with
    seeds ``seed``, ``seed + 1``, ... and ``paper_settings`` adds a coordinator trained
    at the paper's settings (``PAPER_SETTINGS``). Returns the cross-validated report."""
    seed = config.tasks.split_seed if seed is None else seed
    if repeats < 1:
        raise InvalidInput(f"--repeats {repeats}: deal the folds at least once")
    reason = routing_table_reason(config)
    if reason is not None and (repeats > 1 or paper_settings):
        raise InvalidInput(
            "--repeats and --paper-settings need a run that routes a recorded pool in one "
            f"Worker turn, which this one does not ({reason}): leave them out"
        )
    suite = load_suite(config.tasks.suite, workspace)
    seeds = [seed + r for r in range(repeats)]
    backbone = backbone_for(config, backbone)
    with Store.open(workspace) as store:
        life = RunLife.create(
            store,
            f"cross-validation of {config.run.name} on {suite.name}",
            "crossval",
            {**config.to_dict(), "crossval": {"folds": folds, "seeds": seeds}},
        )
        life.start()
        with life:
            if reason is None:
                report = _table_cross_validate(
                    config,
                    store,
                    suite,
                    workspace,
                    folds=folds,
                    seeds=seeds,
                    paper_settings=paper_settings,
                    backbone=backbone,
                    listeners=listeners,
                    progress=progress,
                )
            else:
                report = _fold_cross_validate(
                    config, store, suite, workspace, folds, seed, backbone, listeners, progress
                )
            report = dataclasses.replace(report, run_id=life.run_id)
            life.end(
                RunStopReason.DONE,
                {"crossval": json.loads(report.to_json())},
                spend=life.spent_by(report.runs + report.evaluations),
            )
    return report


def _fold_cross_validate(
    config: RunConfig,
    store: Store,
    suite: Suite,
    workspace: Workspace,
    folds: int,
    seed: int,
    backbone: Backbone,
    listeners: Sequence[Listener],
    progress: Callable[[FoldProgress], None] | None,
) -> CrossValReport:
    """``cross_validate`` of a run that plays its episodes (no routing table), stored in
    ``store``."""
    dealt = make_folds(suite.tasks, folds, seed)
    groups = {t.id: t.group for t in suite.tasks}
    rewards: dict[str, dict[str, float]] = {}
    costs: dict[str, dict[str, float]] = {}
    kinds: dict[str, str] = {}
    runs: list[str] = []
    evaluations: list[str] = []
    fold_config = config.replace(tasks={"train": 0, "validation": 0, "test": 0})
    session = open_pool(fold_config, store, workspace)
    ids = [w.id for w in session.pool]
    covered = {t.id for t in suite.tasks if pool_covers(session.pool, t)}

    async def all_folds() -> float:
        # one event loop for every fold: the pool's client is closed once, at the end
        trained = 0.0
        for index in range(folds):
            if progress is not None:
                progress(FoldProgress(fold=index + 1, folds=folds, stage="training"))
            cfg = fold_config.replace(
                run={"name": f"{config.run.name} (cv {index + 1}/{folds}, seed {seed})"}
            )
            started = time.perf_counter()
            trainer = Trainer(
                train_plan(cfg, suite.name, session.pool),
                store,
                suite=fold_suite(suite, dealt, index, seed),
                pool=session.pool,
                backbone=backbone,
                listeners=listeners,
            )
            run_id = new_train_run(store, cfg)
            trainer.attach(run_id)
            await trainer.run_async()
            seconds = time.perf_counter() - started
            trained += seconds
            runs.append(run_id)
            if progress is not None:
                progress(
                    FoldProgress(
                        fold=index + 1,
                        folds=folds,
                        stage="trained",
                        run_id=run_id,
                        seconds=seconds,
                    )
                )
            vector, _ = best_vector(store, run_id)
            coordinator = coordinator_from_vector(backbone, len(ids), vector, cfg.optimizer.svf)
            report, episodes, eval_id = await _evaluate_fold(
                cfg, coordinator, session.pool, dealt[index], suite.name, store
            )
            evaluations.append(eval_id)
            for s in report.systems:
                kinds[s.name] = s.kind
            for episode in episodes:
                name = report.systems[episode.candidate or 0].name
                rewards.setdefault(name, {})[episode.task_id] = episode.reward
                costs.setdefault(name, {})[episode.task_id] = episode.cost
            if progress is not None:
                progress(
                    FoldProgress(fold=index + 1, folds=folds, stage="evaluated", run_id=eval_id)
                )
        return trained

    trained = session.run(all_folds())
    return summarise_folds(
        suite.name,
        folds,
        seed,
        rewards,
        kinds,
        groups,
        train_seconds=trained,
        runs=runs,
        evaluations=evaluations,
        covered=covered,
        costs=costs,
    )


def _table_cross_validate(
    config: RunConfig,
    store: Store,
    suite: Suite,
    workspace: Workspace,
    *,
    folds: int,
    seeds: Sequence[int],
    paper_settings: bool,
    backbone: Backbone,
    listeners: Sequence[Listener],
    progress: Callable[[FoldProgress], None] | None,
) -> CrossValReport:
    """``cross_validate`` on the routing table (see the module's docstring), stored in
    ``store``."""

    def said(**event: Any) -> None:
        if progress is not None:
            progress(FoldProgress(folds=folds, repeats=len(seeds), **event))

    groups = {t.id: t.group for t in suite.tasks}
    fold_config = config.replace(tasks={"train": 0, "validation": 0, "test": 0})
    configs = {"coordinator": fold_config}
    if paper_settings:
        configs["coordinator (paper settings)"] = fold_config.replace(**PAPER_SETTINGS)
    per_seed: dict[str, dict[str, list[float]]] = {}
    kinds: dict[str, str] = {name: "coordinator" for name in configs}
    calls: dict[str, float] = {}
    chosen: dict[str, list[str]] = {}
    routing: dict[str, Counter[tuple[str, str]]] = {}
    curves: list[dict[str, Any]] = []
    runs: list[str] = []
    evaluations: list[str] = []
    trained = 0.0
    with FeatureStore(workspace.features_path) as features_kept:
        session = open_pool(fold_config, store, workspace)
        settings = EpisodeSettings.of(config.protocol, suite.name, max_turns=1)

        async def build() -> RoutingTable:
            return await build_routing_table(
                session.pool,
                suite.tasks,
                settings,
                progress=lambda done, total: said(fold=0, stage="table", done=done, total=total),
            )

        table = session.run(build())
        features = stored_features(
            backbone,
            features_kept,
            [render_transcript(t, ()) for t in suite.tasks],
            progress=lambda done, total: said(fold=0, stage="features", done=done, total=total),
        )

        def record(routed: Routed, split_tasks: Sequence[Task]) -> None:
            kinds[routed.name] = routed.kind
            calls[routed.name] = routed.calls
            if routed.chosen:
                chosen.setdefault(routed.name, []).append(routed.chosen)
            for task, reward in zip(split_tasks, routed.rewards, strict=True):
                per_seed.setdefault(routed.name, {}).setdefault(task.id, []).append(float(reward))
            if routed.kind in ("coordinator", "router"):
                counts = routing.setdefault(routed.name, Counter())
                for task, w in zip(split_tasks, routed.choices, strict=True):
                    counts[(task.group, table.workers[int(w)])] += 1

        async def all_folds() -> None:
            for r, fold_seed in enumerate(seeds):
                dealt = make_folds(suite.tasks, folds, fold_seed)
                for index in range(folds):
                    fs = fold_suite(suite, dealt, index, fold_seed)
                    by_split = {
                        name: [t for t in fs.tasks if t.split == name]
                        for name in ("train", "validation", "test")
                    }
                    split = Split(**{name: table.rows(ts) for name, ts in by_split.items()})
                    test = by_split["test"]
                    for name, cfg in configs.items():
                        said(fold=index + 1, stage="training", repeat=r + 1)
                        cfg = cfg.replace(
                            run={
                                "name": f"{config.run.name} ({name}, cv {index + 1}/{folds}, "
                                f"seed {fold_seed})"
                            }
                        )
                        trainer = Trainer(
                            train_plan(cfg, fs.name, session.pool),
                            store,
                            suite=fs,
                            pool=session.pool,
                            backbone=backbone,
                            listeners=listeners,
                            feature_store=features_kept,
                            table=table,
                        )
                        run_id = new_train_run(store, cfg)
                        trainer.attach(run_id)
                        t0 = time.perf_counter()
                        await trainer.run_async()
                        seconds = time.perf_counter() - t0
                        nonlocal trained
                        trained += seconds
                        runs.append(run_id)
                        said(
                            fold=index + 1,
                            stage="trained",
                            repeat=r + 1,
                            run_id=run_id,
                            seconds=seconds,
                        )
                        vector = trainer.state.best_vector
                        assert vector is not None  # every run validates its last generation
                        assert trainer.scoring is not None  # a routing-table run
                        actions = trainer.scoring.actions(vector, test)
                        choices = np.array([a.worker for a in actions])
                        rewards = table.outcome(table.rows(test), choices)[0]
                        if name == "coordinator":  # its test episodes stored, replayable
                            played = DecidedPolicy(
                                len(session.pool),
                                {
                                    render_transcript(t, ()): a
                                    for t, a in zip(test, actions, strict=True)
                                },
                            )
                            _, episodes, eval_id = await _evaluate_fold(
                                cfg, played, session.pool, test, suite.name, store, False
                            )
                            evaluations.append(eval_id)
                            by_id = {e.task_id: e for e in episodes}
                            rewards = np.array([by_id[t.id].reward for t in test])
                            choices = np.array(
                                [table.workers.index(by_id[t.id].turns[0].worker) for t in test]
                            )
                        record(
                            Routed(
                                name=name,
                                kind="coordinator",
                                rewards=rewards,
                                choices=choices,
                                chosen=f"generation {trainer.state.best_validation_generation}",
                            ),
                            test,
                        )
                        if r == 0 and name == "coordinator":
                            curves.append(
                                {"fold": index + 1, "run": run_id, **_curve(store, run_id)}
                            )
                    for routed in simple_routers(table, features, split):
                        record(routed, test)
                    said(fold=index + 1, stage="evaluated", repeat=r + 1)

        session.run(all_folds())
        rewards = {
            name: {task_id: float(np.mean(v)) for task_id, v in by_task.items()}
            for name, by_task in per_seed.items()
        }
        report = summarise_folds(
            suite.name,
            folds,
            seeds[0],
            rewards,
            kinds,
            groups,
            train_seconds=trained,
            runs=runs,
            evaluations=evaluations,
            covered={t.id for i, t in enumerate(suite.tasks) if table.answered[i].all()},
            costs={
                f"single:{w}": {
                    t.id: float(c) for t, c in zip(suite.tasks, table.cost[:, i], strict=True)
                }
                for i, w in enumerate(table.workers)
            },
            calls=calls,
            chosen=chosen,
            seeds=tuple(seeds),
            routing={name: _nested(counts) for name, counts in routing.items()},
            curves=tuple(curves),
        )
    return report


def _nested(counts: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (group, worker), n in sorted(counts.items()):
        out.setdefault(group, {})[worker] = n
    return out


def _curve(store: Store, run_id: str) -> dict[str, list[float | None]]:
    """A training run's best and mean fitness and validation, generation by generation."""
    stats = store.generations(run_id)
    return {
        "best": [g["best"] for g in stats],
        "mean": [g["mean"] for g in stats],
        "validation": [g.get("validation") for g in stats],
    }


async def _evaluate_fold(
    cfg: RunConfig,
    coordinator: Any,
    pool: Sequence[Any],
    tasks: Sequence[Task],
    suite: str,
    store: Store,
    baselines: bool = True,
) -> tuple[Any, list[Episode], str]:
    """One fold's test tasks: the coordinator and (``baselines``) every baseline, stored
    as an evaluation run (its episodes replayable); returns the report, the episodes and
    the evaluation's run id."""
    ids = [w.id for w in pool]
    eval_id = store.create_run(
        f"eval of {cfg.run.name}", "eval", {**cfg.to_dict(), "evaluation": {"split": "test"}}
    )
    evaluation = evaluate(
        coordinator,
        pool,
        tasks,
        EpisodeSettings.of(cfg.protocol, suite),
        seed=cfg.run.seed,
        concurrency=cfg.optimizer.concurrency,
        baselines=baseline_names(ids, cfg.protocol.max_turns) if baselines else False,
        run_id=eval_id,
    )
    # labelled with the pool's spend, stored, and never left "running" on an error
    report, episodes = await stored_evaluation(store, eval_id, ids, evaluation)
    return report, episodes, eval_id


__all__ = [
    "FoldProgress",
    "cross_validate",
    "fold_suite",
    "make_folds",
]
