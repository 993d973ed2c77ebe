"""Text helpers the graders share: normalisation and finding the reply in an answer."""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
ANSWER_CUE = re.compile(r"(?:final\s+answer|answer)\s*(?:is|:|=)\s*", re.IGNORECASE)
_TEXT_MACRO = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{(.*)\}", re.DOTALL)
# Unicode math a chat model writes, as the ASCII/LaTeX that math-verify reads. The minus
# signs first: "−3" is -3, not a word followed by 3.
_UNICODE_MATH = {
    "\u2212": "-",  # minus sign
    "\u2013": "-",  # en dash, often used as a minus
    "\u2012": "-",
    "\ufe63": "-",
    "\uff0d": "-",
    "\u00d7": " \\times ",
    "\u22c5": " \\cdot ",
    "\u00b7": " \\cdot ",
    "\u00f7": " \\div ",  # an operation still to do, not the fraction a/b
    "\u2215": "/",
    "\u2264": " \\le ",
    "\u2265": " \\ge ",
    "\u2260": " \\ne ",
    "\u00b1": " \\pm ",
    "\u221e": " \\infty ",
    "\u03c0": " \\pi ",
    "\u221a": " \\sqrt ",
    "\u00b2": "^2",
    "\u00b3": "^3",
    "\u00b9": "^1",
    "\u2070": "^0",
    "\u2074": "^4",
    "\u2075": "^5",
    "\u2076": "^6",
    "\u2077": "^7",
    "\u2078": "^8",
    "\u2079": "^9",
    "\u00bd": "(1/2)",
    "\u2153": "(1/3)",
    "\u00bc": "(1/4)",
    "\u00be": "(3/4)",
    "\u00a0": " ",
}
_UNICODE_TABLE = str.maketrans(_UNICODE_MATH)
_SOFT_PUNCTUATION = ".,;:!?\"'`*"


def normalize_text(text: str) -> str:
    """SQuAD-style normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_unicode_math(text: str) -> str:
    """Unicode math symbols (minus signs, ×, ≤, √, π, superscripts) as ASCII/LaTeX, so that
    ``−3`` reads as -3 and ``x²`` as x^2."""
    return text.translate(_UNICODE_TABLE)


def normalize_math_text(text: str) -> str:
    """Lower case, single spaces, no articles and no sentence punctuation, but every
    mathematical symbol kept (``- + / ^ ( ) [ ]`` and digits), so that a sign or operator
    flip never compares equal as text."""
    text = strip_text_macro(normalize_unicode_math(text)).lower().replace("$", " ")
    text = "".join(" " if ch in _SOFT_PUNCTUATION else ch for ch in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def boxed_spans(text: str) -> list[tuple[int, str]]:
    r"""(where it starts, its content) of every closed ``\boxed{...}`` / ``\fbox{...}`` in
    order."""
    found = []
    for match in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth = 0
        for j in range(match.end() - 1, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    found.append((match.start(), text[match.end() : j]))
                    break
    return found


def all_boxed(text: str) -> list[str]:
    r"""The contents of every closed ``\boxed{...}`` / ``\fbox{...}`` in order."""
    return [content for _, content in boxed_spans(text)]


def last_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``), braces balanced;
    None when there is none or it is not closed."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0 or text[start:brace].strip() not in ("\\boxed", "\\fbox"):
        return None
    depth = 0
    for j in range(brace, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[brace + 1 : j]
    return None


def strip_text_macro(text: str) -> str:
    r"""``\text{No}`` -> ``No``; anything else unchanged (stripped)."""
    text = text.strip()
    match = _TEXT_MACRO.fullmatch(text)
    return match.group(1).strip() if match else text


def answer_views(answer: str) -> list[tuple[str, str]]:
    """The parts of a free-form answer that may hold the reply, as (label, text): the whole
    answer, the text after the last 'Answer:'/'answer is', the last line, the boxed answer."""
    views = [("whole answer", answer)]
    cues = list(ANSWER_CUE.finditer(answer))
    if cues:
        after = answer[cues[-1].end() :].strip()
        views.append(("text after 'Answer:'", after.splitlines()[0] if after else ""))
    lines = [line for line in answer.splitlines() if line.strip()]
    if lines:
        views.append(("last line", lines[-1]))
    boxed = last_boxed(answer)
    if boxed is not None:
        views.append(("boxed answer", strip_text_macro(boxed)))
    return views
