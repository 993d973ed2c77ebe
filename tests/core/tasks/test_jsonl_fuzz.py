"""Fuzzing the suite parser (issue 18): whatever a file holds, ``suites check`` and
``suites import`` answer with a ``SuiteValidationError`` naming file and line, or load it;
never a traceback. A file that loads is imported unchanged.

Hypothesis generates the inputs; examples are bounded so that the module runs in seconds.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.core.tasks import SuiteValidationError, import_suite, load_jsonl, write_jsonl
from workbench.core.tasks.jsonl import FIELDS, parse_lines, split_lines
from workbench.core.tasks.model import Suite
from workbench.core.workspace import Workspace

FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# every code point, lone surrogates and line breaks of every kind included
any_text = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF))
scalars = st.none() | st.booleans() | st.integers() | st.floats() | any_text
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(FIELDS) | any_text
task_like = st.dictionaries(field_names, json_values, max_size=8) | st.fixed_dictionaries(
    {
        "id": any_text,
        "kind": st.sampled_from(["math", "text", "choice", "code", "other"]),
        "prompt": any_text,
    },
    optional={
        "answer": scalars,
        "choices": st.lists(any_text, max_size=30),
        "tests": json_values,
        "split": any_text,
        "category": json_values,
    },
)


def _line(value) -> str:
    """A JSON line as a careless tool might write it: NaN allowed, ASCII or not."""
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def _parses_or_reports(lines: list[str]) -> None:
    tasks, issues = parse_lines(lines, "fuzz.jsonl")
    for issue in issues:
        assert issue.path == "fuzz.jsonl" and 1 <= issue.line <= len(lines)
        assert issue.message
        assert str(issue).startswith(f"fuzz.jsonl:{issue.line}: ")
    assert len(tasks) <= len(lines)


@FUZZ
@given(st.lists(any_text, max_size=6))
def test_any_text_lines_parse_or_are_reported(lines: list[str]) -> None:
    _parses_or_reports(lines)


@FUZZ
@given(st.lists(task_like.map(_line), min_size=1, max_size=6))
def test_any_json_objects_parse_or_are_reported(lines: list[str]) -> None:
    _parses_or_reports(lines)


@settings(FUZZ, max_examples=60)
@given(st.binary(max_size=400))
def test_any_bytes_in_a_file_load_or_raise_the_validation_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.jsonl"
        path.write_bytes(data)
        try:
            load_jsonl(path)
        except SuiteValidationError as error:
            assert error.issues and str(path) in str(error)


valid_text = st.text(
    st.characters(codec="utf-8", min_codepoint=0, max_codepoint=0x10FFFF), min_size=1
).filter(str.strip)
valid_tasks = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"kind": st.sampled_from(["math", "text"]), "prompt": valid_text, "answer": valid_text}
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("choice"),
                "prompt": valid_text,
                "choices": st.lists(st.text(), min_size=2, max_size=4),
                "answer": st.sampled_from("AB"),
            }
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("code"),
                "prompt": valid_text,
                "tests": st.fixed_dictionaries(
                    {
                        "style": st.just("stdio"),
                        "cases": st.lists(
                            st.fixed_dictionaries({"input": st.text(), "output": st.text()}),
                            min_size=1,
                            max_size=2,
                        ),
                    }
                ),
            }
        ),
    ),
    min_size=1,
    max_size=4,
)


@settings(FUZZ, max_examples=40)
@given(valid_tasks, st.booleans())
def test_a_file_that_passes_check_is_imported_unchanged(records, ascii_only: bool) -> None:
    lines = [
        json.dumps({"id": f"t{i}", **record}, ensure_ascii=ascii_only)
        for i, record in enumerate(records)
    ]
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "fuzz.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        checked = load_jsonl(source)  # what `suites check` accepts
        imported = import_suite(source, "fuzz", Workspace(Path(folder) / "ws"))
        assert imported.tasks == checked.tasks
        again = write_jsonl(Suite(name="copy", tasks=checked.tasks), Path(folder) / "copy.jsonl")
        text = again.read_text(encoding="utf-8")
        # one task per line for any reader, including str.splitlines
        assert len(text.splitlines()) == len(split_lines(text)) == len(records)
        assert load_jsonl(again).tasks == checked.tasks


@settings(max_examples=25, deadline=None)
@given(st.lists(task_like.map(_line), min_size=1, max_size=3), any_text)
def test_the_cli_check_and_import_never_give_a_traceback(lines: list[str], name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "fuzz.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        workspace = str(Path(folder) / "ws")
        assert main(["suites", "check", str(source), "--workspace", workspace]) in (0, 2)
        code = main(["suites", "import", str(source), f"--name={name}", "--workspace", workspace])
        assert code in (0, 2)
        stored = Path(workspace) / "suites"
        if code == 2 and stored.is_dir():  # nothing half-written is left behind
            assert not [p for p in stored.iterdir() if p.suffix == ".tmp"]
