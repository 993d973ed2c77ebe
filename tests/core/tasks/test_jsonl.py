"""The JSONL suite format: every problem of a file is reported at once, with its line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.core.tasks import SuiteValidationError, import_suite, load_jsonl, write_jsonl
from workbench.core.workspace import Workspace

GOOD = [
    {"id": "m1", "kind": "math", "prompt": "What is 6 x 7?", "answer": "42", "category": "easy"},
    {"id": "c1", "kind": "choice", "prompt": "Pick B.", "choices": ["x", "y", "z"], "answer": "b"},
    {
        "id": "k1",
        "kind": "code",
        "prompt": "Write add(a, b).",
        "tests": {
            "style": "humaneval",
            "entry_point": "add",
            "test": "def check(c):\n    assert c(1, 2) == 3\n",
        },
        "solution": "def add(a, b):\n    return a + b\n",
        "split": "test",
    },
    {
        "id": "k2",
        "kind": "code",
        "prompt": "Echo the input.",
        "tests": {"style": "stdio", "cases": [{"input": "hi\n", "output": "hi\n"}]},
    },
    {"id": "t1", "kind": "text", "prompt": "Capital of France?", "answer": "Paris"},
    {"id": "m2", "kind": "math", "prompt": "Half of 3?", "answer": 1.5},
]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_valid_file_loads_every_kind(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "good.jsonl",
        [json.dumps(r) for r in GOOD[:3]] + ["", "   "] + [json.dumps(r) for r in GOOD[3:]],
    )
    suite = load_jsonl(path)
    assert suite.name == "good" and len(suite) == 6
    assert suite.get("c1").answer == "B" and suite.get("c1").choices == ("x", "y", "z")
    assert suite.get("m2").answer == "1.5"  # numbers become strings
    assert suite.get("k1").split == "test" and suite.get("k1").tests["entry_point"] == "add"
    assert load_jsonl(path, name="other").name == "other"


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    suite = load_jsonl(write_lines(tmp_path / "a.jsonl", [json.dumps(r) for r in GOOD]))
    write_jsonl(suite, tmp_path / "b.jsonl")
    again = load_jsonl(tmp_path / "b.jsonl", name="a")
    assert again.tasks == suite.tasks


BAD_LINES = [
    # (line text, expected (field, message fragment)) ; line numbers are 1-based in the file
    (json.dumps(GOOD[0]), None),  # 1: fine
    ('{"id": "broken", "kind": ', (None, "not valid JSON")),  # 2
    ("[1, 2, 3]", (None, "expected a JSON object, got a list")),  # 3
    (json.dumps({"id": "np", "kind": "math", "answer": "1"}), ("prompt", "missing")),  # 4
    (
        json.dumps({"id": "wt", "kind": "math", "prompt": 5, "answer": "1"}),
        ("prompt", "must be a string"),
    ),  # 5
    (json.dumps({"id": "bk", "kind": "essay", "prompt": "p"}), ("kind", "must be one of")),  # 6
    (
        json.dumps({"id": "m1", "kind": "math", "prompt": "again", "answer": "2"}),
        ("id", "first used on line 1"),
    ),  # 7
    (
        json.dumps(
            {
                "id": "bl",
                "kind": "choice",
                "prompt": "p",
                "choices": ["a", "b", "c", "d"],
                "answer": "E",
            }
        ),
        ("answer", "out of range"),
    ),  # 8
    (
        json.dumps(
            {"id": "oc", "kind": "choice", "prompt": "p", "choices": ["only"], "answer": "A"}
        ),
        ("choices", "between 2 and"),
    ),  # 9
    (
        json.dumps(
            {
                "id": "nc",
                "kind": "code",
                "prompt": "p",
                "tests": {"style": "humaneval", "entry_point": "f", "test": "assert f(1)"},
            }
        ),
        ("tests.test", "check(candidate)"),
    ),  # 10
    (
        json.dumps(
            {"id": "ec", "kind": "code", "prompt": "p", "tests": {"style": "stdio", "cases": []}}
        ),
        ("tests.cases", "non-empty"),
    ),  # 11
    (
        json.dumps({"id": "uf", "kind": "math", "prompt": "p", "anwser": "3"}),
        ("anwser", "unknown field"),
    ),  # 12
    (
        json.dumps({"id": "sp", "kind": "text", "prompt": "p", "answer": "x", "split": "dev"}),
        ("split", "must be one of"),
    ),  # 13
    ("", None),  # 14: blank, skipped
    (json.dumps({"id": "ma", "kind": "math", "prompt": "p"}), ("answer", "missing")),  # 15
    (
        json.dumps({"id": "ts", "kind": "code", "prompt": "p", "tests": {"style": "pytest"}}),
        ("tests.style", "'humaneval' or 'stdio'"),
    ),  # 16
    (
        json.dumps({"id": "", "kind": "math", "prompt": "p", "answer": "1"}),
        ("id", "must not be empty"),
    ),  # 17
    (
        json.dumps(
            {
                "id": "bc",
                "kind": "code",
                "prompt": "p",
                "tests": {"style": "stdio", "cases": [{"input": "1"}]},
            }
        ),
        ("tests.cases[0]", "input"),
    ),  # 18
    (json.dumps({"id": "ok2", "kind": "math", "prompt": "fine", "answer": 7}), None),  # 19: fine
    (
        json.dumps(
            {"id": "wa", "kind": "choice", "prompt": "p", "choices": ["a", "b"], "answer": 1}
        ),
        ("answer", "single option letter"),
    ),  # 20
]


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "bad.jsonl", [text for text, _ in BAD_LINES])


def test_every_problem_is_reported_with_its_line(bad_file: Path) -> None:
    with pytest.raises(SuiteValidationError) as caught:
        load_jsonl(bad_file)
    issues = caught.value.issues
    expected = {line: want for line, (_, want) in enumerate(BAD_LINES, start=1) if want is not None}
    reported = {}
    for issue in issues:
        reported.setdefault(issue.line, []).append(issue)
        assert issue.path == str(bad_file)
    assert set(reported) == set(expected), (sorted(reported), sorted(expected))
    for line, (field, fragment) in expected.items():
        assert any(i.field == field and fragment in i.message for i in reported[line]), (
            line,
            [str(i) for i in reported[line]],
        )
    text = str(caught.value)
    for line in expected:  # FILE:LINE: field: message, one per issue
        assert f"{bad_file}:{line}: " in text
    assert f"{bad_file}:7: id: duplicate id 'm1' (first used on line 1)" in text


def test_import_of_a_bad_file_writes_nothing(bad_file: Path, tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(SuiteValidationError):
        import_suite(bad_file, "mine", workspace)
    assert not (workspace.suites_dir / "mine.jsonl").exists()
    assert not workspace.suites_dir.exists() or list(workspace.suites_dir.iterdir()) == []


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteValidationError, match="does not exist"):
        load_jsonl(tmp_path / "nope.jsonl")


def test_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "empty.jsonl", ["", "  "])
    with pytest.raises(SuiteValidationError, match="no tasks"):
        load_jsonl(path)


def test_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"id": "\xe9"}\n')
    with pytest.raises(SuiteValidationError, match="UTF-8"):
        load_jsonl(path)


# ------------------------------------------------------------- hostile files (issue 18)


def test_a_line_separator_escape_survives_import(tmp_path: Path) -> None:
    # \u2028 escaped in the source file: json.dumps(ensure_ascii=False) used to write it raw
    # and str.splitlines split the task in two on re-read, leaving a broken copy behind.
    source = tmp_path / "sep.jsonl"
    record = {"id": "a", "kind": "text", "prompt": "one\u2028two\u2029three\x85four", "answer": "x"}
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert load_jsonl(source).get("a").prompt == record["prompt"]
    workspace = Workspace(tmp_path / "ws")
    suite = import_suite(source, "sep", workspace)
    stored = workspace.suites_dir / "sep.jsonl"
    assert suite.get("a").prompt == record["prompt"]
    assert stored.read_text(encoding="utf-8").splitlines() == [stored.read_text().rstrip("\n")]
    assert load_jsonl(stored).get("a").prompt == record["prompt"]


def test_a_raw_line_separator_inside_a_string_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "raw.jsonl"
    line = json.dumps({"id": "a", "kind": "text", "prompt": "p\u2028q", "answer": "x"})
    path.write_text(line.replace("\\u2028", "\u2028") + "\r\n", encoding="utf-8")
    assert load_jsonl(path).get("a").prompt == "p\u2028q"


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_text("\ufeff" + json.dumps(GOOD[0]) + "\n", encoding="utf-8")
    assert len(load_jsonl(path)) == 1


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"id": "a", "kind": "math", "prompt": "p", "answer": ' + "9" * 5000 + "}", "digits"),
        ('{"id": "a", "kind": "math", "prompt": "p", "answer": NaN}', "NaN is not a JSON number"),
        ('{"id": "a", "kind": "math", "prompt": "p", "answer": Infinity}', "Infinity"),
        ('{"id": "a", "kind": "math", "prompt": "p", "answer": -Infinity}', "-Infinity"),
        ('{"id": "a", "kind": "math", "prompt": "p", "answer": 1e400}', "too large"),
        ('{"id": "a", "kind": "text", "prompt": "\\ud800", "answer": "x"}', "surrogate"),
    ],
    ids=["deep", "digits", "nan", "inf", "-inf", "overflow", "surrogate"],
)
def test_hostile_values_are_errors_with_file_and_line(
    line: str, fragment: str, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "hostile.jsonl", [json.dumps(GOOD[0]), line])
    with pytest.raises(SuiteValidationError) as caught:
        load_jsonl(path)
    [issue] = caught.value.issues
    assert (issue.path, issue.line) == (str(path), 2) and fragment in issue.message
    assert f"{path}:2: " in str(caught.value)
    workspace = Workspace(tmp_path / "ws")
    with pytest.raises(SuiteValidationError):
        import_suite(path, "hostile", workspace)
    assert not workspace.suites_dir.exists() or list(workspace.suites_dir.iterdir()) == []


@pytest.mark.timeout(30)
def test_a_pipe_is_refused_instead_of_read_forever(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(SuiteValidationError, match="not a regular file"):
        load_jsonl(pipe)
