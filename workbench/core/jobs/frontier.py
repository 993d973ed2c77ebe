"""The cost-quality frontier, after training: what does a coordinator buy, and at what price?

``study_frontier`` trains one coordinator per ``optimizer.cost_penalty`` value (the same
config, budget and seed otherwise; every run reads and writes the same response cache)
and evaluates each on the test split. The first evaluation also runs every single worker
and random routing (and, on a simulated pool, the sandbox's oracles); the one-turn oracle
(any worker right, as RouteLLM and LLMRouterBench report it) comes from the single
workers' answers on the same tasks, at the price of the cheapest worker that was right
(the cheapest worker when none was).

Every system is a point: accuracy with its 95% Wilson interval against dollars per task
with its 95% interval. The Pareto front is marked among the systems one can deploy
(coordinators, single workers, random routing: not the oracles), on the point estimates.
Two sentences sum it up, each with the paired interval of its difference from the best
single worker (the best on the test split: the strongest baseline, so no win is claimed
on a weaker one):

- the cheapest coordinator within one point of the best single worker, its cost as a
  share of that worker's;
- the best accuracy reached at no more than the best single worker's cost.

The study is stored as a run of kind ``frontier`` (``list_frontiers``, ``load_frontier``):
the Evaluate page draws it with hover details. A simulated pool's dollars are labelled
"(simulated)" wherever they appear; on a simulated pool at one turn every accuracy also
has its exact expected value, computed from the simulation's skills on the same tasks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from workbench.core.config import RunConfig
from workbench.core.coordinator import Backbone
from workbench.core.errors import InvalidInput
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.frontier_report import (
    ANY_RIGHT,
    Frontier,
    FrontierPoint,
    SystemOutcomes,
    build_frontier,
    exact_accuracies,
    exact_one_turn_routing,
)
from workbench.core.jobs.headroom import overridden_policy
from workbench.core.jobs.shared import backbone_for
from workbench.core.jobs.train import train
from workbench.core.progress import StageListener, tell
from workbench.core.records import RunStopReason
from workbench.core.spend import dollars, spend_kind
from workbench.core.store import Store
from workbench.core.store.lifecycle import RunLife
from workbench.core.tasks.model import Task
from workbench.core.tasks.suites import load_suite
from workbench.core.training.events import Listener
from workbench.core.training.state import task_splits
from workbench.core.workspace import Workspace

# --------------------------------------------------------------------------- the study


def check_penalties(penalties: Sequence[float]) -> tuple[float, ...]:
    """The penalties, checked: at least one, none negative, none twice."""
    values = tuple(float(p) for p in penalties)
    if not values:
        raise InvalidInput("give at least one cost penalty, e.g. --penalties 0,500,1000")
    bad = [p for p in values if not np.isfinite(p) or p < 0]
    if bad:
        raise InvalidInput(
            f"cost penalties must be 0 or more (per dollar), got {', '.join(map(str, bad))}"
        )
    if len(set(values)) != len(values):
        raise InvalidInput(f"a cost penalty is given twice in {', '.join(map(str, values))}")
    return values


def _outcomes_of_eval(
    store: Store, eval_id: str, names: Sequence[tuple[str, str]]
) -> dict[int, tuple[dict[str, float], dict[str, float]]]:
    """Per system index (the episodes' candidate): task id -> reward, task id -> dollars."""
    out: dict[int, tuple[dict[str, float], dict[str, float]]] = {
        i: ({}, {}) for i in range(len(names))
    }
    for e in store.list_episodes(eval_id):
        if e.candidate is not None and e.candidate in out:
            out[e.candidate][0][e.task_id] = e.reward
            out[e.candidate][1][e.task_id] = e.cost
    return out


def _routing_of(store: Store, eval_id: str) -> dict[str, tuple[str, str]]:
    """The coordinator's first (worker, role) per task in an evaluation (candidate 0)."""
    chosen = {}
    for summary in store.list_episodes(eval_id, candidate=0):
        turns = store.get_episode(summary.id).turns
        if turns:
            chosen[summary.task_id] = (turns[0].worker, str(turns[0].role))
    return chosen


def study_frontier(
    config: RunConfig,
    workspace: Workspace,
    penalties: Sequence[float],
    *,
    progress: Callable[[str], None] | None = None,
    backbone: Backbone | None = None,
    listeners: Sequence[Listener] = (),
    stages: StageListener | None = None,
) -> Frontier:
    """Train one coordinator per cost penalty under ``config`` (its budget for each run;
    the response cache read-write and shared, unless the config says replay-only),
    evaluate each on the test split with the baselines measured once, and return the
    frontier, stored as a run of kind ``frontier``. ``progress`` hears a line as each
    run is evaluated, ``listeners`` every run's training events, ``stages`` the steps
    between them (loading the backbone, evaluating a run)."""
    penalties = check_penalties(penalties)
    started = time.perf_counter()
    policy = "replay-only" if config.cache.policy == "replay-only" else "read-write"
    shown_policy = overridden_policy(policy, config.cache.policy)
    config = config.replace(cache={"policy": policy})
    backbone = backbone_for(config, backbone, stages=stages)
    suite = load_suite(config.tasks.suite, workspace)
    test_tasks = task_splits(config.tasks, suite)["test"]
    with Store.open(workspace) as store:
        life = RunLife.create(
            store,
            f"frontier of {', '.join(config.pool.workers)} on {suite.name}",
            "frontier",
            {**config.to_dict(), "frontier": {"penalties": list(penalties)}},
        )
        life.start()
        with life:
            systems, pool, children = _train_and_evaluate(
                config,
                workspace,
                store,
                penalties,
                test_tasks,
                backbone=backbone,
                listeners=listeners,
                stages=stages,
                progress=progress,
            )
            p = config.protocol
            covered = _covered(pool, test_tasks, workspace)
            exact = exact_accuracies(pool, test_tasks, p.max_turns, p.roles)
            systems = [_with_exact(s, exact[s.name]) if s.name in exact else s for s in systems]
            frontier = build_frontier(
                systems,
                suite=suite.name,
                pool=pool,
                penalties=penalties,
                budget=dict(config.to_dict()["budget"]),
                spend=spend_kind(pool),
                seed=config.run.seed,
                cache_policy=shown_policy,
                covered=covered,
            )
            if ANY_RIGHT in exact:
                frontier = _replace_exact(frontier, ANY_RIGHT, exact[ANY_RIGHT])
            frontier = _finish(frontier, life.run_id, time.perf_counter() - started)
            life.end(
                RunStopReason.DONE, {"frontier": frontier.to_dict()}, spend=life.spent_by(children)
            )
            return frontier


def _train_and_evaluate(
    config: RunConfig,
    workspace: Workspace,
    store: Store,
    penalties: Sequence[float],
    test_tasks: Sequence[Task],
    *,
    backbone: Backbone,
    listeners: Sequence[Listener],
    stages: StageListener | None,
    progress: Callable[[str], None] | None,
) -> tuple[list[SystemOutcomes], tuple[str, ...], list[str]]:
    """One coordinator trained and evaluated per penalty (the baselines with the first):
    every system's outcomes, the pool, and the runs trained and evaluated."""
    systems: list[SystemOutcomes] = []
    children: list[str] = []  # the runs it trained and evaluated
    pool: tuple[str, ...] = ()
    p = config.protocol
    for i, penalty in enumerate(penalties):
        cfg = config.replace(
            run={"name": f"frontier cost_penalty {penalty:g}"},
            optimizer={"cost_penalty": penalty},
        )
        run_started = time.perf_counter()
        run_id = train(cfg, workspace, backbone=backbone, listeners=listeners)
        tell(stages, f"evaluating run {run_id[:8]} on the test split")
        result = evaluate_run(workspace, run=run_id, baselines=i == 0, backbone=backbone)
        report = result.report
        children += [run_id, result.run_id]
        spent = store.get_run(run_id).run_result()
        training = dict(spent.spend) if spent is not None else {}
        names = [(s.name, s.kind) for s in report.systems]
        per = _outcomes_of_eval(store, result.run_id, names)
        routing = _routing_of(store, result.run_id) if p.max_turns == 1 else {}
        pool = tuple(_pool_of(workspace, run_id))
        for index, (name, kind) in enumerate(names):
            rewards, costs = per[index]
            if kind == "coordinator":
                systems.append(
                    SystemOutcomes(
                        name=f"cost_penalty {penalty:g}",
                        kind=kind,
                        rewards=rewards,
                        costs=costs,
                        penalty=penalty,
                        run_id=run_id,
                        exact=exact_one_turn_routing(pool, test_tasks, routing)
                        if routing
                        else None,
                        training=training,
                    )
                )
            else:
                systems.append(SystemOutcomes(name=name, kind=kind, rewards=rewards, costs=costs))
        if progress is not None:
            coordinator = report.systems[0]
            progress(
                f"cost_penalty {penalty:g}: run {run_id[:8]}, test {coordinator.accuracy:.3f} "
                f"at {dollars(coordinator.avg_cost, spend_kind(pool), 6)} per task "
                f"({time.perf_counter() - run_started:.0f} s)"
            )
    return systems, pool, children


def _covered(pool: Sequence[str], tasks: Sequence[Task], workspace: Workspace) -> set[str] | None:
    """The test tasks every worker of ``pool`` has an answer for; None (all) for a pool
    without recorded workers, every other worker answering any task."""
    if not any(w.startswith("recorded") for w in pool):
        return None
    from workbench.core.workers.base import pool_covers
    from workbench.core.workers.pool import build_pool

    workers = build_pool(list(pool), workspace=workspace)
    return {t.id for t in tasks if pool_covers(workers, t)}


def _with_exact(s: SystemOutcomes, value: float) -> SystemOutcomes:
    return SystemOutcomes(**{**asdict(s), "exact": value})


def _replace_exact(frontier: Frontier, name: str, value: float) -> Frontier:
    points = tuple(
        FrontierPoint(**{**asdict(p), "exact": value}) if p.name == name else p
        for p in frontier.points
    )
    return Frontier(**{**_shallow(frontier), "points": points})


def _finish(frontier: Frontier, run_id: str, wall_s: float) -> Frontier:
    return Frontier(**{**_shallow(frontier), "run_id": run_id, "wall_s": wall_s})


def _shallow(frontier: Frontier) -> dict[str, Any]:
    return {f: getattr(frontier, f) for f in frontier.__dataclass_fields__}


def _pool_of(workspace: Workspace, run_id: str) -> list[str]:
    from workbench.core.jobs.evaluate import evaluation_source

    return list(evaluation_source(workspace, run=run_id).pool)
