"""The ``arithmetic`` suite, and the math third of ``mixed``: sums, differences, products,
divisions, fraction arithmetic, expressions and word problems, rising in difficulty."""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

from workbench.core.tasks.model import Suite, Task

ARITHMETIC_PER_CATEGORY = 60
GENERATOR_VERSION = "1"


def fraction_text(value: Fraction) -> str:
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


def level(index: int, count: int) -> int:
    """Difficulty 1..5, rising through a category."""
    return 1 + (5 * index) // max(count, 1)


def _digits(rng: random.Random, n: int) -> int:
    return rng.randint(10 ** (n - 1) if n > 1 else 1, 10**n - 1)


def _addition(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    terms = [_digits(rng, level) for _ in range(2 if level < 4 else 3)]
    text = " + ".join(map(str, terms))
    return f"What is {text}?", Fraction(sum(terms)), f"{text} = {sum(terms)}"


def _subtraction(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    a, b = _digits(rng, level), _digits(rng, level)
    if level < 3:
        a, b = max(a, b), min(a, b)  # no negatives at the easy levels
    return f"What is {a} - {b}?", Fraction(a - b), f"{a} - {b} = {a - b}"


def _multiplication(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    a = _digits(rng, 1 + level // 2)
    b = _digits(rng, 1 + (level - 1) // 2)
    if level == 5 and rng.random() < 0.5:
        a = -a
    return f"What is {a} × {b}?", Fraction(a * b), f"{a} × {b} = {a * b}"


def _division(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    if level <= 3:  # exact integer quotients
        b = rng.randint(2, 9 if level == 1 else 25)
        q = _digits(rng, level)
        a = b * q
        return f"What is {a} ÷ {b}?", Fraction(q), f"{a} ÷ {b} = {q}"
    a, b = rng.randint(10, 10 ** (level - 1)), rng.randint(3, 40)
    value = Fraction(a, b)
    return (
        f"What is {a} ÷ {b}? Give the result as a fraction in lowest terms (or an integer).",
        value,
        f"{a} ÷ {b} = {fraction_text(value)}",
    )


def _fractions(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    top = 4 + 3 * level

    def frac() -> tuple[int, int]:
        d = rng.randint(2, top)
        n = rng.randint(1, d - 1 if level < 3 else 2 * d)
        return (n + 1, d) if n == d else (n, d)  # never write d/d

    (a, b), (c, d) = frac(), frac()
    x, y = Fraction(a, b), Fraction(c, d)
    op = rng.choice("+-" if level < 3 else "+-×÷")
    value = {"+": x + y, "-": x - y, "×": x * y, "÷": x / y}[op]
    text = f"{a}/{b} {op} {c}/{d}"
    return (
        f"Compute {text}. Give the answer as a fraction in lowest terms (or an integer).",
        value,
        f"{text} = {fraction_text(value)}",
    )


def _expression(rng: random.Random, depth: int) -> tuple[str, Fraction, bool]:
    """A random expression: (text, value, is_compound)."""
    if depth == 0 or rng.random() < 0.25:
        n = rng.randint(1, 12)
        return str(n), Fraction(n), False
    op = rng.choice(["+", "-", "×"])
    left, lv, lc = _expression(rng, depth - 1)
    right, rv, rc = _expression(rng, depth - 1)
    if lc:
        left = f"({left})"
    if rc:
        right = f"({right})"
    value = {"+": lv + rv, "-": lv - rv, "×": lv * rv}[op]
    return f"{left} {op} {right}", value, True


def _expressions(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    while True:
        text, value, compound = _expression(rng, 1 + (level + 1) // 2)
        if compound and abs(value) <= 10_000:
            return f"Evaluate {text}.", value, f"{text} = {fraction_text(value)}"


_NAMES = ("Ada", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun")


def _word_problem(rng: random.Random, level: int) -> tuple[str, Fraction, str]:
    name = rng.choice(_NAMES)
    kind = rng.randrange(6)
    scale = 10 ** (1 + level // 2)
    if kind == 0:
        price, count = rng.randint(2, scale), rng.randint(2, 9 + level * 3)
        return (
            f"A pencil costs {price} cents. How many cents do {count} pencils cost?",
            Fraction(price * count),
            f"{count} × {price} = {price * count}",
        )
    if kind == 1:
        a = rng.randint(scale, 3 * scale)
        b, c = rng.randint(1, scale), rng.randint(1, scale)
        return (
            f"{name} has {a} marbles, gives away {b} and then buys {c} more. "
            f"How many marbles does {name} have now?",
            Fraction(a - b + c),
            f"{a} - {b} + {c} = {a - b + c}",
        )
    if kind == 2:
        speed, hours = rng.randint(20, 20 + 10 * level), rng.randint(2, 2 + level)
        return (
            f"A train travels at {speed} km per hour for {hours} hours. "
            "How many kilometres does it travel?",
            Fraction(speed * hours),
            f"{speed} × {hours} = {speed * hours}",
        )
    if kind == 3:
        group = rng.randint(2, 6 + level)
        groups = rng.randint(3, 5 * level + 3)
        return (
            f"{group * groups} students are split into groups of {group}. How many groups are there?",
            Fraction(groups),
            f"{group * groups} ÷ {group} = {groups}",
        )
    if kind == 4:
        d = rng.randint(2, 4 + level)
        per = Fraction(rng.randint(1, d - 1), d)
        cakes = rng.randint(2, 4 + 2 * level)
        value = per * cakes
        return (
            f"A recipe needs {per.numerator}/{per.denominator} cup of sugar per cake. "
            f"How many cups of sugar are needed for {cakes} cakes? "
            "Give the answer as a fraction in lowest terms (or an integer).",
            value,
            f"{cakes} × {per} = {fraction_text(value)}",
        )
    width, length = rng.randint(2, scale), rng.randint(2, scale)
    return (
        f"A rectangle is {width} cm wide and {length} cm long. What is its perimeter in cm?",
        Fraction(2 * (width + length)),
        f"2 × ({width} + {length}) = {2 * (width + length)}",
    )


MATH_CATEGORIES: dict[
    str, tuple[str, Callable[[random.Random, int], tuple[str, Fraction, str]]]
] = {
    "addition": ("add", _addition),
    "subtraction": ("sub", _subtraction),
    "multiplication": ("mul", _multiplication),
    "division": ("div", _division),
    "fractions": ("frac", _fractions),
    "expressions": ("expr", _expressions),
    "word problems": ("word", _word_problem),
}


def math_tasks(
    ids: list[str], category: str | None, rng: random.Random, levels: list[int], makers: list
) -> list[Task]:
    """Math tasks with the given ids, levels and generators; a prompt already drawn is
    drawn again, so every prompt is distinct."""
    tasks = []
    seen: set[str] = set()
    for task_id, level, make in zip(ids, levels, makers, strict=True):
        for _ in range(100):
            prompt, value, solution = make(rng, level)
            if prompt not in seen:
                break
        seen.add(prompt)
        tasks.append(
            Task(
                id=task_id,
                kind="math",
                prompt=prompt,
                answer=fraction_text(value),
                category=category,
                solution=solution,
            )
        )
    return tasks


def arithmetic_suite(seed: int = 0, per_category: int = ARITHMETIC_PER_CATEGORY) -> Suite:
    """The ``arithmetic`` suite: ``per_category`` tasks in each of the math categories,
    difficulty rising 1..5 within each (the level is the ``-L`` in the id)."""
    tasks = []
    for category, (short, make) in MATH_CATEGORIES.items():
        rng = random.Random(f"arithmetic/{seed}/{category}")
        levels = [level(i, per_category) for i in range(per_category)]
        ids = [f"arith-{short}-{level}-{i + 1:03d}" for i, level in enumerate(levels)]
        tasks += math_tasks(ids, category, rng, levels, [make] * per_category)
    return Suite(
        name="arithmetic",
        tasks=tuple(tasks),
        version=f"{GENERATOR_VERSION}.{seed}",
        source=f"generated (seed {seed})",
        description=(
            f"{len(tasks)} generated arithmetic tasks: {', '.join(MATH_CATEGORIES)}; "
            "exact integer or fraction answers, difficulty 1-5"
        ),
    )
