"""Suites this project writes itself, generated from a seed with no network.

* ``arithmetic``: sums, differences, products, divisions, fraction arithmetic, mixed
  expressions and small word problems, each category rising in difficulty; answers are
  exact integers or fractions in lowest terms.
* ``mixed``: equal thirds of math (as above), multiple choice (four options whose right
  answer is computed: primes, largest/smallest, unit conversions, gcd/lcm, weekdays,
  binary, percentages) and small Python functions in HumanEval style, each with a
  ``check(candidate)`` test and a reference ``solution`` that passes it.

Everything is computed from the seed, so a suite's tasks (ids, text, order) are the same
on every machine. ``choice_answer(task)`` recomputes a generated choice task's answer from
its text, independently of how it was generated, so tests can check the letters.
"""

from __future__ import annotations

import random

from workbench.core.tasks.generated.arithmetic import (
    ARITHMETIC_PER_CATEGORY,
    GENERATOR_VERSION,
    MATH_CATEGORIES,
    arithmetic_suite,
    level,
    math_tasks,
)
from workbench.core.tasks.generated.choice import (
    LETTERS,
    choice_answer,
    choice_answer_for,
    choice_tasks,
)
from workbench.core.tasks.generated.code import code_family_size, code_tasks
from workbench.core.tasks.model import Suite

__all__ = [
    "ARITHMETIC_PER_CATEGORY",
    "GENERATOR_VERSION",
    "LETTERS",
    "MIXED_LARGE_PER_KIND",
    "MIXED_PER_KIND",
    "arithmetic_suite",
    "choice_answer",
    "choice_answer_for",
    "code_family_size",
    "mixed_suite",
]

MIXED_PER_KIND = 100
# mixed-large: 1,020 tasks, seeded splits of 612 / 204 / 204
MIXED_LARGE_PER_KIND = 340


def mixed_suite(seed: int = 0, per_kind: int = MIXED_PER_KIND, name: str = "mixed") -> Suite:
    """The ``mixed`` suite: ``per_kind`` math, choice and code tasks each (categories
    ``math``, ``choice``, ``code``); task ids start with ``name``. ``mixed-large``
    (``MIXED_LARGE_PER_KIND`` each) has a test split of 200+ tasks for measuring a
    trained coordinator against a reference to a few points; its code tasks repeat the
    generator's function families with other values, so some prompts recur."""
    rng = random.Random(f"mixed/{seed}/math")
    makers = list(MATH_CATEGORIES.values())
    maths = math_tasks(
        [f"{name}-math-{i + 1:03d}" for i in range(per_kind)],
        "math",
        rng,
        [level(i, per_kind) for i in range(per_kind)],
        [makers[i % len(makers)][1] for i in range(per_kind)],
    )
    tasks = maths + choice_tasks(seed, per_kind, name) + code_tasks(seed, per_kind, name)
    return Suite(
        name=name,
        tasks=tuple(tasks),
        version=f"{GENERATOR_VERSION}.{seed}",
        source=f"generated (seed {seed})",
        description=(
            f"{len(tasks)} generated tasks in equal thirds: arithmetic (math), "
            "multiple choice with computed answers (choice), small Python functions (code)"
        ),
    )
