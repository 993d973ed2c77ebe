"""Where a worker's answer states its final answer, and whether what it states is one.

A final answer is found, in this order, in an explicit final-answer marker (a
``\\boxed{}``, "Answer:", "Final answer:", "the answer is"), a sentence in words, or the
final value a parser finds in the answer's tail. An explicit marker outranks every earlier
yes/no or value in the text, and markers that disagree make the answer wrong
(``final_markers``). A question that asks for a value is not answered by restating its own
operation (``echoes_question``: "8 + 7" for "What is 8 + 7?"). Rules and examples:
docs/guides/grading.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from workbench.core.tasks import prose
from workbench.core.tasks.extract import (
    ANSWER_CUE,
    all_boxed,
    answer_views,
    boxed_spans,
    strip_text_macro,
)
from workbench.core.tasks.math_equivalence import parse_math
from workbench.core.tasks.math_references import reads_as_math, split_remark

ANSWER_TAIL_CHARS = 4000  # math-verify reads the tail only: long rambles are slow to parse
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def _bare_latex(answer: str) -> str | None:
    r"""The final value of an answer with no ``$`` or box (``The answer is \frac12``):
    the text after the last answer cue, else the last line, read as LaTeX."""
    views = dict(answer_views(answer))
    for label in ("text after 'Answer:'", "last line"):
        text = views.get(label, "").strip().rstrip(".").strip()
        if not text or len(text) > 200:
            continue
        parsed = parse_math("$" + text + "$")
        if len(parsed) >= 2:
            return str(parsed[-1])
    return None


def without_remark(text: str) -> str:
    """``100 (i.e., all values)`` -> ``100``: a remark in parentheses is not the answer."""
    return split_remark(text)[0]


@dataclass(frozen=True)
class Marker:
    """An explicit final-answer marker: where it starts, ``kind`` ("boxed" or "stated":
    after "Answer:", "Final answer:", "the answer is") and the text it marks (a stated
    one up to the end of its line or sentence, or the next marker)."""

    start: int
    kind: str
    text: str


# the end of what a stated marker marks: a new line, a sentence's full stop, a box
_MARKED_END = re.compile(r"\n|\.\s+(?=\S)|\.\s*$|\\(?:boxed|fbox)\b")
_MARK_LEAD = re.compile(r"^[\s:*_#]+")
_INLINE_MATH = re.compile(r"\\[()\[\]]|\$+")


def final_markers(answer: str) -> list[Marker]:
    """Every explicit final-answer marker of ``answer``, in order. A cue followed by a box
    ("The answer is $\\boxed{15}$") is one marker, the box."""
    markers = [
        Marker(start, "boxed", without_remark(strip_text_macro(content)))
        for start, content in boxed_spans(answer)
    ]
    cues = list(ANSWER_CUE.finditer(answer))
    for index, cue in enumerate(cues):
        limit = cues[index + 1].start() if index + 1 < len(cues) else len(answer)
        after = answer[cue.end() : limit]
        if re.match(r"[\s:*$(\\\[]*\\(?:boxed|fbox)\b", after):
            continue
        if not after.split("\n", 1)[0].strip(" :*_$"):
            # "The final answer is:" ends its line: it marks the next line with content
            # (a code fence's first line when the answer sits in one)
            lines = [ln for ln in after.split("\n")[1:] if ln.strip() and ln.strip("` ")]
            after = lines[0] if lines else ""
        end = _MARKED_END.search(after)
        text = after[: end.start()] if end else after
        text = _INLINE_MATH.sub(" ", _MARK_LEAD.sub("", text)).strip().strip("*_").strip()
        text = without_remark(text.rstrip(".").strip())
        if text:
            markers.append(Marker(cue.start(), "stated", text))
    return sorted(markers, key=lambda marker: marker.start)


def last_side(text: str) -> str:
    """The value a chain of equalities of numbers ends with (``8 + 7 = 15`` -> ``15``);
    anything else as it is (``x = 5`` keeps its name, for the tuple readings)."""
    sides = [side.strip() for side in text.split("=")]
    if len(sides) > 1 and sides[-1] and not re.search(r"[A-Za-z]", _LATEX_OPS.sub("", text)):
        return sides[-1]
    return text


def _stated_answer(answer: str) -> str | None:
    """The text of the last stated marker ("The final answer is $-239$.", "Answer: 5/14,
    or approximately 35.7%") when it reads as mathematics as a whole: so that every value
    it states is checked, not just the first one a parser finds."""
    stated = [marker for marker in final_markers(answer) if marker.kind == "stated"]
    if not stated:
        return None
    text = stated[-1].text
    if len(text) > 200 or not reads_as_math(text):
        return None
    return last_side(text)


# ------------------------------------------------------------------ echoes of the question

_LATEX_OPS = re.compile(r"\\(?:times|cdot|div|left|right|frac|dfrac|tfrac)\b|\\[,;!]")
_FRACTION = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_BINARY_OPERATION = re.compile(r"(?<=[\d)])\s*[-+*/^]\s*(?=[\d(])")
_ANY_FORM = re.compile(
    r"\b(?:any|an)\s+equivalent\s+(?:expression|form)|need\s+not\s+be\s+(?:simplified|evaluated)"
    r"|(?:leave|left)\s+(?:it\s+)?unevaluated",
    re.IGNORECASE,
)


def _arithmetic(text: str) -> str | None:
    """``text`` as plain arithmetic (digits, ``+ - * / ^`` and parentheses), or None when
    it holds anything else (a variable, a word, a function)."""
    text = text.strip().strip("$").strip()
    while True:
        changed = _FRACTION.sub(r"(\1)/(\2)", text)
        if changed == text:
            break
        text = changed
    text = re.sub(r"\\(?:times|cdot)\b", "*", text)
    text = re.sub(r"\\div\b", "÷", text)
    text = re.sub(r"\\(?:left|right)\b|\\[,;!]|[{}\s]", "", text)
    text = text.replace("\\", "")
    if not text or not re.fullmatch(r"[\d.+\-*/^()÷]+", text):
        return None
    return text


def _still_to_evaluate(expression: str) -> bool:
    """An operation is left to do: a binary operator, a division written ``÷``, or a
    fraction not in lowest terms (``16/4``); a number or a fraction in lowest terms
    (``7/4``, ``-3``) is a value."""
    if "÷" in expression:
        return True
    bare = expression
    while bare.startswith("(") and bare.endswith(")"):
        bare = bare[1:-1]
    fraction = re.fullmatch(r"[-+]?\(?(\d+)\)?/\(?(\d+)\)?", bare)
    if fraction:
        top, bottom = int(fraction.group(1)), int(fraction.group(2))
        return bottom == 0 or bottom == 1 or math.gcd(top, bottom) != 1
    return bool(_BINARY_OPERATION.search(bare.lstrip("-+")))


def echoes_question(text: str, question: str | None) -> bool:
    """``text``, a final answer, restates the question's own operation instead of its
    value: arithmetic with an operation still to do, made only of numbers the question
    gives ("8 + 7", "893 × 77", "3/2 + 1/4", "1367 ÷ 8", "\\frac{16}{4}"). A question that
    says any equivalent expression is fine (``_ANY_FORM``) is answered by one."""
    if not question or _ANY_FORM.search(question):
        return False
    expression = _arithmetic(last_side(text))
    if expression is None or not _still_to_evaluate(expression):
        return False
    given = set(_NUMBER.findall(question.replace(",", "")))
    numbers = _NUMBER.findall(expression)
    return bool(numbers) and all(number in given for number in numbers)


def final_answer(answer: str) -> tuple[str | None, str, list[str]]:
    """(final answer text, where it came from, every boxed answer) of a worker's answer."""
    boxes = [without_remark(strip_text_macro(b)) for b in all_boxed(answer)]
    if boxes:
        return boxes[-1], "boxed answer", boxes
    stated = _stated_answer(answer)
    if stated is not None:
        return stated, "stated answer", []
    if prose.is_prose(" ".join(prose.final_sentences(answer[-ANSWER_TAIL_CHARS:]))):
        # a sentence in words: its claims are read by _prose_check, never "the last
        # number a parser finds" ("... to fill a 2 x 21 rectangle" is not an answer of 21)
        return None, "prose", []
    whole = answer.strip().rstrip(".").strip()
    if len(whole) <= 200 and _arithmetic(last_side(whole)) is not None:
        return last_side(whole), "answer", []  # "8 + 7", "1367 \\div 8": all of it
    parsed = parse_math(answer[-ANSWER_TAIL_CHARS:])
    if len(parsed) >= 2:
        return str(parsed[-1]), "final value", []
    bare = _bare_latex(answer[-ANSWER_TAIL_CHARS:])
    if bare is not None:
        return bare, "final value (bare LaTeX)", []
    return None, "answer", []


def _first_word(text: str) -> str:
    words = re.findall(r"[A-Za-z]+", text)
    return words[0] if words else ""


def first_yes_no(text: str) -> str | None:
    """ "yes" or "no" when ``text`` (what a final-answer marker marks) starts with it."""
    word = _first_word(text).lower()
    return word if word in ("yes", "no") else None


def stated_yes_no(answer: str, boxes: list[str]) -> str | None:
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
