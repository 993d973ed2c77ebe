"""MMLU-Pro's published per-model outputs as a suite and a recorded pool.

MMLU-Pro's authors publish, for each model they evaluated, a zip
(``eval_results/model_outputs_<MODEL>_5shots.zip`` in github.com/TIGER-AI-Lab/MMLU-Pro)
holding one JSON list, one record per question: ``question_id``, ``question``,
``options``, ``answer`` (a letter), ``answer_index``, ``category``, ``src``, ``pred`` (the
letter their own extraction read, or null), ``cot_content`` and the model's chain of
thought as ``generated_text`` or ``model_outputs``. Each becomes:

- a choice task ``mmlu-pro-<question_id>``: the question as its prompt, the options as
  its choices, the answer letter, the category;
- the model's answer to it: the chain of thought as the response (graded by the choice
  grader like any answer), the model's name, and ``meta: {"pred": ...}``: their letter,
  kept to check our reading against, never shown to the coordinator.

Real files vary, and every variation seen is read: ``generated_text`` or
``model_outputs``; ``options`` as a list or as its Python repr (read with
``ast.literal_eval``, never evaluated); items of the list that are not question records
(skipped and counted); a question missing from one model's file (that worker's miss); an
empty answer (left out: a miss); a question whose options an older file cut short to one
(left out of that file with its answer, noted: a choice needs two; other files' full
version stays); an ``answer_index`` that disagrees with ``answer`` (the letter is kept, as
MMLU-Pro's own scoring compares ``pred`` with it). Everything else that cannot be read is
a problem named by its file, item and field.
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.core.importers.build import (
    KEEP_ALL,
    ImportOptions,
    ImportProgress,
    ModelFile,
    PoolBuilder,
    Progress,
    Question,
    check_names,
)
from workbench.core.recordings import PoolInfo, RecordedPoolError, worker_name
from workbench.core.tasks.jsonl import LETTERS, ValidationIssue, bad_text, issue_at
from workbench.core.workers.recorded import paused_cycle_collection
from workbench.core.workspace import Workspace

FORMAT = "mmlu-pro"
FILE_NAME = re.compile(r"model_outputs_(?P<model>.+?)_(?P<shots>\d+)shots?$")
RESPONSE_FIELDS = ("generated_text", "model_outputs")
IDENTITY_FIELDS = ("question", "options", "answer", "category")
FIELD_NAMES = {"id": "question_id", "prompt": "question", "choices": "options"}
SETTING = "MMLU-Pro 5-shot chain of thought"
TASK_PREFIX = "mmlu-pro-"
ZIP_MAGIC = b"PK\x03\x04"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def task_id(question_id: int | str) -> str:
    """The suite's task id of MMLU-Pro question ``question_id``."""
    return f"{TASK_PREFIX}{question_id}"


def model_of(path: Path) -> str:
    """The model a file is of, from its name (``model_outputs_<MODEL>_5shots.zip``), else
    the file's name without its suffix."""
    stem = path.name.removesuffix(".zip").removesuffix(".json")
    match = FILE_NAME.fullmatch(stem)
    return match.group("model") if match else stem


@paused_cycle_collection()
def import_mmlu_pro(
    workspace: Workspace,
    files: Sequence[tuple[str | None, str | Path]],
    name: str,
    options: ImportOptions = KEEP_ALL,
    *,
    progress: Progress | None = None,
) -> PoolInfo:
    """Import MMLU-Pro output files (``(worker or None, path)``: the worker is named after
    the model in the file's name unless given; a folder stands for every
    ``model_outputs_*.zip`` in it) as the suite ``name`` and the recorded pool ``name``,
    one worker per file. Every problem of every file is reported at once
    (``RecordsValidationError``: nothing imported)."""
    check_names(workspace, name, replace=options.replace)
    paths = []
    for given, path in files:  # a folder stands for the output files in it
        folder = Path(path)
        found = sorted(folder.glob("model_outputs_*.zip")) if folder.is_dir() else [folder]
        paths += [(given if len(found) == 1 else None, p) for p in found]
    if not paths:
        raise RecordedPoolError("give at least one MMLU-Pro output file; nothing was imported")
    workers = [worker_name(given or model_of(path)) for given, path in paths]
    twice = sorted({w for w in workers if workers.count(w) > 1})
    if twice:
        raise RecordedPoolError(
            f"two files would be the same worker {', '.join(twice)}: each model's file is one "
            "worker; leave one out, or name them with WORKER=FILE; nothing was imported"
        )
    builder = PoolBuilder(FORMAT, IDENTITY_FIELDS, FIELD_NAMES)
    for index, ((_, path), worker) in enumerate(zip(paths, workers, strict=True)):
        if progress is not None:
            progress(ImportProgress("read", index, len(paths), path.name))
        builder.add(read_file(path, worker))
    if progress is not None:
        progress(ImportProgress("read", len(paths), len(paths)))
    shown = ", ".join(p.name for _, p in paths[:3]) + (
        f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    )
    return builder.write(
        workspace,
        name,
        source=f"{FORMAT} ({shown})",
        options=options,
        progress=progress,
    )


def read_file(path: Path, worker: str | None = None) -> ModelFile:
    """One model's MMLU-Pro output file (a zip holding one JSON file, or that JSON file)
    as its questions and answers, and every problem found."""
    model = model_of(path)
    file = ModelFile(worker=worker or worker_name(model), shown=path.name)
    loaded = _load(path, file)
    if loaded is None:
        return file
    data, escapes = loaded
    if not isinstance(data, list):
        file.issues.append(
            ValidationIssue(
                file.shown, 0, None, f"expected a JSON list of records, got {_kind(data)}"
            )
        )
        return file
    stray: list[int] = []
    cut: list[str] = []  # questions of fewer than two options
    empty = 0
    has_response = any(isinstance(i, dict) and set(i) & set(RESPONSE_FIELDS) for i in data)
    if not has_response:
        file.issues.append(
            ValidationIssue(
                file.shown,
                0,
                None,
                f"no record holds {' or '.join(RESPONSE_FIELDS)}: not an MMLU-Pro model "
                "output file (give the model_outputs_<MODEL>_5shots.zip files)",
            )
        )
        return file
    for number, item in enumerate(data, 1):
        if not isinstance(item, dict) or "question_id" not in item:
            stray.append(number)
            continue
        question = _question(item, number, file)
        if question is None:
            continue
        if len(question.task["choices"]) < 2:
            cut.append(str(item["question_id"]))
            continue
        response = next((item[k] for k in RESPONSE_FIELDS if k in item), None)
        if escapes and (problem := bad_text([question.task, response])) is not None:
            file.issues.append(issue_at(file.shown, number, None, problem, "item"))
            continue
        file.questions.append(question)
        if response is None or (isinstance(response, str) and not response.strip()):
            empty += 1
            continue
        if not isinstance(response, str):
            field = next(k for k in RESPONSE_FIELDS if k in item)
            file.issues.append(
                issue_at(
                    file.shown, number, field, f"must be a string, got {_kind(response)}", "item"
                )
            )
            continue
        file.answers.append(
            (
                number,
                {
                    "task_id": question.task["id"],
                    "worker": file.worker,
                    "response": response,
                    "role": "worker",
                    "model": model,
                    "setting": SETTING,
                    "meta": {"pred": _pred(item.get("pred"))},
                },
            )
        )
    if not file.questions and not file.issues:
        file.issues.append(
            ValidationIssue(file.shown, 0, None, "holds no question records (with question_id)")
        )
    if stray:
        shown = ", ".join(str(n) for n in stray[:10]) + (" ..." if len(stray) > 10 else "")
        file.notes.append(
            f"{len(stray)} item(s) that are not question records skipped (items {shown})"
        )
    if empty:
        file.notes.append(f"{empty} empty answer(s) left out: misses")
    if cut:
        file.notes.append(
            f"{len(cut)} question(s) with fewer than two options left out, with their "
            f"answers (their options are cut short in this file; misses): question_id "
            f"{', '.join(cut)}"
        )
    return file


def _load(path: Path, file: ModelFile) -> tuple[Any, bool] | None:
    """The JSON a file holds (a zip's one JSON member) and whether its text escapes a
    surrogate (only then can a string hold half a pair: UTF-8 text itself cannot), or None
    with the problem noted."""

    def problem(message: str) -> None:
        file.issues.append(ValidationIssue(file.shown, 0, None, message))

    if not path.is_file():
        problem(("does not exist" if not path.exists() else "is not a file") + ": check the path")
        return None
    try:
        with path.open("rb") as handle:
            zipped = handle.read(4) == ZIP_MAGIC
        if zipped or path.suffix == ".zip":
            raw = _zip_member(path, problem)
            if raw is None:
                return None
        else:
            raw = path.read_bytes()
    except OSError as error:
        problem(f"cannot be read: {error.strerror or error}")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problem(f"is not UTF-8 text (byte {error.start}): give the file as published")
        return None
    del raw
    try:
        return json.loads(text), _SURROGATE_ESCAPE.search(text) is not None
    except json.JSONDecodeError as error:
        problem(f"is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})")
    except RecursionError:
        problem("is not valid JSON here: it is nested too deeply")
    return None


def _zip_member(path: Path, problem: Any) -> bytes | None:
    try:
        with zipfile.ZipFile(path) as archive:
            members = [
                m
                for m in archive.infolist()
                if not m.is_dir()
                and m.filename.endswith(".json")
                and not m.filename.startswith("__MACOSX/")
            ]
            if len(members) != 1:
                problem(
                    f"holds {len(members)} JSON files: an MMLU-Pro output zip holds one "
                    "(give the model_outputs_<MODEL>_5shots.zip as published)"
                )
                return None
            return archive.read(members[0])
    except zipfile.BadZipFile as error:
        problem(
            f"is not a complete zip file ({error}): a download cut short? Download it again "
            "(trinity-workbench records download MODEL)"
        )
    return None


def _question(item: dict[str, Any], number: int, file: ModelFile) -> Question | None:
    """The question an item holds, or None with each problem noted."""
    found: list[tuple[str, str]] = []
    qid = item["question_id"]
    if isinstance(qid, bool) or not isinstance(qid, int | str) or not str(qid).strip():
        found.append(("question_id", f"must be a number or a string, got {_kind(qid)}"))
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        found.append(("question", f"must be a non-empty string, got {_kind(question)}"))
    options = _options(item.get("options"), found)
    answer = item.get("answer")
    if (
        not isinstance(answer, str)
        or len(answer.strip()) != 1
        or answer.strip().upper() not in LETTERS
    ):
        found.append(("answer", f"must be an option letter, got {_kind(answer)}"))
    else:
        index = item.get("answer_index")
        expected = LETTERS.index(answer.strip().upper())
        if isinstance(index, int) and not isinstance(index, bool) and index != expected:
            # seen in the published files (question 3983 of the revised ones): the letter
            # is what MMLU-Pro's own scoring compares pred with, so it is the reference
            file.notes.append(
                f"item {number} (question_id {qid}): answer_index {index} disagrees with "
                f"answer {answer!r}; the letter is kept, as MMLU-Pro scores pred against it"
            )
    category = item.get("category")
    if category is not None and not isinstance(category, str):
        found.append(("category", f"must be a string, got {_kind(category)}"))
    if found:
        file.issues.extend(issue_at(file.shown, number, f, m, "item") for f, m in found)
        return None
    assert isinstance(question, str) and isinstance(answer, str) and options is not None
    task = {
        "id": task_id(str(qid).strip()),
        "kind": "choice",
        "prompt": question,
        "choices": options,
        "answer": answer,
    }
    if category:
        task["category"] = category
    return Question(
        number=number,
        label=f"question_id {qid}",
        task=task,
        identity=(question, tuple(options), answer, category),
    )


def _pred(value: Any) -> str | None:
    """MMLU-Pro's extracted letter as kept: a string or null (anything else as its text)."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _options(value: Any, found: list[tuple[str, str]]) -> list[str] | None:
    """The options as a list of strings: a JSON list, or a Python list's repr read with
    ``ast.literal_eval`` (never evaluated)."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            found.append(("options", "a string that is not a Python list of strings"))
            return None
    if not isinstance(value, list | tuple) or not all(isinstance(o, str) for o in value):
        found.append(("options", f"must be a list of strings, got {_kind(value)}"))
        return None
    return list(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value[:40]) + ("…" if len(value) > 40 else "")
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
