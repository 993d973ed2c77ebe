"""The evaluate job: a trained run's best vector, or a coordinator file, on a split,
beside the baselines (single workers, random routing, the sandbox oracles); stored as an
``eval`` run whose episodes are replayable. What it evaluates is an ``EvaluationSource``;
what is stored, ``stored_evaluations`` lists and ``load_evaluation`` reads back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.config import RunConfig
from workbench.core.coordinator import Backbone, Coordinator
from workbench.core.errors import InvalidInput
from workbench.core.evaluate import Report
from workbench.core.export import load_coordinator
from workbench.core.jobs.shared import (
    backbone_for,
    effective_status,
    evaluated_name,
    evaluation_title,
    open_pool,
    read_kept_features,
    run_title,
    table_reason,
)
from workbench.core.progress import StageListener, tell
from workbench.core.protocol import EpisodeSettings
from workbench.core.records import Episode, RunStatus, RunStopReason
from workbench.core.spend import spend_kind
from workbench.core.store import RunRecord, Store
from workbench.core.store.lifecycle import RunLife
from workbench.core.tasks.suites import load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.events import StopToken
from workbench.core.training.executors import coordinator_from_vector
from workbench.core.training.state import task_splits
from workbench.core.workers.pool import describe_pool
from workbench.core.workspace import Workspace


@dataclass(frozen=True)
class EvaluationResult:
    report: Report
    run_id: str  # the evaluation's own run record (its episodes are replayable)


@dataclass(frozen=True, kw_only=True)
class EvaluationSource:
    """What an evaluation evaluates: a trained run's best vector or a coordinator file,
    with the config it was trained under and its pool (worker ids, in the head's order)."""

    config: RunConfig
    pool: tuple[str, ...]
    backbone_model: str
    run_id: str | None = None
    run_name: str = ""  # the trained run's own name (unique in its workspace)
    coordinator_file: str | None = None

    @property
    def reference(self) -> dict[str, str]:
        """How the evaluation's run record names its source: the run's id and name (lists
        show the name: two runs of one config have different ones), or the file."""
        if self.run_id is not None:
            return {"run": self.run_id, "run_name": self.run_name}
        return {"coordinator_file": str(self.coordinator_file)}

    @property
    def name(self) -> str:
        """What an evaluation of it is called after: the run's name, else the config's."""
        return self.run_name or self.config.run.name

    @property
    def baselines(self) -> list[str]:
        """The baselines an evaluation of this source can run (``core.evaluate.baseline_names``)."""
        from workbench.core.evaluate import baseline_names

        return baseline_names(self.pool, self.config.protocol.max_turns)

    def coordinator(self, store: Store, backbone: Backbone) -> Coordinator:
        """The coordinator it names, on ``backbone``: the run's best-on-validation vector
        (read from ``store``) or the file's head."""
        if self.run_id is not None:
            vector, _ = best_vector(store, self.run_id)
            return coordinator_from_vector(
                backbone, len(self.pool), vector, self.config.optimizer.svf
            )
        assert self.coordinator_file is not None  # a source is a run or a file
        coordinator, _ = load_coordinator(self.coordinator_file, backbone)
        return coordinator


EVALUABLE = (RunStatus.FINISHED, RunStatus.STOPPED)


@dataclass(frozen=True, kw_only=True)
class StoredEvaluation:
    """One stored evaluation as a list shows it, whichever interface made it (``eval`` on
    the command line, the Evaluate page, a cross-validation fold): what it evaluated, on
    which suite and split, how it ended, and its coordinator's accuracy when it finished
    (None for one stopped or failed, which stored no report)."""

    id: str
    title: str  # ``shared.run_title``: "evaluation of 'sandbox routing'"
    evaluated: str  # what it evaluated: the trained run's name (and a file's)
    evaluated_run: str | None  # the trained run's id (None: a file, or a fold)
    suite: str
    split: str
    status: RunStatus
    created_at: float
    accuracy: float | None

    @property
    def has_report(self) -> bool:
        return self.accuracy is not None


def stored_evaluations(workspace: Workspace) -> list[StoredEvaluation]:
    """Every evaluation stored in the workspace, newest first."""
    with Store.open(workspace) as store:
        records = store.list_runs(kind="eval")
    return [_stored_evaluation(r) for r in reversed(records)]


def _stored_evaluation(record: RunRecord) -> StoredEvaluation:
    reference = record.config_data.get("evaluation") or {}
    tasks = record.config_data.get("tasks") or {}
    report = _stored_report(record)
    coordinator = (
        next((s for s in report.systems if s.kind == "coordinator"), None) if report else None
    )
    name = evaluated_name(record) or "a coordinator"
    file = reference.get("coordinator_file")
    return StoredEvaluation(
        id=record.id,
        title=run_title(record),
        evaluated=name + (f" ({Path(file).name})" if file else ""),
        evaluated_run=reference.get("run"),
        suite=report.suite if report is not None else str(tasks.get("suite") or ""),
        split=report.split if report is not None else str(reference.get("split") or "test"),
        status=effective_status(record),
        created_at=record.created_at,
        accuracy=coordinator.accuracy if coordinator is not None else None,
    )


def _stored_report(record: RunRecord) -> Report | None:
    text = (record.result or {}).get("report")
    return Report.from_json(text) if isinstance(text, str) else None


def load_evaluation(workspace: Workspace, eval_id: str) -> EvaluationResult:
    """The stored evaluation ``eval_id`` (an id or a prefix) with its report, as
    ``evaluate_run`` returned it; ``InvalidInput`` for one that stored no report (it was
    stopped or failed before its end)."""
    with Store.open(workspace) as store:
        record = store.get_run(eval_id)
    report = _stored_report(record) if record.kind == "eval" else None
    if report is None:
        what = "is no evaluation" if record.kind != "eval" else f"ended {effective_status(record)}"
        raise InvalidInput(
            f"run {record.id[:8]} {what} and has no report to show: evaluate the coordinator again"
        )
    return EvaluationResult(report, record.id)


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
        return EvaluationSource(
            config=config,
            pool=pool,
            backbone_model=config.backbone.model,
            run_id=record.id,
            run_name=record.name,
        )
    if coordinator_file is not None:
        manifest = read_manifest(coordinator_file)
        config = RunConfig.from_stored(manifest["training"]["config"], str(coordinator_file))
        pool = tuple(w["id"] for w in manifest["pool"])
        return EvaluationSource(
            config=config,
            pool=pool,
            backbone_model=manifest["backbone"]["model"],
            coordinator_file=str(coordinator_file),
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
    stages: StageListener | None = None,
) -> EvaluationResult:
    """Evaluate a trained run's best vector, or a coordinator file, on a split.

    ``baselines``: all (True), none (False) or the names to run (``EvaluationSource.baselines``).
    ``stages`` hears the steps before the first episode (loading the backbone and the
    workers' models); ``progress`` an ``EvaluationProgress`` per episode; ``stop`` ends
    the evaluation early: its run record is then ``stopped`` and ``EvaluationStopped`` is
    raised.
    ``final_turn``: ``free`` (the paper's protocol) or ``worker`` (an episode's turn that
    would end it without a Worker's answer is played as a Worker, as ``serve`` does).
    """
    from workbench.core.evaluate import evaluate

    with Store.open(workspace) as store:
        source = _evaluation_source(store, run, coordinator_file, workspace)
        config = source.config
        if split not in ("train", "validation", "test"):
            raise InvalidInput(f"unknown split '{split}': use train, validation or test")
        if suite is not None:
            config = config.replace(tasks={"suite": suite})
        task_suite = load_suite(config.tasks.suite, workspace)
        tasks = task_splits(config.tasks, task_suite)[split]
        backbone = backbone_for(config, backbone, source.backbone_model, stages)
        coordinator = source.coordinator(store, backbone)
        session = open_pool(config, store, workspace, stages)  # one that cannot serve: no run
        if table_reason(config, session.pool) is None:
            read_kept_features(backbone, workspace, tasks, stages)
        eval_id = store.create_run(
            evaluation_title(source.name, source.coordinator_file),
            "eval",
            {
                **config.to_dict(),
                "evaluation": {**source.reference, "split": split, "final_turn": final_turn},
            },
        )
        p = config.protocol
        # the coordinator's episodes come first, and the first of them wait for the
        # backbone to read every task once: its minutes pass before any episode ends
        tell(stages, f"playing the {len(tasks)} {split} tasks: the coordinator first")
        report, _ = session.run(
            stored_evaluation(
                store,
                eval_id,
                source.pool,
                evaluate(
                    coordinator,
                    session.pool,
                    tasks,
                    EpisodeSettings.of(p, task_suite.name, final_turn=final_turn),
                    split=split,
                    seed=config.run.seed,
                    concurrency=config.optimizer.concurrency,
                    baselines=baselines,
                    run_id=eval_id,
                    progress=progress,
                    stop=stop,
                ),
            )
        )
    if out_dir is not None:
        report.write(out_dir)
    return EvaluationResult(report, eval_id)


async def stored_evaluation(
    store: Store,
    eval_id: str,
    pool: Sequence[str],
    evaluation: Awaitable[tuple[Report, list[Episode]]],
) -> tuple[Report, list[Episode]]:
    """Await ``evaluation`` (``evaluate.evaluate``) into the stored run ``eval_id``: its
    report labelled with the pool's spend (simulated, recorded or real dollars), its
    episodes stored, the run finished; or the run marked stopped or failed when the
    evaluation raises, never left "running" (``RunLife``). Every stored evaluation goes
    through it (``evaluate_run``, each cross-validation fold)."""
    life = RunLife(store, eval_id)
    life.start()
    with life:
        report, episodes = await evaluation
        report = dataclasses.replace(report, spend=spend_kind(pool))
        store.add_episodes(episodes)
        life.end(RunStopReason.DONE, {"report": report.to_json()}, spend=life.spent(episodes))
    return report, episodes
