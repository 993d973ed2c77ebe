"""math-verify's own verdicts on sign and operator flips of every bundled math reference.

For each reference of the ``arithmetic``, ``mixed`` and ``champ`` suites, every single
sign or operator flip (see ``flips.py``) that math-verify says differs from the
reference is a wrong answer: the grader must score it 0 in every shape tried. The
reference itself, in chat shapes, must score 1. Counts are printed (``pytest -s``).
"""

from __future__ import annotations

import logging

import pytest

from tests.conformance.flips import flips, math_verify_says_differs, mathematical_part
from workbench.core.tasks import grade, load_suite

# Shapes a chat model writes a final answer in. Every flip is tried boxed and in the
# issue's "The final answer is $-239$." shape; every third also as "Answer: ...".
FLIP_SHAPES = ("\\boxed{%s}", "The final answer is $%s$.")
SAMPLED_FLIP_SHAPE = "Answer: %s"
RIGHT_SHAPES = (
    "Let me work it out.\n\nSo the answer is \\boxed{%s}.",
    "The final answer is $%s$.",
)


@pytest.mark.parametrize("suite", ["arithmetic", "mixed", "champ"])
def test_no_flip_that_math_verify_calls_different_is_paid(suite: str) -> None:
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    references = {}
    for task in load_suite(suite).tasks:
        if task.kind == "math":
            references.setdefault(task.answer, task)
    tried = differ = 0
    paid, missed = [], []
    for reference, task in references.items():
        for shape in RIGHT_SHAPES:
            if grade(task, shape % reference).reward != 1.0:
                missed.append((reference, shape % reference))
        math = mathematical_part(reference)
        for flip in flips(math):
            tried += 1
            if not math_verify_says_differs(math, flip):
                continue
            differ += 1
            shapes = FLIP_SHAPES + ((SAMPLED_FLIP_SHAPE,) if differ % 3 == 0 else ())
            for shape in shapes:
                result = grade(task, shape % flip)
                if result.reward != 0.0:
                    paid.append((reference, shape % flip, result.details.get("rule")))
    print(
        f"\n{suite}: {len(references)} references, {tried} flips tried, "
        f"{differ} differ by math-verify, {len(paid)} paid, {len(missed)} right answers missed"
    )
    assert differ > 0.8 * tried, "math-verify should call most flips different"
    assert not paid, f"wrong answers paid: {paid}"
    assert not missed, f"right answers missed: {missed}"
