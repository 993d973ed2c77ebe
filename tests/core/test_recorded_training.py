"""End to end: a tiny coordinator trained on the recorded CHAMP pool with the Worker role
alone (``[protocol] roles = ["worker"]``): every turn is a Worker turn of a recorded
model, the role distribution is masked to the Worker, and the head keeps its shape."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.config import ConfigError, RunConfig
from workbench.core.coordinator import Action
from workbench.core.jobs.shared import new_train_run, open_pool, train_plan
from workbench.core.protocol import EpisodeSettings, mask_roles
from workbench.core.records import Role
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.trainer import Trainer
from workbench.core.workspace import Workspace


def _config(**protocol) -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": "recorded-champ", "seed": 0},
            "pool": {"workers": ["recorded:champ"]},
            "tasks": {"suite": "champ", "train": 16, "validation": 4, "test": 4},
            # the paper's settings as given (a routing table would take its own otherwise)
            "optimizer": {
                "popsize": 4,
                "rollouts": 4,
                "validate_every": 1000,
                "recorded_defaults": False,
            },
            "budget": {"generations": 2},
            "protocol": {"max_turns": 1, "temperature": 0.0, **protocol},
            "cache": {"policy": "off"},
        }
    )


def test_masking_keeps_an_allowed_role_and_redraws_a_masked_one():
    action = Action(0, 0, (1.0,), (0.5, 0.3, 0.2))  # chose the Thinker
    masked = mask_roles(action, ("worker", "verifier"), np.random.default_rng(0))
    assert masked.role_probs == pytest.approx((0.0, 0.6, 0.4))
    assert masked.role in (1, 2)
    greedy = mask_roles(action, ("worker", "verifier"), None)
    assert greedy.role == 1
    assert mask_roles(action, ("thinker", "worker", "verifier"), None) is action
    kept = mask_roles(Action(0, 2, (1.0,), (0.5, 0.3, 0.2)), ("worker", "verifier"), None)
    assert kept.role == 2


def test_roles_are_checked_in_the_config_and_the_settings():
    assert _config().protocol.roles == ("thinker", "worker", "verifier")
    assert _config(roles=["worker"]).protocol.roles == ("worker",)
    for bad in ([], ["worker", "worker"], ["planner"]):
        with pytest.raises(ConfigError, match="protocol.roles"):
            _config(roles=bad)
    with pytest.raises(ValueError, match="protocol roles"):
        EpisodeSettings(roles=("boss",))


def test_tiny_training_on_the_recorded_champ_pool_with_the_worker_role_alone(
    tmp_path, tiny_backbone
):
    # two turns, so the run plays episodes (one turn trains on the routing table:
    # tests/core/training/test_table.py)
    cfg = _config(roles=["worker"]).replace(protocol={"max_turns": 2})
    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        session = open_pool(cfg, store)
        assert [w.id for w in session.pool] == [
            "recorded:champ/gpt-3.5",
            "recorded:champ/gpt-4",
            "recorded:champ/gpt-4-turbo",
            "recorded:champ/palm-2",
        ]
        trainer = Trainer(
            train_plan(cfg, "champ", session.pool),
            store,
            suite=load_suite("champ", ws),
            pool=session.pool,
            backbone=tiny_backbone,
        )
        assert trainer.head_config.n_workers == 4
        trainer.attach(new_train_run(store, cfg))
        session.run(trainer.run_async())
        generations = store.generations(trainer.run_id)
        assert len(generations) == 2
        episodes = [store.get_episode(s.id) for s in store.list_episodes(trainer.run_id)]
        assert episodes
        workers = set()
        for ep in episodes:
            for turn in ep.turns:
                assert turn.role is Role.WORKER
                assert turn.role_probs == (0.0, 1.0, 0.0)
                workers.add(turn.worker)
                # a recorded answer, or the typed miss for one of the few unanswered
                assert turn.response or (turn.error and "no recorded answer" in turn.error)
        assert workers <= {w.id for w in session.pool}
        # each episode graded on its recorded answer (the grader itself is tested elsewhere)
        assert all(ep.reward in (0.0, 1.0) for ep in episodes)
        assert {ep.answer for ep in episodes if ep.answer} <= {
            r.response
            for w in session.pool
            for r in w.table.values()  # type: ignore[attr-defined]
        }
