"""What counts as stating a final answer (docs/guides/grading.md): a restated question is
not an answer, an explicit final answer outranks earlier words, markers that disagree are
wrong, and closed forms math-verify does not know are equal where their values are."""

from __future__ import annotations

import random
import re

import pytest

from workbench.core.tasks import Task, grade, load_suite
from workbench.core.tasks.closed_forms import equal_by_value, rewrite_double_factorials
from workbench.core.tasks.math_answers import echoes_question, final_markers, last_side
from workbench.core.tasks.math_equivalence import parse_boxed


def math(reference: str, prompt: str = "Solve it.") -> Task:
    return Task(id="m", kind="math", prompt=prompt, answer=reference)


# ----------------------------------------------------------------------------- echoes

ECHOES = [  # (question, reference, answer): the question's own operation, not its value
    ("What is 8 + 7?", "15", "8 + 7"),
    ("What is 8 + 7?", "15", "The answer is 8 + 7."),
    ("What is 8 + 7?", "15", "\\boxed{8+7}"),
    ("What is 893 × 77?", "68761", "The answer is 893 × 77."),
    ("What is 893 × 77?", "68761", "\\boxed{893 \\times 77}"),
    ("What is 893 × 77?", "68761", "893*77"),
    ("Compute 3/2 + 1/4. Give the answer as a fraction in lowest terms.", "7/4", "3/2 + 1/4"),
    ("Compute 3/2 + 1/4. Give the answer as a fraction in lowest terms.", "7/4",
     "\\boxed{\\frac{3}{2} + \\frac{1}{4}}"),
    ("What is 16 + 74?", "90", "16+74"),
    ("What is 1367 ÷ 8? Give the result as a fraction in lowest terms (or an integer).",
     "1367/8", "1367 ÷ 8"),
    ("What is 1367 ÷ 8? Give the result as a fraction in lowest terms (or an integer).",
     "1367/8", "The final answer is $1367 \\div 8$."),
    ("What is 96 ÷ 4?", "24", "\\frac{96}{4}"),
    ("Evaluate (3 + 4) × 2.", "14", "(3 + 4) × 2"),
    ("A pencil costs 12 cents. How many cents do 5 pencils cost?", "60", "\\boxed{5 \\times 12}"),
    ("What is 8 + 7?", "15", "So the sum is 8 + 7."),
]  # fmt: skip
VALUES = [  # the same questions answered with a value
    ("What is 8 + 7?", "15", "8 + 7 = 15"),
    ("What is 8 + 7?", "15", "The final answer is: 8 + 7 = 15"),
    ("What is 8 + 7?", "15", "\\boxed{15}"),
    ("What is 893 × 77?", "68761", "The answer is 68,761."),
    ("Compute 3/2 + 1/4. Give the answer as a fraction in lowest terms.", "7/4", "\\frac{7}{4}"),
    ("What is 1367 ÷ 8? Give the result as a fraction in lowest terms (or an integer).",
     "1367/8", "\\boxed{1367/8}"),
    ("What is 1367 ÷ 8? Give the result as a fraction in lowest terms (or an integer).",
     "1367/8", "The answer is \\frac{1367}{8}."),
    ("What is 96 ÷ 4?", "24", "96 ÷ 4 = 24"),
    ("Find C(10, 5).", "C(10, 5), or equivalently 252", "\\boxed{\\binom{10}{5}}"),
    ("Write 8 + 7 in any equivalent form.", "15", "\\boxed{7 + 8}"),
]  # fmt: skip


@pytest.mark.parametrize(("question", "reference", "answer"), ECHOES)
def test_an_echo_of_the_question_is_not_an_answer(question, reference, answer) -> None:
    result = grade(math(reference, question), answer)
    assert result.reward == 0.0, result.details
    assert result.details["rule"] == "echo: the question restated"


@pytest.mark.parametrize(("question", "reference", "answer"), VALUES)
def test_a_value_is_an_answer(question, reference, answer) -> None:
    result = grade(math(reference, question), answer)
    assert result.reward == 1.0, result.details


def test_no_shape_of_the_arithmetic_questions_own_expression_is_paid() -> None:
    # 40 seeded arithmetic tasks whose question holds the expression; each expression given
    # bare, stated and boxed scores 0, and its value in the same shapes scores 1
    tasks = [
        t for t in load_suite("arithmetic").tasks
        if re.match(r"(?:What is|Compute|Evaluate) ", t.prompt)
    ]  # fmt: skip
    paid, missed = [], []
    for task in random.Random(0).sample(tasks, 40):
        expression = re.match(r"(?:What is|Compute|Evaluate) (.+?)[?.](?:\s|$)", task.prompt)
        assert expression, task.prompt
        for shape in ("%s", "The answer is %s.", "\\boxed{%s}"):
            if grade(task, shape % expression.group(1)).reward:
                paid.append((task.id, shape % expression.group(1)))
            if grade(task, shape % task.answer).reward != 1.0:
                missed.append((task.id, shape % task.answer))
    assert not paid
    assert not missed


def test_what_an_echo_is() -> None:
    assert echoes_question("8 + 7", "What is 8 + 7?")
    assert not echoes_question("15", "What is 8 + 7?")
    assert not echoes_question("7 + 9", "What is 8 + 7?")  # 9 is not the question's
    assert not echoes_question("7/4", "Compute 3/2 + 1/4.")  # a fraction in lowest terms
    assert echoes_question("16/4", "What is 16 ÷ 4?")  # not in lowest terms
    assert not echoes_question("x + 7", "What is x + 7?")  # not arithmetic
    assert not echoes_question("-3", "What is 4 - 7?")
    assert not echoes_question("8 + 7", None)
    assert last_side("8 + 7 = 15") == "15"
    assert last_side("x = 5") == "x = 5"


# ----------------------------------------------------------------------------- units

PENCILS = "A pencil costs 91 cents. How many cents do 3 pencils cost?"


@pytest.mark.parametrize(
    ("question", "answer", "reward"),
    [
        (PENCILS, "The final answer is 273 cents.", 1.0),
        (PENCILS, "So 3 pencils = 3 * 91 = 273 cents. The total is 273 cents.", 1.0),
        (PENCILS, "The final answer is 272 cents.", 0.0),
        (PENCILS, "The final answer is 273 pencils.", 0.0),  # not the unit asked
        (PENCILS, "The final answer is 273 cents more than the eraser.", 0.0),
        ("What is 91 * 3?", "The final answer is 273 cents.", 0.0),  # no unit asked
    ],
)
def test_a_value_in_the_unit_the_question_asks_for_is_an_answer(question, answer, reward) -> None:
    """A sentence that states the number in the unit the question asks for ("How many
    cents ...?": "... is 273 cents") states that number; another unit, or words after
    it, state nothing."""
    assert grade(math("273", question), answer).reward == reward


# ----------------------------------------------------------------------------- markers


@pytest.mark.parametrize(
    ("reference", "answer", "reward"),
    [
        ("No", "No contradiction arises. Answer: Yes", 0.0),
        ("Yes", "No contradiction arises. Answer: Yes", 1.0),
        ("No", "Yes, at first sight.\n\nFinal answer: \\boxed{No}", 1.0),
        ("No", "Answer: No. Final answer: Yes", 0.0),
        ("Yes", "Answer: No. Final answer: Yes", 0.0),
        ("15", "The answer is 15. \\boxed{16}", 0.0),
        ("16", "The answer is 15. \\boxed{16}", 0.0),
        ("15", "The answer is $\\boxed{15}$.", 1.0),
        ("15", "Answer: 15\n\nFinal Answer: The final answer is 15. I hope it is correct.", 1.0),
    ],
)
def test_explicit_final_answers_decide_and_must_agree(reference, answer, reward) -> None:
    assert grade(math(reference), answer).reward == reward


def test_final_markers_are_found_in_order() -> None:
    markers = final_markers("So the answer is $\\boxed{15}$. Final Answer: 15.")
    assert [(m.kind, m.text) for m in markers] == [("boxed", "15"), ("stated", "15")]
    assert [m.text for m in final_markers("Answer: Yes")] == ["Yes"]


# ------------------------------------------------------------------------ closed forms


@pytest.mark.parametrize(
    ("reference", "answer", "reward"),
    [
        ("(2n)!/(2^n*n!)", "\\boxed{(2n-1)!!}", 1.0),
        ("(2n)!/(2^n*n!)", "\\boxed{\\prod_{k=1}^{n}(2k-1)}", 1.0),
        ("(2n)!/(2^n*n!)", "\\boxed{1 \\cdot 3 \\cdot 5 \\cdots (2n-1)}", 1.0),
        ("(2n)!/(2^n*n!)", "\\boxed{\\frac{(2n)!}{(2n)!!}}", 1.0),
        ("(2n)!/(2^n*n!)", "\\boxed{(2n+1)!!}", 0.0),
        ("(2n)!/(2^n*n!)", "\\boxed{(2n)!!}", 0.0),
        ("(2n)!/(2^n*n!)", "\\boxed{(2n-1)!}", 0.0),
        ("(2n)!/(2^n*n!)", "\\boxed{1 \\cdot 3 \\cdot 5 \\cdots (2n+1)}", 0.0),
        ("2^floor(n/2)*floor(n/2)!", "\\boxed{(2\\lfloor n/2 \\rfloor)!!}", 1.0),
        ("2^floor(n/2)*floor(n/2)!", "\\boxed{2^{\\lfloor n/2 \\rfloor}\\lfloor n/2 \\rfloor!}", 1.0),
        ("2^floor(n/2)*floor(n/2)!", "\\boxed{(2\\lceil n/2 \\rceil)!!}", 0.0),
        ("x(x-1)(x-2)...(x-2022)", "\\boxed{\\prod_{k=0}^{2022}(x-k)}", 1.0),
        ("x(x-1)(x-2)...(x-2022)", "\\boxed{\\prod_{k=0}^{2021}(x-k)}", 0.0),
        ("n!/(2n)", "\\boxed{\\frac{(n-1)!}{2}}", 1.0),
        ("n!/(2n)", "\\boxed{(n-1)!!}", 0.0),
        ("15", "\\boxed{5!!}", 1.0),
    ],
)  # fmt: skip
def test_closed_forms_are_equal_where_their_values_are(reference, answer, reward) -> None:
    assert grade(math(reference), answer).reward == reward


def test_closed_forms_are_compared_only_by_value_and_within_bounds() -> None:
    assert rewrite_double_factorials("5!!").startswith("(\\prod_{j=0}")
    # no closed form: math-verify's to decide, never values
    assert not equal_by_value("n^2", "n*n", parse_boxed)
    # two free variables, or none: not compared
    assert not equal_by_value("n!", "m!", parse_boxed)
    # a product of 10^n terms is never evaluated past its bound; a tower is not computed
    assert not equal_by_value("\\prod_{k=1}^{10^n} k", "(10^n)!", parse_boxed)
    assert not equal_by_value("n!", "n^{n^{n^{n}}}", parse_boxed)
