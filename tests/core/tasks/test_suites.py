"""Suites by name: bundled, imported into a workspace, and files; splits."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from workbench.core.tasks import (
    BUNDLED,
    SuiteNotFound,
    SuiteValidationError,
    import_suite,
    list_suites,
    load_suite,
)
from workbench.core.tasks.suites import SuiteImportError
from workbench.core.workspace import Workspace

TASKS = [
    {"id": "q1", "kind": "math", "prompt": "1+1?", "answer": "2"},
    {"id": "q2", "kind": "text", "prompt": "Sky colour?", "answer": "blue", "category": "facts"},
]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


@pytest.fixture
def suite_file(tmp_path: Path) -> Path:
    path = tmp_path / "my tasks.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in TASKS) + "\n", encoding="utf-8")
    return path


def test_humaneval_has_164_code_tasks() -> None:
    suite = load_suite("humaneval")
    assert len(suite) == 164
    assert {t.kind for t in suite.tasks} == {"code"}
    first = suite.get("HumanEval/0")
    assert (
        first.tests["style"] == "humaneval" and first.tests["entry_point"] == "has_close_elements"
    )
    assert "def check(" in first.tests["test"]
    assert first.solution.startswith(first.prompt)


def test_champ_has_270_math_tasks_with_categories() -> None:
    suite = load_suite("champ")
    assert len(suite) == 270
    assert {t.kind for t in suite.tasks} == {"math"}
    assert suite.counts()["category"] == {
        "Combinatorics": 40,
        "Inequality": 50,
        "Number-Theory": 80,
        "Polynomial": 50,
        "Sequence": 50,
    }
    task = suite.get("P_Combinatorics_2")
    assert task.answer == "C(10, 5), or equivalently 252"
    assert task.prompt.startswith("How many strings of length 5")


def test_generated_suites_are_bundled() -> None:
    assert len(load_suite("arithmetic")) >= 300
    assert len(load_suite("mixed")) >= 300


def test_loaded_suites_are_cached() -> None:
    assert load_suite("champ") is load_suite("champ")


def test_champ_is_converted_once_in_a_child_process_then_read_from_the_user_cache(
    tmp_path, monkeypatch
) -> None:
    from workbench.core.tasks import suites

    expected = load_suite("champ").tasks
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(suites, "_bundled", functools.cache(suites._bundled.__wrapped__))

    def not_here(target):
        raise AssertionError("CHAMP was converted in the caller's process")

    monkeypatch.setattr(suites, "write_champ_jsonl", not_here)  # the child process has the real one
    suite = load_suite("champ")
    cached = next((tmp_path / "cache" / "trinity-workbench" / "suites").glob("champ-v0-*.jsonl"))
    assert suite.tasks == expected and suite.name == "champ" and suite.version.startswith("v0 (")
    stamp = cached.stat().st_mtime_ns
    monkeypatch.setattr(suites, "_bundled", functools.cache(suites._bundled.__wrapped__))
    assert (
        load_suite("champ").tasks == expected and cached.stat().st_mtime_ns == stamp
    )  # read, not converted


def test_a_damaged_champ_cache_is_converted_again(tmp_path, monkeypatch, caplog) -> None:
    from workbench.core.tasks import suites

    expected = load_suite("champ").tasks
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cached = suites.suite_cache_dir() / f"champ-v0-{suites._version('champ-dataset')}.jsonl"
    cached.parent.mkdir(parents=True)
    cached.write_text('{"id": "P_1", "kind": "math"\n', encoding="utf-8")  # cut off mid-write
    assert suites.champ_suite().tasks == expected
    assert "is damaged" in caplog.text and len(cached.read_text().splitlines()) == 270


def test_unknown_name_lists_the_suites_and_how_to_import(workspace: Workspace) -> None:
    with pytest.raises(SuiteNotFound) as caught:
        load_suite("nonesuch", workspace)
    message = str(caught.value)
    assert "nonesuch" in message
    assert all(name in message for name in BUNDLED)
    assert "suites import" in message


def test_missing_path_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SuiteNotFound, match="does not exist"):
        load_suite(str(tmp_path / "absent.jsonl"))


def test_a_path_loads_the_file(suite_file: Path) -> None:
    suite = load_suite(str(suite_file))
    assert [t.id for t in suite.tasks] == ["q1", "q2"]


def test_an_edited_file_is_read_again(suite_file: Path) -> None:
    assert len(load_suite(str(suite_file))) == 2
    with suite_file.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "q3", "kind": "math", "prompt": "2+2?", "answer": "4"}) + "\n")
    assert len(load_suite(str(suite_file))) == 3


def test_import_then_load_by_name(suite_file: Path, workspace: Workspace) -> None:
    suite = import_suite(suite_file, "my-tasks_1", workspace)
    assert suite.name == "my-tasks_1" and len(suite) == 2
    assert (workspace.suites_dir / "my-tasks_1.jsonl").is_file()
    assert [p.name for p in workspace.suites_dir.iterdir()] == ["my-tasks_1.jsonl"]  # no temp left
    loaded = load_suite("my-tasks_1", workspace)
    assert loaded.tasks == suite.tasks
    infos = {info.name: info for info in list_suites(workspace)}
    assert [i.name for i in list_suites(workspace)][: len(BUNDLED)] == list(BUNDLED)
    assert infos["my-tasks_1"].source == "imported" and infos["my-tasks_1"].count == 2
    assert infos["humaneval"].source == "bundled" and infos["humaneval"].count == 164
    assert infos["champ"].count == 270


def test_import_refuses_to_overwrite_unless_asked(suite_file: Path, workspace: Workspace) -> None:
    import_suite(suite_file, "mine", workspace)
    with pytest.raises(FileExistsError, match="replace"):
        import_suite(suite_file, "mine", workspace)
    suite_file.write_text(json.dumps(TASKS[0]) + "\n", encoding="utf-8")
    assert len(import_suite(suite_file, "mine", workspace, replace=True)) == 1
    assert len(load_suite("mine", workspace)) == 1


@pytest.mark.parametrize("name", ["humaneval", "Mixed", "a b", "../evil", "", "x.jsonl", "ü"])
def test_import_refuses_bad_or_bundled_names(
    name: str, suite_file: Path, workspace: Workspace
) -> None:
    with pytest.raises(ValueError):
        import_suite(suite_file, name, workspace)
    assert not workspace.suites_dir.exists()


def test_a_broken_imported_file_is_listed_with_the_reason(workspace: Workspace) -> None:
    workspace.suites_dir.mkdir(parents=True)
    (workspace.suites_dir / "broken.jsonl").write_text("{not json\n", encoding="utf-8")
    infos = {info.name: info for info in list_suites(workspace)}
    assert infos["broken"].count == 0 and "cannot be loaded" in infos["broken"].description
    with pytest.raises(SuiteValidationError):
        load_suite("broken", workspace)


def test_splits_are_deterministic_disjoint_and_complete() -> None:
    suite = load_suite("mixed")
    first, again, other = suite.splits(seed=1), suite.splits(seed=1), suite.splits(seed=2)
    assert first == again
    assert first != other
    ids = [t.id for part in first.values() for t in part]
    assert len(ids) == len(set(ids)) == len(suite)
    assert {k: len(v) for k, v in first.items()} == {"train": 180, "validation": 60, "test": 60}


def test_splits_do_not_depend_on_file_order(tmp_path: Path) -> None:
    rows = [{"id": f"t{i}", "kind": "math", "prompt": "p", "answer": str(i)} for i in range(30)]
    forward, backward = tmp_path / "f.jsonl", tmp_path / "b.jsonl"
    forward.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    backward.write_text("\n".join(json.dumps(r) for r in reversed(rows)), encoding="utf-8")
    a, b = load_suite(str(forward)).splits(seed=3), load_suite(str(backward)).splits(seed=3)
    assert {k: [t.id for t in v] for k, v in a.items()} == {
        k: [t.id for t in v] for k, v in b.items()
    }


def test_a_long_name_and_a_bad_file_are_reported_together(
    tmp_path: Path, workspace: Workspace
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(SuiteValidationError) as caught:
        import_suite(bad, "x" * 300, workspace)
    text = str(caught.value)
    assert "300 characters long: use at most 64" in text and f"{bad}:1: not valid JSON" in text
    assert not workspace.suites_dir.exists()


@pytest.mark.parametrize("name", ["x" * 300, "con", "a/b", "nul"])
def test_a_bad_name_for_a_good_file_is_a_clear_error(
    name: str, suite_file: Path, workspace: Workspace
) -> None:
    with pytest.raises(SuiteValidationError, match="suite name"):
        import_suite(suite_file, name, workspace)
    assert not workspace.suites_dir.exists()


def test_an_unwritable_workspace_is_a_clear_error(suite_file: Path, workspace: Workspace) -> None:
    workspace.suites_dir.mkdir(parents=True)
    workspace.suites_dir.chmod(0o500)
    try:
        if os.access(workspace.suites_dir, os.W_OK):  # root ignores the mode: use a file
            workspace.suites_dir.chmod(0o700)
            workspace.suites_dir.rmdir()
            workspace.suites_dir.write_text("")  # a file where the folder should be
        with pytest.raises(SuiteImportError, match="nothing was imported"):
            import_suite(suite_file, "mine", workspace)
    finally:
        if workspace.suites_dir.is_dir():
            workspace.suites_dir.chmod(0o700)
