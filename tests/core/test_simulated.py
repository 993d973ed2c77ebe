"""The sandbox pool simulation: declared skills, role effects, reproducibility."""

import asyncio

import pytest

from workbench.core.tasks.graders import grade
from workbench.core.tasks.model import Task
from workbench.core.workers.base import EpisodeContext, WorkerError
from workbench.core.workers.pool import build_pool
from workbench.core.workers.simulated import PROFILES_BY_ID, THINK_GAIN, oracle_worker

MATH = Task(id="m", kind="math", prompt="What is 6 * 7?", answer="42", category="math")
CHOICE = Task(
    id="c",
    kind="choice",
    prompt="Which is prime?",
    choices=("4", "6", "7", "9"),
    answer="C",
    category="choice",
)
CODE = Task(
    id="k",
    kind="code",
    prompt="Write sq(x).",
    category="code",
    solution="def sq(x):\n    return x * x",
    tests={
        "style": "humaneval",
        "entry_point": "sq",
        "test": "def check(c):\n    assert c(3) == 9\n",
    },
)


def call(worker_id, task, role, *, answer=None, thinkers=(), seed=0):
    (worker,) = build_pool([worker_id])

    async def go():
        return await worker.complete(
            [{"role": "user", "content": task.prompt}],
            max_tokens=256,
            temperature=0.1,
            seed=seed,
            context=EpisodeContext(task, role, answer, tuple(thinkers)),
        )

    return asyncio.run(go())


def success_rate(worker_id, task, n=400, **kw):
    return (
        sum(
            grade(task, call(worker_id, task, "worker", seed=s, **kw).text).reward for s in range(n)
        )
        / n
    )


def test_worker_success_follows_declared_skill():
    assert success_rate("sandbox:mathlete", MATH) == pytest.approx(0.85, abs=0.06)
    assert success_rate("sandbox:scholar", MATH) == pytest.approx(0.30, abs=0.06)
    assert success_rate("sandbox:scholar", CHOICE) == pytest.approx(0.85, abs=0.06)


def test_a_thinker_before_the_worker_raises_its_chance():
    expected = 0.3 + 0.7 * THINK_GAIN * PROFILES_BY_ID["sandbox:mathlete"].skill["math"]
    rate = success_rate("sandbox:scholar", MATH, thinkers=["sandbox:mathlete"])
    assert rate == pytest.approx(expected, abs=0.06)


def test_verifier_catches_wrong_answers_at_its_skill_and_accepts_right_ones():
    caught = (
        sum(
            call(
                "sandbox:mathlete", MATH, "verifier", answer="\\boxed{41}", seed=s
            ).text.startswith("REVISE")
            for s in range(300)
        )
        / 300
    )
    assert caught == pytest.approx(0.85, abs=0.06)
    accepted = (
        sum(
            call("sandbox:coder", MATH, "verifier", answer="\\boxed{42}", seed=s).text.startswith(
                "ACCEPT"
            )
            for s in range(300)
        )
        / 300
    )
    assert accepted == pytest.approx(0.95, abs=0.04)


def test_code_answers_are_real_programs_graded_in_the_sandbox():
    texts = [call("sandbox:coder", CODE, "worker", seed=s).text for s in range(12)]
    rewards = [grade(CODE, t).reward for t in texts]
    assert 1.0 in rewards and 0.0 in rewards


def test_same_seed_and_transcript_give_the_same_reply():
    a = call("sandbox:scholar", CHOICE, "worker", seed=5)
    assert a == call("sandbox:scholar", CHOICE, "worker", seed=5)
    assert a.tokens_out > 0 and a.cost > 0


def test_sandbox_words_are_a_function_of_task_worker_role_and_outcome():
    """Outcomes are drawn per episode, the words are not: candidates that make the same
    choices with the same outcomes read the same transcript, which the backbone forwards
    once. The replies are as short as the coordinator's reading allows."""
    for task in (MATH, CHOICE, CODE):
        texts = {call("sandbox:scholar", task, "worker", seed=s).text for s in range(40)}
        assert len(texts) == 2, task.kind  # one right answer, one wrong one
        assert sorted(grade(task, t).reward for t in texts) == [0.0, 1.0], task.kind
    verdicts = {
        call("sandbox:coder", MATH, "verifier", answer="\\boxed{41}", seed=s).text
        for s in range(40)
    }
    assert verdicts == {"ACCEPT", "REVISE"}
    assert {call("sandbox:coder", CHOICE, "thinker", seed=s).text for s in range(5)} == {
        "Plan (choice)."
    }


def test_sandbox_code_answers_complete_the_prompts_function():
    """A code task whose solution continues the prompt's code (HumanEval's form) is
    answered with the function's body, right or with one token changed; the grader runs
    either."""
    from workbench.core.tasks.suites import load_suite

    task = next(t for t in load_suite("mixed").tasks if t.kind == "code")
    texts = {call("sandbox:coder", task, "worker", seed=s).text for s in range(12)}
    assert all(t.startswith("    ") for t in texts) and len(texts) == 2
    assert sorted(grade(task, t).reward for t in texts) == [0.0, 1.0]
    assert all(len(t) < len(task.solution) for t in texts)


def _differing_lines(a: str, b: str) -> int:
    la, lb = a.splitlines(), b.splitlines()
    return abs(len(la) - len(lb)) + sum(x != y for x, y in zip(la, lb, strict=False))


@pytest.mark.parametrize("worker, short", [("sandbox:coder", True), ("team:mathlete", False)])
def test_wrong_answers_are_written_like_right_ones(worker, short):
    """The coordinator reads every reply, and the oracle assumes it cannot tell a wrong
    answer by its words: on every task of the bundled `mixed` suite the wrong answer grades
    0 (code in the sandbox), the right one 1, and the two differ as a wrong number, letter
    or a program with one changed line would; a stub stands in only where no one-token
    change of the program fails the task's tests (2 of the 100 code tasks)."""
    from workbench.core.tasks.suites import load_suite
    from workbench.core.workers.simulated import _answer_text

    stubs = []
    for task in load_suite("mixed").tasks:
        right = _answer_text(task, True, worker, short)
        wrong = _answer_text(task, False, worker, short)
        assert grade(task, right).reward == 1.0, task.id
        assert grade(task, wrong).reward == 0.0, task.id
        if "return None" in wrong:
            stubs.append(task.id)
            continue
        assert "unsure" not in wrong and "not sure" not in wrong, task.id
        assert _differing_lines(right, wrong) == 1, (task.id, right, wrong)
        if task.kind == "math":
            assert wrong.count("/") == right.count("/"), (task.id, wrong)
    assert len(stubs) <= 2, stubs


def test_oracle_is_the_best_worker_per_category():
    ids = list(PROFILES_BY_ID)
    assert oracle_worker("math", "math", ids) == "sandbox:mathlete"
    assert oracle_worker("choice", "choice", ids) == "sandbox:scholar"
    assert oracle_worker(None, "code", ids) == "sandbox:coder"


def test_sandbox_outside_an_episode_is_a_clear_error():
    (worker,) = build_pool(["sandbox:coder"])
    with pytest.raises(WorkerError, match="only inside an episode"):
        asyncio.run(
            worker.complete([{"role": "user", "content": "hi"}], max_tokens=8, temperature=0)
        )


def test_unknown_workers_name_the_alternatives():
    with pytest.raises(KeyError, match="unknown worker 'gpt-9'.*local:"):
        build_pool(["gpt-9"])
    with pytest.raises(ValueError, match="sandbox:mathlete, sandbox:scholar, sandbox:coder"):
        build_pool(["sandbox:wizard"])
    with pytest.raises(ValueError, match="twice"):
        build_pool(["sandbox", "sandbox:coder"])


# ----------------------------------------------------------------------------- the team


def rate(worker_id, task, role, predicate, n=400, **kw):
    return sum(predicate(call(worker_id, task, role, seed=s, **kw).text) for s in range(n)) / n


def right(task):
    return lambda text: grade(task, text).reward >= 1.0


def test_team_is_its_own_pool_of_five_labelled_simulations():
    pool = build_pool(["team"])
    assert [w.id for w in pool] == [
        "team:mathlete",
        "team:scholar",
        "team:coder",
        "team:planner",
        "team:checker",
    ]
    assert all(w.model.startswith("simulated/") for w in pool)
    reply = call("team:planner", MATH, "thinker")
    assert "simulated team:planner" in reply.text
    with pytest.raises(ValueError, match="team:mathlete, team:scholar"):
        build_pool(["team:wizard"])
    with pytest.raises(ValueError, match="unknown sandbox worker 'sandbox:planner'"):
        build_pool(["sandbox:planner"])  # each pool names only its own workers


def test_team_specialists_solve_their_category_and_not_the_others():
    assert rate("team:mathlete", MATH, "worker", right(MATH)) == pytest.approx(0.7, abs=0.06)
    assert rate("team:mathlete", CHOICE, "worker", right(CHOICE)) == pytest.approx(0.2, abs=0.06)
    assert rate("team:coder", CODE, "worker", right(CODE), n=120) == pytest.approx(0.7, abs=0.12)
    assert rate("team:checker", CHOICE, "worker", right(CHOICE)) == pytest.approx(0.1, abs=0.05)


def test_team_planner_guidance_removes_half_the_next_answers_error():
    guided = rate("team:scholar", CHOICE, "worker", right(CHOICE), thinkers=["team:planner"])
    assert guided == pytest.approx(0.85, abs=0.05)
    # the same plan twice is one plan; another thinker's guidance still adds
    twice = rate("team:scholar", CHOICE, "worker", right(CHOICE), thinkers=["team:planner"] * 2)
    assert twice == pytest.approx(0.85, abs=0.05)
    both = rate(
        "team:scholar", CHOICE, "worker", right(CHOICE), thinkers=["team:planner", "team:coder"]
    )
    assert both == pytest.approx(0.865, abs=0.05)
    # the sandbox's guidance compounds, as it always did
    sandbox = rate("sandbox:coder", MATH, "worker", right(MATH), thinkers=["sandbox:mathlete"] * 2)
    assert sandbox == pytest.approx(1 - 0.6 * (1 - THINK_GAIN * 0.85) ** 2, abs=0.05)


def test_team_checker_catches_wrong_answers_and_passes_right_ones():
    def revise(text):
        return text.startswith("REVISE")

    wrong = "The answer is \\boxed{41}."
    rightly = "The answer is \\boxed{42}."
    assert rate("team:checker", MATH, "verifier", revise, answer=wrong) == pytest.approx(
        0.9, abs=0.05
    )
    assert rate("team:checker", MATH, "verifier", revise, answer=rightly) == pytest.approx(
        0.05, abs=0.03
    )
    assert rate("team:mathlete", MATH, "verifier", revise, answer=wrong) == pytest.approx(
        0.3, abs=0.06
    )
    assert rate("team:planner", MATH, "verifier", revise, answer=rightly) == pytest.approx(
        0.1, abs=0.04
    )


def test_team_answers_are_graded_like_any_answer():
    for task in (MATH, CHOICE, CODE):
        texts = [call("team:scholar", task, "worker", seed=s).text for s in range(16)]
        rewards = {grade(task, t).reward for t in texts}
        assert rewards == {0.0, 1.0}, task.kind
        assert all(t.startswith("[simulated team:scholar]") for t in texts)
