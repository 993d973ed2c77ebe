"""Hand-written hedges and multi-part answers, and issue 13's examples verbatim: every
wrong answer here scores 0, every right one 1, and the grade names the rule."""

from __future__ import annotations

import pytest

from workbench.core.tasks import Task, grade

CHOICE = Task(
    id="c",
    kind="choice",
    prompt="Which city is the capital of France?",
    answer="B",
    choices=("London", "Paris", "Berlin", "Rome"),
)
CHOICE_D = Task(id="d", kind="choice", prompt="Pick one.", answer="D", choices=tuple("wxyz"))


def math(reference: str) -> Task:
    return Task(id="m", kind="math", prompt="Solve it.", answer=reference)


# (reference, answer): the "math, wrong answers paid" and more of each class
MATH_WRONG = [
    ("239", "The final answer is $-239$."),
    ("2^(n-1)", "\\boxed{2^{n+1}}"),
    ("[-1, 1]", "\\boxed{(-1, 1)}"),
    ("376 and 625", "\\boxed{376}"),
    ("x=6, y=5", "\\boxed{(5, 6)}"),
    ("9642 and 87531", "\\boxed{87531}"),
    ("1, 4 and 9", "\\boxed{1, 9}"),
    ("x=2, y=1", "\\boxed{x=1, y=2}"),
    ("a=3, b=-7, c=4", "\\boxed{(3, 7, 4)}"),
    ("x=0, y=2 and x=9, y=11", "\\boxed{(0, 2)}"),
    ("(x+1)(x-1)(x^2+1)", "\\boxed{(x+1)(x+1)(x^2+1)}"),
    ("7", "It is \\boxed{7}. Hmm, or rather \\boxed{8}."),
    ("1/2", "The answer is \\frac13"),
    ("No", "Yes, such a number exists."),
    ("-1/2", "\\boxed{1/2}"),
]
MATH_RIGHT = [
    ("1/2", "\\frac12"),
    ("252", "\\binom{10}{5}"),
    ("-3", "\u22123"),
    ("-3", "The final answer is \u22123."),
    ("No", "No, there is no such integer."),
    ("Yes", "Yes: take n = 2."),
    ("376 and 625", "\\boxed{376 \\text{ and } 625}"),
    ("x=6, y=5", "\\boxed{x = 6, y = 5}"),
    ("9642 and 87531", "\\boxed{87531, 9642}"),
    ("a=3, b=-7, c=4", "\\boxed{(3, -7, 4)}"),
    ("7", "\\boxed{7}, that is \\boxed{7}"),
]


@pytest.mark.parametrize(("reference", "answer"), MATH_WRONG)
def test_wrong_math_answers_are_not_paid(reference: str, answer: str) -> None:
    result = grade(math(reference), answer)
    assert result.reward == 0.0, result.details
    assert result.details["rule"]


@pytest.mark.parametrize(("reference", "answer"), MATH_RIGHT)
def test_right_math_answers_are_paid(reference: str, answer: str) -> None:
    result = grade(math(reference), answer)
    assert result.reward == 1.0, result.details


HEDGES = [
    "A or B",  # the issue's: the 'A' is an option, not an article
    "Answer: B or C",  # the issue's: the letter after the cue is not the whole answer
    "B/C",
    "either B or D",
    "B and C",
    "Either A or B.",
    "The answer is B/C",
    "B, C",
    "(B) or (C)",
    "B or maybe C",
    "Answer: B or possibly C",
    "It is B or C.",
    "Answer: B and/or C",
    "Answer: **B** or **C**",
    "\\boxed{B} or \\boxed{C}",
    "Answer: B (or C)",
    "answer: b/c",
    "Answer: Both B and C",
    "Answer: either (B) or (D)",
    "\\boxed{B, C}",
]


@pytest.mark.parametrize("answer", HEDGES)
def test_a_hedge_is_wrong(answer: str) -> None:
    result = grade(CHOICE, answer)
    assert result.reward == 0.0, result.details
    assert result.details["rule"].startswith("choice: hedge"), result.details


@pytest.mark.parametrize(
    ("task", "answer"),
    [
        (CHOICE_D, "answer: d"),  # the issue's: a lower-case letter after a cue
        (CHOICE_D, "The final answer is (d)."),
        (CHOICE, "Answer: B\n\nA or C would be wrong."),
        (CHOICE, "Answer: B. Paris is the capital, and A (London) is not."),
        (CHOICE, "A and C are wrong, so the answer is B."),
    ],
)
def test_one_stated_letter_is_read(task: Task, answer: str) -> None:
    result = grade(task, answer)
    assert result.reward == 1.0, result.details
