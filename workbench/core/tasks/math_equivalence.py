"""When a final answer equals a reading of the reference: math-verify's parse and verify,
run from the helper process's main thread where its own timeouts work (see ``mathcheck``).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from typing import Any

from workbench.core.tasks.closed_forms import equal_by_value, rewrite_double_factorials
from workbench.core.tasks.math_references import (
    ALTERNATIVES,
    Reading,
    ascii_to_latex,
    math_reading,
    unchain,
)

log = logging.getLogger(__name__)

PARSE_TIMEOUT_S = 2  # math-verify's own limit per parse or comparison (whole seconds)


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def parse_math(text: str) -> list[Any]:
    from math_verify import parse

    timeout = PARSE_TIMEOUT_S if in_main_thread() else None
    try:
        return parse(text, parsing_timeout=timeout)
    except Exception:  # odd input and timeouts: nothing parsed
        return []


@functools.lru_cache(maxsize=4096)
def parse_boxed(text: str) -> list[Any]:
    return parse_math("\\boxed{" + text + "}")


_NOT_VARIABLES = re.compile(
    r"\\[A-Za-z]+|\b(?:sqrt|floor|ceil|sum|prod|binom|frac|log|ln|exp|sin|cos|tan|mod|gcd|lcm|max|min|pi)\b"
)


def faithful(reading: Reading) -> bool:
    """math-verify reads the reference as written: a reference with variables is not
    read as a constant (``sum_(i=1)^n i^3`` read as the 1 of ``i=1`` would equal a bare
    \\boxed{1}). A reading it cannot parse at all is kept (it only ever equals itself)."""
    text = ascii_to_latex(reading.text)
    parsed = parse_boxed(text)
    if not parsed or isinstance(parsed[0], str):
        return True
    letters = re.findall(r"[A-Za-z]", _NOT_VARIABLES.sub(" ", text))
    free = getattr(parsed[0], "free_symbols", None)
    if letters and free is not None and not free:
        log.debug("reference reading %r parses as a constant; ignored", reading.text)
        return False
    return True


def verify_parsed(gold: list[Any], target: list[Any]) -> bool:
    from math_verify import verify

    timeout = PARSE_TIMEOUT_S if in_main_thread() else None
    try:
        return bool(verify(gold, target, timeout_seconds=timeout))
    except Exception:
        return False


BY_MATH_VERIFY = "math-verify"
BY_VALUES = "closed form, equal values"


def equal(reading: Reading, text: str) -> str | None:
    """How the answer text ``text`` equals a math reading of the reference: math-verify
    says so (``BY_MATH_VERIFY``), or, for closed forms it does not know (double
    factorials, products and sums written out), their values agree at sample points
    (``BY_VALUES``, see ``closed_forms``); None when it does not."""
    text = unchain(ascii_to_latex(text))
    target = math_reading(text, reading.names) if reading.names else math_reading(text)
    candidate = target.text
    if reading.names and not target.names and "(" not in candidate and "," in candidate:
        candidate = "(" + candidate + ")"  # "6, 5" for x=6, y=5: the values in order
    gold_text = ascii_to_latex(reading.text)
    gold = parse_boxed(rewrite_double_factorials(gold_text))
    answer = parse_boxed(rewrite_double_factorials(candidate))
    if gold and answer and verify_parsed(gold, answer):
        return BY_MATH_VERIFY
    if not reading.names and equal_by_value(gold_text, candidate, parse_boxed):
        return BY_VALUES
    return None


def math_match(readings: list[Reading], text: str) -> tuple[Reading, str] | None:
    """The reading that an answer's final text equals, and how (see ``equal``). A final
    text that offers alternatives ("252, or equivalently C(10, 5)") must be right in
    every one."""
    alternatives = [a.strip() for a in ALTERNATIVES.split(text) if a.strip()] or [text]
    matched: tuple[Reading, str] | None = None
    for alternative in alternatives:
        hit = None
        for reading in readings:
            how = equal(reading, alternative) if reading.kind == "math" else None
            if how is not None:
                hit = (reading, how)
                break
        if hit is None:
            return None
        matched = matched or hit
    return matched


def answers_agree(values: list[str]) -> bool:
    """Every one of several stated final answers equals the last one (math-verify), so
    that the answer commits to one value."""
    distinct = list(dict.fromkeys(value.strip() for value in values))
    if len(distinct) < 2:
        return True
    last = parse_boxed(distinct[-1])
    return bool(last) and all(verify_parsed(last, parse_boxed(v)) for v in distinct[:-1])
