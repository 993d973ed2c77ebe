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
from fractions import Fraction
from pathlib import Path
from typing import Any

from workbench.core.tasks.extract import answer_views, last_boxed, normalize_text, strip_text_macro

CHECK_TIMEOUT_S = 20.0  # the helper is killed after this long on one check
PARSE_TIMEOUT_S = 2  # math-verify's own limit per parse or comparison (whole seconds)
BUDGET_S = 8.0  # stop trying further readings of the reference after this long
HELPER_MEMORY_BYTES = 4 * 2**30
_ANSWER_TAIL_CHARS = 4000  # math-verify reads the tail only: long rambles are slow to parse
_SENT_CHARS = 50_000

_GOLD_SPLIT = re.compile(
    r",?\s+or\s+(?:equivalently|approximately|an\s+equivalent\s+form\s+such\s+as)\s+"
    r"|,?\s+or\s+",
    re.IGNORECASE,
)
_PARENTHETICAL = re.compile(r"\s*\((?:i\.e\.|e\.g\.|that is|no |none)[^)]*\)", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"^\s*(-?\d+(?:[./]\d+)?)\s+[A-Za-z(]")
_TRAILING_VALUE = re.compile(
    r"(?:equal\s+to|limit\s+is|period\s+of|value\s+is)\s+(.+?)\.?\s*$", re.IGNORECASE
)
_PLAIN_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:/\d+)?")


def gold_variants(gold: str) -> list[str]:
    """The readings of a (possibly messy) reference answer, best first.

    CHAMP writes references like ``C(10, 5), or equivalently 252`` or
    ``0 is the only possible value``; each alternative, the reference without its
    parenthetical remark, a value named in prose, and ``A and B`` read as a set are tried.
    """
    gold = gold.strip()
    cleaned = _PARENTHETICAL.sub("", gold).strip()
    variants = [gold, cleaned, *(part.strip() for part in _GOLD_SPLIT.split(cleaned))]
    for text in list(variants):
        number = _LEADING_NUMBER.match(text)
        if number:
            variants.append(number.group(1))
        value = _TRAILING_VALUE.search(text)
        if value:
            variants.append(value.group(1).strip())
        if " and " in text:  # "376 and 625" reads as the set {376, 625}
            variants.append(text.replace(" and ", ", "))
    return list(dict.fromkeys(v for v in variants if v))


def _plain_number(text: str) -> Fraction | None:
    text = text.strip().strip("$").strip().rstrip(".").strip()
    if not _PLAIN_NUMBER.fullmatch(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _fast_check(reference: str, answer: str) -> dict[str, Any] | None:
    """Decide plain-number cases here; None when math-verify must decide."""
    gold = _plain_number(reference)
    if gold is None:
        return None
    boxed = last_boxed(answer)
    reply = strip_text_macro(boxed) if boxed is not None else answer.strip()
    value = _plain_number(reply)
    if value is None:
        return None
    source = "boxed answer" if boxed is not None else "answer"
    if value == gold:
        return _verdict(1.0, reply, f"the {source} equals the reference", matched=reference)
    if value.denominator == 1 and gold.denominator == 1:
        return _verdict(0.0, reply, f"the {source} does not equal the reference")
    return None


def _verdict(reward: float, extracted: str | None, reason: str, **extra: Any) -> dict[str, Any]:
    return {"reward": reward, "extracted": extracted, "reason": reason, **extra}


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
def _parse_gold(variant: str) -> list[Any]:
    return _parse("\\boxed{" + variant + "}")


def _verify(gold: list[Any], target: list[Any]) -> bool:
    from math_verify import verify

    timeout = PARSE_TIMEOUT_S if _in_main_thread() else None
    try:
        return bool(verify(gold, target, timeout_seconds=timeout))
    except Exception:
        return False


def _extract(answer: str) -> tuple[str, list[Any], str]:
    """(extracted text, parsed values, where it came from) for a worker's math answer."""
    boxed = last_boxed(answer)
    if boxed is not None:
        content = strip_text_macro(boxed)
        return content, _parse("\\boxed{" + content + "}"), "boxed answer"
    parsed = _parse(answer[-_ANSWER_TAIL_CHARS:])
    if len(parsed) >= 2:
        return str(parsed[-1]), parsed, "final value"
    return answer_views(answer)[-1][1].strip(), [], "answer"


def check_here(reference: str, answer: str, budget_s: float = BUDGET_S) -> dict[str, Any]:
    """The math check itself, in this process: math-verify equivalence of the answer's
    last ``\\boxed{}`` (or final value) with any reading of the reference, then a
    normalised-text comparison for prose references such as ``No``."""
    deadline = time.monotonic() + budget_s
    extracted, parsed, source = _extract(answer)
    variants = gold_variants(reference)
    if parsed:
        for variant in variants:
            if time.monotonic() > deadline:
                break
            gold = _parse_gold(variant)
            if gold and _verify(gold, parsed):
                return _verdict(
                    1.0, extracted, f"the {source} equals the reference", matched=variant
                )
    candidates = [extracted] + [text for _, text in answer_views(answer)[1:]]
    for variant in variants:
        target = normalize_text(variant)
        for candidate in candidates:
            if target and normalize_text(candidate) == target:
                return _verdict(
                    1.0,
                    candidate.strip(),
                    "the answer matches the reference as text",
                    matched=variant,
                )
    if parsed:
        return _verdict(0.0, extracted, f"the {source} does not equal the reference")
    return _verdict(0.0, extracted, "no mathematical answer found (write it as \\boxed{...})")


def check_math(reference: str, answer: str) -> dict[str, Any]:
    """Check ``answer`` against ``reference``: a dict with ``reward`` (0.0 or 1.0),
    ``extracted``, ``reason`` and, on success, ``matched`` (the reading of the reference
    that matched). Safe from any thread; never raises because of what the answer says."""
    fast = _fast_check(reference, answer)
    if fast is not None:
        return fast
    return _helper.check(reference, answer[-_SENT_CHARS:])


class _Helper:
    """One helper process (``python -c "...serve()"``, JSON lines over pipes) that runs
    ``check_here``; restarted after a timeout or a crash.

    A plain subprocess rather than ``multiprocessing``, so that the caller's ``__main__``
    is never re-imported; a frozen app (no Python to start) checks in-process instead.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._replies: queue.Queue[str] = queue.Queue()
        self._answered = False  # the current helper has answered at least once
        self._unusable = False  # a helper could not even start: check in-process
        self._owner = os.getpid()

    def check(self, reference: str, answer: str) -> dict[str, Any]:
        if self._owner != os.getpid():  # forked: the helper belongs to the parent
            self.__init__()
        with self._lock:
            if self._unusable or getattr(sys, "frozen", False) or not sys.executable:
                return check_here(reference, answer)
            if self._process is None or self._process.poll() is not None:
                self._stop()  # a helper that died between checks
                try:
                    self._start()
                except OSError:
                    self._unusable = True
                    return check_here(reference, answer)
            assert self._process is not None and self._process.stdin is not None
            try:
                self._process.stdin.write(json.dumps([reference, answer]) + "\n")
                self._process.stdin.flush()
                line = self._replies.get(timeout=CHECK_TIMEOUT_S)
            except queue.Empty:
                self._stop()
                return _verdict(
                    0.0,
                    None,
                    f"checking this answer took over {CHECK_TIMEOUT_S:g} s; it is scored 0",
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
                    return check_here(reference, answer)
                return _verdict(
                    0.0, None, "the math checker stopped on this answer; it is scored 0"
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
    """The helper's loop: read ``[reference, answer]`` JSON lines from stdin, write
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
            reference, answer = json.loads(line)
            verdict = check_here(str(reference), str(answer))
        except Exception as error:  # MemoryError included: one bad answer, not the helper
            verdict = _verdict(
                0.0, None, f"the answer could not be checked: {type(error).__name__}"
            )
        sys.stdout.write(json.dumps(verdict) + "\n")
        sys.stdout.flush()


_helper = _Helper()
atexit.register(_helper.close)
