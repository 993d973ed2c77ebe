"""Text helpers the graders share: normalisation and finding the reply in an answer."""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_ANSWER_CUE = re.compile(r"(?:final\s+answer|answer)\s*(?:is|:|=)\s*", re.IGNORECASE)
_TEXT_MACRO = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{(.*)\}", re.DOTALL)


def normalize_text(text: str) -> str:
    """SQuAD-style normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


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
    cues = list(_ANSWER_CUE.finditer(answer))
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
