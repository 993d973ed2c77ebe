"""The JSONL suite format: one task per line, validated as a whole before use.

Each line is an object with ``id`` (unique string), ``kind`` (``math``, ``choice``,
``code``, ``text``), ``prompt`` (non-empty string) and, by kind:

* math, text: ``answer`` (a string; a number is accepted and stored as a string);
* choice: ``choices`` (a list of at least two strings) and ``answer`` (an option letter);
* code: ``tests``, either ``{"style": "humaneval", "entry_point": str, "test": str}``
  (the test defines ``check(candidate)``) or
  ``{"style": "stdio", "cases": [{"input": str, "output": str}, ...]}``.

Optional: ``category`` (string), ``split`` (``train``, ``validation``, ``test``),
``solution`` (string). Unknown fields are errors, so that typos are caught. Blank lines
are skipped. Every problem in the file is reported at once.

Lines end at line feeds only (a carriage return before one is dropped): U+2028, U+2029
and the other characters Python's ``str.splitlines`` also breaks at are legal inside JSON
strings, and a file that passes ``suites check`` must read the same wherever it is copied.
A UTF-8 byte order mark is accepted. Numbers must be finite (``NaN`` and ``Infinity`` are
not JSON) and strings proper Unicode text (no escape of half a surrogate pair).
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.errors import BadInput, FileEncodingError, read_text
from workbench.core.tasks.model import KINDS, SPLITS, Suite, Task

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
FIELDS = ("id", "kind", "prompt", "answer", "choices", "tests", "category", "split", "solution")
_MAX_ISSUES_SHOWN = 50


@dataclass(frozen=True)
class ValidationIssue:
    """One problem in a suite file: where (file, 1-based line, field) and what."""

    path: str
    line: int
    field: str | None
    message: str

    @property
    def where(self) -> str:
        # line 0: a problem of the whole file (or of the suite's name), not of one line
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        where = self.where
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


@dataclass(frozen=True)
class ItemIssue(ValidationIssue):
    """A problem of one item of a JSON list: ``line`` is the item's place (from 1)."""

    @property
    def where(self) -> str:
        return f"{self.path}, item {self.line}" if self.line else self.path


def issue_at(
    path: str, number: int, field: str | None, message: str, unit: str = ""
) -> ValidationIssue:
    """An issue at line ``number`` of ``path``, or at item ``number`` when ``unit`` is
    ``item`` (a JSON list's)."""
    kind = ItemIssue if unit == "item" else ValidationIssue
    return kind(path, number, field, message)


class SuiteValidationError(BadInput, ValueError):
    """A suite file that does not follow the JSONL suite format; ``issues`` lists every
    problem found, each with its line."""

    def __init__(self, issues: Iterable[ValidationIssue], summary: str | None = None) -> None:
        self.issues = list(issues)
        self.summary = summary
        super().__init__(str(self))

    def __str__(self) -> str:
        head = self.summary or (
            f"{len(self.issues)} problem(s) in suite file; fix them and load it again"
        )
        lines = [str(issue) for issue in self.issues[:_MAX_ISSUES_SHOWN]]
        if len(self.issues) > _MAX_ISSUES_SHOWN:
            lines.append(f"... and {len(self.issues) - _MAX_ISSUES_SHOWN} more")
        return "\n".join([head, *lines])


def load_jsonl(path: str | os.PathLike[str], name: str | None = None) -> Suite:
    """Read and validate a JSONL suite file; the suite is named ``name`` or the file's stem.

    Raises ``SuiteValidationError`` listing every problem (with its line) if any line is
    wrong, the file is missing, or it holds no tasks.
    """
    file = Path(path)
    shown = str(file)
    try:
        if file.exists() and not file.is_file() and not file.is_dir():
            # a pipe or a device: reading it could block forever or never end
            raise SuiteValidationError(
                [ValidationIssue(shown, 0, None, "not a regular file (a pipe or a device)")],
                summary=f"suite file {shown} is not a file: save the suite to a .jsonl file",
            )
        text = read_text("suite file", file)  # a byte order mark is no error
    except FileNotFoundError:
        raise SuiteValidationError(
            [ValidationIssue(shown, 0, None, "file not found: check the path")],
            summary=f"suite file {shown} does not exist",
        ) from None
    except FileEncodingError as error:
        raise SuiteValidationError(
            [ValidationIssue(shown, error.line, None, str(error))], summary=str(error)
        ) from None
    except OSError as error:
        raise SuiteValidationError(
            [ValidationIssue(shown, 0, None, f"cannot read the file: {error}")],
            summary=f"suite file {shown} cannot be read (it must be UTF-8 text)",
        ) from None
    tasks, issues = parse_lines(split_lines(text), shown)
    if not tasks and not issues:
        issues.append(
            ValidationIssue(shown, 0, None, "the file holds no tasks (one JSON object per line)")
        )
    if issues:
        raise SuiteValidationError(
            issues,
            summary=f"{len(issues)} problem(s) in suite file {shown}; fix them and load it again",
        )
    return Suite(
        name=name or file.stem,
        tasks=tuple(tasks),
        source=str(file),
        description=f"{len(tasks)} tasks from {file.name}",
    )


def split_lines(text: str) -> list[str]:
    """The lines of a JSONL text: split at line feeds only, a carriage return before one
    dropped (files saved on Windows). Unlike ``str.splitlines`` this never splits inside
    a JSON string."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class _NotJson(BadInput, ValueError):
    """One line that cannot be read as JSON; the message says why and what to do."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(
        f"{name} is not a JSON number: write a finite number, or the answer as a string "
        f'(e.g. "{name}")'
    )


def _loads(raw: str) -> Any:
    """One line as JSON, or ``_NotJson`` with a sentence (never another exception)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise _NotJson(f"not valid JSON: {error.msg} (column {error.colno})") from None
    except RecursionError:
        raise _NotJson(
            "not valid JSON here: it is nested too deeply (a task needs at most a few levels)"
        ) from None
    except _NotJson:
        raise
    except ValueError as error:
        # int() refuses numbers of more than sys.get_int_max_str_digits() digits
        if "digits" in str(error):
            raise _NotJson("a number has too many digits to read: write it as a string") from None
        raise _NotJson(f"not valid JSON: {error}") from None


def bad_text(value: Any) -> str | None:
    """Why a parsed JSON value cannot be kept as suite text (a lone surrogate, a number
    that overflowed to infinity), or None. Walks without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                bad = item[error.start]
                return (
                    f"a string holds the escape \\u{ord(bad):04x}, half of a surrogate pair "
                    "and not a character: remove it, or write the whole character"
                )
        elif isinstance(item, float) and not math.isfinite(item):
            return "a number is too large to represent: write it as a string"
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def json_objects(
    lines: Iterable[str], path: str, issues: list[ValidationIssue]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank JSONL line that is a JSON object of
    storable text; every other line adds its ``ValidationIssue`` to ``issues``. The one
    line reader of the workbench's JSONL imports (suites, recorded answers)."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = _loads(raw)
        except _NotJson as error:
            issues.append(ValidationIssue(path, number, None, str(error)))
            continue
        problem = bad_text(record)
        if problem is not None:
            issues.append(ValidationIssue(path, number, None, problem))
            continue
        if not isinstance(record, dict):
            issues.append(
                ValidationIssue(
                    path, number, None, f"expected a JSON object, got {_type_name(record)}"
                )
            )
            continue
        yield number, record


def parse_lines(
    lines: Iterable[str], path: str = "<suite>"
) -> tuple[list[Task], list[ValidationIssue]]:
    """Validate JSONL lines; return the valid tasks and every problem found."""
    issues: list[ValidationIssue] = []
    tasks = check_tasks(json_objects(lines, path, issues), path, issues)
    return tasks, issues


def check_tasks(
    objects: Iterable[tuple[int, dict[str, Any]]],
    path: str,
    issues: list[ValidationIssue],
    unit: str = "",
) -> list[Task]:
    """The valid tasks among ``objects`` ((line or ``unit`` number, object) pairs), each
    problem added to ``issues``: the one check of a task, whatever file it came from."""
    tasks: list[Task] = []
    first_line_of: dict[str, int] = {}
    for number, record in objects:
        found = _check_record(record)
        task_id = record.get("id")
        if isinstance(task_id, str) and task_id.strip():
            if task_id in first_line_of:
                found.append(
                    (
                        "id",
                        f"duplicate id '{task_id}' (first used on {unit or 'line'} "
                        f"{first_line_of[task_id]})",
                    )
                )
            else:
                first_line_of[task_id] = number
        if found:
            issues.extend(issue_at(path, number, field, message, unit) for field, message in found)
            continue
        tasks.append(_to_task(record))
    return tasks


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _check_record(record: dict[str, Any]) -> list[tuple[str | None, str]]:
    """Problems in one task object, as (field, message)."""
    found: list[tuple[str | None, str]] = []
    for key in record:
        if key not in FIELDS:
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            found.append((key, f"unknown field ({hint}allowed: {', '.join(FIELDS)})"))
    for key in ("id", "kind", "prompt"):
        if key not in record:
            found.append((key, "missing"))
        elif not isinstance(record[key], str):
            found.append((key, f"must be a string, got {_type_name(record[key])}"))
        elif not record[key].strip():
            found.append((key, "must not be empty"))
    for key in ("category", "solution"):
        if key in record and not isinstance(record[key], str):
            found.append((key, f"must be a string, got {_type_name(record[key])}"))
    if "split" in record and record["split"] not in SPLITS:
        found.append(("split", f"must be one of {', '.join(SPLITS)}, got {record['split']!r}"))
    kind = record.get("kind")
    if isinstance(kind, str) and kind.strip():
        if kind not in KINDS:
            found.append(("kind", f"must be one of {', '.join(KINDS)}, got '{kind}'"))
        else:
            found.extend(_KIND_CHECKS[kind](record))
    return found


def _check_answer_text(record: dict[str, Any]) -> list[tuple[str | None, str]]:
    found: list[tuple[str | None, str]] = []
    answer = record.get("answer")
    if "answer" not in record:
        found.append(("answer", f"missing (a {record['kind']} task needs its reference answer)"))
    elif isinstance(answer, bool) or not isinstance(answer, str | int | float):
        found.append(("answer", f"must be a string or a number, got {_type_name(answer)}"))
    elif isinstance(answer, str) and not answer.strip():
        found.append(("answer", "must not be empty"))
    found.extend(_forbid(record, ("choices", "tests")))
    return found


def _check_choice(record: dict[str, Any]) -> list[tuple[str | None, str]]:
    found: list[tuple[str | None, str]] = []
    choices = record.get("choices")
    n = 0
    if "choices" not in record:
        found.append(("choices", "missing (a choice task needs a list of options)"))
    elif not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        found.append(("choices", "must be a list of strings"))
    elif not 2 <= len(choices) <= len(LETTERS):
        found.append(
            ("choices", f"must have between 2 and {len(LETTERS)} options, got {len(choices)}")
        )
    else:
        n = len(choices)
    answer = record.get("answer")
    if "answer" not in record:
        found.append(("answer", 'missing (the letter of the right option, e.g. "B")'))
    elif (
        not isinstance(answer, str)
        or len(answer.strip()) != 1
        or answer.strip().upper() not in LETTERS
    ):
        found.append(("answer", f"must be a single option letter, got {answer!r}"))
    elif n and LETTERS.index(answer.strip().upper()) >= n:
        found.append(
            (
                "answer",
                f"letter '{answer.strip().upper()}' is out of range: options are A-{LETTERS[n - 1]}",
            )
        )
    found.extend(_forbid(record, ("tests",)))
    return found


def _check_code(record: dict[str, Any]) -> list[tuple[str | None, str]]:
    found: list[tuple[str | None, str]] = list(_forbid(record, ("choices",)))
    if "answer" in record and not isinstance(record["answer"], str):
        found.append(("answer", f"must be a string, got {_type_name(record['answer'])}"))
    tests = record.get("tests")
    if "tests" not in record:
        found.append(("tests", "missing (a code task needs humaneval or stdio tests)"))
        return found
    if not isinstance(tests, dict):
        found.append(("tests", f"must be an object, got {_type_name(tests)}"))
        return found
    style = tests.get("style")
    if style == "humaneval":
        extra = set(tests) - {"style", "entry_point", "test"}
        if extra:
            found.append(("tests", f"unknown key(s) {', '.join(sorted(extra))} in humaneval tests"))
        entry = tests.get("entry_point")
        if not isinstance(entry, str) or not entry.isidentifier():
            found.append(("tests.entry_point", "must be the name of the function to test"))
        test = tests.get("test")
        if not isinstance(test, str) or "def check(" not in test:
            found.append(("tests.test", "must be Python source that defines check(candidate)"))
    elif style == "stdio":
        extra = set(tests) - {"style", "cases"}
        if extra:
            found.append(("tests", f"unknown key(s) {', '.join(sorted(extra))} in stdio tests"))
        cases = tests.get("cases")
        if not isinstance(cases, list) or not cases:
            found.append(("tests.cases", 'must be a non-empty list of {"input", "output"} objects'))
        else:
            for i, case in enumerate(cases):
                if (
                    not isinstance(case, dict)
                    or set(case) != {"input", "output"}
                    or not all(isinstance(case[k], str) for k in ("input", "output"))
                ):
                    found.append((f"tests.cases[{i}]", 'must be {"input": str, "output": str}'))
    else:
        found.append(("tests.style", f"must be 'humaneval' or 'stdio', got {style!r}"))
    return found


def _forbid(record: dict[str, Any], keys: Iterable[str]) -> list[tuple[str | None, str]]:
    return [(k, f"not used by {record['kind']} tasks") for k in keys if k in record]


_KIND_CHECKS = {
    "math": _check_answer_text,
    "text": _check_answer_text,
    "choice": _check_choice,
    "code": _check_code,
}


def _to_task(record: dict[str, Any]) -> Task:
    record = dict(record)
    answer = record.get("answer")
    if isinstance(answer, int | float) and not isinstance(answer, bool):
        record["answer"] = _number_text(answer)
    if record["kind"] == "choice":
        record["answer"] = record["answer"].strip().upper()
    return Task.from_dict(record)


def _number_text(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# Characters other readers (str.splitlines, JavaScript before ES2019) take as line ends,
# which json.dumps(ensure_ascii=False) writes raw: written as escapes, a line stays one line
# for every reader.
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def dumps_line(value: Any) -> str:
    """``value`` as one JSONL line (without its line feed): readable UTF-8, with every
    character that some reader takes as a line end escaped."""
    line = json.dumps(value, ensure_ascii=False, allow_nan=False)
    for raw, escaped in _LINE_BREAKS.items():
        if raw in line:  # such characters only occur inside strings
            line = line.replace(raw, escaped)
    return line


def dumps_task(task: Task) -> str:
    """One task as one JSONL line (``dumps_line``)."""
    return dumps_line(task.to_dict())


def write_jsonl(suite: Suite, path: str | os.PathLike[str]) -> Path:
    """Write ``suite`` as a JSONL suite file (one task per line, UTF-8)."""
    file = Path(path)
    with file.open("w", encoding="utf-8", newline="\n") as out:
        for task in suite.tasks:
            out.write(dumps_task(task) + "\n")
    return file
