"""Graders: score a worker's final answer against a task's reference.

``grade(task, answer)`` dispatches on the task's kind and returns a ``Grade`` whose
``details`` always hold ``extracted`` (what was taken from the answer), ``expected`` and
``reason`` (a short sentence), so that a person replaying an episode sees why it scored
what it did. Graders never raise on what a worker wrote: odd text scores 0 with a reason.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from typing import Any

from workbench.core.printable import printable
from workbench.core.tasks.extract import answer_views, last_boxed, normalize_text, strip_text_macro
from workbench.core.tasks.mathcheck import check_math
from workbench.core.tasks.model import Grade, Task
from workbench.core.tasks.sandbox import SandboxResult, check_function, run_program

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_STDERR_TAIL_CHARS = 2000
_PROGRAM_SHOWN_CHARS = 20_000


def grade(task: Task, answer: str | None, *, timeout_s: float = 10.0) -> Grade:
    """Score ``answer`` for ``task``: reward 1.0 if it is right, 0.0 if not.

    ``timeout_s`` bounds each run of a code task's program. Whatever the answer says, this
    returns a grade; it raises only ``SandboxError`` when code cannot be run here at all
    (not Linux or macOS), since scoring every program 0 would hide that.
    """
    grader = _GRADERS.get(task.kind)
    if grader is None:
        return Grade(
            0.0,
            {
                "extracted": None,
                "expected": task.answer,
                "reason": f"no grader for task kind '{task.kind}' (known: {', '.join(_GRADERS)})",
            },
        )
    if answer is None or not str(answer).strip():
        expected = _expected_for(task)
        return Grade(0.0, {"extracted": None, "expected": expected, "reason": "no answer given"})
    if task.kind == "code":
        return grade_code(task, str(answer), timeout_s=timeout_s)
    return grader(task, str(answer))


@functools.lru_cache(maxsize=16_384)
def grade_cached(task: Task, answer: str | None) -> Grade:
    """``grade`` with memory: the same answer to the same task is graded once per process.
    Training repeats answers often (a worker's correct solution, the simulation's fixed
    texts), and a code grade costs a subprocess."""
    return grade(task, answer)


def _expected_for(task: Task) -> Any:
    if task.kind == "code":
        return _describe_tests(task.tests or {})
    return task.answer


# ---------------------------------------------------------------------------- text


def grade_text(task: Task, answer: str) -> Grade:
    """A free-text answer matches the reference after SQuAD normalisation (of the whole
    answer, its last line, the text after 'Answer:', or a boxed answer)."""
    reference = task.answer or ""
    target = normalize_text(reference)
    views = answer_views(answer)
    for label, text in views:
        if target and normalize_text(text) == target:
            return Grade(
                1.0,
                {
                    "extracted": text.strip(),
                    "expected": reference,
                    "reason": f"the {label} matches",
                },
            )
    shown = views[1][1] if len(views) > 1 else answer
    return Grade(
        0.0,
        {
            "extracted": _clip(shown.strip()),
            "expected": reference,
            "reason": "the answer does not match the reference after normalisation",
        },
    )


# ---------------------------------------------------------------------------- math


def grade_math(task: Task, answer: str) -> Grade:
    r"""Mathematical equivalence (math-verify) of the answer's last ``\boxed{}`` (or its
    final value) with any reading of the reference (see ``mathcheck.gold_variants``);
    prose references such as ``No`` are compared as normalised text."""
    reference = task.answer if task.answer is not None else ""
    verdict = check_math(reference, answer)
    details = {
        "extracted": _clip(verdict.get("extracted")),
        "expected": reference,
        "reason": verdict["reason"],
    }
    if "matched" in verdict:
        details["matched"] = verdict["matched"]
    return Grade(float(verdict["reward"]), details)


def _clip(text: str | None, limit: int = 500) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


# ---------------------------------------------------------------------------- choice

_LETTER_END = r"(?![A-Za-z0-9])"
_EXPLICIT = re.compile(  # cue words in any case; the letter itself must be a capital
    r"(?i:final\s+answer|answer|correct\s+(?:option|choice|answer)|best\s+(?:option|choice|answer))"
    r"\s*(?i:is|:|=|would\s+be|should\s+be)?\s*(?i:option|choice|letter)?\s*"
    r"[\s(\[*{$\\]*(?:boxed\{|text\{|textbf\{)?\s*\(?([A-Z])\)?" + _LETTER_END
)
_BOXED_LETTER = re.compile(r"^\s*\(?\s*(?:\\text\{)?\s*\(?([A-Z])\)?\s*\}?\s*\)?\s*$")
_LONE = re.compile(r"^[\s(\[*]*(?:option|choice)?\s*[(\[]?([A-Z])[)\]]?[\s)\]*.:]*$", re.IGNORECASE)
_TOKEN = re.compile(r"(?<![A-Za-z0-9'’])([A-Z])(?![A-Za-z0-9'’])")
# "A" and "I" start ordinary sentences ("A good guess is B", "I think"); they count as
# option letters only before a verb that states a choice ("A is correct").
_ARTICLE_FOLLOWERS_OK = {"is", "was", "seems", "looks", "appears", "would", "should", "must"}


def _choice_letters(task: Task) -> str:
    n = len(task.choices) if task.choices else 0
    if n:
        return LETTERS[:n]
    if task.answer and task.answer.strip().upper() in LETTERS:
        return LETTERS[: max(4, LETTERS.index(task.answer.strip().upper()) + 1)]
    return LETTERS[:4]


def _letter_tokens(text: str, valid: str) -> list[str]:
    found = []
    for match in _TOKEN.finditer(text):
        letter = match.group(1)
        if letter not in valid:
            continue
        if letter in "AI":
            after = text[match.end() :]
            nxt = re.match(r"\s+([A-Za-z]+)", after)
            if nxt and nxt.group(1).lower() not in _ARTICLE_FOLLOWERS_OK:
                continue
        found.append(letter)
    return found


def extract_choice(answer: str, task: Task) -> tuple[str | None, str]:
    """The option letter an answer picks, and how it was found ("" when none was)."""
    valid = _choice_letters(task)
    explicit = [m.group(1) for m in _EXPLICIT.finditer(answer)]
    explicit = [letter for letter in explicit if letter in valid]
    if explicit:
        return explicit[-1], "stated answer"
    boxed = last_boxed(answer)
    if boxed is not None:
        m = _BOXED_LETTER.match(boxed)
        if m and m.group(1).upper() in valid:
            return m.group(1).upper(), "boxed letter"
    m = _LONE.match(answer.strip())
    if m and m.group(1).upper() in valid and (m.group(1).isupper() or len(answer.strip()) <= 3):
        return m.group(1).upper(), "lone letter"
    if task.choices:
        options = {normalize_text(c): LETTERS[i] for i, c in enumerate(task.choices)}
        for label, text in reversed(answer_views(answer)):
            key = normalize_text(strip_text_macro(text))
            if key in options and key:
                return options[key], f"option text ({label})"
    lines = [line for line in answer.splitlines() if line.strip()]
    for scope in ([lines[-1]] if lines else []) + [answer]:
        letters = set(_letter_tokens(scope, valid))
        if len(letters) == 1:
            return letters.pop(), "only letter mentioned"
    return None, ""


def grade_choice(task: Task, answer: str) -> Grade:
    """The option letter the answer picks equals the reference letter."""
    reference = (task.answer or "").strip().upper()
    letter, how = extract_choice(answer, task)
    if letter is None:
        return Grade(
            0.0,
            {
                "extracted": None,
                "expected": reference,
                "reason": "no option letter found (end with 'Answer: X')",
            },
        )
    right = letter == reference
    reason = f"picked {letter} ({how}); the answer is {reference}"
    return Grade(
        1.0 if right else 0.0,
        {"extracted": letter, "expected": reference, "reason": reason},
    )


# ---------------------------------------------------------------------------- code

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_program(answer: str) -> str:
    """The program in an answer: the last fenced Python block (or last fenced block of any
    language tag if none says Python), else the whole text."""
    blocks = _fenced_blocks(answer)
    python = [code for tag, code in blocks if tag in ("python", "py", "python3")]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    return answer


def _describe_tests(tests: dict[str, Any]) -> str:
    style = tests.get("style")
    if style == "humaneval":
        return f"passes check({tests.get('entry_point')})"
    if style == "stdio":
        return f"prints the expected output for {len(tests.get('cases') or [])} input(s)"
    return f"unknown test style {style!r}"


def _prelude(task: Task) -> str:
    """The code a HumanEval-style prompt gives (imports, helpers, the head of the function):
    the prompt itself if it is Python, else its last fenced block that is. Run before the
    answer, so an answer that leaves out the prompt's imports or helpers still works."""
    candidates = [task.prompt] + [code for _, code in reversed(_fenced_blocks(task.prompt))]
    for text in candidates:
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        return text
    return ""


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


def humaneval_program(task: Task, program: str) -> str:
    """The candidate's side of a HumanEval-style test: the prompt's code and the answer
    (appended directly when it is an indented completion of the prompt's function). The
    test itself runs in another process (``check_function``), never next to this."""
    prelude = _prelude(task)
    first = next((line for line in program.splitlines() if line.strip()), "")
    completion = first[:1] in (" ", "\t")
    return prelude + program if completion else f"{prelude}\n\n{program}"


def _same_output(got: str, want: str) -> bool:
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return lines(got) == lines(want)


def _failure(result: SandboxResult) -> dict[str, Any]:
    """What a person needs to see of a run: its stderr's tail (control characters removed:
    it is the program's data), how it ended, and the isolation it ran in."""
    return {
        "stderr": printable(result.stderr[-_STDERR_TAIL_CHARS:]),
        "timed_out": result.timed_out,
        "killed": result.killed,
        "returncode": result.returncode,
        "isolation": result.isolation,
    }


def grade_code(task: Task, answer: str, *, timeout_s: float = 10.0) -> Grade:
    """Run the answer's program against the task's tests in the sandbox; reward 1 only if
    every test passes. stdio cases stop at the first failure."""
    tests = task.tests or {}
    program = extract_program(answer)
    expected = _describe_tests(tests)
    base: dict[str, Any] = {"extracted": program[:_PROGRAM_SHOWN_CHARS], "expected": expected}
    style = tests.get("style")
    if style == "humaneval":
        entry = tests.get("entry_point", "")
        check = check_function(
            humaneval_program(task, program),
            prelude=_prelude(task),
            test=tests.get("test", ""),
            entry_point=entry,
            timeout_s=timeout_s,
        )
        details = {
            **base,
            "passed": int(check.passed),
            "total": 1,
            "duration_s": check.duration_s,
            **_failure(check.candidate),
            # the program's own stderr, then the test's traceback (from the checker)
            "stderr": printable(
                (check.candidate.stderr + check.checker_stderr)[-_STDERR_TAIL_CHARS:]
            ),
        }
        if check.passed:
            return Grade(1.0, {**details, "reason": "all tests passed"})
        return Grade(
            0.0, {**details, "reason": printable(f"check({entry}) failed: {check.reason}")}
        )
    if style == "stdio":
        cases = tests.get("cases") or []
        passed = 0
        duration = 0.0
        for index, case in enumerate(cases):
            result = run_program(program, stdin=str(case.get("input", "")), timeout_s=timeout_s)
            duration += result.duration_s
            if result.ok and _same_output(result.stdout, str(case.get("output", ""))):
                passed += 1
                continue
            if result.ok:
                why = f"wrong output for case {index + 1}"
            else:
                why = f"case {index + 1}: {result.reason}"
            return Grade(
                0.0,
                {
                    **base,
                    "passed": passed,
                    "total": len(cases),
                    "failed_case": index,
                    "got": printable(result.stdout[-_STDERR_TAIL_CHARS:]),
                    "want": str(case.get("output", ""))[-_STDERR_TAIL_CHARS:],
                    "duration_s": duration,
                    "reason": why,
                    **_failure(result),
                },
            )
        if not cases:
            return Grade(
                0.0, {**base, "passed": 0, "total": 0, "reason": "the task has no test cases"}
            )
        return Grade(
            1.0,
            {
                **base,
                "passed": passed,
                "total": len(cases),
                "duration_s": duration,
                "reason": "all tests passed",
                "stderr": "",
                "timed_out": False,
                "killed": False,
                "isolation": result.isolation,
            },
        )
    return Grade(
        0.0,
        {
            **base,
            "passed": 0,
            "total": 0,
            "reason": f"unknown test style {style!r} in task {task.id}",
        },
    )


_GRADERS: dict[str, Callable[[Task, str], Grade]] = {
    "math": grade_math,
    "choice": grade_choice,
    "code": grade_code,
    "text": grade_text,
}
