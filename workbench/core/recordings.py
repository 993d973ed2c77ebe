"""Recorded pools in a workspace: import (a JSONL file, the workspace's response cache, a
stored run), list, show, remove, and a pool's coverage of a suite.

The import format is JSONL, one recorded answer a line (docs/guides/recorded-pools.md):

* ``task_id`` (string): the id of a task of the pool's suite;
* ``worker`` (string of letters, digits, ``.``, ``_`` and ``-``): who answered; the pool's
  worker is then ``recorded:NAME/WORKER``;
* ``response`` (non-empty string): the answer as the model gave it;
* optional: ``role`` (``worker``, ``thinker`` or ``verifier``: the role it answered in),
  ``setting`` (a prompt setting, in words), ``model`` (the model, in words),
  ``tokens_in`` / ``tokens_out`` (whole numbers), ``cost`` (USD) and ``latency_s``
  (seconds), each at least 0, and ``meta`` (an object: what the answer's source said
  about it, such as MMLU-Pro's extracted letter; kept, never shown to a coordinator).

Validation is the suites' (``tasks/jsonl.py``): every problem of the file is reported at
once with its line number, and nothing is imported when there is any. Unknown fields,
a (task, worker) pair given twice and task ids the suite does not have are problems. A
task with no line for a worker is a miss (``NotRecorded``), not an error.

A pool is kept as ``records/NAME.jsonl`` (the answers, in this format) and
``records/NAME.json`` (format version, suite, source, import time, workers) in the
workspace; the provider (``workers/recorded.py``) reads them. Other formats (MMLU-Pro's
published outputs, lm-evaluation-harness samples) are converted to these records and
checked by the same functions (``workbench.core.importers``).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from workbench.core.errors import BadInput, FileEncodingError, read_text
from workbench.core.printable import shown_path
from workbench.core.protocol import Prompts, build_messages
from workbench.core.records import Role
from workbench.core.store import Store
from workbench.core.tasks.jsonl import (
    SuiteValidationError,
    ValidationIssue,
    dumps_line,
    issue_at,
    json_objects,
    split_lines,
)
from workbench.core.tasks.model import Task
from workbench.core.tasks.suites import load_suite
from workbench.core.workers.recorded import (
    CHAMP_MODELS,
    FORMAT_VERSION,
    RecordedPoolDamaged,
    Recording,
    champ_tables,
    imported_pool_names,
    load_recorded_pool,
    pool_paths,
)
from workbench.core.workspace import Workspace

FIELDS = (
    "task_id",
    "worker",
    "response",
    "role",
    "setting",
    "model",
    "tokens_in",
    "tokens_out",
    "cost",
    "latency_s",
    "meta",
)
BUILT_IN = ("champ",)
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_WORKER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ROLES = ("worker", "thinker", "verifier")
CHAMP_NOTES = (
    "recorded:champ names the four 0-shot workers; the -5shot workers are CHAMP's 5-shot "
    "setting, a different behaviour, named one by one",
    "left out: 'No C w/o H' (a byte-identical copy of 0-Shot) and the settings fed CHAMP's "
    "own solution steps or hints",
    "tokens are estimated (4 characters a token); prices are list prices of 2024-06-01",
)


class RecordsValidationError(SuiteValidationError):
    """A recorded-answers file (or a run or cache to import) that cannot be imported;
    ``issues`` lists every problem found, each with its line. Nothing was imported. Shown
    as a suite file's problems are (its summary, then the issues)."""

    def __init__(self, issues: Iterable[ValidationIssue], summary: str) -> None:
        super().__init__(issues, summary)


class RecordedPoolError(BadInput, ValueError):
    """A pool name that cannot be used (taken, built in, badly formed) or is not there."""


@dataclass(frozen=True, kw_only=True)
class WorkerCoverage:
    """One recorded worker's answers, and how many of a suite's tasks they cover."""

    worker_id: str
    model: str
    answers: int
    covered: int  # answers whose task is in the suite
    suite_tasks: int

    @property
    def share(self) -> float:
        return self.covered / self.suite_tasks if self.suite_tasks else 0.0


@dataclass(frozen=True, kw_only=True)
class PoolInfo:
    """A recorded pool as listings show it."""

    name: str
    source: str  # "built in", a file, "cache", "run RUN"
    suite: str
    created_at: float | None
    workers: tuple[WorkerCoverage, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = ()  # what an import left out, and why

    @property
    def answers(self) -> int:
        return sum(w.answers for w in self.workers)

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "workers": [{**asdict(w), "share": round(w.share, 4)} for w in self.workers],
        }


# --------------------------------------------------------------------------- validation


def parse_records(
    lines: Iterable[str],
    path: str,
    task_ids: set[str] | None,
    unknown: set[str] | None = None,
) -> tuple[list[Recording], list[ValidationIssue]]:
    """Validate recorded-answer lines; return the answers and every problem found.
    ``task_ids``: the suite's, to list unknown ids (None: not checked); ``unknown``
    collects those ids."""
    issues: list[ValidationIssue] = []
    records = check_records(json_objects(lines, path, issues), path, issues, task_ids, unknown)
    return records, issues


def check_records(
    objects: Iterable[tuple[int, dict[str, Any]]],
    path: str,
    issues: list[ValidationIssue],
    task_ids: set[str] | None,
    unknown: set[str] | None = None,
    unit: str = "",
) -> list[Recording]:
    """The answers among ``objects`` ((line or ``unit`` number, object) pairs, as
    ``tasks.jsonl.json_objects`` reads them), each problem added to ``issues``: the one
    check of a recorded answer, whatever file it came from."""
    records: list[Recording] = []
    first: dict[tuple[str, str], int] = {}
    for number, record in objects:
        found = _check(record, task_ids)
        task_id = record.get("task_id")
        if unknown is not None and task_ids is not None and isinstance(task_id, str):
            if task_id.strip() and task_id not in task_ids:
                unknown.add(task_id)
        pair = (record.get("task_id"), record.get("worker"))
        if not found and isinstance(pair[0], str) and isinstance(pair[1], str):
            key = (pair[0], pair[1])
            if key in first:
                found.append(
                    (
                        "worker",
                        f"a second answer of worker '{key[1]}' to task '{key[0]}' (first on "
                        f"{unit or 'line'} {first[key]}): keep one answer per task and worker",
                    )
                )
            else:
                first[key] = number
        if found:
            issues.extend(issue_at(path, number, f, m, unit) for f, m in found)
            continue
        records.append(_to_recording(record))
    return records


def _check(record: dict[str, Any], task_ids: set[str] | None) -> list[tuple[str | None, str]]:
    found: list[tuple[str | None, str]] = []
    for key in record:
        if key not in FIELDS:
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            found.append((key, f"unknown field ({hint}allowed: {', '.join(FIELDS)})"))
    for key in ("task_id", "worker", "response"):
        value = record.get(key)
        if key not in record:
            found.append((key, "missing"))
        elif not isinstance(value, str):
            found.append((key, f"must be a string, got {type(value).__name__}"))
        elif not value.strip():
            what = (
                "leave the line out: a task without an answer is a miss"
                if key == "response"
                else "give it"
            )
            found.append((key, f"must not be empty ({what})"))
    worker = record.get("worker")
    if isinstance(worker, str) and worker.strip() and not _WORKER.fullmatch(worker):
        found.append(
            (
                "worker",
                f"'{worker}' is not a worker name: use letters, digits, '.', '_' and '-' "
                "(at most 64, starting with a letter or digit)",
            )
        )
    task_id = record.get("task_id")
    if task_ids is not None and isinstance(task_id, str) and task_id.strip():
        if task_id not in task_ids:
            found.append(("task_id", f"unknown task id '{task_id}': the suite has no such task"))
    if "role" in record and record["role"] not in _ROLES:
        found.append(("role", f"must be one of {', '.join(_ROLES)}, got {record['role']!r}"))
    for key in ("setting", "model"):
        if key in record and not isinstance(record[key], str):
            found.append((key, f"must be a string, got {type(record[key]).__name__}"))
    for key in ("tokens_in", "tokens_out"):
        v = record.get(key)
        if key in record and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            found.append((key, f"must be a whole number of at least 0, got {v!r}"))
    for key in ("cost", "latency_s"):
        v = record.get(key)
        if key in record and (
            isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0
        ):
            found.append((key, f"must be a number of at least 0, got {v!r}"))
    if "meta" in record and not isinstance(record["meta"], dict):
        found.append(("meta", f"must be an object, got {type(record['meta']).__name__}"))
    return found


def _to_recording(record: dict[str, Any]) -> Recording:
    values = {k: record[k] for k in FIELDS if k in record}
    for key in ("cost", "latency_s"):
        if key in values:
            values[key] = float(values[key])
    return Recording(**values)


# --------------------------------------------------------------------------- names


def check_name(name: str, workspace: Workspace, *, replace: bool = False) -> None:
    """Refuse a pool name that is malformed, built in, or taken (unless ``replace``)."""
    if not _NAME.fullmatch(name):
        raise RecordedPoolError(
            f"'{name}' cannot name a recorded pool: use 1 to 64 letters, digits, '_' and '-'"
        )
    if name.lower() in BUILT_IN:
        raise RecordedPoolError(
            f"'{name}' is a built-in recorded pool: choose another name for the import"
        )
    if not replace and name in imported_pool_names(workspace):
        raise RecordedPoolError(
            f"a recorded pool named '{name}' is already imported: choose another name, pass "
            f"--replace, or remove it first with trinity-workbench records remove {name}"
        )


# --------------------------------------------------------------------------- imports


def import_file(
    workspace: Workspace,
    path: str | os.PathLike[str],
    name: str,
    suite: str,
    *,
    replace: bool = False,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> PoolInfo:
    """Validate the JSONL file at ``path`` against ``suite``'s task ids and keep it as the
    recorded pool ``name``; raises ``RecordsValidationError`` (every problem with its line,
    nothing imported) or ``RecordedPoolError``. ``prices``: worker -> (USD per million
    tokens in, out), for the answers that record no ``cost`` (without one they cost $0)."""
    check_name(name, workspace, replace=replace)
    file = Path(path)
    shown = shown_path(file, workspace.root)  # no user name or home layout in a message
    if not file.is_file():
        what = "does not exist" if not file.exists() else "is not a regular file"
        raise RecordsValidationError(
            [ValidationIssue(shown, 0, None, f"{what}: check the path")],
            summary=f"recorded-answers file {shown} {what}; nothing was imported",
        )
    try:
        text = read_text("recorded-answers file", file)
    except FileEncodingError as error:
        raise RecordsValidationError(
            [ValidationIssue(shown, error.line, None, str(error))],
            summary=f"{error}; nothing was imported",
        ) from None
    tasks = load_suite(suite, workspace)
    unknown: set[str] = set()
    records, issues = parse_records(split_lines(text), shown, {t.id for t in tasks.tasks}, unknown)
    if not records and not issues:
        issues.append(ValidationIssue(shown, 0, None, "the file holds no answers"))
    if issues:
        tail = f" ({len(unknown)} unknown task ids)" if unknown else ""
        raise RecordsValidationError(
            issues,
            summary=f"{len(issues)} problem(s) in {shown}{tail}; fix them and import it "
            "again: nothing was imported",
        )
    workers = {r.worker for r in records}
    for worker, (price_in, price_out) in (prices or {}).items():
        if worker not in workers:
            raise RecordedPoolError(
                f"--price {worker}=...: the file has no worker '{worker}'; its workers are "
                f"{', '.join(sorted(workers))}; nothing was imported"
            )
        if not all(math.isfinite(x) and x >= 0 for x in (price_in, price_out)):
            raise RecordedPoolError(
                f"--price {worker}={price_in},{price_out}: prices are USD per million tokens, "
                "0 or more; nothing was imported"
            )
    write_pool(workspace, name, tasks.name, f"file {file.name}", records, prices=prices)
    return show_pool(workspace, name)


def import_from_run(
    workspace: Workspace, run: str, name: str, *, replace: bool = False
) -> PoolInfo:
    """Keep the first answers a stored run's workers gave (a Worker turn whose prompt held
    only the task: no successful turn before it in its episode) as the recorded pool
    ``name``, one per task and worker, the earliest; simulated (sandbox) and recorded
    workers are left out, and the pool's notes say how many answers of each kind were."""
    check_name(name, workspace, replace=replace)
    with Store.open(workspace) as store:
        record = store.get_run(run)
        suite = record.config().tasks.suite
        kept: dict[tuple[str, str], Recording] = {}
        left: dict[str, int] = {}
        for summary in sorted(store.list_episodes(record.id), key=lambda e: e.created_at):
            episode = store.get_episode(summary.id)
            for turn in episode.turns:
                if turn.error is not None or not turn.messages:
                    continue
                if turn.role is Role.WORKER and turn.response.strip():
                    _keep(kept, left, episode.task_id, turn.worker, turn)
                break  # later turns saw earlier ones: not the model's plain answer
    if not kept:
        raise RecordsValidationError(
            [],
            summary=f"run {record.id[:8]} holds no first Worker answer of a real model "
            "(simulated and recorded workers are left out); nothing was imported",
        )
    records = [r for _, r in sorted(kept.items())]
    write_pool(workspace, name, suite, f"run {record.id}", records, _notes(left))
    return show_pool(workspace, name)


def _keep(
    kept: dict[tuple[str, str], Recording],
    left: dict[str, int],
    task_id: str,
    worker_id: str,
    turn: Any,
) -> None:
    if worker_id.startswith(("sandbox", "recorded")):
        why = "simulated" if worker_id.startswith("sandbox") else "already recorded"
        left[why] = left.get(why, 0) + 1
        return
    worker = worker_name(worker_id)
    if (task_id, worker) in kept:
        left["later answers to a task already kept"] = (
            left.get("later answers to a task already kept", 0) + 1
        )
        return
    kept[(task_id, worker)] = Recording(
        task_id=task_id,
        worker=worker,
        response=turn.response,
        role="worker",
        model=worker_id,
        tokens_in=turn.tokens_in,
        tokens_out=turn.tokens_out,
        cost=turn.cost,
        latency_s=turn.latency_s,
    )


def import_from_cache(
    workspace: Workspace,
    suite: str,
    name: str,
    *,
    prompts: str | Path | None = None,
    replace: bool = False,
) -> PoolInfo:
    """Keep the workspace's cached replies to ``suite``'s tasks as the recorded pool
    ``name``: a reply counts when its request is the Worker prompt of one task with
    nothing before it (``prompts``' Worker template, default the bundled one), so each
    is a model's plain answer to that task. The worker is the cached model's name; the
    earliest reply per task and model is kept; simulated (sandbox) replies are left out."""
    check_name(name, workspace, replace=replace)
    tasks = load_suite(suite, workspace)
    loaded = Prompts.load(prompts)
    by_prompt: dict[str, Task] = {}
    for task in tasks.tasks:
        (message,) = build_messages(loaded, Role.WORKER, task, [], None)
        by_prompt.setdefault(message["content"], task)
    kept: dict[tuple[str, str], Recording] = {}
    left: dict[str, int] = {}
    with Store.open(workspace) as store:
        rows = store.list_responses()
    for row in rows:
        messages = row["request"].get("messages") or []
        if len(messages) != 1 or messages[0].get("content") not in by_prompt:
            continue
        task = by_prompt[messages[0]["content"]]
        if row["provider"] == "sandbox":
            left["simulated"] = left.get("simulated", 0) + 1
            continue
        worker = worker_name(row["model"])
        if (task.id, worker) in kept:
            left["later replies to a task already kept"] = (
                left.get("later replies to a task already kept", 0) + 1
            )
            continue
        reply = row["response"]
        if not str(reply.get("text", "")).strip():
            continue
        kept[(task.id, worker)] = Recording(
            task_id=task.id,
            worker=worker,
            response=reply["text"],
            role="worker",
            model=f"{row['provider']}/{row['model']}",
            tokens_in=int(reply.get("tokens_in", 0)),
            tokens_out=int(reply.get("tokens_out", 0)),
            cost=float(reply.get("cost", 0.0)),
            latency_s=float(reply.get("latency_s", 0.0)),
        )
    if not kept:
        raise RecordsValidationError(
            [],
            summary=f"the response cache holds no reply to a Worker prompt of a task of "
            f"suite '{tasks.name}' ({len(rows)} cached replies looked at; simulated ones are "
            "left out); nothing was imported",
        )
    records = [r for _, r in sorted(kept.items())]
    write_pool(workspace, name, tasks.name, "cache", records, _notes(left))
    return show_pool(workspace, name)


def worker_name(worker_id: str) -> str:
    """A worker id or model name as a recorded worker's name (``openai:gpt-4o`` ->
    ``openai-gpt-4o``)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", worker_id).strip("-.") or "worker"
    return name[:64]


def _notes(left: dict[str, int]) -> tuple[str, ...]:
    return tuple(f"{n} {why} left out" for why, n in sorted(left.items()))


def write_pool(
    workspace: Workspace,
    name: str,
    suite: str,
    source: str,
    records: Sequence[Recording],
    notes: Sequence[str] = (),
    prices: Mapping[str, tuple[float, float]] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    before_commit: Callable[[], None] | None = None,
) -> None:
    """Keep ``records`` as the recorded pool ``name``. Both files are written to temporary
    names first (the answers one line at a time, ``progress(lines written)`` every
    ``PROGRESS_EVERY`` lines), then ``before_commit()`` runs (an import that writes its
    suite too), then they are moved in place (answers, then metadata: a pool exists once
    its metadata does). Nothing is left behind when any step fails."""
    folder = workspace.records_dir
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    answers, meta = pool_paths(workspace, name)
    workers = list(dict.fromkeys(r.worker for r in records))
    info = {
        "format": FORMAT_VERSION,
        "name": name,
        "suite": suite,
        "source": source,
        "created_at": time.time(),
        "workers": workers,
        "prices": {w: [float(i), float(o)] for w, (i, o) in (prices or {}).items()},
        "notes": list(notes),
    }
    written: list[Path] = []
    try:
        written.append(_temporary(folder, _answer_lines(records, progress)))
        written.append(_temporary(folder, [json.dumps(info, indent=2)]))
        if before_commit is not None:
            before_commit()
        os.replace(written[0], answers)
        os.replace(written[1], meta)
    finally:
        for path in written:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


PROGRESS_EVERY = 2000  # answers written between two progress reports
_RECORD_FIELDS = tuple(f.name for f in fields(Recording))


def _answer_lines(
    records: Sequence[Recording], progress: Callable[[int], None] | None
) -> Iterator[str]:
    if progress is not None:
        progress(0)
    for number, record in enumerate(records, 1):
        values = {k: v for k in _RECORD_FIELDS if (v := getattr(record, k)) is not None}
        yield dumps_line(values) + "\n"
        if progress is not None and (number % PROGRESS_EVERY == 0 or number == len(records)):
            progress(number)


def _temporary(folder: Path, pieces: Iterable[str]) -> Path:
    fd, name = tempfile.mkstemp(dir=folder, prefix=".import-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(pieces)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


# --------------------------------------------------------------------------- listings


def list_pools(workspace: Workspace, suite: str | None = None) -> list[PoolInfo]:
    """The built-in pool (CHAMP) and every pool imported into ``workspace``, each with its
    workers' coverage of its own suite (or of ``suite``)."""
    pools = []
    for name in (*BUILT_IN, *imported_pool_names(workspace)):
        try:
            pools.append(show_pool(workspace, name, suite))
        except RecordedPoolDamaged as error:  # one broken pool hides none of the others
            pools.append(
                PoolInfo(
                    name=name, source="damaged", suite="", created_at=None, notes=(str(error),)
                )
            )
    return pools


def show_pool(workspace: Workspace, name: str, suite: str | None = None) -> PoolInfo:
    """One recorded pool: its workers, answers per worker and coverage of its suite (or of
    ``suite``)."""
    if name == "champ":
        tables = {wid: t for wid, t in champ_tables().items()}
        models = {
            f"recorded:champ/{n}{s}": m
            for n, (m, _, _) in CHAMP_MODELS.items()
            for s in ("", "-5shot")
        }
        return _info(
            workspace,
            "champ",
            "built in (champ-dataset)",
            "champ",
            None,
            tables,
            models,
            CHAMP_NOTES,
            suite,
        )
    if name not in imported_pool_names(workspace):
        known = ", ".join([*BUILT_IN, *imported_pool_names(workspace)])
        raise RecordedPoolError(
            f"no recorded pool named '{name}' in workspace {shown_path(workspace.root)}: the "
            f"recorded pools are {known}"
        )
    pool = load_recorded_pool(workspace, name)
    meta = json.loads(pool_paths(workspace, name)[1].read_text(encoding="utf-8"))
    workers = pool.workers()
    return _info(
        workspace,
        name,
        pool.source,
        pool.suite,
        pool.created_at,
        {w.id: dict(w.table) for w in workers},
        {w.id: w.model for w in workers},
        tuple(meta.get("notes", ())),
        suite,
    )


def _info(
    workspace: Workspace,
    name: str,
    source: str,
    own_suite: str,
    created_at: float | None,
    tables: dict[str, dict[str, Recording]],
    models: dict[str, str],
    notes: tuple[str, ...],
    suite: str | None,
) -> PoolInfo:
    shown = suite or own_suite
    try:
        ids = {t.id for t in load_suite(shown, workspace).tasks}
    except BadInput:  # the suite was removed since: coverage unknown, the pool still shown
        ids = set()
    return PoolInfo(
        name=name,
        source=source,
        suite=shown,
        created_at=created_at,
        workers=tuple(
            WorkerCoverage(
                worker_id=wid,
                model=models.get(wid, ""),
                answers=len(t),
                covered=len(ids & set(t)),
                suite_tasks=len(ids),
            )
            for wid, t in tables.items()
        ),
        notes=notes,
    )


def remove_pool(workspace: Workspace, name: str) -> None:
    """Remove the imported recorded pool ``name`` (its two files)."""
    if name in BUILT_IN:
        raise RecordedPoolError(f"'{name}' is built in and cannot be removed")
    if name not in imported_pool_names(workspace):
        known = ", ".join(imported_pool_names(workspace)) or "none"
        raise RecordedPoolError(
            f"no imported recorded pool named '{name}' (imported: {known}): nothing removed"
        )
    answers, meta = pool_paths(workspace, name)
    meta.unlink()  # first: without its metadata the pool no longer exists
    answers.unlink(missing_ok=True)
