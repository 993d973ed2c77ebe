"""The turn loop, prompts, verdicts and stopping rules, with a scripted coordinator (to
force chosen actions) and real sandbox workers and graders."""

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from workbench.core.coordinator import Action, Backbone, Coordinator
from workbench.core.policies import AnyContext
from workbench.core.protocol import (
    EpisodeSettings,
    Prompts,
    build_messages,
    parse_verdict,
    run_episode,
    worker_only_turn,
)
from workbench.core.records import ROLES, Role, StopReason, Turn
from workbench.core.tasks.model import Task
from workbench.core.transcript import fit_transcript, render_transcript
from workbench.core.workers.base import Completion, Worker, WorkerError
from workbench.core.workers.pool import build_pool

MATH = Task(id="m1", kind="math", prompt="What is 6 * 7?", answer="42", category="math")


class ScriptedCoordinator(AnyContext):
    """Plays a fixed list of (worker index, role name) actions, with made-up distributions."""

    def __init__(self, n_workers: int, script: Sequence[tuple[int, str]]):
        self.n_workers = n_workers
        self.script = list(script)
        self.transcripts: list[str] = []

    async def adecide(self, transcript, rng=None):
        self.transcripts.append(transcript)
        w, role = self.script[len(self.transcripts) - 1]
        r = [str(x) for x in ROLES].index(role)
        wp = tuple(
            0.9 if i == w else 0.1 / max(1, self.n_workers - 1) for i in range(self.n_workers)
        )
        rp = tuple(0.8 if i == r else 0.1 for i in range(3))
        return Action(w, r, wp, rp)


class ScriptedWorker(Worker):
    """A worker that replies from a list; an Exception in the list is raised instead."""

    provider = "scripted"

    def __init__(self, worker_id, replies):
        super().__init__(worker_id, "scripted")
        self.replies = list(replies)
        self.received = []

    async def complete(self, messages, *, max_tokens, temperature, seed=None, context=None):
        self.received.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion(text=reply, tokens_in=10, tokens_out=5, latency_s=0.01, cost=0.001)


def play(script, workers, task=MATH, **settings):
    coord = ScriptedCoordinator(len(workers), script)
    return asyncio.run(
        run_episode(coord, workers, task, EpisodeSettings(suite="t", **settings))
    ), coord


@pytest.mark.parametrize(
    "text,expected",
    [
        ("ACCEPT", ("ACCEPT", True)),
        ("  **Accept** - the sum is right", ("ACCEPT", True)),
        ("\n# REVISE\nstep 2 is wrong", ("REVISE", True)),
        ("Verdict: accept", ("ACCEPT", True)),
        ("> `revise`: no", ("REVISE", True)),
        ("_ACCEPT_", ("ACCEPT", True)),
        ("**Verdict:** REVISE", ("REVISE", True)),
        ("I think we should ACCEPT", ("REVISE", False)),
        ("ACCEPTABLE? not sure", ("REVISE", False)),
        ("", ("REVISE", False)),
    ],
)
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_worker_then_accept_stops_with_graded_answer():
    solver = ScriptedWorker("a", ["6*7 = \\boxed{42}"])
    judge = ScriptedWorker("b", ["**ACCEPT** looks right"])
    episode, coord = play([(0, "worker"), (1, "verifier")], [solver, judge])
    assert episode.stop_reason == StopReason.ACCEPTED
    assert episode.answer == "6*7 = \\boxed{42}" and episode.reward == 1.0
    assert [(t.worker, t.role, t.verdict) for t in episode.turns] == [
        ("a", Role.WORKER, None),
        ("b", Role.VERIFIER, "ACCEPT"),
    ]
    assert episode.turns[0].worker_probs == (0.9, 0.1) and episode.turns[1].role_probs == (
        0.1,
        0.1,
        0.8,
    )
    assert episode.cost == pytest.approx(0.002) and episode.tokens_in == 20
    # the coordinator read the growing transcript as "role/worker: content"
    assert coord.transcripts[1].endswith("Worker/a: 6*7 = \\boxed{42}")
    # the verifier saw the answer under review
    assert "6*7 = \\boxed{42}" in judge.received[0][0]["content"]


def test_verifier_before_any_answer_ends_with_reward_zero():
    judge = ScriptedWorker("b", ["ACCEPT"])
    episode, _ = play([(0, "verifier")], [judge])
    assert episode.stop_reason == StopReason.VERIFIER_WITHOUT_ANSWER
    assert episode.reward == 0 and len(episode.turns) == 1 and not judge.received
    assert "Verifier was chosen before any Worker answer" in episode.grade_details["reason"]


def test_unparsed_verdict_counts_as_revise_and_max_turns_stop():
    solver = ScriptedWorker("a", ["\\boxed{41}", "\\boxed{42}"])
    judge = ScriptedWorker("b", ["Looks fine to me"])
    episode, _ = play([(0, "worker"), (1, "verifier"), (0, "worker")], [solver, judge], max_turns=3)
    assert episode.turns[1].verdict == "REVISE" and episode.turns[1].verdict_parsed is False
    assert episode.stop_reason == StopReason.MAX_TURNS and len(episode.turns) == 3
    assert episode.answer == "\\boxed{42}" and episode.reward == 1.0  # latest Worker output
    # the second Worker call saw the previous answer and the critique
    second = solver.received[1][0]["content"]
    assert (
        "Previous answer (a):\n\\boxed{41}" in second
        and "Critique (b):\nLooks fine to me" in second
    )


def test_failed_call_is_recorded_and_the_episode_goes_on():
    solver = ScriptedWorker("a", [WorkerError("a", "server said 503 three times"), "\\boxed{42}"])
    episode, _ = play([(0, "worker"), (0, "worker")], [solver], max_turns=2)
    assert episode.turns[0].error == "worker 'a': server said 503 three times"
    assert episode.turns[0].response == "" and episode.turns[1].error is None
    assert episode.reward == 1.0 and episode.stop_reason == StopReason.MAX_TURNS


def test_every_call_failing_ends_with_worker_errors():
    solver = ScriptedWorker("a", [WorkerError("a", "401"), RuntimeError("connection reset")])
    episode, _ = play([(0, "thinker"), (0, "worker")], [solver], max_turns=2)
    assert episode.stop_reason == StopReason.WORKER_ERRORS and episode.reward == 0
    assert episode.turns[1].error == "RuntimeError: connection reset"


def test_role_prompts_and_custom_templates(tmp_path):
    prompts = Prompts.load()
    thinker = ScriptedWorker("t", ["Multiply the tens first."])
    solver = ScriptedWorker("s", ["\\boxed{42}"])
    judge = ScriptedWorker("v", ["ACCEPT"])
    play(
        [(0, "thinker"), (1, "worker"), (2, "verifier")], [thinker, solver, judge], prompts=prompts
    )
    worker_prompt = solver.received[0][0]["content"]
    assert (
        "Guidance (t):\nMultiply the tens first." in worker_prompt and "\\boxed{}" in worker_prompt
    )
    verifier_prompt = judge.received[0][0]["content"]
    assert "Multiply the tens" not in verifier_prompt and "ACCEPT" in verifier_prompt
    for role in ("thinker", "worker", "verifier"):
        (tmp_path / f"{role}.txt").write_text(f"CUSTOM {role}: $query")
    custom = Prompts.load(tmp_path)
    msgs = build_messages(custom, Role.WORKER, MATH, (), None)
    assert msgs == ({"role": "user", "content": "CUSTOM worker: What is 6 * 7?"},)
    with pytest.raises(FileNotFoundError, match="thinker.txt is missing"):
        Prompts.load(tmp_path / "nowhere")


def test_choice_tasks_show_lettered_options_to_coordinator_and_workers():
    task = Task(
        id="c1", kind="choice", prompt="Which is prime?", choices=("4", "6", "7", "9"), answer="C"
    )
    assert render_transcript(task, ()) == "Query:\nWhich is prime?\n\n(A) 4\n(B) 6\n(C) 7\n(D) 9"


def test_pool_size_must_match_the_head(tiny_backbone):
    coord = Coordinator.untrained(tiny_backbone, n_workers=2)
    with pytest.raises(ValueError, match="head has 2 worker rows but the pool has 3"):
        asyncio.run(run_episode(coord, build_pool(["sandbox"]), MATH))


def test_sandbox_episodes_are_reproducible_and_use_the_real_coordinator(tiny_backbone):
    pool = build_pool(["sandbox"])
    coord = Coordinator.untrained(tiny_backbone, n_workers=3, seed=0, scale=0.1)

    def one(seed):
        return asyncio.run(
            run_episode(coord, pool, MATH, rng=np.random.default_rng(seed), seed=seed)
        )

    a, b = one(7), one(7)
    assert [t.to_dict() for t in a.turns] == [t.to_dict() for t in b.turns]
    assert a.reward == b.reward and a.stop_reason == b.stop_reason
    assert any(one(s).turns != a.turns for s in range(8, 12))
    for t in a.turns:
        assert t.response.startswith(("[sandbox:", "ACCEPT", "REVISE")) or not t.messages


def test_the_coordinator_reads_whole_turns_and_drops_the_oldest_only_past_its_context(tiny_lm):
    """No clipping: a 5,000-character reply reaches the coordinator whole. Past the
    backbone's context the oldest turns go first, the query stays, and the turn decided
    from the shortened transcript records how many were left out."""
    long_reply = "step " * 1000
    workers = [ScriptedWorker("w", [long_reply, long_reply, "The answer is 42."])]
    episode, coord = play([(0, "thinker"), (0, "thinker"), (0, "worker")], workers, max_turns=3)
    assert long_reply in coord.transcripts[1] and coord.transcripts[2].count(long_reply) == 2

    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer)
    whole = render_transcript(MATH, episode.turns[:2])
    one_turn = render_transcript(MATH, episode.turns[:1])
    backbone.context_tokens = (len(backbone.encode(one_turn)) + len(backbone.encode(whole))) // 2
    assert backbone.fits(one_turn) and not backbone.fits(whole)
    text, omitted = fit_transcript(MATH, episode.turns[:2], backbone.fits)
    assert omitted == 1 and text == render_transcript(MATH, episode.turns[:2], 1)
    assert text.startswith("Query:\nWhat is 6 * 7?") and "[1 earlier turns omitted]" in text
    assert backbone.fits(text)

    # in an episode: the policy offers its backbone's check (Coordinator.context_fits)
    coord = ScriptedCoordinator(1, [(0, "thinker"), (0, "thinker"), (0, "worker")])
    coord.context_fits = Coordinator.untrained(backbone, 1).context_fits
    workers = [ScriptedWorker("w", [long_reply, long_reply, "The answer is 42."])]
    played = asyncio.run(run_episode(coord, workers, MATH, EpisodeSettings(suite="t", max_turns=3)))
    assert [t.context_omitted for t in played.turns] == [0, 0, 1]
    assert coord.transcripts[2] == text and played.reward == 1.0
    stored = [Turn.from_dict(t.to_dict()) for t in played.turns]
    assert [t.context_omitted for t in stored] == [0, 0, 1]
    assert "context_omitted" not in played.turns[0].to_dict()  # stored only when it happened


@pytest.mark.parametrize(
    ("final_turn", "index", "role", "answer", "restricted"),
    [
        ("worker", 2, Role.THINKER, None, True),  # the last of K = 3, no answer yet
        ("worker", 2, Role.VERIFIER, None, True),
        ("worker", 0, Role.VERIFIER, None, True),  # a Verifier with nothing to judge
        ("worker", 0, Role.THINKER, None, False),  # the episode goes on: not restricted
        ("worker", 2, Role.THINKER, "42", False),  # an answer exists
        ("worker", 1, Role.VERIFIER, "42", False),
        ("worker", 2, Role.WORKER, None, False),  # already a Worker
        ("free", 2, Role.THINKER, None, False),  # the paper's protocol
        ("free", 0, Role.VERIFIER, None, False),
    ],
)
def test_which_turns_final_turn_worker_restricts_to_the_worker_role(
    final_turn, index, role, answer, restricted
):
    settings = EpisodeSettings(max_turns=3, final_turn=final_turn)
    assert worker_only_turn(settings, index, role, answer) is restricted


def test_an_unknown_final_turn_is_refused():
    with pytest.raises(ValueError, match="unknown final_turn 'last': use free or worker"):
        EpisodeSettings(final_turn="last")
