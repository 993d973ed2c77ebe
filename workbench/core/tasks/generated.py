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

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from workbench.core.tasks.model import Suite, Task

LETTERS = "ABCD"
ARITHMETIC_PER_CATEGORY = 60
MIXED_PER_KIND = 100
GENERATOR_VERSION = "1"


# ---------------------------------------------------------------------------- math


def _fraction_text(value: Fraction) -> str:
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


def _level(index: int, count: int) -> int:
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
        f"{a} ÷ {b} = {_fraction_text(value)}",
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
        f"{text} = {_fraction_text(value)}",
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
            return f"Evaluate {text}.", value, f"{text} = {_fraction_text(value)}"


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
            f"{cakes} × {per} = {_fraction_text(value)}",
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


def _math_tasks(
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
                answer=_fraction_text(value),
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
        levels = [_level(i, per_category) for i in range(per_category)]
        ids = [f"arith-{short}-{level}-{i + 1:03d}" for i, level in enumerate(levels)]
        tasks += _math_tasks(ids, category, rng, levels, [make] * per_category)
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


# ---------------------------------------------------------------------------- choice

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
            _fraction_text(v) if v.denominator != 100 or rng.random() < 0.2 else f"{float(v):.2f}"
            for v in values
        ]
        if len({Fraction(t) for t in texts}) == 4:
            break
    best = max(values) if largest else min(values)
    word = "largest" if largest else "smallest"
    return f"Which of these numbers is the {word}?", texts, f"{_fraction_text(best)} is the {word}"


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


def _choice_tasks(seed: int, count: int) -> list[Task]:
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
                id=f"mixed-choice-{len(tasks) + 1:03d}",
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


# ---------------------------------------------------------------------------- code


@dataclass(frozen=True)
class _CodeSpec:
    """One generated function task: its signature, what it must do, a reference
    implementation (source) and an independent Python oracle for the expected values."""

    name: str
    signature: str
    doc: str
    body: str
    oracle: Callable[..., Any]
    inputs: Callable[[random.Random], tuple[Any, ...]]


def _int_list(
    rng: random.Random, low: int = -20, high: int = 20, longest: int = 10
) -> tuple[Any, ...]:
    return ([rng.randint(low, high) for _ in range(rng.randint(0, longest))],)


_MAPS = {  # name: (phrase, source expression in x, oracle)
    "values": ("the numbers", "x", lambda x: x),
    "squares": ("the squares of the numbers", "x * x", lambda x: x**2),
    "cubes": ("the cubes of the numbers", "x ** 3", lambda x: x**3),
    "abs": ("the absolute values of the numbers", "abs(x)", lambda x: -x if x < 0 else x),
    "doubled": ("twice the numbers", "2 * x", lambda x: x + x),
}
_PREDICATES = {  # name: (phrase, source condition on x, oracle)
    "even": ("even", "x % 2 == 0", lambda x: x % 2 == 0),
    "odd": ("odd", "x % 2 != 0", lambda x: x % 2 == 1),
    "positive": ("positive", "x > 0", lambda x: x >= 1),
    "negative": ("negative", "x < 0", lambda x: x <= -1),
    "mult3": ("multiples of 3", "x % 3 == 0", lambda x: x % 3 == 0),
    "mult4": ("multiples of 4", "x % 4 == 0", lambda x: x % 4 == 0),
    "mult5": ("multiples of 5", "x % 5 == 0", lambda x: x % 5 == 0),
    "over7": ("greater than 7", "x > 7", lambda x: not x <= 7),
}


def _code_specs() -> list[_CodeSpec]:
    specs: list[_CodeSpec] = []
    for pname, (pphrase, pcond, ptest) in _PREDICATES.items():
        for mname, (mphrase, mexpr, mfun) in _MAPS.items():
            specs.append(
                _CodeSpec(
                    name=f"sum_{mname}_{pname}",
                    signature="(xs: list[int]) -> int",
                    doc=f"Return the sum of {mphrase} in xs that are {pphrase}. An empty sum is 0.",
                    body=f"return sum({mexpr} for x in xs if {pcond})",
                    oracle=lambda xs, f=mfun, p=ptest: sum(f(x) for x in xs if p(x)),
                    inputs=_int_list,
                )
            )
        specs.append(
            _CodeSpec(
                name=f"count_{pname}",
                signature="(xs: list[int]) -> int",
                doc=f"Return how many numbers in xs are {pphrase}.",
                body=f"return sum(1 for x in xs if {pcond})",
                oracle=lambda xs, p=ptest: len([x for x in xs if p(x)]),
                inputs=_int_list,
            )
        )
    for k in range(1, 26):
        specs.append(
            _CodeSpec(
                name=f"caesar_shift_{k}",
                signature="(text: str) -> str",
                doc=(
                    f"Shift every lowercase letter of text {k} places forward in the alphabet, "
                    "wrapping from z to a; leave every other character unchanged."
                ),
                body=(
                    "return ''.join(\n"
                    f"        chr((ord(c) - 97 + {k}) % 26 + 97) if 'a' <= c <= 'z' else c for c in text\n"
                    "    )"
                ),
                oracle=lambda text, k=k: text.translate(
                    str.maketrans(
                        "abcdefghijklmnopqrstuvwxyz",
                        "abcdefghijklmnopqrstuvwxyz"[k:] + "abcdefghijklmnopqrstuvwxyz"[:k],
                    )
                ),
                inputs=lambda rng: (
                    "".join(rng.choice("abcxyz qrsT!7") for _ in range(rng.randint(0, 12))),
                ),
            )
        )
    for k in range(1, 6):
        specs.append(
            _CodeSpec(
                name=f"rotate_left_{k}",
                signature="(xs: list[int]) -> list[int]",
                doc=(
                    f"Return xs rotated left by {k} position(s): the first {k} element(s) move to "
                    f"the end, cycling when xs has fewer than {k + 1} elements. An empty list stays empty."
                ),
                body=f"if not xs:\n        return []\n    k = {k} % len(xs)\n    return xs[k:] + xs[:k]",
                oracle=lambda xs, k=k: [xs[(i + k) % len(xs)] for i in range(len(xs))],
                inputs=lambda rng: _int_list(rng, 0, 9, 8),
            )
        )
    for base in range(2, 10):
        specs.append(
            _CodeSpec(
                name=f"digit_sum_base{base}",
                signature="(n: int) -> int",
                doc=f"Return the sum of the digits of n (n >= 0) written in base {base}.",
                body=(
                    "total = 0\n    while n:\n"
                    f"        total += n % {base}\n        n //= {base}\n    return total"
                ),
                oracle=lambda n, b=base: sum(int(d, b) for d in _to_base(n, b)),
                inputs=lambda rng: (rng.choice((0, rng.randint(1, 50), rng.randint(50, 10**6))),),
            )
        )
    for k in range(2, 6):
        specs.append(
            _CodeSpec(
                name=f"every_{k}th",
                signature="(xs: list[int]) -> list[int]",
                doc=f"Return every {k}th element of xs, starting with the first (xs[0], xs[{k}], ...).",
                body=f"return xs[::{k}]",
                oracle=lambda xs, k=k: [x for i, x in enumerate(xs) if i % k == 0],
                inputs=lambda rng: _int_list(rng, -9, 9, 14),
            )
        )
    for k in range(2, 5):
        specs.append(
            _CodeSpec(
                name=f"window_max_{k}",
                signature="(xs: list[int]) -> list[int]",
                doc=(
                    f"Return the maximum of every run of {k} consecutive elements of xs, in order; "
                    f"an empty list when xs has fewer than {k} elements."
                ),
                body=f"return [max(xs[i:i + {k}]) for i in range(len(xs) - {k} + 1)]",
                oracle=lambda xs, k=k: [
                    sorted(xs[i : i + k])[-1] for i in range(max(0, len(xs) - k + 1))
                ],
                inputs=lambda rng: _int_list(rng, -9, 9, 10),
            )
        )
    for cname, (phrase, cond, test) in {
        "vowels": (
            "lowercase or uppercase vowels (a, e, i, o, u)",
            "c.lower() in 'aeiou'",
            lambda c: c in "aeiouAEIOU",
        ),
        "digits": ("decimal digits", "c.isdigit()", lambda c: c in "0123456789"),
        "uppercase": (
            "uppercase letters A-Z",
            "'A' <= c <= 'Z'",
            lambda c: c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        ),
        "spaces": ("space characters ' '", "c == ' '", lambda c: c == " "),
    }.items():
        specs.append(
            _CodeSpec(
                name=f"count_{cname}",
                signature="(text: str) -> int",
                doc=f"Return how many characters of text are {phrase}.",
                body=f"return sum(1 for c in text if {cond})",
                oracle=lambda text, t=test: len([c for c in text if t(c)]),
                inputs=lambda rng: (
                    "".join(rng.choice("aEbU xZ19!o") for _ in range(rng.randint(0, 15))),
                ),
            )
        )
    for oname, (phrase, expr, fun) in {
        "sums": ("running sums", "acc + x", lambda a, b: a + b),
        "products": ("running products", "acc * x", lambda a, b: a * b),
        "maxima": ("running maxima", "max(acc, x)", lambda a, b: a if a > b else b),
        "minima": ("running minima", "min(acc, x)", lambda a, b: b if b < a else a),
    }.items():
        specs.append(
            _CodeSpec(
                name=f"running_{oname}",
                signature="(xs: list[int]) -> list[int]",
                doc=(
                    f"Return the {phrase} of xs: element i combines xs[0] .. xs[i]. "
                    "An empty list gives an empty list."
                ),
                body=(
                    "out = []\n    for i, x in enumerate(xs):\n"
                    f"        acc = x if i == 0 else {expr}\n        out.append(acc)\n    return out"
                ),
                oracle=lambda xs, f=fun: _accumulate(xs, f),
                inputs=lambda rng: _int_list(rng, -6, 6, 8),
            )
        )
    return specs


def _to_base(n: int, base: int) -> str:
    digits = ""
    while n:
        digits = "0123456789"[n % base] + digits
        n //= base
    return digits or "0"


def _accumulate(xs: list[int], f: Callable[[int, int], int]) -> list[int]:
    out: list[int] = []
    for x in xs:
        out.append(x if not out else f(out[-1], x))
    return out


def _code_task(spec: _CodeSpec, task_id: str, rng: random.Random, cases: int = 6) -> Task:
    header = f'def {spec.name}{spec.signature}:\n    """{spec.doc}"""\n'
    prompt = (
        f"Write a Python function `{spec.name}{spec.signature}`.\n\n{spec.doc}\n\n"
        f"Complete this code:\n\n```python\n{header}```"
    )
    asserts: list[str] = []
    results: list[str] = []
    seen: set[str] = set()
    attempts = 0
    # enough distinct calls, and at least two different results, so that a function
    # that ignores its input cannot pass
    while (len(asserts) < cases or len(set(results)) < 2) and attempts < 200:
        attempts += 1
        args = spec.inputs(rng)
        call = ", ".join(repr(a) for a in args)
        if call in seen:
            continue
        expected = repr(spec.oracle(*[list(a) if isinstance(a, list) else a for a in args]))
        if len(asserts) >= cases and expected in results:
            continue
        seen.add(call)
        results.append(expected)
        asserts.append(f"    assert candidate({call}) == {expected}")
    test = "def check(candidate):\n" + "\n".join(asserts) + "\n"
    return Task(
        id=task_id,
        kind="code",
        prompt=prompt,
        tests={"style": "humaneval", "entry_point": spec.name, "test": test},
        category="code",
        solution=f"{header}    {spec.body}\n",
    )


def _code_tasks(seed: int, count: int) -> list[Task]:
    specs = _code_specs()
    rng = random.Random(f"mixed/{seed}/code")
    order = list(range(len(specs)))
    rng.shuffle(order)
    tasks = []
    for n in range(count):
        spec = specs[order[n % len(specs)]]
        tasks.append(
            _code_task(spec, f"mixed-code-{n + 1:03d}", random.Random(f"{seed}/{spec.name}/{n}"))
        )
    return tasks


def code_family_size() -> int:
    """How many distinct generated function tasks there are."""
    return len(_code_specs())


# ---------------------------------------------------------------------------- mixed


def mixed_suite(seed: int = 0, per_kind: int = MIXED_PER_KIND) -> Suite:
    """The ``mixed`` suite: ``per_kind`` math, choice and code tasks each (categories
    ``math``, ``choice``, ``code``)."""
    rng = random.Random(f"mixed/{seed}/math")
    makers = list(MATH_CATEGORIES.values())
    math_tasks = _math_tasks(
        [f"mixed-math-{i + 1:03d}" for i in range(per_kind)],
        "math",
        rng,
        [_level(i, per_kind) for i in range(per_kind)],
        [makers[i % len(makers)][1] for i in range(per_kind)],
    )
    tasks = math_tasks + _choice_tasks(seed, per_kind) + _code_tasks(seed, per_kind)
    return Suite(
        name="mixed",
        tasks=tuple(tasks),
        version=f"{GENERATOR_VERSION}.{seed}",
        source=f"generated (seed {seed})",
        description=(
            f"{len(tasks)} generated tasks in equal thirds: arithmetic (math), "
            "multiple choice with computed answers (choice), small Python functions (code)"
        ),
    )
