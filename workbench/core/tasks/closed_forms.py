"""Closed forms math-verify does not know, compared by their values.

math-verify reads ``(2n-1)!!`` as ``((2n-1)!)!`` and cannot read ``1 \\cdot 3 \\cdots
(2n-1)`` at all, so right answers such as ``(2n-1)!!`` for ``(2n)!/(2^n n!)`` or
``\\prod_{k=0}^{2022}(x-k)`` for ``x(x-1)(x-2)...(x-2022)`` were refused. Here a double
factorial becomes the product it stands for, a product or sum written with an ellipsis
becomes a ``Product`` / ``Sum`` over its arithmetic progression, and two expressions in one
free variable are equal when they take the same exact value at every sample point where
both can be evaluated (at least ``MIN_POINTS`` of them, not all zero). Each evaluation is
bounded: products and sums of at most ``MAX_TERMS`` terms, values of at most ``MAX_DIGITS``
digits, and the whole comparison stops at its deadline. String matching is never
loosened: only values decide.
"""

from __future__ import annotations

import re
import time
from typing import Any

# a construct that math-verify's symbolic check does not decide well
_CLOSED_FORM = re.compile(
    r"!|\\prod|\\sum|\\binom|\\lfloor|\\lceil|\\[lc]?dots|\\ldots|\.\.\.|…|\bfloor\b|\bC\("
)
_ELLIPSIS = re.compile(r"\\cdots|\\ldots|\\dots|\.\.\.|…")
_PRODUCT_SEPARATOR = re.compile(r"\\cdot|\\times|\*")
# the telling points first (2031: past a product's zeros, -1: a sign), so that a slow
# comparison stopped at its deadline has compared those
_SAMPLE_POINTS = (1, 2, 3, 5, 2031, -1, 4, 6, 7, 8, 10, 13, -2, -3)
MIN_POINTS = 4
MAX_TERMS = 5000
MAX_DIGITS = 20_000
DEADLINE_S = 5.0


def has_closed_form(text: str) -> bool:
    """``text`` holds a factorial, product, sum, binomial, floor, ceiling or ellipsis."""
    return bool(_CLOSED_FORM.search(text))


def _fresh_index(text: str) -> str:
    return next(name for name in "jqtuvw" if name not in text)


def _operand_before(text: str, end: int) -> int | None:
    """Where the operand that ends at ``end`` starts: a balanced group or a number or one
    letter (``2n!!`` is ``2 (n!!)``)."""
    if end > 0 and text[end - 1] in ")}":
        close = text[end - 1]
        opening = "(" if close == ")" else "{"
        depth = 0
        for k in range(end - 1, -1, -1):
            depth += {close: 1, opening: -1}.get(text[k], 0)
            if depth == 0:
                return k
        return None
    match = re.search(r"(?:\d+|[A-Za-z])$", text[:end])
    return match.start() if match else None


def rewrite_double_factorials(text: str) -> str:
    """Every ``X!!`` as the product it stands for, ``\\prod_{j=0}^{\\lceil (X)/2 \\rceil - 1}
    ((X) - 2j)`` (``5!! = 5 \\cdot 3 \\cdot 1``, ``0!! = 1``), which math-verify parses."""
    text = re.sub(r"\\(?:left|right)\b", "", text)
    index = _fresh_index(text)
    for _ in range(20):  # at most this many double factorials in one answer
        at = text.find("!!")
        if at < 0:
            break
        start = _operand_before(text, at)
        if start is None:
            break
        operand = text[start:at]
        if operand[:1] in "({" and operand[-1:] in ")}":
            operand = operand[1:-1]
        product = (
            f"\\prod_{{{index}=0}}^{{\\lceil ({operand})/2 \\rceil - 1}}(({operand}) - 2 {index})"
        )
        text = text[:start] + "(" + product + ")" + text[at + 2 :]
    return text


def _factors(text: str) -> list[str]:
    """The factors of a product written out: ``1 \\cdot 3 \\cdot 5``, ``x(x-1)(x-2)``."""
    text = _PRODUCT_SEPARATOR.sub("|", text)
    text = re.sub(r"\)\s*\(", ")|(", text)
    text = re.sub(r"(?<=[A-Za-z0-9])\s*\((?=[^|]*\)(?:\||$))", "|(", text)
    return [part.strip() for part in text.split("|") if part.strip()]


def _ellipsis_series(text: str, parse: Any) -> Any | None:
    """A product (``1 \\cdot 3 \\cdot 5 \\cdots (2n-1)``, ``x(x-1)(x-2)...(x-2022)``) or a
    sum (``1 + 3 + \\cdots + (2n-1)``) of an arithmetic progression written with an
    ellipsis, as a sympy ``Product`` / ``Sum``; None when ``text`` is not one."""
    import sympy

    parts = _ELLIPSIS.split(text)
    if len(parts) != 2:
        return None
    left, right = parts[0].strip(), parts[1].strip()
    summed = left.endswith("+") or right.startswith("+")
    if summed:
        terms = [t.strip() for t in left.rstrip("+ ").split("+") if t.strip()]
        last = right.lstrip("+ ").strip()
    else:
        terms = _factors(left)
        last_factors = _factors(right)
        if len(last_factors) != 1:
            return None
        last = last_factors[0]
    if len(terms) < 2:
        return None
    values: list[Any] = []
    for term in [*terms, last]:
        value = _sympy_of(term, parse)
        if value is None:
            return None
        values.append(value)
    first, second, final = values[0], values[1], values[-1]
    step = sympy.simplify(second - first)
    if not step.is_number or step == 0:
        return None
    if any(
        sympy.simplify(b - a - step) != 0 for a, b in zip(values[:-2], values[1:-1], strict=True)
    ):
        return None
    count = sympy.simplify((final - first) / step)
    index = sympy.Dummy("k", integer=True)
    kind = sympy.Sum if summed else sympy.Product
    return kind(first + step * index, (index, 0, count))


def _sympy_of(text: str, parse: Any) -> Any | None:
    import sympy

    parsed = parse(text)
    if not parsed or not isinstance(parsed[0], sympy.Basic):
        return None
    return parsed[0]


def expression_of(text: str, parse: Any) -> Any | None:
    """``text`` as a sympy expression with its closed forms made explicit (``parse`` is
    math-verify's parse of a box's content); None when it cannot be read."""
    series = _ellipsis_series(text, parse) if _ELLIPSIS.search(text) else None
    if series is not None:
        return series
    return _sympy_of(rewrite_double_factorials(text), parse)


def _bounded(expression: Any) -> bool:
    """Every product and sum in ``expression`` has at most ``MAX_TERMS`` terms."""
    import sympy

    for node in expression.atoms(sympy.Product, sympy.Sum):
        for _, low, high in node.limits:
            span = sympy.simplify(high - low)
            if not span.is_number or span > MAX_TERMS:
                return False
    return True


def _value(expression: Any, symbol: Any, point: int) -> Any | None:
    """The exact rational value of ``expression`` at ``symbol = point``, or None when it
    has none there (undefined, not rational, too large to compute within the bounds)."""
    import sympy

    try:
        at = expression.subs(symbol, point)
        if not _bounded(at):
            return None
        approx = sympy.N(at, 20)
        if not approx.is_finite or not approx.is_real:
            return None
        if approx != 0 and abs(approx) > sympy.Float(10) ** MAX_DIGITS:
            return None
        exact = sympy.nsimplify(at.doit()) if not at.is_Rational else at
        return exact if exact.is_Rational else None
    except (ArithmeticError, TypeError, ValueError, RecursionError, AttributeError):
        return None


def equal_by_value(gold: str, answer: str, parse: Any, deadline_s: float = DEADLINE_S) -> bool:
    """``gold`` and ``answer`` (LaTeX) are the same function of their one free variable:
    exactly equal at every sample point where both have a value, at least ``MIN_POINTS``
    such points and not all of them 0. Only for texts with a closed form
    (``has_closed_form``); anything else is math-verify's to decide."""
    if not (has_closed_form(gold) or has_closed_form(answer)):
        return False
    left, right = expression_of(gold, parse), expression_of(answer, parse)
    if left is None or right is None:
        return False
    free = left.free_symbols
    if len(free) != 1 or right.free_symbols != free:
        return False
    (symbol,) = free
    deadline = time.monotonic() + deadline_s
    compared = nonzero = 0
    for point in _SAMPLE_POINTS:
        if time.monotonic() > deadline:
            break
        a = _value(left, symbol, point)
        if a is None:
            continue
        b = _value(right, symbol, point)
        if b is None:
            continue
        if a != b:
            return False
        compared += 1
        nonzero += a != 0
    return compared >= MIN_POINTS and nonzero >= 2
