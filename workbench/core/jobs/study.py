"""The study job: every optimizer trained under the same config and budget over several
seeds, each evaluated on test beside the best single worker (chosen on validation) and the
sandbox oracles; a paper-faithful study gives all of them the paper's settings
(``paper_config``). Its result table is ``study_stats``; its intervals are
``workbench.core.stats``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.config import ConfigError, RunConfig
from workbench.core.coordinator import Backbone
from workbench.core.errors import InvalidInput
from workbench.core.evaluate import MULTI_TURN_ORACLE
from workbench.core.jobs.evaluate import evaluate_run, evaluation_source
from workbench.core.jobs.shared import backbone_for
from workbench.core.jobs.study_stats import Study, StudyRow
from workbench.core.jobs.train import train
from workbench.core.power import PowerEstimate
from workbench.core.progress import StageListener, tell
from workbench.core.stats import mean_ci
from workbench.core.store import Store
from workbench.core.training.events import Listener
from workbench.core.workers.pool import describe_pool
from workbench.core.workspace import Workspace

# study rows that are not optimizers: on a simulated pool "oracle" is the one-turn oracle
# (the best worker per category) and, at max_turns > 1, MULTI_TURN_ORACLE the exact best plan
REFERENCES = ("best single", "oracle", MULTI_TURN_ORACLE)


def study_optimizers(
    config: RunConfig,
    workspace: Workspace,
    *,
    seeds: int = 3,
    optimizers: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    backbone: Backbone | None = None,
    margin: float = 0.05,
    paper: bool = False,
    listeners: Sequence[Listener] = (),
    stages: StageListener | None = None,
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
    setting and one budget in episodes (and calls) for every optimizer.

    ``progress`` hears a line as each run is evaluated, ``listeners`` every run's training
    events, ``stages`` the steps between them (loading the backbone, evaluating a run)."""
    from workbench.core.optimizers.registry import OPTIMIZERS, optimizers_where

    ranking = optimizers_where(lambda e: e.ranks_candidates)

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
    backbone = backbone_for(config, backbone, stages=stages)
    forced: dict[str, Any] = {}
    if paper:
        config, forced = paper_config(config, optimizers, backbone)
        if backbone.input != config.backbone.input:  # the paper reads raw text
            backbone = backbone_for(config, stages=stages)
    others = [o for o in optimizers if o not in ranking]
    for key, can, off in (
        ("svf", "search SVF offsets", "false"),
        ("exploring_starts", "widen their openings", "0"),
    ):
        value = getattr(config.optimizer, key)
        if value and others:
            raise ConfigError(
                f"optimizer.{key} = {str(value).lower()}, but {', '.join(others)} cannot "
                f"{can}: a study gives every optimizer the same setting, so set {key} = "
                f"{off}, or compare only {','.join(ranking)} (--optimizers)"
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
            run_id = train(cfg, workspace, backbone=backbone, listeners=listeners)
            tell(stages, f"evaluating run {run_id[:8]} on the test split")
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
                optimizer=name,
                validation=mean_ci(vals),
                test=mean_ci(tests),
                runs=tuple(run_ids),
                episodes=episodes,
                test_by_group={g: mean_ci(v) for g, v in test_groups.items()},
                tests=tuple(tests),
            )
        )
    return Study(
        rows=tuple(rows),
        seeds=seeds,
        budget=dict(config.to_dict()["budget"]),
        references={name: mean_ci(values) for name, values in references.items() if values},
        best_single=tuple(best_single),
        reference_groups={
            name: {g: mean_ci(v) for g, v in groups.items()}
            for name, groups in ref_groups.items()
            if groups
        },
        power=PowerEstimate.of([list(r.tests) for r in rows], test_tasks, margin),
        paper_settings=forced,
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
