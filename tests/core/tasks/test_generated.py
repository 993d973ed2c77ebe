"""The generated suites: deterministic, balanced, and every reference grades 1."""

from __future__ import annotations

import ast
import random
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from workbench.core.tasks import grade
from workbench.core.tasks.generated import (
    arithmetic_suite,
    choice_answer,
    code_family_size,
    mixed_suite,
)


@pytest.fixture(scope="module")
def arithmetic():
    return arithmetic_suite()


@pytest.fixture(scope="module")
def mixed():
    return mixed_suite()


def test_same_seed_same_suite_other_seed_other_suite() -> None:
    assert arithmetic_suite(seed=0).tasks == arithmetic_suite(seed=0).tasks
    assert mixed_suite(seed=0).tasks == mixed_suite(seed=0).tasks
    assert arithmetic_suite(seed=1).tasks != arithmetic_suite(seed=0).tasks
    assert mixed_suite(seed=1).tasks != mixed_suite(seed=0).tasks


def test_arithmetic_shape(arithmetic) -> None:
    assert 300 <= len(arithmetic) <= 1000
    assert {t.kind for t in arithmetic.tasks} == {"math"}
    counts = arithmetic.counts()["category"]
    assert len(counts) >= 5 and len(set(counts.values())) == 1
    assert len({t.id for t in arithmetic.tasks}) == len(arithmetic)
    assert len({t.prompt for t in arithmetic.tasks}) == len(arithmetic)
    levels = {t.id.split("-")[2] for t in arithmetic.tasks}
    assert levels == {"1", "2", "3", "4", "5"}
    assert any("/" in t.answer for t in arithmetic.tasks)  # exact fractions occur


def test_mixed_is_in_equal_thirds(mixed) -> None:
    assert len(mixed) >= 300
    assert mixed.counts()["category"] == {"math": 100, "choice": 100, "code": 100}
    assert len({t.id for t in mixed.tasks}) == len(mixed)
    code = [t for t in mixed.tasks if t.kind == "code"]
    assert len({t.tests["entry_point"] for t in code}) == len(code) <= code_family_size()


@pytest.mark.parametrize("suite_name", ["arithmetic", "mixed"])
def test_every_math_reference_grades_1(suite_name: str, arithmetic, mixed) -> None:
    suite = arithmetic if suite_name == "arithmetic" else mixed
    for task in suite.tasks:
        if task.kind == "math":
            result = grade(task, f"Working... so the answer is \\boxed{{{task.answer}}}.")
            assert result.reward == 1.0, (task.id, task.answer, result.details)


def test_math_references_are_exact(arithmetic) -> None:
    from fractions import Fraction

    for task in arithmetic.tasks:
        value = Fraction(task.answer)
        assert str(value.numerator if value.denominator == 1 else value) == task.answer


def test_every_choice_letter_is_right(mixed) -> None:
    for task in mixed.tasks:
        if task.kind != "choice":
            continue
        assert len(task.choices) == 4 and len(set(task.choices)) == 4
        assert choice_answer(task) == task.answer, task
        assert grade(task, f"Answer: {task.answer}").reward == 1.0
        wrong = next(letter for letter in "ABCD" if letter != task.answer)
        assert grade(task, f"Answer: {wrong}").reward == 0.0


def _run_in_process(source: str, test: str, entry: str) -> None:
    namespace: dict = {}
    exec(compile(source + "\n" + test + f"\ncheck({entry})\n", "<generated>", "exec"), namespace)


def test_every_code_solution_passes_its_own_test_in_process(mixed) -> None:
    # our own reference code, so a plain exec is fine; the sandbox is tested on a sample
    for task in mixed.tasks:
        if task.kind != "code":
            continue
        ast.parse(task.solution)
        _run_in_process(task.solution, task.tests["test"], task.tests["entry_point"])


def test_code_tests_tell_right_from_wrong(mixed) -> None:
    for task in mixed.tasks:
        if task.kind != "code":
            continue
        expected = [
            line.rsplit("==", 1)[1] for line in task.tests["test"].splitlines() if "==" in line
        ]
        assert len(expected) >= 4 and len(set(expected)) >= 2, task.id
        entry = task.tests["entry_point"]
        for constant in ("None", expected[0]):  # a function that ignores its input fails
            wrong = f"def {entry}(*args):\n    return {constant}\n"
            with pytest.raises(AssertionError):
                _run_in_process(wrong, task.tests["test"], entry)


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")
def test_a_sample_of_code_solutions_grades_1_in_the_sandbox(mixed) -> None:
    code = [t for t in mixed.tasks if t.kind == "code"]
    sample = random.Random(0).sample(code, 20)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: (t.id, grade(t, f"```python\n{t.solution}```")), sample))
    failures = [
        (task_id, r.details["reason"], r.details["stderr"])
        for task_id, r in results
        if r.reward != 1.0
    ]
    assert failures == []
