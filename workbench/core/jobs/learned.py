"""The learned job: what a training run's result head plays on validation, per
category, beside the oracle's plan (``workbench.core.learned``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.core.config import ConfigError
from workbench.core.learned import CategoryLearned, Play, summarise_plays
from workbench.core.oracle import Step
from workbench.core.records import Role
from workbench.core.store import Store
from workbench.core.tasks.suites import SuiteNotFound, load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.workspace import Workspace


@dataclass(frozen=True)
class RunLearned:
    """What a training run learned, per category (``categories``: empty before any
    validation), and whether there is nothing to read it from (``unplayed``: a run on a
    routing table scores its recorded answers as arrays, and its checkpoint holds none of
    that validation's choices; an evaluation of the run plays them)."""

    categories: list[CategoryLearned] = field(default_factory=list)
    unplayed: bool = False


def run_learned(workspace: Workspace, run: str, *, gone_ok: bool = False) -> RunLearned:
    """What training run ``run`` learned (``workbench.core.learned``): the sequences its
    result head played on validation, in the generation that head was validated, per
    category, beside the oracle's plan for simulated pools; on a routing table, the
    worker that validation asked for each task (``Checkpoint.best_choices``). Raises
    ``SuiteNotFound`` when the run's suite is no longer installed and ``ConfigError`` when
    its stored config no longer loads; ``gone_ok``: nothing learned then (a runs list or
    ``runs show`` still shows the rest of the run)."""
    if gone_ok:
        try:
            return run_learned(workspace, run)
        except (SuiteNotFound, ConfigError):  # a suite since removed, a config of long ago
            return RunLearned()
    with Store.open(workspace) as store:
        record = store.get_run(run)
        config = record.config()
        try:
            _, checkpoint = best_vector(store, record.id)
        except ValueError:  # no completed generation yet
            return RunLearned()
        generation = checkpoint.best_validation_generation
        if generation is None:
            return RunLearned()
        episodes = [
            store.get_episode(e.id)
            for e in store.list_episodes(record.id, generation=generation)
            if e.candidate is None
        ]
    if episodes:
        plays, pool = [Play.of(e) for e in episodes], episodes[0].pool
    elif checkpoint.best_choices:  # validated on a routing table: one Worker turn each
        choices = checkpoint.best_choices
        plays = [Play(c.task_id, (Step(c.worker, Role.WORKER),), c.reward) for c in choices]
        pool = tuple(dict.fromkeys(c.worker for c in choices))
    else:  # validated on a routing table, and its checkpoint holds no choices
        return RunLearned(unplayed=True)
    tasks = {t.id: t for t in load_suite(config.tasks.suite, workspace).tasks}
    return RunLearned(summarise_plays(plays, tasks, pool, config.protocol.max_turns))
