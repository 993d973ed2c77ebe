"""How a math task's reference is read: the readings an answer may match.

CHAMP writes references in words and ASCII notation (``C(10, 5), or equivalently 252``,
``376 and 625``, ``x=6, y=5``, ``No integer solutions``); ``gold_readings`` turns each one
into mathematical readings (compared by ``math_equivalence``), a text reading (``No``) and
the claims a prose answer must make. Pure text work: nothing here parses with sympy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.core.tasks import prose
from workbench.core.tasks.extract import normalize_unicode_math

# Alternatives of one reference ("C(10, 5), or equivalently 252"); a bare " or " between
# two values ("f(x)=0 or f(x)=1") lists solutions, and every one is required.
ALTERNATIVES = re.compile(
    r",?\s+or\s+(?:equivalently|approximately|an\s+equivalent\s+form\s+such\s+as)\s+|,\s+or\s+",
    re.IGNORECASE,
)
_TEXT_CONNECTIVE = re.compile(r"\\(?:text|textrm|mathrm|mbox)\s*\{\s*(and|or)\s*\}", re.IGNORECASE)
PARTS = re.compile(r",?\s+(?:and|or)\s+", re.IGNORECASE)
# "98 values", "0 is the only possible value": a number and a unit or a remark, nothing more
_NUMBER_WITH_UNIT = re.compile(
    r"^\s*(-?\d+(?:[./]\d+)?)\s+(?:is\s+the\s+only\s+possible\s+value|[A-Za-z-]+)\s*$",
    re.IGNORECASE,
)
_TRAILING_VALUE = re.compile(
    r"(?:equal\s+to|limit\s+is|period\s+of|value\s+is)\s+(.+?)\.?\s*$", re.IGNORECASE
)
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z](?:_\{?\w+\}?)?)\s*=\s*([^=]+?)\s*$")
_PAREN_GROUP = re.compile(r"\(([^()]*=[^()]*)\)")
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
# CHAMP writes references in ASCII notation that math-verify misreads: read as written, it
# takes the "1" of "sum_(i=1)^n i^3" for the whole reference, which a bare \boxed{1} equals.
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
    # in braces: "2^floor(n/2)" raises 2 to the whole floor
    return _ASCII_FLOOR.sub(lambda m: f"{{\\lfloor {m.group(1)} \\rfloor}}", text)


def split_remark(text: str) -> tuple[str, str]:
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


def unchain(text: str) -> str:
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


def math_reading(text: str, order: tuple[str, ...] = ()) -> Reading:
    """A mathematical text as math-verify should see it: parts joined by "and" become a
    list (every part required), assignments become ordered tuples."""
    text = _TEXT_CONNECTIVE.sub(r" \1 ", text)  # 376 \text{ and } 625
    parts = PARTS.split(text)
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
    cleaned, remark = split_remark(gold)
    readings: list[Reading] = []
    for alternative in ALTERNATIVES.split(cleaned):
        alternative = alternative.strip().rstrip(".").strip()
        if not alternative:
            continue
        alternative = unchain(alternative)
        if reads_as_math(alternative):
            readings.append(math_reading(alternative))
            if remark:
                readings += _claim_readings(alternative, remark)
            continue
        readings.append(Reading("text", alternative))
        number = _NUMBER_WITH_UNIT.match(alternative)
        if number:
            readings.append(Reading("math", number.group(1)))
        value = _TRAILING_VALUE.search(alternative)
        if value and not _is_prose(value.group(1)):
            readings.append(math_reading(value.group(1).strip()))
        readings += _claim_readings(alternative, remark)
    return list(dict.fromkeys(readings))


def gold_variants(gold: str) -> list[str]:
    """The texts of ``gold_readings`` (for display and tests)."""
    return [reading.text for reading in gold_readings(gold)]


def reads_as_math(text: str) -> bool:
    """Every alternative of ``text`` is mathematics (parts joined by "and" included)."""
    for alternative in ALTERNATIVES.split(text):
        parts = PARTS.split(alternative)
        if _is_prose(alternative) and (len(parts) < 2 or any(_is_prose(p) for p in parts)):
            return False
    return True
