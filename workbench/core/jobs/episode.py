"""The one-episode job: one task played by an untrained (or random) coordinator over
chosen workers and stored, for ``run-episode`` and the self-test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from workbench.core.coordinator import Backbone
from workbench.core.jobs.shared import open_worker_pool
from workbench.core.records import Episode
from workbench.core.store import Store, StoreError
from workbench.core.tasks.suites import load_suite
from workbench.core.workspace import Workspace


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
    import tempfile

    from workbench.core.outputs import OutputError, write_text
    from workbench.core.store.episode_file import episode_json

    path = Path(tempfile.gettempdir()) / f"trinity-workbench-episode-{episode.id}.json"
    try:
        write_text(path, episode_json(episode))  # an export: parse_episode_json reads it
    except OutputError as exc:
        return f"the episode could not be kept either ({exc})"
    return f"the episode that played was saved to {path} instead"
