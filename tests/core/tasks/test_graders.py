"""Graders: right, wrong and hostile answers for every task kind."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from workbench.core.tasks import Task, grade
from workbench.core.tasks.graders import extract_choice, extract_program
from workbench.core.tasks.math_references import gold_variants

HOSTILE = [
    None,
    "",
    "   \n\t",
    "\x00\x01\x02" * 100,
    "}}}{{{\\boxed\\boxed{{{",
    "\\boxed{",
    "9" * 20_000,
    "A" * 50_000,
    "```python\n" * 20,
    "\ud800 lone surrogate",
]


def math_task(answer: str) -> Task:
    return Task(id="m", kind="math", prompt="Compute it.", answer=answer)


def assert_details(grade_) -> None:
    assert {"extracted", "expected", "reason"} <= set(grade_.details)
    assert isinstance(grade_.details["reason"], str) and grade_.details["reason"]


# ---------------------------------------------------------------------------- math


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("0.5", "So the result is \\boxed{\\frac{1}{2}}."),
        ("1/2", "\\boxed{\\frac{1}{2}}"),
        ("\\frac{1}{2}", "The answer is 0.5"),
        ("1/2", "\\boxed{0.5}"),
        ("42", "The answer is 42."),
        ("42", "\\boxed{42}"),
        ("-7/3", "$-\\frac{7}{3}$"),
        ("2^(n-1)", "\\boxed{2^{n-1}}"),
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "\\boxed{(3, \\frac{\\pi}{2})}"),
        ("-3", "The answer is \u22123."),  # a Unicode minus
        ("1/2", "The answer is \\frac12"),  # bare LaTeX, no $ and no box
        ("252", "\\binom{10}{5}"),
        ("x=6, y=5", "\\boxed{(6, 5)}"),
        ("x=6, y=5", "\\boxed{y=5, x=6}"),
        ("376 and 625", "\\boxed{376} and \\boxed{625}"),
        ("No", "No, there is no such integer."),  # yes/no written as a sentence
        ("Yes", "Yes. Take n = 4."),
    ],
)
def test_math_right(gold: str, answer: str) -> None:
    result = grade(math_task(gold), answer)
    assert result.reward == 1.0, result.details
    assert_details(result)


@pytest.mark.parametrize(
    ("gold", "answer"),
    [
        ("42", "The answer is 41."),
        ("1/2", "\\boxed{\\frac{1}{3}}"),
        ("7", "\\boxed{7} was my first guess but it is \\boxed{3}"),
        ("2^(n-1)", "\\boxed{2^n}"),
        ("42", "I do not know."),
        # the classes of wrong answers that a text fallback used to pay
        ("239", "The final answer is $-239$."),
        ("2^(n-1)", "\\boxed{2^{n+1}}"),
        ("[-1, 1]", "\\boxed{(-1, 1)}"),
        ("376 and 625", "\\boxed{376}"),
        ("x=6, y=5", "\\boxed{(5, 6)}"),
        ("x=6, y=5", "\\boxed{x=5, y=6}"),
        ("7", "First \\boxed{3}, but on reflection \\boxed{7}"),  # two final answers
        ("f(x)=0 or f(x)=1", "\\boxed{f(x)=0}"),  # one of two solutions
        ("C(10, 5), or equivalently 252", "\\boxed{C(10, 5), or equivalently -252}"),
        ("Yes", "No, there is no such integer."),
    ],
)
def test_math_wrong(gold: str, answer: str) -> None:
    result = grade(math_task(gold), answer)
    assert result.reward == 0.0, result.details
    assert_details(result)


@pytest.mark.parametrize(
    ("gold", "answer", "reward"),
    [
        ("C(10, 5), or equivalently 252", "\\boxed{252}", 1.0),
        ("C(10, 5), or equivalently 252", "\\boxed{\\binom{10}{5}}", 1.0),
        ("C(10, 5), or equivalently 252", "\\boxed{5}", 0.0),
        ("C(10, 5), or equivalently 252", "\\boxed{10}", 0.0),
        ("5/14, or approximately 35.7%", "\\boxed{\\frac{5}{14}}", 1.0),
        ("sqrt(3)/3, or equivalently 1/sqrt(3)", "\\boxed{\\frac{1}{\\sqrt{3}}}", 1.0),
        ("0 is the only possible value", "\\boxed{0}", 1.0),
        ("0 is the only possible value", "\\boxed{1}", 0.0),
        ("100 (i.e., all values)", "\\boxed{100}", 1.0),
        ("376 and 625", "\\boxed{376, 625}", 1.0),
        ("The limit exists and is equal to 2/3", "\\boxed{\\frac{2}{3}}", 1.0),
        ("No", "\\boxed{\\text{No}}", 1.0),
        ("No", "So the answer is no.", 1.0),
        ("Yes", "\\boxed{No}", 0.0),
        # CHAMP's plain-text sums (P_Combinatorics_33/37, P_Inequality_12) once read as "1"
        ("sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2", "\\boxed{1}", 0.0),
        ("sum_(i=1)^n i^2, or equivalently n(n+1)(2n+1)/6", "\\boxed{1}", 0.0),
        ("sum_(k=1)^n 1/k", "\\boxed{1}", 0.0),
        ("sum_(k=1)^n 1/k", "\\boxed{\\sum_{k=1}^{n} \\frac{1}{k}}", 1.0),
        ("sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2", "\\boxed{\\frac{n^2(n+1)^2}{4}}", 1.0),
        ("sum_(i=1)^n i^2, or equivalently n(n+1)(2n+1)/6", "\\boxed{\\frac{n(n+1)}{2}}", 0.0),
    ],
)
def test_math_messy_champ_references(gold: str, answer: str, reward: float) -> None:
    result = grade(math_task(gold), answer)
    assert result.reward == reward, result.details
    assert result.details["expected"] == gold


@pytest.mark.parametrize(
    ("gold", "answer", "rule"),
    [
        ("1/2", "\\boxed{\\frac{1}{2}}", "math-verify: equal"),
        ("x=6, y=5", "\\boxed{(6, 5)}", "math-verify: equal (tuple in order)"),
        ("No", "\\boxed{\\text{No}}", "yes/no: final answer same"),
        ("No", "No, it cannot.", "yes/no: same"),
        ("7", "\\boxed{3} or \\boxed{7}", "several final answers disagree"),
        ("2^(n-1)", "\\boxed{2^{n+1}}", "math-verify: not equal"),
        ("42", "\\boxed{42}", "number: equal"),
    ],
)
def test_math_grade_names_the_rule_that_decided(gold: str, answer: str, rule: str) -> None:
    assert grade(math_task(gold), answer).details["rule"] == rule


def test_gold_variants_split_alternatives() -> None:
    variants = gold_variants("C(10, 5), or equivalently 252")
    assert "C(10, 5)" in variants and "252" in variants


@pytest.mark.parametrize("answer", HOSTILE)
def test_math_hostile_answers_score_zero(answer) -> None:
    result = grade(math_task("7"), answer)
    assert result.reward == 0.0
    assert_details(result)


def test_math_slow_answer_is_bounded_in_a_worker_thread() -> None:
    # a power tower keeps sympy busy for minutes; graders run in the trainer's threads,
    # where math-verify's own (signal) timeouts cannot work
    tower = "\\boxed{" + "x^" * 60 + "2}"
    results = []
    thread = threading.Thread(target=lambda: results.append(grade(math_task("7"), tower)))
    start = time.monotonic()
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert results[0].reward == 0.0
    assert time.monotonic() - start < 25


def test_math_grading_from_threads_agrees() -> None:
    results: list[float] = []
    cases = [("1/2", "\\boxed{0.5}"), ("\\sqrt{2}", "\\boxed{\\sqrt{2}}"), ("3", "\\boxed{4}")] * 3

    def work(gold: str, answer: str) -> None:
        results.append(grade(math_task(gold), answer).reward)

    threads = [threading.Thread(target=work, args=case) for case in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0.0] * 3 + [1.0] * 6


# ---------------------------------------------------------------------------- choice

CHOICE = Task(
    id="c",
    kind="choice",
    prompt="What is the capital of France?",
    answer="C",
    choices=("London", "Berlin", "Paris", "Rome"),
)


@pytest.mark.parametrize(
    "answer",
    [
        "C",
        "(C)",
        "C.",
        "**C**",
        "Answer: C",
        "The answer is C.",
        "the answer is (C)",
        "Final answer: \\boxed{C}",
        "\\boxed{C}",
        "\\boxed{\\text{C}}",
        "Paris",
        "paris.",
        "The answer: Paris",
        "Option A is London, option C is Paris.\nAnswer: C",
        "A good guess is C",
        "I think it's C",
    ],
)
def test_choice_right(answer: str) -> None:
    result = grade(CHOICE, answer)
    assert result.reward == 1.0, (answer, result.details)
    assert result.details["extracted"] == "C"


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("A good guess is B", "B"),  # the article 'A' is not an option
        ("A is correct", "A"),
        ("Answer: D", "D"),
        ("London", "A"),
        ("B", "B"),
    ],
)
def test_choice_wrong_letter_is_read_correctly(answer: str, letter: str) -> None:
    result = grade(CHOICE, answer)
    assert result.reward == 0.0
    assert extract_choice(answer, CHOICE)[0] == letter


@pytest.mark.parametrize(
    "answer",
    [
        "Answer: A. Wait, no. The answer is C",  # two final answers: never the kinder one
        "The answer is (C). However, on reflection the answer is (B).",
        "The answer is (C).\n\\boxed{D}",
        "Answer: C\nAnswer: B",
    ],
)
def test_choice_final_answers_that_disagree_score_zero(answer: str) -> None:
    result = grade(CHOICE, answer)
    assert result.reward == 0.0
    assert result.details["rule"].startswith("choice: several answers")


@pytest.mark.parametrize(
    "answer",
    [
        "The answer is (C).\n\nQuestion: Which is a planet?\n(A) Moon (B) Mars\n"
        "Answer: Let's think step by step. The answer is (B).",
        "Answer: C\n\n**Question 2:** Which ocean is largest?\nThe answer is (A).",
    ],
)
def test_choice_reads_no_further_than_the_next_question(answer: str) -> None:
    # a few-shot continuation: after its answer the model asks and answers another question
    result = grade(CHOICE, answer)
    assert result.reward == 1.0, result.details


@pytest.mark.parametrize(
    "answer",
    ["Answer: E", "E", "B or C", "The answer is a city.", "Clearly Madrid", *HOSTILE],
)
def test_choice_no_or_invalid_letter_scores_zero(answer) -> None:
    result = grade(CHOICE, answer)
    assert result.reward == 0.0
    assert_details(result)


@pytest.mark.parametrize(
    "answer",
    [
        "A or C",  # the 'A' is an option here, not an article
        "Answer: C or D",
        "C/D",
        "either B or C",
        "The answer is either C or D.",
        "C and D",
        "answer: c or d",
        "\\boxed{C, D}",
        "Final answer: (B), (C)",
    ],
)
def test_choice_hedge_is_wrong_even_when_it_holds_the_answer(answer: str) -> None:
    result = grade(CHOICE, answer)
    assert result.reward == 0.0, result.details
    assert result.details["rule"].startswith("choice: hedge")


@pytest.mark.parametrize(("answer", "reward"), [("answer: c", 1.0), ("the answer is (c).", 1.0)])
def test_choice_lower_case_letter_after_a_cue_is_read(answer: str, reward: float) -> None:
    assert grade(CHOICE, answer).reward == reward


def test_choice_options_ruled_out_are_no_hedge() -> None:
    assert grade(CHOICE, "A and B are wrong, so the answer is C").reward == 1.0


# ---------------------------------------------------------------------------- text

TEXT = Task(id="t", kind="text", prompt="Who wrote Hamlet?", answer="William Shakespeare")


@pytest.mark.parametrize(
    "answer",
    [
        "William Shakespeare",
        "william shakespeare.",
        "  William   Shakespeare!  ",
        "Let me think.\nThe play is famous.\nWilliam Shakespeare",
        "Answer: William Shakespeare",
        "The final answer is: william shakespeare",
    ],
)
def test_text_right(answer: str) -> None:
    assert grade(TEXT, answer).reward == 1.0


def test_text_articles_and_punctuation_are_ignored() -> None:
    task = Task(id="t2", kind="text", prompt="?", answer="The Eiffel Tower")
    assert grade(task, "eiffel tower").reward == 1.0


@pytest.mark.parametrize(
    "answer", ["Christopher Marlowe", "Shakespeare wrote many plays", *HOSTILE]
)
def test_text_wrong(answer) -> None:
    result = grade(TEXT, answer)
    assert result.reward == 0.0
    assert_details(result)


# ---------------------------------------------------------------------------- code

ADD = Task(
    id="add",
    kind="code",
    prompt='def add(a: int, b: int) -> int:\n    """Return a + b."""\n',
    tests={
        "style": "humaneval",
        "entry_point": "add",
        "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
    },
)
ECHO_SUM = Task(
    id="sum",
    kind="code",
    prompt="Read two integers from stdin and print their sum.",
    tests={
        "style": "stdio",
        "cases": [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "10 -4\n", "output": "6"},
            {"input": "0 0", "output": "0\n\n"},
        ],
    },
)


@pytest.mark.parametrize(
    "answer",
    [
        "def add(a, b):\n    return a + b\n",
        "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\nDone.",
        "```python\ndef add(a, b):\n    return a - b\n```\nFixed:\n```python\ndef add(a, b):\n    return a + b\n```",
        "    return a + b\n",  # a completion of the prompt's function, HumanEval style
    ],
)
def test_code_humaneval_right(answer: str) -> None:
    result = grade(ADD, answer)
    assert result.reward == 1.0, result.details
    assert result.details["passed"] == result.details["total"] == 1


def test_code_humaneval_wrong_reports_the_failure() -> None:
    result = grade(ADD, "def add(a, b):\n    return a * b\n")
    assert result.reward == 0.0
    assert result.details["passed"] == 0
    assert "AssertionError" in result.details["stderr"]
    assert len(result.details["stderr"]) <= 2000
    assert result.details["timed_out"] is False


def test_code_stdio_right_ignores_trailing_whitespace() -> None:
    answer = "```python\na, b = map(int, input().split())\nprint(a + b, end='  \\n')\n```"
    result = grade(ECHO_SUM, answer)
    assert result.reward == 1.0, result.details
    assert result.details["passed"] == result.details["total"] == 3


def test_code_stdio_wrong_output_names_the_case() -> None:
    result = grade(ECHO_SUM, "a, b = map(int, input().split())\nprint(a + b if a < 5 else 0)\n")
    assert result.reward == 0.0
    assert result.details["passed"] == 1 and result.details["total"] == 3
    assert "case 2" in result.details["reason"]


def test_code_infinite_loop_times_out_and_scores_zero() -> None:
    result = grade(ADD, "def add(a, b):\n    while True:\n        pass\n", timeout_s=2)
    assert result.reward == 0.0
    assert result.details["timed_out"] is True and result.details["killed"] is True


@pytest.mark.parametrize(
    "exit_call", ["import sys\nsys.exit(0)", "import os\nos._exit(0)", "exit()", "quit(0)"]
)
def test_code_that_exits_before_the_tests_run_fails(exit_call: str) -> None:
    result = grade(ADD, f"def add(a, b):\n    return 0\n{exit_call}\n")
    assert result.reward == 0.0, result.details
    assert "exited before" in result.details["reason"]


@pytest.mark.parametrize("answer", HOSTILE)
def test_code_hostile_answers_score_zero(answer) -> None:
    result = grade(ADD, answer)
    assert result.reward == 0.0
    assert_details(result)


SOLUTION = "def add(a, b):\n    return a + b\n"


@pytest.mark.parametrize(
    "answer",
    [
        f"Here it is:\n```python\n{SOLUTION}```\nUsage:\n```python\nprint(add(2, 3))\n```",
        f"```python\n{SOLUTION}```\nOutput:\n```\n5\n```",
        "1. Write the function:\n\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n",
        "```python\ndef helper(a):\n    return a\n```\n"
        "```python\ndef add(a, b):\n    return helper(a) + b\n```\n```python\nprint(add(1, 2))\n```",
    ],
)
def test_code_the_block_that_defines_the_entry_point_is_run(answer: str) -> None:
    result = grade(ADD, answer)
    assert result.reward == 1.0, result.details
    assert "print(" not in result.details["extracted"]
    assert result.details["rule"].startswith("code: the block that defines add")


def test_extract_program_prefers_the_last_python_block() -> None:
    text = "```bash\nls\n```\n```python\nx = 1\n```\n```\ny = 2\n```"
    assert extract_program(text) == "x = 1\n"
    assert extract_program("plain text") == "plain text"


class _Finaliser:
    """Cyclic garbage whose finaliser runs Python code: a collection in the middle of an
    AST build then lets another thread run, the way the trainer's threads do."""

    def __del__(self) -> None:
        sum(range(50))


def test_extracting_programs_on_many_threads_at_once_never_fails() -> None:
    """CPython 3.11/3.12 share ast.parse's recursion counter across threads
    (python/cpython#106905); a trainer's grading threads once failed a CI run with
    "SystemError: AST constructor recursion depth mismatch". Without the grader's parse
    lock this fails on 3.11 in most threads."""
    body = "    return ''.join(chr((ord(c) - 82) % 26 + 97) if c.isalpha() else c for c in s)\n"
    answer = "```python\n" + "".join(f"def f{i}(s):\n{body}" for i in range(20)) + "```"
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(300):
            try:
                assert extract_program(answer, "f19").startswith("def f0(s):")
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)
                return
            cycle = _Finaliser()
            cycle.self = cycle

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]


def test_unknown_kind_scores_zero_with_a_reason() -> None:
    task = Task(id="x", kind="essay", prompt="Write.")
    result = grade(task, "words")
    assert result.reward == 0.0 and "essay" in result.details["reason"]


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")
def test_grading_code_never_raises_on_a_program_that_kills_everything() -> None:
    result = grade(ADD, "import os\nos.kill(-1, 9)\n")
    assert result.reward == 0.0


def test_math_helper_that_dies_is_restarted() -> None:
    from workbench.core.tasks import mathcheck

    assert grade(math_task("\\sqrt{2}"), "\\boxed{\\sqrt 2}").reward == 1.0
    helper = mathcheck._helper
    if helper._process is not None:  # in-process mode has no helper to kill
        helper._process.kill()
        helper._process.wait()
    assert grade(math_task("\\sqrt{2}"), "\\boxed{2^{1/2}}").reward == 1.0


def test_math_is_checked_in_process_when_no_helper_can_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workbench.core.tasks import mathcheck

    helper = mathcheck._Helper()
    monkeypatch.setattr(sys, "executable", "/bin/false")
    verdict = helper.check("\\frac{1}{2}", "\\boxed{0.5}")
    assert verdict["reward"] == 1.0
    assert helper._unusable


@pytest.mark.parametrize(
    ("gold", "answer", "reward"),
    [  # CHAMP's one-sentence summaries (real GPT-4 Turbo 0-shot final messages)
        (
            "239",
            "There are 239 strings of length 6 where each pair of adjacent digits "
            "differs by at most 1.",
            1.0,
        ),
        (
            "144",
            "There are 74 possible rearrangements, including the original one, where "
            "each child in a row of 11 seats may move by at most one seat.",
            0.0,
        ),
        (
            "1/3",
            "The smallest value of the expression \\((a^3+b^3+c^3)/((a+b+c)(a^2+b^2+c^2))"
            "\\) for positive \\(a\\), \\(b\\), and \\(c\\) is \\(1/3\\), which occurs when "
            "\\(a = b = c\\).",
            1.0,
        ),
        (
            "0",
            "The smallest value of the expression \\(a^3 + b^3 + c^3 - a^2b - b^2c - c^2a\\)"
            " for positive \\(a\\), \\(b\\), and \\(c\\) is \\(0\\), which occurs when "
            "\\(a = b = c\\).",
            1.0,
        ),
        (
            "(2n)!/(2^n*n!)",
            "The number of ways to form n pairs from 2n players for the first "
            "round of a tennis tournament is given by the expression (2n)! / (2^n * n!).",
            1.0,
        ),
        (
            "n(n-3)/2",
            "The number of diagonals in a convex polygon with n vertices is given by "
            "the expression D = n(n - 3) / 2.",
            1.0,
        ),
        (
            "x=6, y=5",
            "The only positive integer solution to the equation \\(x^3 - y^3 = xy + "
            "61\\) is \\(x = 6\\) and \\(y = 5\\).",
            1.0,
        ),
        (
            "a=3, b=-4",
            "The values of \\( a \\) and \\( b \\) such that \\( (x-1)^2 \\) divides"
            " \\( ax^4 + bx^3 + 1 \\) are \\( a = 3 \\) and \\( b = -4 \\).",
            1.0,
        ),
        (
            "No integer solutions",
            "There are no integer solutions to the equation x(x+1) = y^z for x > 0, y > 0, z > 1.",
            1.0,
        ),
        (
            "No integer solutions",
            "The integer solution to the equation \\( x^2 - 3y^2 = 17 "
            "\\) is \\( (x, y) = (33, 19) \\).",
            0.0,
        ),
        (
            "Infinitely many solutions",
            "The equation x^2 + y^2 + z^2 = x^3 + y^3 + z^3 has 27 integer solutions.",
            0.0,
        ),
        (
            "0",
            "The minimum value of the expression abc - (a+b-c)(a+c-b)(b+c-a) is 0, which "
            "occurs when a = b = c.",
            1.0,
        ),
        (
            "2",
            "The smallest value of the function (x^2 + 2) / sqrt(x^2 + 1) for real x is 3, "
            "which occurs at x = 2.",
            0.0,
        ),
    ],
)
def test_math_champ_prose_summaries(gold: str, answer: str, reward: float) -> None:
    result = grade(math_task(gold), answer)
    assert result.reward == reward, result.details


# ---------------------------------------------------------------------------- prose answers

CAN_LABEL = "Is it possible to label the edges of a cube by 1, 2,..., 12 so that ...?"


@pytest.mark.parametrize(
    ("gold", "answer", "question", "reward"),
    [
        # the value after "is / are / =", trailing clauses cut
        (
            "239",
            "There are 239 strings of length 6 where adjacent digits differ by at most 1.",
            "",
            1.0,
        ),
        ("89", "There are 21 ways to fill a 2 x 21 rectangle with 2 x 1 tiles.", "", 0.0),
        ("2^(m+1)", "The smallest value is \\(2^{m+1}\\), achieved when \\(a = b\\).", "", 1.0),
        (
            "2^n",
            "The smallest value of (1+a_1)...(1+a_n) given that a_1...a_n=1 is \\(2^n\\), "
            "achieved when all \\(a_i=1\\).",
            "",
            1.0,
        ),
        ("0", "The minimum value is 0, which occurs when x = 2.", "", 1.0),
        ("2", "The minimum value is 0, which occurs when x = 2.", "", 0.0),
        (
            "n(n-3)/2",
            "The number of diagonals is given by the expression D = n(n - 3) / 2.",
            "",
            1.0,
        ),
        ("1", "The value is 1 if n is odd and 0 otherwise.", "", 0.0),  # a condition, no value
        ("0", "The smallest value is 0 when n = 1.", "", 0.0),  # one case of the parameter
        ("5", "So we get x = 5.", "", 1.0),
        ("5", "So we get x = 5 when y = 2 and x = 7 otherwise.", "", 0.0),
        ("2001000", "The expansion will have 2,002,000 terms.", "", 0.0),
        ("[-1, 1]", "The range of \\( x \\), which is a root, is \\( x \\in [-1, 1] \\).", "", 1.0),
        # tuples and assignments
        ("x=6, y=5", "The only solution is \\(x = 6\\) and \\(y = 5\\).", "", 1.0),
        ("x=6, y=5", "The only solution is \\(x = 5\\) and \\(y = 6\\).", "", 0.0),
        ("x=2, y=1", "The only solution is (x, y) = (2, 1).", "", 1.0),
        ("x=y=0", "The only integer solution is (x, y) = (0, 0).", "", 1.0),
        ("a=3, b=-7, c=4", "They are \\(a = 3\\), \\(b = -7\\), and \\(c = 4\\).", "", 1.0),
        ("1, 4 and 9", "The possible values of p^2 mod 24 are 1, 4, and 9.", "", 1.0),
        ("0 is the only possible value", "The possible values are 1, 2, 3, and 4.", "", 0.0),
        (
            "0 is the only possible value",
            "The possible value of n mod 9, given that Q(n) = Q(2n), is 0.",
            "",
            1.0,
        ),
        # claims: none, infinitely many, counts, limits, phrases
        ("No integer solutions", "There are no integer solutions to x(x+1) = y^z.", "", 1.0),
        ("No integer solutions", "The integer solutions are (x, y) = (3, 0) and (-3, 0).", "", 0.0),
        ("No integer solutions", "There are no integer solutions other than x = 0.", "", 0.0),
        ("144", "There are 144 subsets that contain no two successive numbers.", "", 1.0),
        ("0 (i.e., no real-valued zeros)", "The polynomial has no real-valued zeros.", "", 1.0),
        (
            "Infinitely many solutions",
            "The equation has infinitely many integer solutions.",
            "",
            1.0,
        ),
        ("Infinitely many solutions", "The equation has 27 integer solutions.", "", 0.0),
        ("At least 1 number", "At least one of x, y, z must be divisible by 5.", "", 1.0),
        ("At least 1 number", "At least two of x, y, z must be divisible by 3.", "", 0.0),
        ("Exactly one sequence", "There are infinitely many such sequences.", "", 0.0),
        ("The limit does not exist", "The sequence does not have a finite limit.", "", 1.0),
        (
            "The limit exists and is equal to 2",
            "The limit does not exist because it grows without bound.",
            "",
            0.0,
        ),
        ("The limit exists and is equal to 3", "The limit exists and is equal to 3.", "", 1.0),
        ("Monotonically increasing", "The sequence a_n/b_n is monotonically increasing.", "", 1.0),
        ("Monotonically increasing", "The sequence a_n/b_n is monotonically decreasing.", "", 0.0),
        ("The sequence is not periodic", "The sequence is periodic with a period of 4.", "", 0.0),
        # yes / no
        ("No", "No, a polyhedron cannot exist with these properties.", "", 1.0),
        ("Yes", "No, it does not necessarily divide ad + bc.", "", 0.0),
        ("No", "It is not possible to label the edges that way.", CAN_LABEL, 1.0),
        ("Yes", "It is not possible to label the edges that way.", CAN_LABEL, 0.0),
        ("No", "It is not possible to label the edges that way.", "", 0.0),  # no question
        (
            "No",
            "There are no trivial integer solutions, and determining non-trivial "
            "solutions would require more advanced techniques.",
            "Are there solutions?",
            0.0,
        ),
        # hedged: claims nothing, whatever value it names
        ("35", "Without knowing m, a possible value is 35.", "", 0.0),
    ],
)
def test_prose_final_answers(gold: str, answer: str, question: str, reward: float) -> None:
    task = Task(id="m", kind="math", prompt=question or "Compute it.", answer=gold)
    result = grade(task, answer)
    assert result.reward == reward, result.details
    assert_details(result)


@pytest.mark.parametrize(
    "gold",
    ["sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2", "sum_(i=1)^n i^2", "sum_(k=1)^n 1/k"],
)
def test_a_sum_reference_is_not_read_as_its_lower_bound(gold: str) -> None:
    # math-verify read "sum_(i=1)^n i^3" as the 1 of "i=1": a bare \boxed{1} was paid
    for answer in ("\\boxed{1}", "The answer is 1.", "The number of ways is 1."):
        assert grade(math_task(gold), answer).reward == 0.0, answer
    assert (
        grade(
            math_task(gold),
            "\\boxed{"
            + gold.split(",")[0].replace("sum_(", "\\sum_{").replace(")^n", "}^{n}")
            + "}",
        ).reward
        == 1.0
    )


def test_sum_reference_accepts_its_closed_form() -> None:
    gold = "sum_(i=1)^n i^3, or equivalently (n(n+1)/2)^2"
    assert grade(math_task(gold), "\\boxed{\\frac{n^2(n+1)^2}{4}}").reward == 1.0
    assert grade(math_task(gold), "The number of ways is (n(n+1)/2)².").reward == 1.0
