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
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

from workbench.core.tasks import prose
from workbench.core.tasks.extract import (
    all_boxed,
    answer_views,
    normalize_math_text,
    normalize_unicode_math,
    strip_text_macro,
)
from workbench.core.tasks.math_answers import (
    ANSWER_TAIL_CHARS,
    Marker,
    echoes_question,
    final_answer,
    final_markers,
    first_yes_no,
    last_side,
    stated_yes_no,
    without_remark,
)
from workbench.core.tasks.math_equivalence import answers_agree, faithful, math_match
from workbench.core.tasks.math_references import PARTS, Reading, gold_readings, reads_as_math

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 20.0  # the helper is killed after this long on one check
BUDGET_S = 8.0  # stop trying further readings of the reference after this long
HELPER_MEMORY_BYTES = 4 * 2**30
_SENT_CHARS = 50_000

_PLAIN_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:/\d+)?")


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
    if len(boxes) > 1 or (boxes and any(m.kind == "stated" for m in final_markers(answer))):
        return None  # several final answers: the full check compares them
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
            if target and normalize_math_text(without_remark(text)) == target:
                return _verdict(
                    1.0,
                    text.strip(),
                    f"the {label} matches the reference as text",
                    "text: exact after normalisation",
                    matched=reading.text,
                )
        if target in ("yes", "no") and yes_no:
            said = stated_yes_no(answer, boxes)
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


def _asked_unit_value(sentence: str, question: str | None) -> str | None:
    """The number a sentence states in the unit its question asks for: "How many cents do 3
    pencils cost?" answered "The final answer is 273 cents." states 273. Only a number
    right after the main clause's copula, followed by that unit and nothing else."""
    units = {u.lower() for u in re.findall(r"\bhow\s+many\s+([a-z]+)", question or "", re.I)}
    if not units:
        return None
    stated = re.search(
        r"(?:\b(?:is|are|equals)|=)\s+([-+]?\d+(?:\.\d+)?)\s+([a-z]+)$",
        prose.main_clause(sentence),
        re.IGNORECASE,
    )
    return stated.group(1) if stated and stated.group(2).lower() in units else None


def _phrase_said(phrase: str, claims: prose.Claims) -> bool:
    """The answer's main clause says ``phrase`` ("monotonically increasing") as it is:
    no more negations than the phrase has, no alternatives, no "whether"."""
    clause = " ".join(prose.main_clause(claims.sentence).lower().split())
    if phrase not in clause or re.search(r"\bwhether\b|\bor\b|\bneither\b", clause):
        return False
    negations = re.compile(r"\b(?:not|no|never|cannot|neither|nor)\b|n't\b")
    return len(negations.findall(clause)) == len(negations.findall(phrase))


def _prose_check(
    readings: list[Reading], answer: str, question: str | None, reference: str
) -> dict[str, Any] | None:
    """Judge a final answer written as a sentence by what it claims (see ``prose``): a
    verdict, or None when its claims say nothing about this reference. An explicit
    final-answer marker outranks what comes before it: only the text from the sentence
    that holds the last marker on is read."""
    markers = final_markers(answer)
    if markers:
        at = markers[-1].start
        answer = answer[max(answer.rfind("\n", 0, at), answer.rfind(". ", 0, at)) + 1 :]
    sentences = prose.final_sentences(answer[-ANSWER_TAIL_CHARS:])
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
    echo = next((v for v in values if _echoes(reference, v, question)), None)
    if echo is not None:
        return _echo_verdict(echo)
    if claims.count is not None:
        value = _count_as_value(claims.count, question)
        if value is not None:
            values.append(value)
    if not values:
        value = _asked_unit_value(claims.sentence, question)
        if value is not None:
            values.append(value)
    for value in dict.fromkeys(values):
        found = math_match(readings, value)
        if found is not None:
            hit, _ = found
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


def _echoes(reference: str, text: str, question: str | None) -> bool:
    """``text`` restates the question's operation where the reference is a value."""
    return _plain_number(normalize_unicode_math(reference)) is not None and echoes_question(
        text, question
    )


def _echo_verdict(text: str) -> dict[str, Any]:
    return _verdict(
        0.0,
        text,
        "the answer restates the question's own operation instead of its value",
        "echo: the question restated",
    )


def _marked_yes_no(readings: list[Reading], markers: list[Marker]) -> dict[str, Any] | None:
    """For a yes/no reference, the yes or no the explicit final-answer markers give
    ("... Answer: Yes" outranks a leading "No"); markers that say both are wrong."""
    target = next(
        (r.text.lower() for r in readings if r.kind == "text" and r.text.lower() in ("yes", "no")),
        None,
    )
    if target is None:
        return None
    said = list(dict.fromkeys(w for m in markers if (w := first_yes_no(m.text)) is not None))
    if not said:
        return None
    if len(said) > 1:
        return _verdict(
            0.0, " | ".join(m.text for m in markers), "the final answers say both yes and no",
            "several final answers disagree",
        )  # fmt: skip
    right = said[0] == target
    return _verdict(
        1.0 if right else 0.0,
        said[0],
        f"the final answer says {said[0]}; the reference says {target}",
        "yes/no: final answer " + ("same" if right else "differs"),
        **({"matched": target} if right else {}),
    )


def check_here(
    reference: str, answer: str, budget_s: float = BUDGET_S, question: str | None = None
) -> dict[str, Any]:
    """The math check itself, in this process: math-verify equivalence of the answer's
    final answer (its ``\\boxed{}``, its stated answer, else its final value) with a
    reading of the reference (see ``gold_readings``); a normalised-text comparison only
    for readings with no mathematical meaning (``No``); a final answer in prose judged by
    what its sentence claims (``_prose_check``; ``question``, the problem's text, lets a
    "cannot" answer a "Can ...?" and tells an echo of its operation from a value).
    Explicit final-answer markers outrank earlier words, and several that disagree score
    0; so does a final answer that restates the question's operation."""
    deadline = time.monotonic() + budget_s
    answer = normalize_unicode_math(answer)
    readings = [r for r in gold_readings(reference) if r.kind != "math" or faithful(r)]
    markers = final_markers(answer)
    final, source, boxes = final_answer(answer)
    if len(boxes) > 1 and not answers_agree(boxes):
        if any(len(PARTS.split(r.text)) > 1 or "," in r.text for r in readings):
            final = ", ".join(dict.fromkeys(b.strip() for b in boxes))  # "376" and "625"
            source = "boxed answers together"
        else:
            return _verdict(
                0.0,
                " | ".join(boxes),
                f"the answer gives {len(boxes)} different boxed answers",
                "several final answers disagree",
            )
    stated = [
        last_side(m.text) for m in markers
        if reads_as_math(m.text) and first_yes_no(m.text) is None
    ]  # fmt: skip
    if source != "boxed answers together" and not answers_agree(stated):
        return _verdict(
            0.0,
            " | ".join(stated),
            f"the answer states {len(set(stated))} different final answers",
            "several final answers disagree",
        )
    marked = _marked_yes_no(readings, markers)
    if marked is not None:
        return marked
    if final is not None and _echoes(reference, final, question):
        return _echo_verdict(final)
    if final is not None and any(r.kind == "math" for r in readings):
        if time.monotonic() <= deadline:
            found = math_match(readings, final)
            if found is not None:
                hit, how = found
                return _verdict(
                    1.0,
                    final,
                    f"the {source} equals the reference",
                    f"{how}: equal" + (" (tuple in order)" if hit.names else ""),
                    matched=hit.text,
                )
    text = _text_match(readings, answer, boxes, yes_no=source != "prose")
    if text is not None:
        return text
    if source == "prose":
        verdict = _prose_check(readings, answer, question, reference)
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
