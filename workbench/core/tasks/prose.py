"""What a final answer written in prose claims: the value it states, a yes or no, that
there is no such thing, that there are infinitely many, a count.

Chat models asked for a one-sentence summary write "There are 239 strings of length 6
...", "The smallest value of ... is \\(2^{m+1}\\), achieved when \\(a = b\\)" or "No, a
polyhedron cannot exist ...". A number picked from anywhere in such a sentence is often
not the answer ("... a 2 x 21 rectangle ..."), so this module reads the sentence's main
clause only: the value after its last "is / are / =" with trailing clauses cut, or the
count after "There are", and the claims a reference written in words can be checked
against. A sentence that hedges ("cannot be determined without further analysis")
claims nothing. Pure text work: no parser, no sympy; ``mathcheck`` decides equality.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.core.tasks.extract import normalize_unicode_math

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "a single": "1", "a unique": "1", "only one": "1",
}  # fmt: skip
_NUMBER = r"(?:[-+]?\d+(?:\.\d+)?(?:/\d+)?|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_QUALIFIER = r"(?:at\s+most|at\s+least|exactly|only|precisely)"
_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})((?:,\d{3})+)(?![\d,])")
_DELIMITERS = re.compile(r"\\[()\[\]]|\$+")
_TEXT_MACRO = re.compile(r"\\(?:text|textrm|mathrm|mbox|textbf|mathbf|operatorname)\s*\{([^{}]*)\}")
_SENTENCE_END = re.compile(r"(?<=[a-z)\]}])\.\s+(?=[A-Z])")

# A sentence that does not commit to an answer claims nothing, whatever value it names.
_HEDGE = re.compile(
    r"\b(?:cannot\s+(?:be\s+)?(?:definitively\s+|conclusively\s+|easily\s+|directly\s+)?"
    r"(?:determined?|found|find|solved|computed|calculated|concluded?|said)"
    r"|(?:not\s+possible|impossible|difficult|hard)\s+to\s+(?:\w+\s+)?"
    r"(?:determine|find|say|compute|calculate|conclude|give|provide|state|list)"
    r"|without\s+(?:further|more|additional|knowing|a\s+more|more\s+specific|specific|computation)"
    r"|would\s+(?:require|need)|requires?\s+(?:further|more|advanced|computational|numerical|a\s+more)"
    r"|may\s+require|further\s+(?:analysis|investigation|computation|study|work)"
    r"|not\s+straightforward|no\s+(?:simple|straightforward|conclusive|general|closed|clear)"
    r"|unclear|unknown|uncertain|inconclusive|it\s+seems|seems\s+(?:unlikely|likely)"
    r"|unlikely|one\s+must|numerical\s+methods?|computer\s+program|by\s+hand|assuming|if\s+any)\b",
    re.IGNORECASE,
)
# Where the main clause ends: the reason, the case of equality, a remark. A strong end
# ends the claim wherever it stands; a weak one ("with", "where", "given that", "for")
# may also sit inside the subject ("The value of x, given that ..., is 0"), so it only
# ends the value that follows the copula.
_STRONG_END = re.compile(
    r",\s*(?:which|achieved|attained|occurring|occurs|meaning|resulting|regardless|so\b|thus"
    r"|hence|therefore|i\.e\.|e\.g\.|that\s+is|respectively|as\s+(?:the|it|this|they|there"
    r"|each|every|a|an)\b|and\s+(?:the|this|it|that|these|determining|finding|thus|so)\b|but\b"
    r"|while\b|whereas\b|although\b|though\b|since\b|because\b|due\s+to|based\s+on"
    r"|according\s+to|with\s+(?:a|the|equality|its)\b)"
    r"|\s+(?:because|since|due\s+to|so\s+that|which\s+(?:occurs|is\s+achieved|happens))\b|;",
    re.IGNORECASE,
)
_WEAK_END = re.compile(
    r"(?:,\s*|\s+)(?:where|when|with|given|for\s+(?!all\b|any\b|every\b)|as\b|in\s+which"
    r"|at\b|under\b|if\b|provided|assuming)",
    re.IGNORECASE,
)
_COPULA = re.compile(
    r"\b(?:is\s+equal\s+to|are\s+equal\s+to|is\s+given\s+by|are\s+given\s+by"
    r"|can\s+be\s+(?:expressed|written)\s+as|is\s+expressed\s+as|is\s+congruent\s+to"
    r"|simplifies\s+to|evaluates\s+to|equals|becomes|is|are|was|were)\b"
    r"(?:\s+(?:the\s+)?(?:expression|formula)\b)?"
    r"(?:\s+(?:exactly|precisely|simply))?:?\s*",
    re.IGNORECASE,
)
_TUPLE_LEFT = re.compile(r"^\s*\(\s*([A-Za-z](?:\s*,\s*[A-Za-z])+)\s*\)\s*=\s*(.+)$")
_TUPLE_VALUE = re.compile(r"\(([^()]*)\)")
_CONDITIONAL = re.compile(
    r"\b(?:if|otherwise|for\s+(?:even|odd)|when\s+\w+\s+is|depending)\b", re.IGNORECASE
)
# "0 when n = 1", "2 if k = 3" (no comma): the value is claimed for one case of the
# problem's parameter, not in general ("0, when a = b = c" names the case of equality)
_PARAMETER_CASE = re.compile(
    r"^\s+(?:when|if|for)\s+[A-Za-z](?:_\w+)?\s*(?:=|\\ge|\\le|\\geq|\\leq|<|>)\s*-?\d",
    re.IGNORECASE,
)
_FOR_ALL = re.compile(r"\s+for\s+(?:all|any|every)\s+[^,]*$", re.IGNORECASE)
_REMARK = re.compile(r"\s*\((?:i\.e\.|e\.g\.|that\s+is|for\s+|when\s+|where\s+)[^()]*\)\s*$")

_YES_NO_START = re.compile(
    r"^\W*(yes|no)\b(?!\s+(?:\w+\s+)?(?:solutions?|integers?|values?|such|real|positive|prime|numbers?|sequences?|polynomials?|pairs?|one)\b)",
    re.IGNORECASE,
)
_NONE = re.compile(
    r"\b(?:there\s+(?:is|are|exist|exists)\s+no|(?:has|have)\s+no|no\s+such|none\s+of"
    r"|(?:does|do|can)\s*(?:not|n't)\s+exist|cannot\s+exist|not\s+possible|impossible"
    r"|there\s+(?:is|are)\s+not\s+any|(?:has|have)\s+(?:no|zero)\b|no\s+(?:\w+\s+){0,3}"
    r"(?:solutions?|values?|numbers?|primes?|roots?|zeros?|zeroes|integers?|pairs?|sequences?"
    r"|polynomials?|ways?))\b",
    re.IGNORECASE,
)
_NONE_BLOCKERS = re.compile(
    r"\b(?:other\s+than|except|besides|apart\s+from|trivial|non-trivial|nontrivial|simple"
    r"|straightforward|obvious|general|closed[- ]form|explicit|finite\s+number|more\s+than"
    r"|multiplicity|repeated|greater\s+than|less\s+than|larger|smaller|beyond|only\s+\w+)\b",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"\b(?:that|which|where|whose|such\s+that|with|so)\b", re.IGNORECASE)
_INFINITE = re.compile(r"\binfinitely\s+many\b|\ban\s+infinite\s+number\s+of\b", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|no|never|cannot|n't|neither|nor)\b", re.IGNORECASE)
_LIMIT_NONE = re.compile(
    r"\b(?:(?:limit|sequence)\s+(?:\S+\s+){0,12}?(?:does\s+not|doesn't)\s+(?:exist|converge"
    r"|have\s+a\s+(?:finite\s+)?limit)|diverges?|grows?\s+without\s+bound|tends?\s+to\s+infinity"
    r"|(?:limit|it)\s+is\s+(?:\\infty|infinity|infinite))\b",
    re.IGNORECASE,
)
_COUNT_PATTERNS = [
    re.compile(
        r"\bthere\s+(?:is|are|exist|exists|will\s+be)\s+(?:("
        + _QUALIFIER
        + r"|a\s+total\s+of)\s+)?"
        r"(" + _NUMBER + r"|a\s+unique|a\s+single|only\s+one)\b",
        re.IGNORECASE,
    ),
    re.compile(r"^\W*(" + _QUALIFIER + r")\s*,?\s*(?:all\s+)?(" + _NUMBER + r")\b", re.IGNORECASE),
    re.compile(r"\b(all)\s+(?:of\s+the\s+)?(?:first\s+)?(" + _NUMBER + r")\b", re.IGNORECASE),
    re.compile(r"\b(?:a\s+)?(minimum|maximum|total)\s+of\s+(" + _NUMBER + r")\b", re.IGNORECASE),
    re.compile(
        r"\b(?:will\s+)?(?:has|have|contains?)\s+(?:(" + _QUALIFIER + r")\s+)?(" + _NUMBER + r")"
        r"\s+(?:[\w-]+\s+)?(?:terms|roots|zeros|zeroes|solutions|values|elements|ways)\b",
        re.IGNORECASE,
    ),
]
_TIMES = re.compile(r"\b(?:occurs|appears|divides)\s+(.+?)\s+times\b", re.IGNORECASE)
_PERIOD = re.compile(r"\bperiod\s+(?:of|is)\s+([^\s,.;]+)", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Claims:
    """What one prose sentence claims. ``values``: math texts it states, best first
    (each already free of words); ``count``: (qualifier, number) of a counting claim
    such as "at most two of ..." (qualifier "" when none); ``polarity``: "yes"/"no" when
    the sentence starts with one; ``none``: it says there is no such thing; ``infinite``:
    infinitely many; ``limit_none``: a limit does not exist; ``hedged``: it commits to
    nothing (then every other field is empty); ``negated``: its main clause is negated."""

    sentence: str
    values: tuple[str, ...] = ()
    count: tuple[str, str] | None = None
    polarity: str | None = None
    none: bool = False
    infinite: bool = False
    limit_none: bool = False
    hedged: bool = False
    negated: bool = False


def plain_sentence(text: str) -> str:
    """``text`` with Unicode math as ASCII/LaTeX, inline-math delimiters and ``\\text{}``
    removed, thousands separators dropped (``2,002,000`` -> ``2002000``), spaces single."""
    text = normalize_unicode_math(text)
    text = _TEXT_MACRO.sub(r"\1", text)
    text = _DELIMITERS.sub(" ", text)
    text = _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)
    return " ".join(text.split())


def is_prose(text: str) -> bool:
    """The text is a sentence in words (three or more words of two or more letters that
    are not LaTeX commands), not a formula."""
    words = re.findall(r"(?<![\\A-Za-z])[A-Za-z]{2,}\b", _DELIMITERS.sub(" ", text))
    return len(words) >= 3


def final_sentences(answer: str) -> list[str]:
    """The sentences of an answer's last paragraph (a one-sentence summary is its own
    last paragraph)."""
    paragraphs = [p for p in re.split(r"\n\s*\n", answer.strip()) if p.strip()]
    if not paragraphs:
        return []
    last = " ".join(paragraphs[-1].split())
    return [s.strip() for s in _SENTENCE_END.split(last) if s.strip()]


def main_clause(sentence: str) -> str:
    """The sentence up to its first strong trailing clause (``, which occurs when ...``,
    ``because ...``), without its full stop."""
    sentence = sentence.strip().rstrip(".").strip()
    match = _STRONG_END.search(sentence)
    return sentence[: match.start()].strip() if match else sentence


def stated_value(clause: str, equals: bool = False) -> str | None:
    """The value after the clause's last copula ("is", "are", "is given by"; read by
    ``_clean_value``), up to a weak trailing clause; with ``equals``, in a clause with no
    copula, the right side of its last "=" ("So we get x = 5"). None when it is no value."""
    copulas = list(_COPULA.finditer(clause))
    if not copulas:
        sides = clause.rsplit("=", 1)
        if not equals:
            return None
        if len(sides) < 2 or _CONDITIONAL.search(sides[1]):
            return None
        weak = _WEAK_END.search(sides[1])
        return _clean_value(sides[1][: weak.start()] if weak and weak.start() > 0 else sides[1])
    for index in range(len(copulas) - 1, -1, -1):
        after = clause[copulas[index].end() :]
        if _CONDITIONAL.search(after):
            return None  # "(n+1)/(n+2) for even n": a value for some cases only
        weak = _WEAK_END.search(after)
        if weak and weak.start() > 0:
            if _PARAMETER_CASE.match(after[weak.start() :]):
                return None  # "is 0 when n = 1": a value for one case only
            after = after[: weak.start()]
        value = _clean_value(after)
        if value is not None:
            return value
        # an earlier copula only when this one sits in its value's trailing clause:
        # "are 0 when x^n - y^n is divisible by ..."
        earlier = copulas[index - 1] if index else None
        if earlier is None or not _WEAK_END.search(clause[earlier.end() : copulas[index].start()]):
            return None
    return None


def _reads_as_value(text: str) -> bool:
    words = re.findall(r"(?<![\\A-Za-z_^])[A-Za-z]{3,}(?![A-Za-z_(])", text)
    allowed = {"sqrt", "mod", "and", "infty", "cdot", "times", "frac", "pmod", "binom"}
    return bool(text.strip()) and all(w.lower() in allowed for w in words)


def _clean_value(value: str) -> str | None:
    """The stated value without its left side (``L = ...``, ``(x, y) = (2, 1)``), a
    universal qualifier (``for all x``) or a remark; None when what is left is not a
    value (words, a condition such as "if n is odd")."""
    value = value.strip().rstrip(".,;:").strip()
    value = re.sub(
        r"^(?:either|both|simply|exactly|precisely|just|always|approximately|about|roughly)\s+",
        "",
        value,
        flags=re.I,
    )
    if _CONDITIONAL.search(value):
        return None
    value = _REMARK.sub("", value)
    value = _FOR_ALL.sub("", value).strip()
    value = value.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    tuples = _TUPLE_LEFT.match(value)
    if tuples:  # (x, y) = (2, 1) -> x=2, y=1: the reference's names decide the order
        names = [n.strip() for n in tuples.group(1).split(",")]
        values = [v.strip() for v in tuples.group(2).strip("() ").split(",")]
        if len(values) == len(names):
            value = ", ".join(f"{n}={v}" for n, v in zip(names, values, strict=True))
    value = re.sub(
        r"\(\s*([A-Za-z](?:\s*,\s*[A-Za-z])+)\s*\)\s*=\s*\(([^()]*)\)",
        lambda m: _pairs(m.group(1), m.group(2)),
        value,
    )
    if value.count("=") == 1 and not re.search(r",|\band\b", value):
        value = value.split("=", 1)[1].strip()  # "a_{10} = 89", "n mod 1982 = 2": the value
    if value.count("\\in") == 1:
        value = value.split("\\in", 1)[1].strip()
    value = re.sub(r",?\s+and\s+", ", ", value)
    return value if _reads_as_value(value) else None


def _pairs(names: str, values: str) -> str:
    left = [n.strip() for n in names.split(",")]
    right = [v.strip() for v in values.split(",")]
    if len(left) != len(right):
        return f"({values})"
    return "(" + ", ".join(f"{n}={v}" for n, v in zip(left, right, strict=True)) + ")"


def _number(word: str) -> str:
    word = " ".join(word.lower().split())
    return NUMBER_WORDS.get(word, word)


def claims(sentence: str) -> Claims:
    """What ``sentence`` (one sentence in prose) claims; see ``Claims``."""
    plain = plain_sentence(sentence)
    if _HEDGE.search(plain):
        return Claims(sentence=plain, hedged=True)
    polarity_match = _YES_NO_START.match(plain)
    polarity = polarity_match.group(1).lower() if polarity_match else None
    if polarity and re.search(r"\b(?:if\s+and\s+)?only\s+if\b", plain, re.IGNORECASE):
        polarity = None  # "Yes, ... if and only if a_0 = 0": a yes under a condition
    body = plain[polarity_match.end() :].lstrip(" ,;:.!") if polarity_match else plain
    clause = main_clause(body)
    values: list[str] = []
    stated = stated_value(clause)
    if stated is None:
        # "The range of x, which is a root of ..., is x in [-1, 1]": the copula after a
        # relative clause closed by a comma
        closed = list(re.finditer(r",\s*(?=(?:is|are)\b)", body))
        if closed:
            stated = stated_value(main_clause(body[closed[-1].end() :]))
    if stated is None:
        stated = stated_value(clause, equals=True)
    if stated:
        values.append(stated)
    period = _PERIOD.search(clause)
    if period and _reads_as_value(period.group(1)):
        values.append(period.group(1))
    times = _TIMES.search(clause)
    if times:
        cleaned = _clean_value(times.group(1))
        if cleaned:
            values.append(cleaned)
    count = None
    for pattern in _COUNT_PATTERNS:
        match = pattern.search(clause)
        if match:
            qualifier = " ".join((match.group(1) or "").lower().split())
            if qualifier in ("total", "a total of", "all"):
                qualifier = ""
            elif qualifier == "minimum":
                qualifier = "at least"
            elif qualifier == "maximum":
                qualifier = "at most"
            number = _number(match.group(2))
            if re.fullmatch(r"[-+]?\d+(?:\.\d+)?(?:/\d+)?", number):
                count = (qualifier, number)
                break
    none_match = _NONE.search(clause)
    none = bool(
        none_match
        and not _NONE_BLOCKERS.search(clause)
        and not _RELATIVE.search(clause[: none_match.start()])  # "subsets that contain no"
        and (count is None or count[1] == "0")
    )
    if none:
        values = [v for v in values if v.strip() == "0"]
    infinite = bool(_INFINITE.search(clause)) and not re.search(
        r"\b(?:not|no|cannot|finitely)\b[^,]*\binfinitely\b", clause, re.IGNORECASE
    )
    return Claims(
        sentence=plain,
        values=tuple(dict.fromkeys(values)),
        count=count,
        polarity=polarity,
        none=none,
        infinite=infinite,
        limit_none=bool(_LIMIT_NONE.search(clause)),
        negated=bool(_NEGATED.search(clause)),
    )


def is_polar_question(question: str | None) -> bool:
    """The problem asks a plain yes/no question ("Is ...?", "For a, b > 0, can ...?",
    "Does ..., and if so, what ...?"), not negated and offering no alternatives, so that
    a negated claim ("it cannot ...") answers it with no."""
    if not question:
        return False
    asked = [s.strip() for s in re.split(r"(?<=[.?!])\s+", question.strip()) if "?" in s]
    if len(asked) != 1:
        return False
    text = re.split(r",?\s+and\s+if\s+so\b|,\s*if\s+so\b", asked[0], flags=re.IGNORECASE)[0]
    opening = re.search(
        r"(?:^|,\s*)(?:is|are|can|could|does|do|did|must|will|would|should|has|have)\b",
        text,
        re.IGNORECASE,
    )
    if opening is None:
        return False
    return not re.search(
        r"\bnot\b|n't\b|\bor\b(?!\s+equal)|\bwhich\b|\bwhat\b|\bhow\b|\bfind\b",
        text[opening.start() :],
        re.IGNORECASE,
    )
