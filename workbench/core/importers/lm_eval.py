"""lm-evaluation-harness ``--log_samples`` files as a suite and a recorded pool.

The harness writes, for each model (a folder named after it, ``/`` written ``__``) and
each task, ``samples_<task>_<date>.jsonl``: one line per document and filter, with
``doc_id``, ``doc``, ``target`` (a string), ``arguments`` (``{"gen_args_0": {"arg_0":
context, "arg_1": ...}, ...}``, one entry per request), ``resps`` (per request, the
model's outputs), ``filtered_resps`` (per request, after the filter), ``filter``,
``metrics`` (the metric names) and each metric's value for this document. Each model
folder becomes one worker, each document a task ``<task>-<doc_id>`` of category
``<task>``, its prompt the context the harness gave the model (``arg_0``):

- **generate_until** (one request, the generation settings as ``arg_1``): the response
  is the generated text as the model wrote it (``resps``, before any filter), graded by
  the workbench's own graders. The task's kind comes from the document and the target:
  a one-letter target with the options in the document (``choices`` or ``options`` as a
  list, or ARC's ``{"text": [...], "label": [...]}``) is a choice task; a target that is
  a number (after GSM8K's ``####`` marker, thousands commas dropped) is a math task with
  that number as its answer; any other target is a text task (exact after
  normalisation), a list of references (TriviaQA's aliases) by its first.
- **multiple_choice** (one loglikelihood request per option, ``arg_1`` the option): a
  choice task whose options are the continuations (their leading space dropped) and whose
  answer is the target (an index, or an option's text, or a letter). The model's answer
  is the option of highest loglikelihood, the first on a tie (what the harness's ``acc``
  scores); its response is ``Answer: <letter>``.

Each answer keeps ``meta``: the task, the harness's per-sample metrics per filter (and
for a generation, the filtered answer; for multiple choice, the loglikelihoods), so that
agreement with the harness can be checked. Other output types (one loglikelihood,
rolling perplexity, one context per option) cannot be a question with an answer and are
refused, naming the file.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.core.errors import FileEncodingError, read_text
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
from workbench.core.tasks.jsonl import LETTERS, ValidationIssue, json_objects, split_lines
from workbench.core.workers.recorded import paused_cycle_collection
from workbench.core.workspace import Workspace

FORMAT = "lm-eval"
FILE_NAME = re.compile(r"samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.:-]+)\.jsonl")
IDENTITY_FIELDS = ("doc", "target")
SETTING = "lm-evaluation-harness"
_STANDARD = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def task_of(path: Path) -> str:
    """The harness task a samples file is of, from its name."""
    match = FILE_NAME.fullmatch(path.name)
    return match.group("task") if match else path.stem.removeprefix("samples_")


def sample_files(paths: Sequence[tuple[str | None, Path]]) -> list[tuple[str, Path]]:
    """(worker, file) for each samples file given, a folder standing for every
    ``samples_*.jsonl`` under it; the worker is the name given, else the file's folder
    (the harness names it after the model)."""
    out = []
    for given, path in paths:
        files = sorted(path.rglob("samples_*.jsonl")) if path.is_dir() else [path]
        out += [(worker_name(given or file.parent.name or "model"), file) for file in files]
    return out


@paused_cycle_collection()
def import_lm_eval(
    workspace: Workspace,
    files: Sequence[tuple[str | None, str | Path]],
    name: str,
    options: ImportOptions = KEEP_ALL,
    *,
    progress: Progress | None = None,
) -> PoolInfo:
    """Import lm-evaluation-harness samples files (or folders of them) as the suite
    ``name`` and the recorded pool ``name``: one worker per model folder (or per name
    given as ``(worker, path)``). Every problem is reported at once
    (``RecordsValidationError``: nothing imported)."""
    check_names(workspace, name, replace=options.replace)
    found = sample_files([(given, Path(path)) for given, path in files])
    if not found:
        raise RecordedPoolError(
            "no samples_<task>_<date>.jsonl file among the paths given (lm-evaluation-harness "
            "writes them with --log_samples); nothing was imported"
        )
    seen: dict[tuple[str, str], Path] = {}
    for worker, path in found:
        first = seen.setdefault((worker, task_of(path)), path)
        if first != path:
            raise RecordedPoolError(
                f"two samples files of task '{task_of(path)}' for worker '{worker}': "
                f"{first.name} and {path.name} (two runs): give one of them; nothing was "
                "imported"
            )
    builder = PoolBuilder(FORMAT, IDENTITY_FIELDS)
    for index, (worker, path) in enumerate(found):
        if progress is not None:
            progress(ImportProgress("read", index, len(found), path.name))
        builder.add(read_file(path, worker))
    if progress is not None:
        progress(ImportProgress("read", len(found), len(found)))
    workers = sorted({w for w, _ in found})
    return builder.write(
        workspace,
        name,
        source=f"{FORMAT} ({len(found)} file(s) of {', '.join(workers)})",
        options=options,
        progress=progress,
    )


def read_file(path: Path, worker: str) -> ModelFile:
    """One samples file as its questions and answers, and every problem found."""
    task = task_of(path)
    file = ModelFile(worker=worker, shown=f"{path.parent.name}/{path.name}", unit="")
    if not path.is_file():
        what = "does not exist" if not path.exists() else "is not a file"
        file.issues.append(ValidationIssue(file.shown, 0, None, f"{what}: check the path"))
        return file
    try:
        text = read_text("samples file", path)
    except FileEncodingError as error:
        file.issues.append(ValidationIssue(file.shown, error.line, None, str(error)))
        return file
    answers: dict[Any, dict[str, Any]] = {}  # doc_id -> the answer, for later filters
    first: dict[tuple[Any, str], int] = {}
    docs: set[Any] = set()
    unsupported: list[tuple[int, str]] = []
    for number, sample in json_objects(split_lines(text), file.shown, file.issues):
        problems: list[tuple[str | None, str]] = []
        parsed = _sample(sample, task, problems)
        if parsed is None:
            if problems and problems[0][0] == "output type":
                unsupported.append((number, problems[0][1]))
            else:
                file.issues += [ValidationIssue(file.shown, number, f, m) for f, m in problems]
            continue
        doc_id, filter_name, question, response, meta = parsed
        key = (doc_id, filter_name)
        if key in first:
            file.issues.append(
                ValidationIssue(
                    file.shown,
                    number,
                    "doc_id",
                    f"doc {doc_id!r} appears twice for filter '{filter_name}' (first on line "
                    f"{first[key]}): keep one line per document and filter",
                )
            )
            continue
        first[key] = number
        if doc_id in docs:  # the same document under another filter: its metrics
            earlier = answers.get(doc_id)
            for name in ("metrics", "filtered"):
                if earlier is not None and name in meta:
                    earlier["meta"].setdefault(name, {}).update(meta[name])
            continue
        docs.add(doc_id)
        file.questions.append(Question(number, f"{task} doc {doc_id}", *question))
        if response.strip():
            answers[doc_id] = answer = {
                "task_id": question[0]["id"],
                "worker": worker,
                "response": response,
                "role": "worker",
                "model": path.parent.name.replace("__", "/"),
                "setting": SETTING,
                "meta": meta,
            }
            file.answers.append((number, answer))
    if unsupported:
        if not file.questions:
            file.issues.append(ValidationIssue(file.shown, 0, None, unsupported[0][1]))
        else:
            file.issues += [ValidationIssue(file.shown, n, None, m) for n, m in unsupported]
    empty = len(file.questions) - len(file.answers)
    if empty:
        file.notes.append(f"{empty} empty generation(s) left out: misses")
    if not file.questions and not file.issues:
        file.issues.append(ValidationIssue(file.shown, 0, None, "holds no samples"))
    return file


def _sample(
    sample: dict[str, Any], task: str, problems: list[tuple[str | None, str]]
) -> tuple[Any, str, tuple[dict[str, Any], tuple[Any, ...]], str, dict[str, Any]] | None:
    """(doc id, filter, (task, identity), response, meta) of one sample line."""
    for key in ("doc_id", "doc", "target", "arguments", "resps", "filtered_resps"):
        if key not in sample:
            problems.append((key, "missing: not a line of a --log_samples file"))
    if problems:
        return None
    doc_id, doc, target = sample["doc_id"], sample["doc"], sample["target"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, int | str):
        problems.append(("doc_id", f"must be a number or a string, got {doc_id!r}"))
    if not isinstance(doc, dict):
        problems.append(("doc", "must be an object"))
    requests = _requests(sample["arguments"], problems)
    if problems or requests is None:
        return None
    target_text = target if isinstance(target, str) else json.dumps(target)
    filter_name = str(sample.get("filter", "none"))
    meta: dict[str, Any] = {"task": task, "metrics": {filter_name: _metrics(sample)}}
    task_id = f"{task}-{doc_id}"
    base = {"id": task_id, "prompt": requests[0][0], "category": task}
    identity = (json.dumps(doc, sort_keys=True), target_text)
    if len(requests) >= 2 and all(len(r) >= 2 and isinstance(r[1], str) for r in requests):
        if len({r[0] for r in requests}) > 1:
            problems.append(
                (
                    "output type",
                    f"task '{task}' gives each option its own context (a multiple-input task): "
                    "it has no one question to route; leave this file out",
                )
            )
            return None
        picked = _multiple_choice(sample, requests, target_text, base, meta, problems)
        if picked is None:
            return None
        choice, pick = picked
        return doc_id, filter_name, (choice, identity), f"Answer: {LETTERS[pick]}", meta
    if len(requests) == 1 and len(requests[0]) >= 2 and isinstance(requests[0][1], dict):
        text = _generation(sample["resps"], problems)
        if text is None:
            return None
        filtered = sample["filtered_resps"]
        if isinstance(filtered, list) and filtered and isinstance(filtered[0], str):
            meta["filtered"] = {filter_name: filtered[0]}
        return doc_id, filter_name, (_generated_task(doc, target_text, base), identity), text, meta
    problems.append(
        (
            "output type",
            f"task '{task}' is neither a generation (generate_until) nor a multiple-choice "
            "task (one loglikelihood per option): a perplexity or single-continuation score "
            "is no answer a worker gives; leave this file out",
        )
    )
    return None


def _requests(arguments: Any, problems: list[tuple[str | None, str]]) -> list[list[Any]] | None:
    """The requests' arguments in order: ``{"gen_args_0": {"arg_0": ...}}`` as written by
    the harness's samples logger, or a list of argument lists."""
    if isinstance(arguments, dict):
        try:
            ordered = sorted(arguments.items(), key=lambda kv: int(kv[0].rsplit("_", 1)[1]))
            requests = [
                [args[k] for k in sorted(args, key=lambda a: int(a.rsplit("_", 1)[1]))]
                for _, args in ordered
            ]
        except (ValueError, IndexError, AttributeError, TypeError):
            requests = None
    elif isinstance(arguments, list) and all(isinstance(a, list) for a in arguments):
        requests = arguments
    else:
        requests = None
    if not requests or not all(r and isinstance(r[0], str) and r[0].strip() for r in requests):
        problems.append(
            ("arguments", 'must list each request\'s arguments ({"gen_args_0": {"arg_0": ...}})')
        )
        return None
    return requests


def _metrics(sample: dict[str, Any]) -> dict[str, Any]:
    names = sample.get("metrics")
    if not isinstance(names, list):
        names = [k for k in sample if k not in _STANDARD]
    return {
        n: sample[n]
        for n in names
        if isinstance(n, str) and isinstance(sample.get(n), int | float | bool | str)
    }


def _multiple_choice(
    sample: dict[str, Any],
    requests: list[list[Any]],
    target: str,
    base: dict[str, Any],
    meta: dict[str, Any],
    problems: list[tuple[str | None, str]],
) -> tuple[dict[str, Any], int] | None:
    """The choice task of a multiple-choice sample and the option the model scored
    highest (the first of equal scores, as the harness's ``acc`` reads it)."""
    choices = [r[1][1:] if r[1].startswith(" ") else r[1] for r in requests]
    scores = []
    for index, response in enumerate(sample["filtered_resps"] or []):
        pair = response[0] if isinstance(response, list) and len(response) == 1 else response
        try:
            scores.append(float(pair[0]))
        except (TypeError, ValueError, IndexError, KeyError):
            problems.append(
                ("filtered_resps", f"entry {index} is not a (loglikelihood, is_greedy) pair")
            )
            return None
    if len(scores) != len(choices):
        problems.append(
            ("filtered_resps", f"{len(scores)} scores for {len(choices)} options: one per option")
        )
        return None
    gold = _gold(target, choices)
    if gold is None:
        problems.append(("target", f"{target!r} is neither an option's index, text nor letter"))
        return None
    pick = max(range(len(scores)), key=lambda i: (scores[i], -i))
    meta["loglikelihoods"] = scores
    return {**base, "kind": "choice", "choices": choices, "answer": LETTERS[gold]}, pick


def _gold(target: str, choices: list[str]) -> int | None:
    text = target.strip()
    if text.isdigit() and int(text) < len(choices):
        return int(text)
    stripped = [c.strip() for c in choices]
    if text in stripped:
        return stripped.index(text)
    if len(text) == 1 and text.upper() in LETTERS[: len(choices)]:
        return LETTERS.index(text.upper())
    return None


def _generation(resps: Any, problems: list[tuple[str | None, str]]) -> str | None:
    """The generated text: the first output of the only request."""
    try:
        text = resps[0][0]
    except (TypeError, IndexError, KeyError):
        text = None
    if not isinstance(text, str):
        problems.append(("resps", "must hold the generated text ([[text]])"))
        return None
    return text


def _generated_task(doc: dict[str, Any], target: str, base: dict[str, Any]) -> dict[str, Any]:
    """A generation's task: choice, math or text by its document and target (the module's
    docstring gives the rules)."""
    letter = target.strip().strip("()").strip()
    options = _doc_options(doc)
    if len(letter) == 1 and letter.upper() in LETTERS and options is not None:
        texts, labels = options
        if letter.upper() in labels:
            return {
                **base,
                "kind": "choice",
                "choices": texts,
                "answer": LETTERS[labels.index(letter.upper())],
            }
    final = target.rsplit("####", 1)[-1].strip().replace(",", "")
    if _NUMBER.fullmatch(final):
        return {**base, "kind": "math", "answer": final}
    return {**base, "kind": "text", "answer": _first_reference(target)}


def _first_reference(target: str) -> str:
    """A target the harness wrote as a list's repr (several references, as TriviaQA's
    aliases): its first item, read with ``ast.literal_eval`` (never evaluated)."""
    if target.startswith("[") and target.endswith("]"):
        try:
            value = ast.literal_eval(target)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return target
        if isinstance(value, list) and value and isinstance(value[0], str) and value[0].strip():
            return value[0]
    return target


def _doc_options(doc: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """(option texts, their letters) a document lists, if it lists them."""
    for key in ("choices", "options"):
        value = doc.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value, list(LETTERS[: len(value)])
        if isinstance(value, dict):
            texts, labels = value.get("text"), value.get("label")
            if (
                isinstance(texts, list)
                and isinstance(labels, list)
                and len(texts) == len(labels)
                and all(isinstance(v, str) for v in texts + labels)
            ):
                return texts, [str(label).upper() for label in labels]
    return None
