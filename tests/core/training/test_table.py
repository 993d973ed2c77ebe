"""The routing table (training/table.py) decides as episodes do: the same rewards as the
single-worker baselines, the same sampled choices as a generation's episodes under common
random numbers (recorded misses redrawn, the role masked to the Worker), the same argmax
choices as evaluation with its fp32 recheck of near ties; and a run on it trains, stores
its generations and resumes exactly."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from workbench.core.config import (
    RECORDED_DEFAULTS,
    ConfigError,
    RunConfig,
    routing_table_reason,
    table_optimizer,
)
from workbench.core.coordinator import Backbone, Coordinator, Head, HeadConfig
from workbench.core.coordinator.head import near_tie
from workbench.core.jobs.shared import new_train_run, open_pool, train_plan
from workbench.core.policies import FixedPolicy
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.records import Role
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.basis import SearchBasis
from workbench.core.training.events import StopToken
from workbench.core.training.executors import Candidate, GenerationWork, play_candidate
from workbench.core.training.table import (
    DecidedPolicy,
    argmax_actions,
    build_routing_table,
    episode_uniforms,
    pool_reason,
    sampled_choices,
)
from workbench.core.training.trainer import Trainer
from workbench.core.transcript import render_transcript
from workbench.core.workspace import Workspace

SETTINGS = EpisodeSettings(suite="champ", max_turns=1, temperature=0.0, roles=("worker",))


def _config(**optimizer) -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": "table", "seed": 3},
            "pool": {"workers": ["recorded:champ"]},
            "tasks": {"suite": "champ", "train": 40, "validation": 20, "test": 4},
            "optimizer": {
                "popsize": 6,
                "rollouts": 12,
                "validate_every": 2,
                "recorded_defaults": False,
                **optimizer,
            },
            "budget": {"generations": 4},
            "protocol": {"max_turns": 1, "temperature": 0.0, "roles": ["worker"]},
            "cache": {"policy": "off"},
        }
    )


@pytest.fixture()
def champ(tmp_path):
    """The recorded CHAMP pool and the tasks with a miss first (some worker has no
    recorded answer for them: the mask and its redraw are exercised), then others."""
    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        session = open_pool(_config(), store)
        suite = load_suite("champ", ws)
        pool = session.pool
        missing = [t for t in suite.tasks if not all(w.covers(t) for w in pool)]
        assert missing, "CHAMP has tasks some model left unanswered"
        others = [t for t in suite.tasks if t not in missing]
        yield ws, store, session, pool, missing + others[: 40 - len(missing)]


def test_the_table_is_every_workers_single_worker_episode(champ):
    ws, store, session, pool, tasks = champ
    table = session.run(build_routing_table(pool, tasks, SETTINGS))
    for i, task in enumerate(tasks[:16]):
        for w, worker in enumerate(pool):
            episode = session.run(
                run_episode(FixedPolicy(len(pool), w, Role.WORKER), pool, task, SETTINGS)
            )
            assert table.answered[i, w] == worker.covers(task)
            assert table.reward[i, w] == episode.reward
            assert table.cost[i, w] == pytest.approx(episode.cost)
            if table.answered[i, w]:
                assert table.tokens[i, w] == episode.tokens_in + episode.tokens_out
    assert not table.answered.all()  # the misses are in the table as misses


@pytest.mark.parametrize("roles", [("worker",), ("thinker", "worker", "verifier")])
def test_sampled_choices_are_the_episodes_choices(champ, tiny_backbone, roles):
    ws, store, session, pool, tasks = champ
    settings = EpisodeSettings(suite="champ", max_turns=1, temperature=0.0, roles=roles)
    table = session.run(build_routing_table(pool, tasks, settings))
    L, d = len(pool), tiny_backbone.hidden_size
    rng = np.random.default_rng(0)
    # heads large enough that the choices spread over the workers and the roles
    vectors = [rng.normal(0.0, 2.0, size=(L + 3) * d) for _ in range(5)]
    work = GenerationWork(
        run_id="r",
        generation=7,
        run_seed=11,
        common_random_numbers=True,
        opening_share=0.0,
        minibatch=tuple(tasks),
        settings=settings,
        n_workers=L,
        svf=False,
    )

    async def episodes():
        gate = asyncio.Semaphore(64)
        return [
            await play_candidate(
                work,
                Candidate(k, 1, vector=v),
                backbone=tiny_backbone,
                pool=pool,
                stop=StopToken(),
                gate=gate,
            )
            for k, v in enumerate(vectors)
        ]

    played = session.run(episodes())
    features = tiny_backbone.features([render_transcript(t, ()) for t in tasks])
    choices = sampled_choices(
        np.stack([v.reshape(L + 3, d) for v in vectors]),
        features,
        table.answered,
        episode_uniforms(11, 7, len(tasks)),
        roles,
    )
    names = [w.id for w in pool]
    for k, eps in enumerate(played):
        assert [names.index(e.turns[0].worker) for e in eps] == choices[k].tolist()
        if roles == ("worker",):  # in another role a recorded worker has no answer to give
            rewards = table.reward[np.arange(len(tasks)), choices[k]].tolist()
            assert [e.reward for e in eps] == rewards
    # the misses were redrawn: no chosen worker lacks its answer, and some were redrawn
    assert table.answered[np.arange(len(tasks))[None], choices].all()
    assert len(set(choices.reshape(-1).tolist())) == L


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed"])
def test_argmax_actions_are_evaluations_decisions(champ, tiny_lm, precision):
    """In fp32 every decision is the evaluation episode's; in bf16-mixed the episode
    rechecks a near tie in fp32 and the table does not, so they may differ there only."""
    ws, store, session, pool, tasks = champ
    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer, precision=precision)
    try:
        table = session.run(build_routing_table(pool, tasks, SETTINGS))
        L, d = len(pool), backbone.hidden_size
        features = backbone.features([render_transcript(t, ()) for t in tasks])
        differ, near = set(), set()
        for seed in range(4):
            head = np.random.default_rng(seed).normal(0.0, 0.3, size=(L + 3, d))
            coordinator = Coordinator(backbone, Head(HeadConfig(L, d), head))
            actions = argmax_actions(head, features, table.answered)
            for i, task in enumerate(tasks):
                episode = session.run(run_episode(coordinator, pool, task, SETTINGS))
                turn = episode.turns[0]
                if turn.worker != pool[actions[i].worker].id:
                    differ.add((seed, i))
                elif precision == "fp32":
                    assert turn.worker_probs == pytest.approx(actions[i].worker_probs)
                    assert turn.role_probs == actions[i].role_probs
                if near_tie(head, features[i], L, backbone.feature_error):
                    near.add((seed, i))
        if precision == "fp32":
            assert not differ
        else:
            assert near and differ <= near
    finally:
        backbone.close()


def test_a_decided_policy_plays_the_tables_decisions(champ, tiny_backbone):
    ws, store, session, pool, tasks = champ
    table = session.run(build_routing_table(pool, tasks, SETTINGS))
    L, d = len(pool), tiny_backbone.hidden_size
    head = np.random.default_rng(5).normal(0.0, 1.0, size=(L + 3, d))
    texts = [render_transcript(t, ()) for t in tasks]
    actions = argmax_actions(head, tiny_backbone.features(texts), table.answered)
    policy = DecidedPolicy(L, dict(zip(texts, actions, strict=True)))
    for i, task in enumerate(tasks):
        episode = session.run(run_episode(policy, pool, task, SETTINGS))
        assert episode.turns[0].worker == pool[actions[i].worker].id
        assert episode.reward == table.reward[i, actions[i].worker]


def test_which_runs_take_the_table_path(champ, tiny_backbone):
    ws, store, session, pool, tasks = champ
    cfg = _config()
    assert routing_table_reason(cfg) is None
    for change, words in (
        ({"protocol": {"max_turns": 2}}, "more than one turn"),
        ({"protocol": {"roles": ["worker", "verifier"]}}, "roles"),
        ({"optimizer": {"name": "reinforce"}}, "optimizer"),
        ({"optimizer": {"svf": True}}, "SVF"),
        ({"pool": {"workers": ["recorded:champ", "sandbox:mathlete"]}}, "live workers"),
    ):
        assert words in (routing_table_reason(cfg.replace(**change)) or "")
    assert pool_reason(pool) is None
    assert (
        Trainer(
            train_plan(cfg.replace(protocol={"max_turns": 2}), "champ", pool),
            store,
            suite=load_suite("champ", ws),
            pool=pool,
            backbone=tiny_backbone,
        ).scoring
        is None
    )


def test_the_recorded_defaults_apply_on_the_table_and_are_one_key_away(champ, tiny_backbone):
    ws, store, session, pool, tasks = champ
    base = _config().replace(optimizer={"rollouts": 16, "recorded_defaults": True})
    trainer = Trainer(
        train_plan(base, "champ", pool),
        store,
        suite=load_suite("champ", ws),
        pool=pool,
        backbone=tiny_backbone,
    )
    assert RECORDED_DEFAULTS == {"rollouts": 0}
    for name, value in RECORDED_DEFAULTS.items():
        assert getattr(trainer.plan.optimizer, name) == value
    assert trainer.minibatch_size == len(trainer.splits["train"])
    trainer.attach(new_train_run(store, base))
    stored = store.get_run(trainer.run_id).config()
    assert stored == base  # the config as given is what is stored
    paper = Trainer(
        train_plan(
            base.replace(optimizer={"recorded_defaults": False, "search_basis": "identity"}),
            "champ",
            pool,
        ),
        store,
        suite=load_suite("champ", ws),
        pool=pool,
        backbone=tiny_backbone,
    )
    assert paper.plan.optimizer.rollouts == 16
    assert paper.plan.optimizer.search_basis == "identity"
    # a setting the recorded defaults would overrule is refused, naming the key to turn
    with pytest.raises(ConfigError, match="optimizer.rollouts.*recorded_defaults = false"):
        base.replace(optimizer={"rollouts": 64})
    # off the table the defaults change nothing
    episodes = base.replace(protocol={"max_turns": 2})
    assert table_optimizer(episodes) == episodes.optimizer


def _train(store, ws, session, backbone, cfg, stop_after=None, resume=None):
    """A trainer of ``cfg`` attached to a new run, or to run ``resume``."""
    stop = StopToken()
    seen = []

    def listener(event):
        if getattr(event, "generation", None) is not None and hasattr(event, "best"):
            seen.append(event)
            if stop_after is not None and len(seen) == stop_after:
                stop.stop()

    trainer = Trainer(
        train_plan(cfg, "champ", session.pool),
        store,
        suite=load_suite("champ", ws),
        pool=session.pool,
        backbone=backbone,
        listeners=[listener],
        stop=stop,
    )
    trainer.attach(resume or new_train_run(store, cfg))
    return trainer, seen


def test_a_run_on_the_table_trains_stores_and_resumes_exactly(champ, tiny_backbone):
    ws, store, session, pool, tasks = champ
    cfg = _config()
    trainer, seen = _train(store, ws, session, tiny_backbone, cfg)
    assert trainer.scoring is not None
    session.run(trainer.run_async())
    whole = store.generations(trainer.run_id)
    assert [g["generation"] for g in whole] == [0, 1, 2, 3]
    assert not store.list_episodes(trainer.run_id)  # scored on the table, none stored
    assert all(e.evaluations == 6 * 12 for e in seen)
    best = trainer.state.best_validation
    assert best is not None
    vector = trainer.state.best_vector
    assert vector is not None
    # the stored best is what its head scores on validation by argmax
    tasks = trainer.splits["validation"]
    assert trainer.scoring is not None and trainer.scoring.table is not None
    choices = trainer.scoring.choices(vector, tasks)
    table = trainer.scoring.table
    rewards = table.outcome(table.rows(tasks), choices)[0]
    assert float(np.mean(rewards)) == pytest.approx(best)

    # killed after two generations and resumed: the same history as the uninterrupted run
    cut, _ = _train(store, ws, session, tiny_backbone, cfg, stop_after=2)
    session.run(cut.run_async())
    assert len(store.generations(cut.run_id)) == 2
    resumed, _ = _train(store, ws, session, tiny_backbone, cfg, resume=cut.run_id)
    session.run(resumed.run_async())
    again = store.generations(cut.run_id)
    assert [g["best"] for g in again] == [g["best"] for g in whole]
    assert [g.get("validation") for g in again] == [g.get("validation") for g in whole]
    # the best validation's choices (what it learned) came through the checkpoint whole
    assert resumed.state.best_choices == trainer.state.best_choices
    assert [c.task_id for c in trainer.state.best_choices or ()] == [t.id for t in tasks]
    assert [c.reward for c in trainer.state.best_choices or ()] == list(rewards)


def test_every_training_task_each_generation_with_rollouts_0(champ, tiny_backbone):
    ws, store, session, pool, tasks = champ
    trainer, seen = _train(store, ws, session, tiny_backbone, _config(rollouts=0))
    session.run(trainer.run_async())
    assert trainer.minibatch_size == len(trainer.splits["train"]) == 40
    assert all(e.evaluations == 6 * 40 for e in seen)


def test_the_projection_basis_reads_a_few_unit_variance_directions_and_a_bias():
    rng = np.random.default_rng(0)
    d, n, rank = 24, 300, 5
    shared = rng.normal(size=d)
    features = shared + 0.2 * rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    features /= np.sqrt((features**2).mean(axis=1, keepdims=True))  # unit RMS, as a backbone's
    basis = SearchBasis.fit_projection(features, rank)
    assert basis.kind == "projection"
    coords = basis.features(features)
    assert coords.shape == (n, rank + 1)
    assert np.allclose(coords[:, :rank].std(axis=0), 1.0, atol=1e-6)
    assert abs(coords[:, rank].mean() - 1.0) < 1e-9  # the bias coordinate
    shape = (7, d)
    vector = rng.normal(size=basis.search_size(shape))
    assert basis.search_size(shape) == 7 * (rank + 1)
    head = basis.head(vector, shape).reshape(shape)
    # the head on the feature is the search vector on the coordinates
    assert np.allclose(features @ head.T, coords @ vector.reshape(7, rank + 1).T)
    assert SearchBasis.from_dict(basis.to_dict()).kind == "projection"
    # fewer tasks than directions: the search keeps its size, the missing rows are 0
    few = SearchBasis.fit_projection(features[:3], rank)
    assert few.projection is not None and few.projection.shape == (rank + 1, d)


def test_a_run_with_the_projection_basis_searches_fewer_weights(champ, tiny_backbone):
    ws, store, session, pool, tasks = champ
    cfg = _config(search_basis="projection", search_rank=4)
    trainer, seen = _train(store, ws, session, tiny_backbone, cfg)
    assert trainer.n_params == (len(pool) + 3) * 5
    session.run(trainer.run_async())
    assert trainer.basis.kind == "projection"
    assert trainer.state.best_vector is not None
    assert trainer.state.best_vector.shape == ((len(pool) + 3) * tiny_backbone.hidden_size,)
    cut, _ = _train(store, ws, session, tiny_backbone, cfg, stop_after=2)
    session.run(cut.run_async())
    resumed, _ = _train(store, ws, session, tiny_backbone, cfg, resume=cut.run_id)
    session.run(resumed.run_async())
    whole = store.generations(trainer.run_id)
    assert [g["best"] for g in store.generations(cut.run_id)] == [g["best"] for g in whole]


def test_a_run_on_the_table_keeps_its_query_features_and_the_next_run_reads_them(
    tmp_path, tiny_model_dir, tiny_backbone
):
    """The train job keeps a table run's query features in the workspace (one row per
    training and validation question, the backbone's own), and the next run on the same
    questions, an evaluation and one episode of a run read them instead of computing them:
    with the kept rows set to zeros, every decision is a tie, which argmax gives to the
    first model with an answer (in fp32, where an episode rechecks no near tie)."""
    import sqlite3
    from contextlib import closing

    from workbench.core.coordinator.feature_store import FeatureStore
    from workbench.core.jobs.evaluate import evaluate_run
    from workbench.core.jobs.train import train
    from workbench.core.training.checkpoint import best_vector
    from workbench.core.training.state import task_splits

    ws = Workspace.open(tmp_path / "ws")
    backbone = {"model": str(tiny_model_dir), "device": "cpu", "precision": "fp32"}
    cfg = _config().replace(backbone=backbone)
    first = train(cfg, ws)
    suite = load_suite("champ", ws)
    splits = task_splits(cfg.tasks, suite)
    asked = [*splits["train"], *splits["validation"]]
    texts = [render_transcript(t, ()) for t in asked]
    with closing(sqlite3.connect(ws.features_path)) as db:
        (namespace,) = [n for (n,) in db.execute("SELECT DISTINCT namespace FROM features")]
    assert str(tiny_model_dir) in namespace, namespace
    with FeatureStore(ws.features_path) as kept:
        assert kept.count(namespace) == len(set(texts)) == 60
        rows = kept.get(namespace, texts)
        fresh = tiny_backbone.features(texts)
        assert np.allclose(np.stack([rows[i] for i in range(len(texts))]), fresh, atol=1e-5)
        kept.put(namespace, texts, np.zeros_like(fresh))

    second = train(cfg, ws)
    with Store.open(ws) as store:
        session = open_pool(cfg, store)
        table = session.run(build_routing_table(session.pool, splits["validation"], SETTINGS))
        choices = {run: best_vector(store, run)[1].best_choices for run in (first, second)}
    first_answered = [session.pool[int(np.argmax(a))].id for a in table.answered]
    assert [c.worker for c in choices[second] or ()] == first_answered
    # on the real features the head chose otherwise
    assert [c.worker for c in choices[first] or ()] != first_answered

    evaluation = evaluate_run(ws, run=second, split="validation", baselines=False)
    with Store.open(ws) as store:
        played = {
            e.task_id: store.get_episode(e.id).turns[0].worker
            for e in store.list_episodes(evaluation.run_id)
        }
    assert [played[t.id] for t in splits["validation"]] == first_answered

    # one episode of the first run's coordinator (trained on the real features) reads the
    # kept (zero) row too: on a question where its validation chose another model, it now
    # asks the first model with an answer, in memory or not
    from workbench.core.jobs.episode import run_one_episode
    from workbench.core.jobs.shared import shared_backbone

    i = next(i for i, c in enumerate(choices[first] or ()) if c.worker != first_answered[i])
    shared_backbone(cfg).forget()
    episode = run_one_episode(ws, task=splits["validation"][i].id, run=first)
    assert episode.turns[0].worker == first_answered[i]


def test_a_table_runs_minutes_count_the_work_before_its_first_generation(
    champ, tiny_backbone, monkeypatch
):
    """Building the routing table (the questions' features and every worker's answers)
    and fitting the search basis are training time: they count in the run's minutes, as
    its generations do, and a minutes budget that this work passes ends the run before
    a generation it could not afford."""
    from workbench.core.records import RunStopReason
    from workbench.core.training.table_scoring import TableScoring

    ws, store, session, pool, tasks = champ
    built = TableScoring.build
    pause = 1.5

    async def slow_build(self, asked, *args):
        await built(self, asked, *args)
        await asyncio.sleep(pause)  # a table whose features take a while to compute

    monkeypatch.setattr(TableScoring, "build", slow_build)
    cfg = _config()
    trainer, _ = _train(store, ws, session, tiny_backbone, cfg)
    session.run(trainer.run_async())
    assert [g["generation"] for g in store.generations(trainer.run_id)] == [0, 1, 2, 3]
    minutes = store.get_run(trainer.run_id).run_result().spend["minutes"]
    assert minutes * 60 >= pause, minutes

    short = cfg.replace(budget={"generations": 4, "minutes": pause / 2 / 60})
    trainer, _ = _train(store, ws, session, tiny_backbone, short)
    session.run(trainer.run_async())
    record = store.get_run(trainer.run_id)
    assert store.generations(trainer.run_id) == []
    assert record.stop_reason == RunStopReason.MINUTES, record


def test_a_table_run_counts_its_answers_graded_and_questions_read_before_generation_one(
    tmp_path, tiny_model_dir
):
    """The work before a table run's first generation is counted as it goes (a bar, not
    minutes of silence: MMLU-Pro's 1,798 questions took 4 min the first time): the
    recorded answers graded, then the questions read by the backbone, each up to its
    whole, after the run's start and before its first generation; the next run on the
    same questions reads every feature back at once. The events cross ``train --events``'
    JSON whole."""
    from workbench.core.jobs.train import train
    from workbench.core.training.events import (
        GenerationStats,
        Preparing,
        RunStarted,
        event_from_json,
        event_to_json,
    )

    ws = Workspace.open(tmp_path / "ws")
    cfg = _config().replace(
        backbone={"model": str(tiny_model_dir), "device": "cpu", "precision": "fp32"},
        budget={"generations": 1},
    )

    def heard() -> list:
        events: list = []
        train(cfg, ws, listeners=[lambda e: events.append(event_from_json(event_to_json(e)))])
        return [e for e in events if isinstance(e, RunStarted | Preparing | GenerationStats)]

    events = heard()
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], GenerationStats)
    steps = [(e.stage, e.done, e.total) for e in events[1:-1]]
    assert steps == [("table", 60, 60), ("features", 0, 60), ("features", 60, 60)]
    assert events[1].words == "grading the recorded answers"
    assert events[2].words == "reading every question with the backbone"
    # the next run: its features kept, read back in one step
    steps = [(e.stage, e.done, e.total) for e in heard()[1:-1]]
    assert steps == [("table", 60, 60), ("features", 60, 60)]


def test_a_stop_while_the_backbone_reads_the_questions_ends_the_run_at_its_next_chunk(
    tmp_path, tiny_model_dir
):
    """Stop, while a table run's questions are read (minutes on MMLU-Pro the first time),
    ends the run at the next chunk of features, not after all of them: the rows read so
    far are kept, and the resumed run reads them back and computes only the rest."""
    from workbench.core.coordinator.feature_store import CHUNK, FeatureStore
    from workbench.core.jobs.train import train
    from workbench.core.records import RunStopReason
    from workbench.core.training.events import Preparing, StopToken

    ws = Workspace.open(tmp_path / "ws")
    cfg = _config().replace(
        backbone={"model": str(tiny_model_dir), "device": "cpu", "precision": "fp32"},
        tasks={"suite": "champ", "train": 100, "validation": 40, "test": 4},
        budget={"generations": 1},
    )
    stop = StopToken()
    heard: list[Preparing] = []

    def listener(event):
        if isinstance(event, Preparing):
            heard.append(event)
            if event.stage == "features":
                stop.stop()  # at its first word: nothing read yet

    run_id = train(cfg, ws, listeners=[listener], stop=stop)
    with Store.open(ws) as store:
        record = store.get_run(run_id)
        assert record.stop_reason == RunStopReason.STOPPED
        assert store.generations(run_id) == []
    with FeatureStore(ws.features_path) as kept:
        assert kept.count() == CHUNK < 140  # one chunk read, and kept
    assert [(e.done, e.total) for e in heard if e.stage == "features"] == [(0, 140)]

    events: list = []
    train(None, ws, resume=run_id, listeners=[events.append])
    assert [(e.done, e.total) for e in events if isinstance(e, Preparing)][1:] == [
        (CHUNK, 140),
        (2 * CHUNK, 140),
        (140, 140),
    ]
    with Store.open(ws) as store:
        assert [g["generation"] for g in store.generations(run_id)] == [0]
