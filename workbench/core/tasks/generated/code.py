"""The code third of ``mixed``: small Python functions in HumanEval style, each with a
``check(candidate)`` test and a reference solution that passes it."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.core.tasks.model import Task


@dataclass(frozen=True, kw_only=True)
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


def code_tasks(seed: int, count: int, prefix: str = "mixed") -> list[Task]:
    specs = _code_specs()
    rng = random.Random(f"mixed/{seed}/code")
    order = list(range(len(specs)))
    rng.shuffle(order)
    tasks = []
    for n in range(count):
        spec = specs[order[n % len(specs)]]
        tasks.append(
            _code_task(spec, f"{prefix}-code-{n + 1:03d}", random.Random(f"{seed}/{spec.name}/{n}"))
        )
    return tasks


def code_family_size() -> int:
    """How many distinct generated function tasks there are."""
    return len(_code_specs())
