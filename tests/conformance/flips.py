"""Sign and operator flips of a math reference, and math-verify's own verdict on them.

A flip changes one symbol of the reference: a minus sign added before a number or a
bracket or removed, ``+`` <-> ``-``, ``*`` <-> ``/``, ``^`` -> ``*``, or the bracket pair
of an interval or tuple swapped (``[-1, 1]`` -> ``(-1, 1)``). math-verify (not this
project) decides whether the flip still equals the reference; every flip it calls
different is a wrong answer that a grader must score 0.
"""

from __future__ import annotations

import re

from math_verify import parse, verify

_SWAPS = {"+": "-", "-": "+", "*": "/", "/": "*", "^": "*"}
_BRACKETS = {"(": ")", "[": "]"}


# A remark such as "(i.e., no real-valued zeros)" is prose about the answer, not part of it
_REMARK = re.compile(r"\s*\((?:i\.e\.|e\.g\.|that is|no |none)[^)]*\)", re.IGNORECASE)


def mathematical_part(reference: str) -> str:
    """The reference without its remarks in parentheses: what an answer must state."""
    return _REMARK.sub("", reference).strip() or reference


def flips(reference: str) -> list[str]:
    """Every single-symbol sign or operator flip of ``reference`` (hyphens inside words
    left alone), deduplicated."""
    out = []
    for i, ch in enumerate(reference):
        if ch == "-" and reference[i - 1 : i].isalpha() and reference[i + 1 : i + 2].isalpha():
            continue  # "real-valued": a hyphen, not a minus
        if ch in _SWAPS:
            out.append(reference[:i] + _SWAPS[ch] + reference[i + 1 :])
    for match in re.finditer(r"(?<![\w.])(\d+(?:\.\d+)?)", reference):
        start = match.start()
        if start > 0 and reference[start - 1] == "-":
            out.append(reference[: start - 1] + reference[start:])  # drop the minus
        else:
            out.append(reference[:start] + "-" + reference[start:])
    stripped = reference.strip()
    if stripped[:1] in _BRACKETS and stripped[-1:] in _BRACKETS.values():
        other = {"(": "[", "[": "("}[stripped[0]]
        out.append(other + stripped[1:-1] + _BRACKETS[other])
        out.append(stripped[0] + stripped[1:-1] + _BRACKETS[other])
    return [flip for flip in dict.fromkeys(out) if flip != reference]


def math_verify_says_differs(reference: str, flip: str) -> bool:
    """math-verify's own verdict: the boxed flip does not equal the boxed reference."""
    gold = parse("\\boxed{" + reference + "}")
    answer = parse("\\boxed{" + flip + "}")
    if not gold or not answer:
        return False  # math-verify has no verdict on text it cannot read
    return not verify(gold, answer)
