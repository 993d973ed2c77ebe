"""The recorded provider: answers from a recorded table, a typed miss the turn records,
recorded and live workers in one pool, and the CHAMP recordings' counts."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from workbench.core.coordinator import Action
from workbench.core.policies import AnyContext, FixedPolicy
from workbench.core.protocol import EpisodeSettings, mask_workers, run_episode
from workbench.core.tasks.model import Task
from workbench.core.workers.base import WorkerError
from workbench.core.workers.pool import build_pool
from workbench.core.workers.recorded import (
    CHAMP_MODELS,
    NotRecorded,
    RecordedWorker,
    Recording,
    champ_tables,
    conversation_tokens,
)

TASK = Task(id="t1", kind="math", prompt="What is 2+3?", answer="5")
OTHER = Task(id="t2", kind="math", prompt="What is 2+4?", answer="6")


def _worker(response: str = r"The answer is \boxed{5}.") -> RecordedWorker:
    rec = Recording(
        task_id="t1",
        worker="rec",
        response=response,
        tokens_in=10,
        tokens_out=4,
        cost=0.25,
        latency_s=1.5,
    )
    return RecordedWorker("rec", {"t1": rec})


def _settings() -> EpisodeSettings:
    return EpisodeSettings(max_turns=1)


def test_hit_returns_the_recorded_answer_and_its_usage():
    ep = asyncio.run(run_episode(FixedPolicy(1, 0), [_worker()], TASK, _settings()))
    turn = ep.turns[0]
    assert turn.error is None
    assert turn.response == r"The answer is \boxed{5}."
    assert (turn.tokens_in, turn.tokens_out, turn.cost, turn.latency_s) == (10, 4, 0.25, 1.5)
    assert ep.reward == 1.0


def test_a_wrong_recorded_answer_is_graded_wrong():
    ep = asyncio.run(run_episode(FixedPolicy(1, 0), [_worker(r"\boxed{7}")], TASK, _settings()))
    assert ep.turns[0].error is None and ep.reward == 0.0


def test_miss_is_a_typed_worker_error_the_turn_records():
    assert issubclass(NotRecorded, WorkerError)
    ep = asyncio.run(run_episode(FixedPolicy(1, 0), [_worker()], OTHER, _settings()))
    turn = ep.turns[0]
    assert turn.error is not None and "no recorded answer for task 't2'" in turn.error
    assert turn.response == ""
    assert ep.reward == 0.0 and ep.answer is None


def test_outside_an_episode_a_recorded_worker_refuses():
    with pytest.raises(NotRecorded, match="only inside an episode"):
        asyncio.run(_worker().complete([], max_tokens=10, temperature=0.0))


def test_recorded_and_simulated_workers_mix_in_one_pool():
    pool = build_pool(["recorded:champ/gpt-4-turbo", "sandbox:mathlete"])
    assert [w.id for w in pool] == ["recorded:champ/gpt-4-turbo", "sandbox:mathlete"]
    table = champ_tables()["recorded:champ/gpt-4-turbo"]
    pid = sorted(table)[0]
    task = Task(id=pid, kind="math", prompt="p", answer="1")
    for index in (0, 1):
        ep = asyncio.run(run_episode(FixedPolicy(2, index), pool, task, _settings()))
        assert ep.turns[0].worker == pool[index].id and ep.turns[0].error is None
    assert (
        asyncio.run(run_episode(FixedPolicy(2, 0), pool, task, _settings())).turns[0].response
        == table[pid].response
    )


def test_champ_recordings_cover_270_problems_from_4_models():
    tables = champ_tables()
    assert len(CHAMP_MODELS) == 4
    assert len(tables) == 8  # 4 models x (0-shot, 5-shot)
    problems = set().union(*(set(t) for t in tables.values()))
    assert len(problems) == 270
    for wid, table in tables.items():
        assert 260 <= len(table) <= 270, wid  # a few conversations end without an answer
    assert [w.id for w in build_pool(["recorded:champ"])] == [
        f"recorded:champ/{m}" for m in CHAMP_MODELS
    ]


def test_champ_tokens_are_the_whole_conversations():
    # every model message was a call: its input all messages before it, its output itself
    assert conversation_tokens(
        [(False, "s" * 40), (True, "a" * 400), (False, "u" * 80), (True, "b" * 40)]
    ) == (
        (40 + 40 + 400 + 80) // 4,
        (400 + 40) // 4,
    )
    import champ_dataset

    problem_id, problem = next(iter(champ_dataset.load("v0").problems.items()))
    messages = problem.conversations["GPT-4 Turbo|0-Shot"].messages
    model = [m for m in messages if str(m.role).startswith("Model.")]
    assert len(model) == 2  # the solution, then the one-sentence summary
    rec = champ_tables()["recorded:champ/gpt-4-turbo"][problem_id]
    assert rec.response == model[-1].text
    # the solution's characters are paid for as output, and sent again as input
    assert rec.tokens_out == sum(len(m.text) for m in model) // 4
    sent = [sum(len(m.text) for m in messages[: messages.index(m)]) for m in model]
    assert rec.tokens_in == sum(sent) // 4 and sent[1] > len(model[0].text)
    assert rec.tokens_out > 10 * len(rec.response) // 4  # not the summary's alone
    # a worker's dollars come from those tokens and the list prices
    ep = asyncio.run(
        run_episode(
            FixedPolicy(1, 0),
            build_pool(["recorded:champ/gpt-4-turbo"]),
            Task(id=problem_id, kind="math", prompt="p", answer="1"),
            _settings(),
        )
    )
    _, pin, pout = CHAMP_MODELS["gpt-4-turbo"]
    assert (ep.turns[0].tokens_in, ep.turns[0].tokens_out) == (rec.tokens_in, rec.tokens_out)
    assert ep.turns[0].usage_estimated  # 4 characters a token: CHAMP records no counts
    assert ep.cost == pytest.approx((rec.tokens_in * pin + rec.tokens_out * pout) / 1e6)


def test_an_unknown_recorded_worker_names_the_known_ones():
    from workbench.core.errors import BadInput
    from workbench.core.workers.recorded import RecordedPoolNotFound

    with pytest.raises(RecordedPoolNotFound, match="recorded:champ/gpt-4-turbo") as error:
        build_pool(["recorded:champ/gpt-5"])
    assert isinstance(error.value, BadInput)  # bad input (exit 2), like the other misses


class _Prefers(AnyContext):
    """A policy that prefers worker 0 (probabilities 0.7 / 0.3) and picks it."""

    n_workers = 2

    async def adecide(self, transcript, rng=None):
        from workbench.core.coordinator import Action

        return Action(0, 1, (0.7, 0.3), (0.0, 1.0, 0.0))


def _two_workers() -> list[RecordedWorker]:
    first = RecordedWorker("a", {"t1": Recording(task_id="t1", worker="a", response=r"\boxed{5}")})
    second = RecordedWorker(
        "b",
        {
            "t1": Recording(task_id="t1", worker="b", response=r"\boxed{4}"),
            "t2": Recording(task_id="t2", worker="b", response=r"\boxed{6}"),
        },
    )
    return [first, second]


def test_the_worker_mask_routes_around_a_worker_without_the_tasks_answer():
    pool = _two_workers()
    assert pool[0].covers(TASK) and not pool[0].covers(OTHER)
    # t2: worker a has no answer, so the choice moves to b (greedy and sampled alike)
    for rng in (None, np.random.default_rng(3)):
        ep = asyncio.run(run_episode(_Prefers(), pool, OTHER, _settings(), rng=rng))
        turn = ep.turns[0]
        assert turn.worker == "b" and turn.error is None
        assert turn.worker_probs == (0.0, 1.0)
        assert ep.reward == 1.0
    # t1: both have an answer, the policy's choice and probabilities stand
    ep = asyncio.run(run_episode(_Prefers(), pool, TASK, _settings()))
    assert ep.turns[0].worker == "a" and ep.turns[0].worker_probs == (0.7, 0.3)


def test_a_single_workers_baseline_is_not_rerouted_its_miss_is_recorded():
    pool = _two_workers()
    ep = asyncio.run(run_episode(FixedPolicy(2, 0), pool, OTHER, _settings()))
    assert ep.turns[0].worker == "a"
    assert "no recorded answer for task 't2'" in (ep.turns[0].error or "")
    assert ep.reward == 0.0


def test_mask_workers_leaves_a_full_pool_and_a_zero_mass_choice_alone():
    action = Action(0, 1, (0.6, 0.4), (0.0, 1.0, 0.0))
    assert mask_workers(action, (True, True), None) is action
    assert mask_workers(Action(0, 1, (1.0, 0.0), (0.0, 1.0, 0.0)), (False, True), None).worker == 0
    masked = mask_workers(action, (False, True), None)
    assert masked.worker == 1 and masked.worker_probs == (0.0, 1.0)


def test_recorded_workers_bypass_the_response_cache(tmp_path):
    from workbench.core.store import Store
    from workbench.core.workers.cache import cached_pool
    from workbench.core.workspace import Workspace

    with Store.open(Workspace.open(tmp_path)) as store:
        live = build_pool(["sandbox:mathlete"])
        wrapped, _ = cached_pool([_worker(), *live], store, "read-write")
    assert isinstance(wrapped[0], RecordedWorker)
    assert type(wrapped[1]).__name__ == "CachedWorker"


class _AsThinker(AnyContext):
    """A policy that always picks worker 0 as Thinker."""

    n_workers = 1

    async def adecide(self, transcript, rng=None):
        return Action(0, 0, (1.0,), (1.0, 0.0, 0.0))


def test_a_recorded_worker_answers_only_in_its_recorded_role():
    settings = EpisodeSettings(max_turns=1, roles=("thinker", "worker", "verifier"))
    ep = asyncio.run(run_episode(_AsThinker(), [_worker()], TASK, settings))
    turn = ep.turns[0]
    assert str(turn.role) == "thinker" and turn.response == "" and ep.reward == 0.0
    assert turn.error is not None and "only in the role it was recorded in" in turn.error
    with pytest.raises(NotRecorded, match='roles = \\["worker"\\]'):
        from workbench.core.workers.base import EpisodeContext

        asyncio.run(
            _worker().complete(
                [],
                max_tokens=5,
                temperature=0.0,
                context=EpisodeContext(TASK, "verifier", r"\\boxed{5}"),
            )
        )


def test_a_pool_of_recorded_workers_only_is_refused_with_roles_it_has_no_answers_in():
    from workbench.core.errors import InvalidInput
    from workbench.core.workers.recorded import check_recorded_roles

    champ = build_pool(["recorded:champ"])
    with pytest.raises(InvalidInput, match=r'roles = \["worker"\]'):
        check_recorded_roles(champ, ("thinker", "worker", "verifier"))
    check_recorded_roles(champ, ("worker",))  # routing only: fine
    # a live worker can play the other roles: a mixed pool is not refused
    check_recorded_roles(build_pool(["recorded:champ/gpt-4", "sandbox:mathlete"]), ("thinker",))
