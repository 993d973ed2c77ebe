"""The one-episode job: one task played and stored, for ``run-episode`` and the
self-test: by a trained run's coordinator over its pool, or by an untrained (or random)
coordinator over chosen workers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from workbench.core.config import ProtocolSection
from workbench.core.coordinator import Backbone
from workbench.core.errors import InvalidInput
from workbench.core.jobs.shared import (
    backbone_for,
    open_worker_pool,
    read_kept_features,
    table_reason,
)
from workbench.core.progress import StageListener, tell
from workbench.core.protocol import EpisodeSettings, Prompts, run_episode
from workbench.core.records import Episode, Turn
from workbench.core.store import Store, StoreError
from workbench.core.tasks.suites import load_suite
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.executors import coordinator_from_vector
from workbench.core.workspace import Workspace

PROTOCOL = ProtocolSection()  # an episode outside a run plays by a run's defaults


def run_one_episode(
    workspace: Workspace,
    *,
    task: str,
    run: str | None = None,
    pool: Sequence[str] = (),
    suite: str | None = None,
    backbone: str | None = "offline",
    device: str = "auto",
    seed: int = 0,
    sample: bool = False,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    prompts: str | Path | None = None,
    stages: StageListener | None = None,
    progress: Callable[[str], None] | None = None,
) -> Episode:
    """Play one episode of ``task`` and store it in the workspace; returns it.

    With ``run``: the run's trained coordinator (its best-on-validation vector, as
    ``eval`` takes it) over the run's pool, on its backbone, turn limit and protocol, the
    task from its suite unless ``suite`` names another; it acts by argmax (as evaluated),
    or with ``sample`` by seeded sampling (as trained). Without: the workers ``pool``
    names, on ``suite``, with an untrained head (seeded by ``seed``) on ``backbone``, by
    argmax or seeded sampling; ``backbone=None`` routes with the uniformly random policy
    instead, which needs no model (the self-test of an edition without the offline
    model); ``max_turns``, ``max_tokens`` and ``temperature`` are the episode's (default:
    a run config's, ``[protocol]``). ``stages`` hears what takes time (loading the
    models, playing the task); ``progress`` the same steps as words.
    """
    if stages is None and progress is not None:
        stages = lambda stage: progress(stage.text)  # noqa: E731 - words for a line printer
    if run is None and (not pool or suite is None):
        raise InvalidInput(
            "which workers and suite? give a trained run (--run RUN), or a pool and a "
            "suite (--pool sandbox --suite mixed)"
        )
    # Opened first: a database that cannot store the episode is refused before it plays.
    with Store.open(workspace) as store:
        played = (
            _trained(store, workspace, run, task, suite, seed, sample, stages)
            if run is not None
            else _untrained(
                workspace,
                task,
                pool,
                suite or "",
                backbone,
                device,
                seed,
                sample,
                EpisodeSettings(
                    max_turns=PROTOCOL.max_turns if max_turns is None else max_turns,
                    max_tokens=PROTOCOL.max_tokens if max_tokens is None else max_tokens,
                    temperature=PROTOCOL.temperature if temperature is None else temperature,
                    prompts=Prompts.load(prompts),
                ),
                stages,
            )
        )
        try:
            store.add_episode(played)
        except StoreError as exc:  # the database broke while it played: keep the episode
            raise type(exc)(f"{exc}; {_rescue_episode(played)}") from exc
    return played


def _trained(
    store: Store,
    workspace: Workspace,
    run: str,
    task: str,
    suite: str | None,
    seed: int,
    sample: bool,
    stages: StageListener | None,
) -> Episode:
    """One episode of ``task`` played by run ``run``'s trained coordinator; a routing
    table's run reads the task's query feature kept in the workspace (the one it trained
    and was validated on, as ``eval`` does) instead of computing its own."""
    import numpy as np

    record = store.get_run(run)
    config = record.config()
    if suite is not None:
        config = config.replace(tasks={"suite": suite})
    the_suite = load_suite(config.tasks.suite, workspace)
    the_task = the_suite.get(task)
    vector, _ = best_vector(store, record.id)
    model = backbone_for(config, stages=stages)  # shared in this process: never closed here
    session = open_worker_pool(config.pool.workers, workspace, stages)
    if table_reason(config, session.pool) is None:
        read_kept_features(model, workspace, [the_task], stages)
    coordinator = coordinator_from_vector(model, len(session.pool), vector, config.optimizer.svf)
    settings = EpisodeSettings.of(config.protocol, the_suite.name)
    tell(stages, _playing(the_task.id, settings.max_turns))
    return session.run(
        run_episode(
            coordinator,
            session.pool,
            the_task,
            settings,
            rng=np.random.default_rng(seed) if sample else None,
            seed=seed,
            on_turn=_turn_teller(stages, the_task.id, settings.max_turns),
        )
    )


def _untrained(
    workspace: Workspace,
    task: str,
    pool: Sequence[str],
    suite: str,
    backbone: str | None,
    device: str,
    seed: int,
    sample: bool,
    settings: EpisodeSettings,
    stages: StageListener | None,
) -> Episode:
    """One episode of ``task`` routed by an untrained head (or, without a backbone, at
    random) over the workers ``pool`` names."""
    import numpy as np

    from workbench.core.coordinator import Coordinator
    from workbench.core.models import loading_words
    from workbench.core.policies import Policy, RandomPolicy

    task_suite = load_suite(suite, workspace)
    the_task = task_suite.get(task)
    session = open_worker_pool([p for p in pool if p.strip()], workspace, stages)
    settings = replace(settings, suite=task_suite.name)
    model: Backbone | None = None
    if backbone is not None:
        tell(stages, loading_words(backbone))
        model = Backbone(backbone, device=device)
    try:
        policy: Policy
        if model is not None:
            policy = Coordinator.untrained(model, len(session.pool), seed=seed)
        else:
            policy = RandomPolicy(len(session.pool))
        rng = np.random.default_rng(seed) if sample or model is None else None
        tell(stages, _playing(the_task.id, settings.max_turns))
        return session.run(
            run_episode(
                policy,
                session.pool,
                the_task,
                settings,
                rng=rng,
                seed=seed,
                on_turn=_turn_teller(stages, the_task.id, settings.max_turns),
            )
        )
    finally:
        if model is not None:
            model.close()


def _playing(task: str, max_turns: int) -> str:
    return f"playing task {task} (at most {max_turns} turn{'' if max_turns == 1 else 's'})"


def _turn_teller(
    stages: StageListener | None, task: str, max_turns: int
) -> Callable[[Turn], None] | None:
    """An ``on_turn`` that tells ``stages`` each turn played, or None without a listener."""
    if stages is None:
        return None

    def told(turn: Turn) -> None:
        tell(
            stages,
            f"playing task {task}: turn {turn.index + 1} of at most {max_turns} played "
            f"({turn.worker} as {turn.role})",
        )

    return told


def _rescue_episode(episode: Episode) -> str:
    """Write an episode the database refused to a private file in the temporary folder;
    returns what to tell the user (where it is, or that it could not be kept)."""
    import tempfile

    from workbench.core.outputs import OutputError, write_text
    from workbench.core.store.episode_file import episode_json

    path = Path(tempfile.gettempdir()) / f"trinity-workbench-episode-{episode.id}.json"
    try:
        write_text(path, episode_json(episode))  # an export: parse_episode_json reads it
    except OutputError as exc:
        return f"the episode could not be kept either ({exc})"
    return f"the episode that played was saved to {path} instead"
