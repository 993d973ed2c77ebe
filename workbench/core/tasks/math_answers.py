"""Where a worker's answer states its final answer: a box, an answer cue, a sentence in
words, or the final value a parser finds in its tail."""

from __future__ import annotations

import re

from workbench.core.tasks import prose
from workbench.core.tasks.extract import ANSWER_CUE, all_boxed, answer_views, strip_text_macro
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


def _stated_answer(answer: str) -> str | None:
    """The text after the last answer cue ("The final answer is $-239$.", "Answer: 5/14,
    or approximately 35.7%") when it reads as mathematics as a whole: so that every value
    it states is checked, not just the first one a parser finds."""
    cues = list(ANSWER_CUE.finditer(answer))
    if not cues:
        return None
    after = answer[cues[-1].end() :].strip()
    text = after.splitlines()[0] if after else ""
    text = without_remark(text.strip().rstrip(".").strip().strip("$").strip())
    if not text or len(text) > 200 or not reads_as_math(text):
        return None
    return text


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
