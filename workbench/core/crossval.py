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
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.config import RunConfig
from workbench.core.coordinator import Backbone
from workbench.core.errors import InvalidInput
from workbench.core.evaluate import (
    RECORDED_ORACLE,
    Paired,
    baseline_names,
    best_single_index,
    evaluate,
    paired,
    sign_test,
    wilson,
)
from workbench.core.jobs.evaluate import stored_evaluation
from workbench.core.jobs.shared import backbone_for, open_pool
from workbench.core.records import Episode
from workbench.core.store import Store
from workbench.core.tasks.model import Suite, Task
from workbench.core.tasks.suites import load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.events import Listener
from workbench.core.training.executors import coordinator_from_vector
from workbench.core.training.trainer import Trainer
from workbench.core.workers.base import pool_covers
from workbench.core.workspace import Workspace

VALIDATION_SHARE = 0.25  # of a fold's training tasks: the paper's 20/60 split's ratio


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


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True, kw_only=True)
class CVSystem:
    """One system's cross-validated result: every task's reward (from the fold it was
    tested in), the accuracy with its Wilson interval, and per category."""

    name: str
    kind: str
    rewards: dict[str, float]
    accuracy: float
    ci_low: float
    ci_high: float
    n: int
    by_group: dict[str, tuple[float, float, float, int]] = field(default_factory=dict)


def _system(name: str, kind: str, rewards: dict[str, float], groups: Mapping[str, str]) -> CVSystem:
    n = len(rewards)
    total = sum(rewards.values())
    per: dict[str, list[float]] = {}
    for task_id, r in rewards.items():
        per.setdefault(groups[task_id], []).append(r)
    ci_low, ci_high = wilson(total, n)
    return CVSystem(
        name=name,
        kind=kind,
        rewards=rewards,
        accuracy=total / n if n else 0.0,
        ci_low=ci_low,
        ci_high=ci_high,
        n=n,
        by_group={
            g: (sum(v) / len(v), *wilson(sum(v), len(v)), len(v)) for g, v in sorted(per.items())
        },
    )


@dataclass(frozen=True, kw_only=True)
class CrossValReport:
    """The cross-validated comparison: every system on every task, paired differences
    against the best single worker (overall and per category), the folds' runs and the
    training time."""

    suite: str
    folds: int
    seed: int
    systems: tuple[CVSystem, ...]
    best_single: str
    paired: tuple[Paired, ...]
    paired_by_group: dict[str, tuple[Paired, ...]]
    train_seconds: float
    runs: tuple[str, ...]  # each fold's training run id
    evaluations: tuple[str, ...]  # each fold's evaluation run id
    # tasks left out of the paired comparison: some worker has no recorded answer for them
    paired_left_out: int = 0

    @property
    def groups(self) -> list[str]:
        return sorted(self.paired_by_group)

    def system(self, name: str) -> CVSystem:
        return next(s for s in self.systems if s.name == name)

    def to_json(self) -> str:
        return json.dumps(
            {
                "suite": self.suite,
                "folds": self.folds,
                "seed": self.seed,
                "best_single": self.best_single,
                "train_seconds": round(self.train_seconds, 1),
                "runs": list(self.runs),
                "evaluations": list(self.evaluations),
                "paired_left_out": self.paired_left_out,
                "systems": [
                    {k: v for k, v in dataclasses.asdict(s).items() if k != "rewards"}
                    for s in self.systems
                ],
                "paired": [dataclasses.asdict(p) for p in self.paired],
                "paired_by_category": {
                    g: [dataclasses.asdict(p) for p in ps] for g, ps in self.paired_by_group.items()
                },
                "rewards": {s.name: s.rewards for s in self.systems},
            },
            indent=2,
        )

    def table(self) -> str:
        lines = [
            f"{self.folds}-fold cross-validation on '{self.suite}' (seed {self.seed}, "
            f"{self.systems[0].n if self.systems else 0} tasks, each tested once; training "
            f"{self.train_seconds / 60:.1f} min)",
            "",
            f"{'system':34s} {'accuracy':>8s}  95% CI          vs {self.best_single}",
        ]
        if self.paired_left_out:
            n = self.paired[0].n if self.paired else 0
            lines.insert(
                1,
                f"paired differences on the {n} tasks every worker has an answer for "
                f"({self.paired_left_out} left out: a recorded worker has none)",
            )
        diffs = {p.system: p for p in self.paired}
        for s in self.systems:
            p = diffs.get(s.name)
            versus = (
                f"{p.difference:+.3f} [{p.ci_low:+.3f}, {p.ci_high:+.3f}] "
                f"won {p.wins} lost {p.losses} p={p.p_value:.3g}"
                if p is not None
                else "(reference)"
            )
            lines.append(
                f"{s.name:34s} {s.accuracy:8.3f}  [{s.ci_low:.3f}, {s.ci_high:.3f}]  {versus}"
            )
        if len(self.groups) > 1:
            lines += ["", f"per category, coordinator vs {self.best_single}:"]
            for g in self.groups:
                for p in self.paired_by_group[g]:
                    if p.system == "coordinator":
                        lines.append(
                            f"  {g:28s} n={p.n:3d}  {p.difference:+.3f} "
                            f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]  won {p.wins} lost {p.losses}"
                        )
        return "\n".join(lines)

    def write(self, folder: str | Path, stem: str = "crossval") -> list[Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"{stem}.json", folder / f"{stem}.md"]
        paths[0].write_text(self.to_json(), encoding="utf-8")
        paths[1].write_text("```\n" + self.table() + "\n```\n", encoding="utf-8")
        return paths


def summarise_folds(
    suite: str,
    k: int,
    seed: int,
    rewards: Mapping[str, dict[str, float]],
    kinds: Mapping[str, str],
    groups: Mapping[str, str],
    *,
    train_seconds: float = 0.0,
    runs: Sequence[str] = (),
    evaluations: Sequence[str] = (),
    covered: Collection[str] | None = None,
    costs: Mapping[str, Mapping[str, float]] | None = None,
) -> CrossValReport:
    """The report from every system's per-task rewards (system -> task id -> reward).
    The paired comparisons are on ``covered`` (the tasks every worker has an answer for;
    default all), against the best single worker there (``best_single_index``, ties to
    the cheaper by ``costs``: system -> task id -> dollars)."""
    systems = tuple(_system(n, kinds[n], r, groups) for n, r in rewards.items())
    singles = [s for s in systems if s.kind == "single"]
    if not singles:
        raise InvalidInput("a cross-validation needs the single workers as its reference")
    ids = sorted(t for t in singles[0].rewards if covered is None or t in covered)

    def mean(values: Mapping[str, float] | None) -> float:
        return sum(values[i] for i in ids) / len(ids) if values and ids else 0.0

    best = singles[
        best_single_index(
            [mean(s.rewards) for s in singles],
            [mean((costs or {}).get(s.name)) for s in singles],
        )
    ]
    pairs = tuple(
        paired(s.name, best.name, s.rewards, best.rewards, ids, seed)
        for s in systems
        if s.name != best.name
    )
    by_group: dict[str, tuple[Paired, ...]] = {}
    for g in sorted(set(groups.values())):
        gids = [i for i in ids if groups[i] == g]
        by_group[g] = tuple(
            paired(s.name, best.name, s.rewards, best.rewards, gids, seed)
            for s in systems
            if s.name != best.name
        )
    return CrossValReport(
        suite=suite,
        folds=k,
        seed=seed,
        systems=systems,
        best_single=best.name,
        paired=pairs,
        paired_by_group=by_group,
        train_seconds=train_seconds,
        runs=tuple(runs),
        evaluations=tuple(evaluations),
        paired_left_out=len(singles[0].rewards) - len(ids),
    )


# --------------------------------------------------------------------------- the job


@dataclass(frozen=True, kw_only=True)
class FoldProgress:
    """A fold's training or evaluation started or ended."""

    fold: int  # 1-based
    folds: int
    stage: str  # "training", "trained", "evaluated"
    run_id: str | None = None
    seconds: float = 0.0


def cross_validate(
    config: RunConfig,
    workspace: Workspace,
    *,
    folds: int = 5,
    seed: int | None = None,
    backbone: Backbone | None = None,
    listeners: Sequence[Listener] = (),
    progress: Callable[[FoldProgress], None] | None = None,
) -> CrossValReport:
    """Train and evaluate ``config`` with k-fold cross-validation on its suite (its
    tasks.train / validation / test sizes are ignored: every task is used, each tested
    once). ``seed`` deals the folds (default ``config.tasks.split_seed``); each fold's run
    is trained with ``config.run.seed``. Returns the cross-validated report."""
    seed = config.tasks.split_seed if seed is None else seed
    suite = load_suite(config.tasks.suite, workspace)
    dealt = make_folds(suite.tasks, folds, seed)
    groups = {t.id: t.group for t in suite.tasks}
    rewards: dict[str, dict[str, float]] = {}
    costs: dict[str, dict[str, float]] = {}
    kinds: dict[str, str] = {}
    runs: list[str] = []
    evaluations: list[str] = []
    backbone = backbone_for(config, backbone)
    fold_config = config.replace(tasks={"train": 0, "validation": 0, "test": 0})
    with Store.open(workspace) as store:
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
                    cfg,
                    store,
                    suite=fold_suite(suite, dealt, index, seed),
                    pool=session.pool,
                    backbone=backbone,
                    listeners=listeners,
                )
                run_id = trainer.start()
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


async def _evaluate_fold(
    cfg: RunConfig,
    coordinator: Any,
    pool: Sequence[Any],
    tasks: Sequence[Task],
    suite: str,
    store: Store,
) -> tuple[Any, list[Episode], str]:
    """One fold's test tasks: the coordinator and every baseline, stored as an
    evaluation run (its episodes replayable); returns the report, the episodes and the
    evaluation's run id."""
    ids = [w.id for w in pool]
    p = cfg.protocol
    eval_id = store.create_run(
        f"eval of {cfg.run.name}", "eval", {**cfg.to_dict(), "evaluation": {"split": "test"}}
    )
    evaluation = evaluate(
        coordinator,
        pool,
        tasks,
        suite=suite,
        max_turns=p.max_turns,
        temperature=p.temperature,
        max_tokens=p.max_tokens,
        seed=cfg.run.seed,
        concurrency=cfg.optimizer.concurrency,
        baselines=baseline_names(ids, p.max_turns),
        run_id=eval_id,
        thinker_suggests_role=p.thinker_suggests_role,
        roles=p.roles,
    )
    # labelled with the pool's spend, stored, and never left "running" on an error
    report, episodes = await stored_evaluation(store, eval_id, ids, evaluation)
    return report, episodes, eval_id


__all__ = [
    "RECORDED_ORACLE",
    "CrossValReport",
    "FoldProgress",
    "Paired",
    "cross_validate",
    "fold_suite",
    "make_folds",
    "paired",
    "sign_test",
    "summarise_folds",
]
