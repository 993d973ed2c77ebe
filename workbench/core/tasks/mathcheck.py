"""Checking a math answer against a reference with math-verify, safely from any thread.

math-verify bounds its work with ``signal.alarm``, which only works in a process's main
thread, and a few short inputs (a power tower such as ``x^x^x^...``) keep sympy busy for
minutes. The trainer grades in worker threads, so checks run in one long-lived helper
process (in its main thread, where math-verify's own timeouts work). A check that takes
longer than ``CHECK_TIMEOUT_S`` gets the helper killed and restarted and scores 0.
Plain numbers are compared here directly, without the helper.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from workbench.core.tasks import prose
from workbench.core.tasks.extract import (
    ANSWER_CUE as _ANSWER_CUE,
)
from workbench.core.tasks.extract import (
    all_boxed,
    answer_views,
    normalize_math_text,
    normalize_unicode_math,
    strip_text_macro,
)

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 20.0  # the helper is killed after this long on one check
PARSE_TIMEOUT_S = 2  # math-verify's own limit per parse or comparison (whole seconds)
BUDGET_S = 8.0  # stop trying further readings of the reference after this long
HELPER_MEMORY_BYTES = 4 * 2**30
_ANSWER_TAIL_CHARS = 4000  # math-verify reads the tail only: long rambles are slow to parse
_SENT_CHARS = 50_000

# Alternatives of one reference ("C(10, 5), or equivalently 252"); a bare " or " between
# two values ("f(x)=0 or f(x)=1") lists solutions, and every one is required.
_ALTERNATIVES = re.compile(
    r",?\s+or\s+(?:equivalently|approximately|an\s+equivalent\s+form\s+such\s+as)\s+|,\s+or\s+",
    re.IGNORECASE,
)
_TEXT_CONNECTIVE = re.compile(r"\\(?:text|textrm|mathrm|mbox)\s*\{\s*(and|or)\s*\}", re.IGNORECASE)
_PARTS = re.compile(r",?\s+(?:and|or)\s+", re.IGNORECASE)
# "98 values", "0 is the only possible value": a number and a unit or a remark, nothing more
_NUMBER_WITH_UNIT = re.compile(
    r"^\s*(-?\d+(?:[./]\d+)?)\s+(?:is\s+the\s+only\s+possible\s+value|[A-Za-z-]+)\s*$",
    re.IGNORECASE,
)
_TRAILING_VALUE = re.compile(
    r"(?:equal\s+to|limit\s+is|period\s+of|value\s+is)\s+(.+?)\.?\s*$", re.IGNORECASE
)
_PLAIN_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:/\d+)?")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z](?:_\{?\w+\}?)?)\s*=\s*([^=]+?)\s*$")
_PAREN_GROUP = re.compile(r"\(([^()]*=[^()]*)\)")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
# Words that make a reference prose rather than mathematics; longer words count too,
# unless they are names of functions or constants.
_ENGLISH = {"no", "yes", "is", "of", "to", "the", "all", "for", "any", "not", "an", "at", "it"}
_ENGLISH |= {"in", "and", "or", "if", "such", "only", "none", "are", "be", "as", "on", "by"}
_MATH_WORDS = {
    "sqrt", "sum", "prod", "floor", "ceil", "binom", "frac", "dfrac", "tfrac", "infty", "cdot",
    "times", "left", "right", "sin", "cos", "tan", "log", "exp", "mod", "gcd", "lcm", "max",
    "min", "text", "pi", "ln", "le", "ge", "ne", "pm", "mp", "infinity", "dots", "ldots",
    "cdots", "boxed", "mathrm", "operatorname", "arcsin", "arccos", "arctan", "cot", "sec",
    "csc", "choose", "lfloor", "rfloor", "lceil", "rceil", "quad", "qquad", "mathbb",
}  # fmt: skip


@dataclass(frozen=True)
class Reading:
    """One way to read a reference: ``math`` (compared by math-verify, ``names`` set when it
    came from assignments such as ``x=6, y=5`` and is an ordered tuple), ``text`` (a
    reference with no mathematical reading, such as ``No``, compared as text), or a claim
    that a prose answer must make: ``none`` ("No integer solutions"), ``limit_none``
    ("The limit does not exist"), ``infinite`` ("Infinitely many solutions"), ``count``
    ("At least 1 number": ``text`` is "at least|1") or ``phrase`` ("Monotonically
    increasing": ``text`` is the words the answer must say)."""

    kind: str
    text: str
    names: tuple[str, ...] = ()


_CLAIM_KINDS = ("none", "limit_none", "infinite", "count", "phrase")
_NONE_REFERENCE = re.compile(
    r"^(?:no\s+\w+|there\s+(?:is|are)\s+no\b|.*\b(?:(?:does|do)\s+not\s+exist|not\s+possible"
    r"|impossible)\b|at\s+most\s+0\b|0\s+(?:pairs|roots|zeros|values|solutions|ways)\b)",
    re.IGNORECASE,
)
_COUNT_REFERENCE = re.compile(
    r"^(at\s+least|at\s+most|exactly)\s+(\d+|one|two|three|four|five)\b", re.IGNORECASE
)
_PHRASE_SUBJECT = re.compile(r"^(?:the|such\s+a|this)\s+\w+\s+", re.IGNORECASE)
# CHAMP writes references in ASCII notation that math-verify misreads: it takes the
# "1" of "sum_(i=1)^n i^3" for the whole answer, so a bare \boxed{1} was paid.
_ASCII_SUM = re.compile(r"\bsum_\((\w+)\s*=\s*([^()]+)\)\^(\w+|\([^()]*\))\s*(.+)$")
_ASCII_BINOM = re.compile(r"(?<![A-Za-z\\])C\(([^(),]+),\s*([^(),]+)\)")
_ASCII_FLOOR = re.compile(r"\bfloor\(([^()]+)\)")


def ascii_to_latex(text: str) -> str:
    """CHAMP's ASCII notation as LaTeX: ``sum_(i=1)^n i^3`` -> ``\\sum_{i=1}^{n} i^3``,
    ``C(10, 5)`` -> ``\\binom{10}{5}``, ``floor(n/2)`` -> ``\\lfloor n/2 \\rfloor``."""
    text = _ASCII_SUM.sub(
        lambda m: f"\\sum_{{{m.group(1)}={m.group(2)}}}^{{{m.group(3).strip('()')}}} {m.group(4)}",
        text,
    )
    text = _ASCII_BINOM.sub(lambda m: f"\\binom{{{m.group(1)}}}{{{m.group(2)}}}", text)
    return _ASCII_FLOOR.sub(lambda m: f"\\lfloor {m.group(1)} \\rfloor", text)


def _split_remark(text: str) -> tuple[str, str]:
    """``0 (i.e., no such values)`` -> (``0``, ``i.e., no such values``): a remark in
    parentheses (nested parentheses included) and the text without it."""
    match = re.search(r"\s*\((?=i\.e\.|e\.g\.|that is|no |none)", text, re.IGNORECASE)
    if not match:
        return text, ""
    depth = 0
    for j in range(match.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return (text[: match.start()] + text[j + 1 :]).strip() or text, text[match.end() : j]
    return text, ""


def _unchain(text: str) -> str:
    """``x=y=0`` as the assignments ``x=0, y=0`` (the pair (x, y) = (0, 0))."""
    chained = re.fullmatch(r"\s*([A-Za-z])\s*=\s*([A-Za-z])\s*=\s*([^=]+?)\s*", text)
    if not chained:
        return text
    return ", ".join(f"{name}={chained.group(3)}" for name in chained.group(1, 2))


def _claim_readings(alternative: str, remark: str) -> list[Reading]:
    """The claims a prose answer can make that state this reference."""
    readings = []
    lowered = " ".join(alternative.lower().split())
    if re.match(r"^the\s+limit\s+does\s+not\s+exist", lowered):
        readings.append(Reading("limit_none", alternative))
    elif _NONE_REFERENCE.match(lowered) or re.search(r"\b(?:no|none)\b", remark, re.IGNORECASE):
        readings.append(Reading("none", alternative))
    if lowered.startswith("infinitely many"):
        readings.append(Reading("infinite", alternative))
    count = _COUNT_REFERENCE.match(lowered)
    if count:
        qualifier = " ".join(count.group(1).split())
        readings.append(
            Reading(
                "count", f"{qualifier}|{prose.NUMBER_WORDS.get(count.group(2), count.group(2))}"
            )
        )
    if (
        not readings
        and re.fullmatch(r"[a-z ]+", lowered)
        and not re.match(r"(?:yes|no)\b", lowered)
    ):
        phrase = _PHRASE_SUBJECT.sub("", lowered).strip()
        if len(phrase.split()) >= 2:
            readings.append(Reading("phrase", phrase))
    return readings


def _is_prose(text: str) -> bool:
    words = re.findall(r"[A-Za-z]+", text)
    return any(
        w.lower() in _ENGLISH or (len(w) >= 4 and w.lower() not in _MATH_WORDS) for w in words
    )


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and braces."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _assignments(text: str) -> list[tuple[str, str]] | None:
    """``x=6, y=5`` as [("x", "6"), ("y", "5")]: two or more distinct names, else None."""
    pairs = []
    for part in _split_top_level(text):
        match = _ASSIGNMENT.match(part)
        if not match:
            return None
        pairs.append((match.group(1), match.group(2)))
    if len(pairs) < 2 or len({name for name, _ in pairs}) != len(pairs):
        return None
    return pairs


def _as_tuples(text: str, order: tuple[str, ...] = ()) -> tuple[str, tuple[str, ...]]:
    """Assignments written as ordered tuples: ``x=6, y=5`` -> ``(6, 5)`` and
    ``(x=8, y=2), (x=2, y=8)`` -> ``(8, 2), (2, 8)``, values in the order of ``order``
    (the reference's names) when given, else as written. Returns the text and the names."""
    names: tuple[str, ...] = ()

    def tuple_of(pairs: list[tuple[str, str]]) -> str | None:
        nonlocal names
        given = [name for name, _ in pairs]
        want = order or names or tuple(given)
        if sorted(want) != sorted(given):
            return None
        names = tuple(want)
        values = dict(pairs)
        return "(" + ", ".join(values[name] for name in want) + ")"

    whole = _assignments(text)
    if whole is not None:
        converted = tuple_of(whole)
        return (converted, names) if converted else (text, ())

    def group(match: re.Match[str]) -> str:
        pairs = _assignments(match.group(1))
        converted = tuple_of(pairs) if pairs else None
        return converted or match.group(0)

    converted = _PAREN_GROUP.sub(group, text)
    return converted, names if converted != text else ()


def _math_reading(text: str, order: tuple[str, ...] = ()) -> Reading:
    """A mathematical text as math-verify should see it: parts joined by "and" become a
    list (every part required), assignments become ordered tuples."""
    text = _TEXT_CONNECTIVE.sub(r" \1 ", text)  # 376 \text{ and } 625
    parts = _PARTS.split(text)
    if len(parts) > 1:
        converted = [_as_tuples(part, order) for part in parts]
        names = next((n for _, n in converted if n), ())
        return Reading("math", ", ".join(t for t, _ in converted), names)
    whole, names = _as_tuples(text, order)
    return Reading("math", whole, names)


def gold_readings(gold: str) -> list[Reading]:
    """The readings of a (possibly messy) reference answer, best first.

    CHAMP writes references like ``C(10, 5), or equivalently 252``, ``376 and 625``,
    ``x=6, y=5`` or ``0 is the only possible value``: each alternative is a reading;
    parts joined by "and" are all required; assignments are tuples in order; a number
    with a unit or a value named in prose is read as that value (ASCII notation such as
    ``sum_(i=1)^n`` is parsed as LaTeX, see ``ascii_to_latex``); a reference with no mathematical
    reading (``No``) is compared as text, and a prose one also as the claim an answer
    must make (``No integer solutions``: that there are none).
    """
    gold = normalize_unicode_math(gold).strip()
    cleaned, remark = _split_remark(gold)
    readings: list[Reading] = []
    for alternative in _ALTERNATIVES.split(cleaned):
        alternative = alternative.strip().rstrip(".").strip()
        if not alternative:
            continue
        alternative = _unchain(alternative)
        if _reads_as_math(alternative):
            readings.append(_math_reading(alternative))
            if remark:
                readings += _claim_readings(alternative, remark)
            continue
        readings.append(Reading("text", alternative))
        number = _NUMBER_WITH_UNIT.match(alternative)
        if number:
            readings.append(Reading("math", number.group(1)))
        value = _TRAILING_VALUE.search(alternative)
        if value and not _is_prose(value.group(1)):
            readings.append(_math_reading(value.group(1).strip()))
        readings += _claim_readings(alternative, remark)
    return list(dict.fromkeys(readings))


def gold_variants(gold: str) -> list[str]:
    """The texts of ``gold_readings`` (for display and tests)."""
    return [reading.text for reading in gold_readings(gold)]


def _plain_number(text: str) -> Fraction | None:
    text = text.strip().strip("$").strip().rstrip(".").strip()
    if not _PLAIN_NUMBER.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _fast_check(reference: str, answer: str) -> dict[str, Any] | None:
    """Decide plain-number cases here (one boxed number, or an answer that is only a
    number); None when math-verify must decide."""
    gold = _plain_number(normalize_unicode_math(reference))
    if gold is None:
        return None
    answer = normalize_unicode_math(answer)
    boxes = all_boxed(answer)
    if len(boxes) > 1:
        return None  # several final answers: the full check decides
    reply = strip_text_macro(boxes[0]) if boxes else answer.strip()
    value = _plain_number(reply)
    if value is None:
        return None
    source = "boxed answer" if boxes else "answer"
    if value == gold:
        return _verdict(
            1.0, reply, f"the {source} equals the reference", "number: equal", matched=reference
        )
    return _verdict(0.0, reply, f"the {source} does not equal the reference", "number: differs")


def _verdict(
    reward: float, extracted: str | None, reason: str, rule: str, **extra: Any
) -> dict[str, Any]:
    return {"reward": reward, "extracted": extracted, "reason": reason, "rule": rule, **extra}


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _parse(text: str) -> list[Any]:
    from math_verify import parse

    timeout = PARSE_TIMEOUT_S if _in_main_thread() else None
    try:
        return parse(text, parsing_timeout=timeout)
    except Exception:  # odd input and timeouts: nothing parsed
        return []


@functools.lru_cache(maxsize=4096)
def _parse_boxed(text: str) -> list[Any]:
    return _parse("\\boxed{" + text + "}")


_NOT_VARIABLES = re.compile(
    r"\\[A-Za-z]+|\b(?:sqrt|floor|ceil|sum|prod|binom|frac|log|ln|exp|sin|cos|tan|mod|gcd|lcm|max|min|pi)\b"
)


def _faithful(reading: Reading) -> bool:
    """math-verify reads the reference as written: a reference with variables is not
    read as a constant (``sum_(i=1)^n i^3`` read as the 1 of ``i=1`` paid a bare
    \\boxed{1}). A reading it cannot parse at all is kept (it only ever equals itself)."""
    text = ascii_to_latex(reading.text)
    parsed = _parse_boxed(text)
    if not parsed or isinstance(parsed[0], str):
        return True
    letters = re.findall(r"[A-Za-z]", _NOT_VARIABLES.sub(" ", text))
    free = getattr(parsed[0], "free_symbols", None)
    if letters and free is not None and not free:
        log.debug("reference reading %r parses as a constant; ignored", reading.text)
        return False
    return True


def _verify(gold: list[Any], target: list[Any]) -> bool:
    from math_verify import verify

    timeout = PARSE_TIMEOUT_S if _in_main_thread() else None
    try:
        return bool(verify(gold, target, timeout_seconds=timeout))
    except Exception:
        return False


def _bare_latex(answer: str) -> str | None:
    r"""The final value of an answer with no ``$`` or box (``The answer is \frac12``):
    the text after the last answer cue, else the last line, read as LaTeX."""
    views = dict(answer_views(answer))
    for label in ("text after 'Answer:'", "last line"):
        text = views.get(label, "").strip().rstrip(".").strip()
        if not text or len(text) > 200:
            continue
        parsed = _parse("$" + text + "$")
        if len(parsed) >= 2:
            return str(parsed[-1])
    return None


def _without_remark(text: str) -> str:
    """``100 (i.e., all values)`` -> ``100``: a remark in parentheses is not the answer."""
    return _split_remark(text)[0]


def _stated_answer(answer: str) -> str | None:
    """The text after the last answer cue ("The final answer is $-239$.", "Answer: 5/14,
    or approximately 35.7%") when it reads as mathematics as a whole: so that every value
    it states is checked, not just the first one a parser finds."""
    cues = list(_ANSWER_CUE.finditer(answer))
    if not cues:
        return None
    after = answer[cues[-1].end() :].strip()
    text = after.splitlines()[0] if after else ""
    text = _without_remark(text.strip().rstrip(".").strip().strip("$").strip())
    if not text or len(text) > 200 or not _reads_as_math(text):
        return None
    return text


def _reads_as_math(text: str) -> bool:
    """Every alternative of ``text`` is mathematics (parts joined by "and" included)."""
    for alternative in _ALTERNATIVES.split(text):
        parts = _PARTS.split(alternative)
        if _is_prose(alternative) and (len(parts) < 2 or any(_is_prose(p) for p in parts)):
            return False
    return True


def _final_answer(answer: str) -> tuple[str | None, str, list[str]]:
    """(final answer text, where it came from, every boxed answer) of a worker's answer."""
    boxes = [_without_remark(strip_text_macro(b)) for b in all_boxed(answer)]
    if boxes:
        return boxes[-1], "boxed answer", boxes
    stated = _stated_answer(answer)
    if stated is not None:
        return stated, "stated answer", []
    if prose.is_prose(" ".join(prose.final_sentences(answer[-_ANSWER_TAIL_CHARS:]))):
        # a sentence in words: its claims are read by _prose_check, never "the last
        # number a parser finds" ("... to fill a 2 x 21 rectangle" is not an answer of 21)
        return None, "prose", []
    parsed = _parse(answer[-_ANSWER_TAIL_CHARS:])
    if len(parsed) >= 2:
        return str(parsed[-1]), "final value", []
    bare = _bare_latex(answer[-_ANSWER_TAIL_CHARS:])
    if bare is not None:
        return bare, "final value (bare LaTeX)", []
    return None, "answer", []


def _equal(reading: Reading, text: str) -> bool:
    """The answer text ``text`` equals a math reading of the reference (math-verify)."""
    text = _unchain(ascii_to_latex(text))
    target = _math_reading(text, reading.names) if reading.names else _math_reading(text)
    candidate = target.text
    if reading.names and not target.names and "(" not in candidate and "," in candidate:
        candidate = "(" + candidate + ")"  # "6, 5" for x=6, y=5: the values in order
    gold = _parse_boxed(ascii_to_latex(reading.text))
    answer = _parse_boxed(candidate)
    return bool(gold and answer and _verify(gold, answer))


def _math_match(readings: list[Reading], text: str) -> Reading | None:
    """The reading that an answer's final text equals. A final text that offers
    alternatives ("252, or equivalently C(10, 5)") must be right in every one."""
    alternatives = [a.strip() for a in _ALTERNATIVES.split(text) if a.strip()] or [text]
    matched = None
    for alternative in alternatives:
        hit = next((r for r in readings if r.kind == "math" and _equal(r, alternative)), None)
        if hit is None:
            return None
        matched = matched or hit
    return matched


def _first_word(text: str) -> str:
    words = re.findall(r"[A-Za-z]+", text)
    return words[0] if words else ""


def _yes_no(answer: str, boxes: list[str]) -> str | None:
    """The yes or no an answer gives: its box, or the first word of the text after its
    answer cue, of the answer or of its last line ("There are no solutions" says no
    "no" to a yes/no question: it is read as a claim instead)."""
    views = dict(answer_views(answer))
    ordered = [
        boxes[-1] if boxes else "",
        _first_word(views.get("text after 'Answer:'", "")),
        _first_word(answer),
        _first_word(views.get("last line", "")),
    ]
    for view in ordered:
        said = {word.lower() for word in _YES_NO.findall(view)}
        if len(said) == 1:
            return said.pop()
        if len(said) > 1:
            return None
    return None


def _text_match(
    readings: list[Reading], answer: str, boxes: list[str], yes_no: bool = True
) -> dict[str, Any] | None:
    views = [("boxed answer", boxes[-1])] if boxes else []
    views += [(label, text) for label, text in reversed(answer_views(answer))]
    for reading in readings:
        if reading.kind != "text":
            continue
        target = normalize_math_text(reading.text)
        for label, text in views:
            if target and normalize_math_text(_without_remark(text)) == target:
                return _verdict(
                    1.0,
                    text.strip(),
                    f"the {label} matches the reference as text",
                    "text: exact after normalisation",
                    matched=reading.text,
                )
        if target in ("yes", "no") and yes_no:
            said = _yes_no(answer, boxes)
            if said is not None:
                right = said == target
                return _verdict(
                    1.0 if right else 0.0,
                    said,
                    f"the answer says {said}; the reference says {target}",
                    "yes/no: " + ("same" if right else "differs"),
                    **({"matched": reading.text} if right else {}),
                )
    return None


_COUNT_GROUPS = {"": "", "only": "", "exactly": "", "precisely": "", "at most": "at most"}


def _count_matches(want: str, claimed: tuple[str, str]) -> bool:
    """A count claim (qualifier, number) states the reference's count ``want``
    ("at least|1"): the same number, and "at least" only for "at least", "at most" only
    for "at most"; "exactly" and "only" stand for no qualifier."""
    qualifier, number = want.split("|")
    said_qualifier, said_number = claimed
    same = _COUNT_GROUPS.get(qualifier, qualifier) == _COUNT_GROUPS.get(
        said_qualifier, said_qualifier
    )
    return same and Fraction(number) == Fraction(said_number)


def _count_as_value(claimed: tuple[str, str], question: str | None) -> str | None:
    """A count claim as a plain value for a numeric reference: "There are 239 ..." is
    239; "at most 2" answers an "at most how many" question, "at least 26" a "minimum"
    one; otherwise a qualified count is not a value."""
    qualifier, number = claimed
    asked = (question or "").lower()
    if qualifier in ("", "only", "exactly", "precisely"):
        return number
    if qualifier == "at most" and re.search(r"\bat most\b|\bmaximum\b|\blargest\b", asked):
        return number
    if qualifier == "at least" and re.search(
        r"\bat least\b|\bminimum\b|\bsmallest\b|\bfewest\b", asked
    ):
        return number
    return None


def _phrase_said(phrase: str, claims: prose.Claims) -> bool:
    """The answer's main clause says ``phrase`` ("monotonically increasing") as it is:
    no more negations than the phrase has, no alternatives, no "whether"."""
    clause = " ".join(prose.main_clause(claims.sentence).lower().split())
    if phrase not in clause or re.search(r"\bwhether\b|\bor\b|\bneither\b", clause):
        return False
    negations = re.compile(r"\b(?:not|no|never|cannot|neither|nor)\b|n't\b")
    return len(negations.findall(clause)) == len(negations.findall(phrase))


def _prose_check(
    readings: list[Reading], answer: str, question: str | None
) -> dict[str, Any] | None:
    """Judge a final answer written as a sentence by what it claims (see ``prose``): a
    verdict, or None when its claims say nothing about this reference."""
    sentences = prose.final_sentences(answer[-_ANSWER_TAIL_CHARS:])
    if not sentences:
        return None
    every = [prose.claims(sentence) for sentence in sentences]
    claims = next(
        (c for c in every if c.hedged or c != prose.Claims(sentence=c.sentence)), every[0]
    )
    if claims.hedged:
        return _verdict(
            0.0, claims.sentence, "the answer does not commit to an answer", "prose: hedged"
        )
    values = list(claims.values)
    if claims.count is not None:
        value = _count_as_value(claims.count, question)
        if value is not None:
            values.append(value)
    for value in dict.fromkeys(values):
        hit = _math_match(readings, value)
        if hit is not None:
            return _verdict(
                1.0,
                value,
                "the value the sentence states equals the reference",
                "prose: stated value equal" + (" (tuple in order)" if hit.names else ""),
                matched=hit.text,
            )
    for reading in readings:
        claimed = (
            (reading.kind == "none" and claims.none)
            or (reading.kind == "limit_none" and claims.limit_none)
            or (reading.kind == "infinite" and claims.infinite)
            or (reading.kind == "count" and claims.count is not None
                and _count_matches(reading.text, claims.count))
            or (reading.kind == "count" and reading.text == "at most|0" and claims.none)
            or (reading.kind == "phrase" and _phrase_said(reading.text, claims))
        )  # fmt: skip
        if claimed:
            return _verdict(
                1.0,
                claims.sentence,
                f"the sentence claims what the reference says ({reading.kind})",
                f"prose: {reading.kind} claim",
                matched=reading.text,
            )
    target = next(
        (r.text.lower() for r in readings if r.kind == "text" and r.text.lower() in ("yes", "no")),
        None,
    )
    if target is not None:
        said, how, rule = claims.polarity, f"says {claims.polarity}", "yes/no: "
        if said is None and claims.negated and prose.is_polar_question(question):
            said, how, rule = "no", "denies what the question asks (no)", "prose: yes/no denied, "
        if said is not None:
            right = said == target
            return _verdict(
                1.0 if right else 0.0,
                said,
                f"the answer {how}; the reference says {target}",
                rule + ("same" if right else "differs"),
                **({"matched": target} if right else {}),
            )
    shown = ", ".join(values) or claims.sentence
    return _verdict(
        0.0, shown, "the sentence does not state the reference", "prose: not the reference"
    )


def _boxes_agree(boxes: list[str]) -> bool:
    distinct = list(dict.fromkeys(b.strip() for b in boxes))
    if len(distinct) < 2:
        return True
    last = _parse_boxed(distinct[-1])
    return bool(last) and all(_verify(last, _parse_boxed(b)) for b in distinct[:-1])


def check_here(
    reference: str, answer: str, budget_s: float = BUDGET_S, question: str | None = None
) -> dict[str, Any]:
    """The math check itself, in this process: math-verify equivalence of the answer's
    final answer (its ``\\boxed{}``, its stated answer, else its final value) with a
    reading of the reference (see ``gold_readings``); a normalised-text comparison only
    for readings with no mathematical meaning (``No``); a final answer in prose judged by
    what its sentence claims (``_prose_check``; ``question``, the problem's text, lets a
    "cannot" answer a "Can ...?"). Several final answers that disagree score 0."""
    deadline = time.monotonic() + budget_s
    answer = normalize_unicode_math(answer)
    readings = [r for r in gold_readings(reference) if r.kind != "math" or _faithful(r)]
    final, source, boxes = _final_answer(answer)
    if len(boxes) > 1 and not _boxes_agree(boxes):
        if any(len(_PARTS.split(r.text)) > 1 or "," in r.text for r in readings):
            final = ", ".join(dict.fromkeys(b.strip() for b in boxes))  # "376" and "625"
            source = "boxed answers together"
        else:
            return _verdict(
                0.0,
                " | ".join(boxes),
                f"the answer gives {len(boxes)} different boxed answers",
                "several final answers disagree",
            )
    if final is not None and any(r.kind == "math" for r in readings):
        if time.monotonic() <= deadline:
            hit = _math_match(readings, final)
            if hit is not None:
                return _verdict(
                    1.0,
                    final,
                    f"the {source} equals the reference",
                    "math-verify: equal" + (" (tuple in order)" if hit.names else ""),
                    matched=hit.text,
                )
    text = _text_match(readings, answer, boxes, yes_no=source != "prose")
    if text is not None:
        return text
    if source == "prose":
        verdict = _prose_check(readings, answer, question)
        if verdict is not None:
            return verdict
    if final is not None:
        return _verdict(
            0.0, final, f"the {source} does not equal the reference", "math-verify: not equal"
        )
    return _verdict(
        0.0,
        answer_views(answer)[-1][1].strip(),
        "no mathematical answer found (write it as \\boxed{...})",
        "no final answer found",
    )


def check_math(reference: str, answer: str, question: str | None = None) -> dict[str, Any]:
    """Check ``answer`` against ``reference``: a dict with ``reward`` (0.0 or 1.0),
    ``extracted``, ``reason``, ``rule`` (which rule decided) and, on success, ``matched``
    (the reading of the reference that matched). ``question`` (the problem's text, when
    known) lets a prose "it cannot" answer a yes/no question. Safe from any thread; never
    raises because of what the answer says."""
    fast = _fast_check(reference, answer)
    if fast is not None:
        return fast
    return _helper.check(reference, answer[-_SENT_CHARS:], question)


class _Helper:
    """One helper process (``python -c "...serve()"``, JSON lines over pipes) that runs
    ``check_here``; restarted after a timeout or a crash.

    A plain subprocess rather than ``multiprocessing``, so that the caller's ``__main__``
    is never re-imported; a frozen app (no Python to start) checks in-process instead.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """A fresh state: no helper yet, owned by this process."""
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._replies: queue.Queue[str] = queue.Queue()
        self._answered = False  # the current helper has answered at least once
        self._unusable = False  # a helper could not even start: check in-process
        self._owner = os.getpid()

    def check(self, reference: str, answer: str, question: str | None = None) -> dict[str, Any]:
        if self._owner != os.getpid():  # forked: the helper belongs to the parent
            self._reset()
        with self._lock:
            if self._unusable or getattr(sys, "frozen", False) or not sys.executable:
                return check_here(reference, answer, question=question)
            if self._process is None or self._process.poll() is not None:
                self._stop()  # a helper that died between checks
                try:
                    self._start()
                except OSError:
                    self._unusable = True
                    return check_here(reference, answer, question=question)
            assert self._process is not None and self._process.stdin is not None
            try:
                self._process.stdin.write(json.dumps([reference, answer, question]) + "\n")
                self._process.stdin.flush()
                line = self._replies.get(timeout=CHECK_TIMEOUT_S)
            except queue.Empty:
                self._stop()
                return _verdict(
                    0.0,
                    None,
                    f"checking this answer took over {CHECK_TIMEOUT_S:g} s; it is scored 0",
                    "checker: timed out",
                )
            except OSError:
                line = ""
            if not line:  # the helper died
                answered = self._answered
                self._stop()
                if not answered:
                    # it never worked (cannot import the package here?): check in this
                    # process from now on, so that a real error (math-verify missing) shows
                    self._unusable = True
                    return check_here(reference, answer, question=question)
                return _verdict(
                    0.0,
                    None,
                    "the math checker stopped on this answer; it is scored 0",
                    "checker: stopped",
                )
            self._answered = True
            return json.loads(line)

    def _start(self) -> None:
        package_root = str(Path(__file__).resolve().parents[3])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        process = subprocess.Popen(
            [sys.executable, "-c", "from workbench.core.tasks.mathcheck import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=package_root,  # "-c" puts the working folder first on sys.path: this package
        )
        replies: queue.Queue[str] = queue.Queue()

        def read(stream: Any = process.stdout) -> None:
            try:
                for line in stream:
                    replies.put(line)
            except (OSError, ValueError):
                pass
            finally:
                replies.put("")  # end of output: the helper is gone
                stream.close()

        threading.Thread(target=read, name="workbench-math-check-reader", daemon=True).start()
        self._process, self._replies, self._answered = process, replies, False

    def close(self) -> None:
        """Let the helper finish (end of its input), or kill it after a moment."""
        process = self._process
        if process is None or self._owner != os.getpid():
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self._stop()

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            if self._process.stdin is not None:
                try:
                    self._process.stdin.close()
                except OSError:  # a broken pipe while flushing
                    pass
        self._process = None  # its reader thread closes stdout at end of output


def serve() -> None:
    """The helper's loop: read ``[reference, answer, question]`` JSON lines from stdin, write
    verdicts as JSON lines to stdout."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (HELPER_MEMORY_BYTES, HELPER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    import math_verify  # noqa: F401  (fail at start, not per answer, if it is missing)

    for line in sys.stdin:
        try:
            reference, answer, question = json.loads(line)
            question = str(question) if question is not None else None
            verdict = check_here(str(reference), str(answer), question=question)
        except Exception as error:  # MemoryError included: one bad answer, not the helper
            verdict = _verdict(
                0.0,
                None,
                f"the answer could not be checked: {type(error).__name__}",
                "checker: error",
            )
        sys.stdout.write(json.dumps(verdict) + "\n")
        sys.stdout.flush()


_helper = _Helper()
atexit.register(_helper.close)
