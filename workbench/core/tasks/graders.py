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
import threading
from collections.abc import Callable
from typing import Any

from workbench.core.printable import printable
from workbench.core.tasks.extract import (
    all_boxed,
    answer_views,
    last_boxed,
    normalize_text,
    strip_text_macro,
)
from workbench.core.tasks.mathcheck import check_math
from workbench.core.tasks.model import Grade, Task
from workbench.core.tasks.sandbox import SandboxResult, check_function, run_program

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_STDERR_TAIL_CHARS = 2000
_PROGRAM_SHOWN_CHARS = 20_000
# CPython 3.11 and 3.12 keep the AST constructor's recursion depth in one interpreter-wide
# counter: two threads in ast.parse at once (graders run on worker threads) can fail with
# "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). Every
# parse here holds this lock.
_PARSE_LOCK = threading.Lock()


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
                "rule": "no grader for this kind",
            },
        )
    if answer is None or not str(answer).strip():
        expected = _expected_for(task)
        return Grade(
            0.0,
            {"extracted": None, "expected": expected, "reason": "no answer given", "rule": "empty"},
        )
    if task.kind == "code":
        result = grade_code(task, str(answer), timeout_s=timeout_s)
        if "rule" not in result.details:
            verdict = "tests passed" if result.reward == 1.0 else "tests failed"
            rule = f"code: {_block_choice(str(answer), task)}; {verdict}"
            result = Grade(result.reward, {**result.details, "rule": rule})
        return result
    return grader(task, str(answer))


def _block_choice(answer: str, task: Task) -> str:
    """Which code of the answer ran, in words (for the grade's ``rule``)."""
    blocks = _fenced_blocks(answer)
    entry = (task.tests or {}).get("entry_point")
    if not blocks:
        return "the whole answer as the program"
    if entry and _blocks_for(blocks, entry) is not None:
        return f"the block that defines {entry} ({len(blocks)} fenced block(s))"
    return f"the last fenced block ({len(blocks)} fenced block(s))"


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
                    "rule": "text: exact after normalisation",
                },
            )
    shown = views[1][1] if len(views) > 1 else answer
    return Grade(
        0.0,
        {
            "extracted": _clip(shown.strip()),
            "expected": reference,
            "reason": "the answer does not match the reference after normalisation",
            "rule": "text: differs after normalisation",
        },
    )


# ---------------------------------------------------------------------------- math


def grade_math(task: Task, answer: str) -> Grade:
    r"""Mathematical equivalence (math-verify) of the answer's last ``\boxed{}`` (or its
    final value) with any reading of the reference (see ``mathcheck.gold_variants``);
    prose references such as ``No`` are compared as normalised text."""
    reference = task.answer if task.answer is not None else ""
    verdict = check_math(reference, answer, task.prompt or None)
    details = {
        "extracted": _clip(verdict.get("extracted")),
        "expected": reference,
        "reason": verdict["reason"],
        "rule": verdict.get("rule", "math"),
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
# An explicit final cue in any case ("Answer: B", "answer: d", "the correct option is
# either B or D"), then the letter, in either case; what follows the letter decides
# whether it is one answer, a hedge, or an English word ("the answer is a city").
_EXPLICIT = re.compile(
    r"(?:final\s+answer|answer|correct\s+(?:option|choice|answer)|best\s+(?:option|choice|answer))"
    r"\s*(?:is|:|=|would\s+be|should\s+be)?\s*(?:option|choice|letter)?\s*(?:either\s+)?"
    r"[\s(\[*{$\\]*(?:boxed\{|text\{|textbf\{)?\s*\(?([A-Za-z])\)?" + _LETTER_END,
    re.IGNORECASE,
)
_LIST_SEPARATOR = (
    r"\s*(?:,|/|&|\bor\b|\band\b|\band/or\b)\s*"
    r"(?:(?:either|maybe|possibly|perhaps|also|even|else|option|choice)\s+)*"
)
_MARKUP = re.compile(r"[*_()\[\]{}]|\\(?:boxed|text|textbf)\b")
# two or more option letters offered together: "A or B", "B/C", "B and C", "(A), (C)"
_HEDGE = re.compile(
    r"(?<![A-Za-z0-9'’])\(?([A-Z])\)?" + _LETTER_END
    + r"(?:" + _LIST_SEPARATOR + r"\(?([A-Z])\)?" + _LETTER_END + r")+"
)  # fmt: skip
_HEDGE_ANY_CASE = re.compile(
    r"^[\s*(\[{]*(?:either\s+)?\(?([A-Za-z])\)?" + _LETTER_END
    + r"(?:" + _LIST_SEPARATOR + r"\(?[A-Za-z]\)?" + _LETTER_END + r")+",
    re.IGNORECASE,
)  # fmt: skip
# "A and B are wrong" rules options out; it offers none
_RULED_OUT = re.compile(
    r"^\s*(?:are|is|were)\s+(?:both\s+)?(?:wrong|incorrect|false|not|ruled|eliminated)",
    re.IGNORECASE,
)
_BOXED_LETTER = re.compile(r"^\s*\(?\s*(?:\\text\{)?\s*\(?([A-Z])\)?\s*\}?\s*\)?\s*$")
_LONE = re.compile(r"^[\s(\[*]*(?:option|choice)?\s*[(\[]?([A-Z])[)\]]?[\s)\]*.:]*$", re.IGNORECASE)
_SHORT_ANSWER = 300  # characters: an answer this short is read whole for a lone letter
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


def _hedge(text: str, valid: str, any_case: bool = False) -> list[str] | None:
    """The option letters ``text`` offers together ("A or B", "B/C"), if two or more
    distinct valid ones; None otherwise. ``any_case`` reads a list at the start of the
    text in either case (the text after an answer cue: "answer: b or c")."""
    text = _MARKUP.sub(" ", text)  # "**B** or **C**", "B (or C)", "(B) or (C)"
    spans = []
    if any_case:
        match = _HEDGE_ANY_CASE.match(text)
        if match:
            spans.append((match.group(0), text[match.end() :]))
    spans += [(m.group(0), text[m.end() :]) for m in _HEDGE.finditer(text)]
    for span, after in spans:
        if _RULED_OUT.match(after):
            continue
        letters = [ch.upper() for ch in re.findall(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])", span)]
        letters = list(dict.fromkeys(ch for ch in letters if ch in valid))
        if len(letters) >= 2:
            return letters
    return None


# where a model goes on to ask itself the prompt's next example question (a few-shot
# continuation): what follows answers another question
_NEXT_QUESTION = re.compile(r"\n\s*(?:\*\*)?(?:Question|Q)\s*\d*\s*(?:\*\*)?\s*:", re.IGNORECASE)


def own_answer(answer: str) -> str:
    """The answer up to the point where, after stating an answer, the model starts another
    question ("The answer is (J).\n\nQuestion: ..."): the rest answers that question."""
    first = _EXPLICIT.search(answer)
    if first is None:
        return answer
    follows = _NEXT_QUESTION.search(answer, first.end())
    return answer[: follows.start()] if follows else answer


def _explicit_letters(answer: str, valid: str) -> tuple[list[str], list[str] | None]:
    """(every letter the explicit answer cues name, in order; the hedge of the last cue, if
    it offers several)."""
    letters: list[str] = []
    last_hedge = None
    for match in _EXPLICIT.finditer(answer):
        letter = match.group(1)
        after = answer[match.end() :]
        region = answer[match.start(1) - (1 if answer[match.start(1) - 1] == "(" else 0) :]
        region = region.split("\n", 1)[0]
        hedge = _hedge(region, valid, any_case=True)
        if hedge:
            letters += hedge
            last_hedge = hedge
            continue
        if letter.upper() not in valid:
            continue
        # a lower-case letter is a letter only when no word follows it ("answer: d."),
        # not an article ("the answer is a city")
        if letter.islower() and re.match(r"\)?\s*[A-Za-z]", after):
            continue
        letters.append(letter.upper())
        last_hedge = None
    return letters, last_hedge


def extract_choice(answer: str, task: Task) -> tuple[str | None, str]:
    """The option letter an answer picks, and how it was found ("" when none was).

    Explicit final-answer markers ("The answer is (B)", "Answer: B", a boxed letter)
    outrank every other letter in the text; markers that name different letters pick none
    (``several answers (E, F)``), and so does a hedge (two or more letters offered as the
    answer: ``hedge (A, B)``). What a model writes after its answer when it goes on to
    another question (a few-shot continuation) is not read (``own_answer``)."""
    valid = _choice_letters(task)
    answer = own_answer(answer)
    stated, hedge = _explicit_letters(answer, valid)
    boxed_matches = [_BOXED_LETTER.match(b) for b in all_boxed(answer)]
    boxed_letters = [m.group(1).upper() for m in boxed_matches if m]
    marked = list(dict.fromkeys(x for x in stated + boxed_letters if x in valid))
    if hedge and stated and set(hedge) >= set(marked):
        return None, f"hedge ({', '.join(hedge)})"
    if len(marked) > 1:
        if not stated:  # \boxed{B} or \boxed{C}
            return None, f"hedge ({', '.join(marked)})"
        return None, f"several answers ({', '.join(marked)})"
    if stated and marked:
        return marked[0], "stated answer"
    boxed = last_boxed(answer)
    if boxed is not None:
        hedge = _hedge(strip_text_macro(boxed), valid, any_case=True)
        if hedge:
            return None, f"hedge ({', '.join(hedge)})"
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
    # a long answer's stray capitals ("F_1 progeny", "(c)", a variable A) are no choice:
    # only its last line, or a short answer as a whole, is read for a lone letter
    scopes = ([lines[-1]] if lines else []) + ([answer] if len(answer) <= _SHORT_ANSWER else [])
    for scope in scopes:
        hedge = _hedge(scope, valid, any_case=len(scope.strip()) <= 12)
        if hedge:
            return None, f"hedge ({', '.join(hedge)})"
        letters = set(_letter_tokens(scope, valid))
        if len(letters) == 1:
            return letters.pop(), "only letter mentioned"
    return None, ""


def grade_choice(task: Task, answer: str) -> Grade:
    """The option letter the answer picks equals the reference letter; a hedge between
    two or more letters, or final answers that name different letters, is wrong even when
    one of them is right."""
    reference = (task.answer or "").strip().upper()
    letter, how = extract_choice(answer, task)
    if letter is None and how.startswith(("hedge", "several answers")):
        offered = how[how.index("(") :]
        reason = (
            f"the answer offers several options {offered}"
            if how.startswith("hedge")
            else f"the answer's final answers disagree {offered}"
        )
        return Grade(
            0.0,
            {
                "extracted": offered.strip("()"),
                "expected": reference,
                "reason": reason,
                "rule": f"choice: {how} is wrong",
            },
        )
    if letter is None:
        return Grade(
            0.0,
            {
                "extracted": None,
                "expected": reference,
                "reason": "no option letter found (end with 'Answer: X')",
                "rule": "choice: no letter found",
            },
        )
    right = letter == reference
    reason = f"picked {letter} ({how}); the answer is {reference}"
    return Grade(
        1.0 if right else 0.0,
        {
            "extracted": letter,
            "expected": reference,
            "reason": reason,
            "rule": f"choice: {how} {letter} " + ("is right" if right else "is wrong"),
        },
    )


# ---------------------------------------------------------------------------- code

_FENCE = re.compile(
    r"(^[ \t]*)?```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL | re.MULTILINE
)
_PYTHON_TAGS = ("python", "py", "python3", "")
_OUTPUT_TAGS = ("text", "output", "console", "shell", "bash", "sh", "plaintext", "txt", "json")


def extract_program(answer: str, entry_point: str | None = None) -> str:
    """The program in an answer. With ``entry_point`` (a HumanEval task): the last fenced
    block that defines it, after the other blocks that define names it uses; never a
    usage block (``print(f(...))``) or an output block. Without: the last fenced Python
    block (or last fenced block of any tag if none says Python). Else the whole text.
    Fenced code indented inside a Markdown list item is dedented."""
    blocks = _fenced_blocks(answer)
    if entry_point:
        chosen = _blocks_for(blocks, entry_point)
        if chosen is not None:
            return chosen
    python = [code for tag, code in blocks if tag in ("python", "py", "python3")]
    if python:
        return python[-1]
    if blocks:
        return blocks[-1][1]
    return answer


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _parse(code: str) -> ast.Module:
    """``ast.parse``, one thread at a time (see ``_PARSE_LOCK``)."""
    with _PARSE_LOCK:
        return ast.parse(code)


def _blocks_for(blocks: list[tuple[str, str]], entry_point: str) -> str | None:
    """The code that defines ``entry_point``: its last defining block, preceded by the
    earlier blocks that define names it uses and it does not (helpers, imports); None
    when no block defines it."""
    parsed = []
    for tag, code in blocks:
        if tag not in _PYTHON_TAGS:
            continue
        try:
            tree = _parse(code)
        except (SyntaxError, ValueError):
            continue
        parsed.append((code, tree, _defined_names(tree)))
    defining = [i for i, (_, _, names) in enumerate(parsed) if entry_point in names]
    if not defining:
        return None
    main = defining[-1]
    code, tree, defined = parsed[main]
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Name)}  # fmt: skip
    needed = used - defined
    helpers = [
        other
        for i, (other, _, names) in enumerate(parsed)
        if i != main and names & needed and entry_point not in names
    ]
    return "\n\n".join([*helpers, code])


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, code) of each fenced block; code indented as deep as its fence (a
    fence inside a Markdown list item) loses that indent."""
    blocks = []
    for m in _FENCE.finditer(text):
        indent, code = m.group(1) or "", m.group(3)
        if indent:
            code = "".join(
                line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t")
                for line in code.splitlines(keepends=True)
            )
        blocks.append((m.group(2).lower(), code))
    return blocks


def _describe_tests(tests: dict[str, Any]) -> str:
    style = tests.get("style")
    if style == "humaneval":
        return f"passes check({tests.get('entry_point')})"
    if style == "stdio":
        return f"prints the expected output for {len(tests.get('cases') or [])} input(s)"
    return f"unknown test style {style!r}"


def prompt_code(task: Task) -> str:
    """The code a HumanEval-style prompt gives (imports, helpers, the head of the function):
    the prompt itself if it is Python, else its last fenced block that is. Run before the
    answer, so an answer that leaves out the prompt's imports or helpers still works."""
    candidates = [task.prompt] + [code for _, code in reversed(_fenced_blocks(task.prompt))]
    for text in candidates:
        try:
            _parse(text)
        except (SyntaxError, ValueError):
            continue
        return text
    return ""


def humaneval_program(task: Task, program: str) -> str:
    """The candidate's side of a HumanEval-style test: the prompt's code and the answer
    (appended directly when it is an indented completion of the prompt's function). The
    test itself runs in another process (``check_function``), never next to this."""
    prelude = prompt_code(task)
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
    program = extract_program(answer, tests.get("entry_point"))
    expected = _describe_tests(tests)
    base: dict[str, Any] = {"extracted": program[:_PROGRAM_SHOWN_CHARS], "expected": expected}
    style = tests.get("style")
    if style == "humaneval":
        entry = tests.get("entry_point", "")
        check = check_function(
            humaneval_program(task, program),
            prelude=prompt_code(task),
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
