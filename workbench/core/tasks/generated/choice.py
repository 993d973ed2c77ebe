"""The multiple-choice third of ``mixed``: four options whose right answer is computed, and
``choice_answer``, which recomputes it from the question's text alone."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from workbench.core.tasks.generated.arithmetic import fraction_text
from workbench.core.tasks.model import Task

LETTERS = "ABCD"


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_UNITS = {  # (big unit, small unit): how many small in one big
    ("metres", "centimetres"): 100,
    ("kilometres", "metres"): 1000,
    ("kilograms", "grams"): 1000,
    ("litres", "millilitres"): 1000,
    ("hours", "minutes"): 60,
    ("minutes", "seconds"): 60,
    ("days", "hours"): 24,
    ("weeks", "days"): 7,
    ("feet", "inches"): 12,
    ("yards", "feet"): 3,
}


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def _distinct_options(rng: random.Random, right: Any, make_wrong: Callable[[], Any]) -> list[Any]:
    options = [right]
    while len(options) < 4:
        wrong = make_wrong()
        if wrong not in options:
            options.append(wrong)
    rng.shuffle(options)
    return options


def _choice_prime(rng: random.Random) -> tuple[str, list[str], str]:
    top = rng.choice((50, 100, 200, 500))
    prime = rng.choice([n for n in range(11, top) if _is_prime(n)])
    composites = [n for n in range(9, top) if not _is_prime(n) and n % 2 and n % 5]
    options = _distinct_options(rng, prime, lambda: rng.choice(composites))
    return "Which of these numbers is prime?", [str(o) for o in options], f"{prime} is prime"


def _choice_extreme(rng: random.Random, largest: bool) -> tuple[str, list[str], str]:
    def value() -> Fraction:
        if rng.random() < 0.5:
            d = rng.randint(3, 12)
            return Fraction(rng.randint(1, d - 1), d)
        return Fraction(rng.randint(5, 95), 100)

    while True:
        values: list[Fraction] = []
        while len(values) < 4:
            v = value()
            if v not in values:
                values.append(v)
        texts = [
            fraction_text(v) if v.denominator != 100 or rng.random() < 0.2 else f"{float(v):.2f}"
            for v in values
        ]
        if len({Fraction(t) for t in texts}) == 4:
            break
    best = max(values) if largest else min(values)
    word = "largest" if largest else "smallest"
    return f"Which of these numbers is the {word}?", texts, f"{fraction_text(best)} is the {word}"


def _choice_units(rng: random.Random) -> tuple[str, list[str], str]:
    (big, small), factor = rng.choice(list(_UNITS.items()))
    amount = rng.choice((2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 2.5, 1.5))
    right = Fraction(amount).limit_denominator() * factor
    fmt = _number_text
    factors = [f for f in {10, 100, 1000, 60, 24, 12, 7, 3} if f != factor]
    options = _distinct_options(
        rng, fmt(right), lambda: fmt(Fraction(amount).limit_denominator() * rng.choice(factors))
    )
    return (
        f"How many {small} are in {fmt(Fraction(amount).limit_denominator())} {big}?",
        options,
        f"{amount} × {factor} = {fmt(right)}",
    )


def _number_text(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


def _choice_gcd_lcm(rng: random.Random, gcd: bool) -> tuple[str, list[str], str]:
    g = rng.randint(2, 15)
    a, b = g * rng.randint(2, 12), g * rng.randint(2, 12)
    while a == b:
        b = g * rng.randint(2, 12)
    right = math.gcd(a, b) if gcd else math.lcm(a, b)
    near = [right * 2, right // 2 or 1, right + g, abs(right - g) or 1, a * b, min(a, b), max(a, b)]
    options = _distinct_options(rng, right, lambda: rng.choice(near) + rng.choice((0, 0, 1, -1)))
    what = "greatest common divisor" if gcd else "least common multiple"
    return f"What is the {what} of {a} and {b}?", [str(o) for o in options], f"{right}"


def _choice_weekday(rng: random.Random) -> tuple[str, list[str], str]:
    today = rng.randrange(7)
    days = rng.randint(3, 400)
    right = _WEEKDAYS[(today + days) % 7]
    options = _distinct_options(rng, right, lambda: rng.choice(_WEEKDAYS))
    return (
        f"If today is {_WEEKDAYS[today]}, what day of the week will it be in {days} days?",
        options,
        f"{days} mod 7 = {days % 7}: {right}",
    )


def _choice_binary(rng: random.Random) -> tuple[str, list[str], str]:
    n = rng.randint(5, 255)
    right = bin(n)[2:]

    def wrong() -> str:
        m = n ^ (1 << rng.randrange(n.bit_length()))
        return bin(max(m, 1))[2:]

    options = _distinct_options(rng, right, wrong)
    return f"What is {n} written in binary?", options, f"{n} = {right} in binary"


def _choice_percent(rng: random.Random) -> tuple[str, list[str], str]:
    p, n = 5 * rng.randint(1, 19), 20 * rng.randint(1, 30)
    right = p * n // 100
    options = _distinct_options(
        rng,
        right,
        lambda: max(1, right + rng.choice((-3, -2, -1, 1, 2, 3)) * rng.choice((1, 5, 10))),
    )
    return f"What is {p}% of {n}?", [str(o) for o in options], f"{p}/100 × {n} = {right}"


_CHOICE_FAMILIES: tuple[Callable[[random.Random], tuple[str, list[str], str]], ...] = (
    _choice_prime,
    lambda rng: _choice_extreme(rng, True),
    lambda rng: _choice_extreme(rng, False),
    _choice_units,
    lambda rng: _choice_gcd_lcm(rng, True),
    lambda rng: _choice_gcd_lcm(rng, False),
    _choice_weekday,
    _choice_binary,
    _choice_percent,
)


def choice_tasks(seed: int, count: int, prefix: str = "mixed") -> list[Task]:
    rng = random.Random(f"mixed/{seed}/choice")
    tasks: list[Task] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    i = 0
    while len(tasks) < count:
        family = _CHOICE_FAMILIES[i % len(_CHOICE_FAMILIES)]
        i += 1
        prompt, options, why = family(rng)
        key = (prompt, tuple(sorted(options)))
        if key in seen:
            continue
        seen.add(key)
        right = choice_answer_for(prompt, options)
        tasks.append(
            Task(
                id=f"{prefix}-choice-{len(tasks) + 1:03d}",
                kind="choice",
                prompt=prompt,
                answer=LETTERS[right],
                choices=tuple(options),
                category="choice",
                solution=why,
            )
        )
    return tasks


def choice_answer_for(prompt: str, options: list[str] | tuple[str, ...]) -> int:
    """The index of the right option, computed from the question's text alone (the
    generated question forms only). Raises ValueError unless exactly one option is right."""

    def only(flags: list[bool]) -> int:
        if flags.count(True) != 1:
            raise ValueError(f"{flags.count(True)} right options for {prompt!r}: {options}")
        return flags.index(True)

    right: object  # the right value; its type depends on the question form
    if prompt == "Which of these numbers is prime?":
        return only([_is_prime(int(o)) for o in options])
    m = re.fullmatch(r"Which of these numbers is the (largest|smallest)\?", prompt)
    if m:
        values = [Fraction(o) for o in options]
        best = max(values) if m.group(1) == "largest" else min(values)
        return only([v == best for v in values])
    m = re.fullmatch(r"How many (\w+) are in ([\d.]+) (\w+)\?", prompt)
    if m:
        factor = _UNITS[(m.group(3), m.group(1))]
        right = Fraction(m.group(2)) * factor
        return only([Fraction(o) == right for o in options])
    m = re.fullmatch(
        r"What is the (greatest common divisor|least common multiple) of (\d+) and (\d+)\?", prompt
    )
    if m:
        a, b = int(m.group(2)), int(m.group(3))
        right = math.gcd(a, b) if m.group(1).startswith("greatest") else math.lcm(a, b)
        return only([int(o) == right for o in options])
    m = re.fullmatch(r"If today is (\w+), what day of the week will it be in (\d+) days\?", prompt)
    if m:
        right = _WEEKDAYS[(_WEEKDAYS.index(m.group(1)) + int(m.group(2))) % 7]
        return only([o == right for o in options])
    m = re.fullmatch(r"What is (\d+) written in binary\?", prompt)
    if m:
        return only([int(o, 2) == int(m.group(1)) for o in options])
    m = re.fullmatch(r"What is (\d+)% of (\d+)\?", prompt)
    if m:
        right = Fraction(int(m.group(1)) * int(m.group(2)), 100)
        return only([Fraction(o) == right for o in options])
    raise ValueError(f"not a generated question form: {prompt!r}")


def choice_answer(task: Task) -> str:
    """The right letter of a generated choice task, recomputed from its text."""
    return LETTERS[choice_answer_for(task.prompt, task.choices or ())]
