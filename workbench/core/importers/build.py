"""What the importers share: many models' files, read by a format's reader into
``ModelFile``s, become one suite and one recorded pool of the same name.

- **The same questions.** A question (one task id) read from several files must be the
  same in each (the fields a format names in ``identity_fields``: for MMLU-Pro the
  question's text, its options, its answer and its category). Every difference of every
  question is reported at once; with ``drop_mismatched`` such questions are left out of
  the suite and of every worker instead, and the pool's notes list them.
- **One suite, however many models.** Its tasks are the questions of all the files; a
  question one file lacks is that worker's miss (``NotRecorded`` when asked), not an
  error.
- **A seeded split, stratified by category**: in each category, in task-id order
  shuffled with ``split_seed``, the first 60% train, the next 20% validation, the rest
  test (``SPLIT_SHARES``). Cross-validation ignores it and uses every task.
- **One validation path.** The tasks go through the suite format's check
  (``tasks.jsonl.check_tasks``) and the answers through the recorded answers' check
  (``recordings.check_records``), each problem named by its file and item (or line); with
  any problem, nothing is written.
- **Written once, with progress**: the answers are streamed to the pool's file; the
  suite is written and read back before the pool's files are moved in place.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.recordings import (
    PoolInfo,
    RecordedPoolError,
    RecordsValidationError,
    check_name,
    check_records,
    show_pool,
    write_pool,
)
from workbench.core.tasks.jsonl import ValidationIssue, check_tasks, issue_at
from workbench.core.tasks.model import SPLITS, Suite
from workbench.core.tasks.suites import imported_path, name_problems, save_suite
from workbench.core.workspace import Workspace

SPLIT_SHARES = (0.6, 0.2, 0.2)  # train, validation, test: in each category
MAX_IDS_IN_NOTE = 20


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """What an import keeps, the same for every format (``records import``'s options):
    ``drop_mismatched`` leaves out the questions whose files differ instead of refusing
    them; ``common_only`` keeps only the questions every file answers; ``sample`` N keeps
    a seeded share of each category adding up to N questions (0: all); ``split_seed``
    seeds the sample and the train / validation / test split; ``replace`` lets the import
    replace an imported suite and pool of the same name."""

    drop_mismatched: bool = False
    common_only: bool = False
    sample: int = 0
    split_seed: int = 0
    replace: bool = False


KEEP_ALL = ImportOptions()  # the default: every question, split with seed 0, nothing replaced


@dataclass(frozen=True)
class ImportProgress:
    """How far an import is: ``stage`` ``read`` (``done`` of ``total`` files read, ``item``
    the file being read), ``check`` (every question and answer checked), ``write``
    (``done`` of ``total`` answers written) or ``suite`` (the suite being written and read
    back)."""

    stage: str
    done: int
    total: int
    item: str = ""


Progress = Callable[[ImportProgress], None]


@dataclass(frozen=True)
class Question:
    """One question as a file holds it: where (its line or item number), its label in
    messages (``question_id 143``), the suite task it becomes (no split yet) and the values
    that must be the same in every file (``PoolBuilder.identity_fields``, in order)."""

    number: int
    label: str
    task: dict[str, Any]
    identity: tuple[Any, ...]


@dataclass(kw_only=True)
class ModelFile:
    """One model's file as a reader made it: its worker, questions, answers (objects of
    the recorded answers' format, with their line or item number), the problems found
    while reading and what was left out (notes). A reader checks that its objects hold
    storable text (``tasks.jsonl.bad_text``: no half surrogate pair, no infinite number),
    as the JSONL line reader does."""

    worker: str
    shown: str  # the file, as messages name it
    unit: str = "item"  # what the numbers count: "item" (in a JSON list) or "" (lines)
    questions: list[Question] = field(default_factory=list)
    answers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    issues: list[ValidationIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_names(workspace: Workspace, name: str, *, replace: bool) -> None:
    """Refuse ``name`` for an import that makes both a suite and a recorded pool of that
    name: every reason at once, before any file is read."""
    try:
        check_name(name, workspace, replace=replace)
    except RecordedPoolError as error:
        problems = [str(error)]
    else:
        problems = []
    problems += [
        p if p.startswith("'") else f"suite name '{name}' {p}" for p in name_problems(name) if name
    ]
    if not replace and imported_path(name, workspace).exists() and not problems:
        problems.append(
            f"an imported suite named '{name}' already exists: choose another name, or pass "
            "--replace to replace the suite and the pool of that name"
        )
    if problems:
        raise RecordedPoolError("; ".join(problems) + "; nothing was imported")


class PoolBuilder:
    """Merges ``ModelFile``s (``add``, one at a time, so that only one file's raw data is
    in memory), then checks and writes the suite and the pool (``write``)."""

    def __init__(
        self,
        importer: str,
        identity_fields: Sequence[str],
        field_names: dict[str, str] | None = None,
    ):
        self.importer = importer
        self.identity_fields = tuple(identity_fields)
        # a suite field as the format names it, for messages (choices -> options)
        self.field_names = field_names or {}
        self.tasks: dict[str, dict[str, Any]] = {}  # first seen, in order
        self.where: dict[str, tuple[str, int, str, str]] = {}  # file, number, unit, label
        self.versions: dict[str, dict[tuple[Any, ...], list[str]]] = {}
        self.files: list[ModelFile] = []
        self.issues: list[ValidationIssue] = []
        self.notes: list[str] = []

    def add(self, file: ModelFile) -> None:
        """Take one file's questions (compared with those already seen) and answers."""
        self.issues.extend(file.issues)
        self.notes.extend(f"{file.shown}: {note}" for note in file.notes)
        for question in file.questions:
            task_id = question.task["id"]
            versions = self.versions.get(task_id)
            if versions is None:
                self.tasks[task_id] = question.task
                self.where[task_id] = (file.shown, question.number, file.unit, question.label)
                self.versions[task_id] = {question.identity: [file.shown]}
            else:
                versions.setdefault(question.identity, []).append(file.shown)
        file.questions = []  # they live in self.tasks now
        self.files.append(file)

    def mismatches(self) -> dict[str, list[ValidationIssue]]:
        """Per task id whose files disagree: one issue per field that differs, naming the
        values and the files that hold each."""
        out: dict[str, list[ValidationIssue]] = {}
        for task_id, versions in self.versions.items():
            if len(versions) < 2:
                continue
            label = self.where[task_id][3]
            found = []
            for index, name in enumerate(self.identity_fields):
                values: dict[str, list[str]] = defaultdict(list)
                shown: dict[str, Any] = {}
                for identity, files in versions.items():
                    key = repr(identity[index])
                    values[key] += files
                    shown[key] = identity[index]
                if len(values) > 1:
                    parts = _differing(list(shown.values()))
                    found.append(
                        ValidationIssue(
                            label,
                            0,
                            name,
                            "differs between the files: "
                            + "; ".join(
                                f"{part} in {', '.join(values[key])}"
                                for key, part in zip(shown, parts, strict=True)
                            ),
                        )
                    )
            out[task_id] = found
        return out

    def write(
        self,
        workspace: Workspace,
        name: str,
        *,
        source: str,
        options: ImportOptions = KEEP_ALL,
        progress: Progress | None = None,
    ) -> PoolInfo:
        """Check everything (every problem at once: ``RecordsValidationError``, nothing
        written), then keep the suite ``name`` and the recorded pool ``name``, with what
        ``options`` keeps (``common_only``: every model compared on the same questions)."""
        if progress is not None:
            progress(ImportProgress("check", 0, 1))
        issues = list(self.issues)
        notes = list(self.notes)
        mismatched = self.mismatches()
        if options.drop_mismatched and mismatched:
            labels = [self.where[t][3] for t in mismatched]
            notes.append(
                f"{len(mismatched)} question(s) differ between the files and were left out "
                f"(drop mismatched): {_listed(labels)}"
            )
        elif mismatched:
            issues += [issue for found in mismatched.values() for issue in found]
        kept = {t: task for t, task in self.tasks.items() if t not in mismatched}
        if options.common_only:
            answered = [{a.get("task_id") for _, a in f.answers} for f in self.files]
            common = {t: task for t, task in kept.items() if all(t in ids for ids in answered)}
            if len(common) < len(kept):
                notes.append(
                    f"{len(kept) - len(common)} question(s) some file has no answer to were "
                    "left out (common only)"
                )
            kept = common
        if options.sample and options.sample < len(kept):
            kept = {t: kept[t] for t in sample_by_group(kept, options.sample, options.split_seed)}
            notes.append(
                f"a sample of {len(kept)} questions, each category's share (seed {options.split_seed})"
            )
        tasks = self._checked_tasks(kept, options.split_seed, issues)
        records = []
        ids = set(kept)
        # the answers of the questions kept (a left-out question's answers go with it)
        left_out = set(self.tasks) - ids
        for file in self.files:
            objects = [(n, a) for n, a in file.answers if a.get("task_id") not in left_out]
            records += check_records(objects, file.shown, issues, ids, unit=file.unit)
        if not kept and not issues:
            issues.append(ValidationIssue("the files", 0, None, "hold no questions"))
        if issues:
            hint = ""
            if mismatched and not options.drop_mismatched:
                hint = (
                    f" ({len(mismatched)} question(s) differ between the files: the benchmark "
                    "revised them between evaluations; leave them out with --drop-mismatched)"
                )
            raise RecordsValidationError(
                issues,
                summary=f"{len(issues)} problem(s) in {len(self.files)} file(s){hint}; fix them "
                "(or leave a file out) and import again: nothing was imported",
            )
        notes += self._miss_notes(name, ids)
        suite = Suite(name=name, tasks=tuple(tasks))

        def save() -> None:
            if progress is not None:
                progress(ImportProgress("suite", 0, 1))
            save_suite(suite, workspace, replace=options.replace)
            if progress is not None:
                progress(ImportProgress("suite", 1, 1))

        total = len(records)
        write_pool(
            workspace,
            name,
            name,
            source,
            records,
            notes,
            progress=(lambda n: progress(ImportProgress("write", n, total))) if progress else None,
            before_commit=save,
        )
        return show_pool(workspace, name)

    def _checked_tasks(
        self, kept: dict[str, dict[str, Any]], seed: int, issues: list[ValidationIssue]
    ) -> list[Any]:
        splits = assign_splits(kept, seed)
        tasks = []
        for task_id, task in kept.items():
            shown, number, unit, _label = self.where[task_id]
            found: list[ValidationIssue] = []
            tasks += check_tasks([(number, {**task, "split": splits[task_id]})], shown, found)
            issues.extend(
                issue_at(
                    i.path, i.line, self.field_names.get(i.field or "", i.field), i.message, unit
                )
                for i in found
            )
        return tasks

    def _miss_notes(self, name: str, ids: set[str]) -> list[str]:
        answered: dict[str, set[str]] = defaultdict(set)
        for file in self.files:
            answered[file.worker].update(a["task_id"] for _, a in file.answers)
        notes = []
        for worker, have in answered.items():
            missing = len(ids - have)
            if missing:
                notes.append(
                    f"recorded:{name}/{worker} has no answer to {missing} of {len(ids)} "
                    "questions: misses when asked"
                )
        return notes


def sample_by_group(tasks: dict[str, dict[str, Any]], n: int, seed: int) -> list[str]:
    """``n`` task ids, each category (else kind) its share (largest remainders), drawn
    with ``seed``; in the tasks' order."""
    groups: dict[str, list[str]] = defaultdict(list)
    for task_id in sorted(tasks):
        task = tasks[task_id]
        groups[str(task.get("category") or task.get("kind"))].append(task_id)
    exact = {g: n * len(ids) / len(tasks) for g, ids in groups.items()}
    counts = {g: int(x) for g, x in exact.items()}
    for g in sorted(exact, key=lambda g: (counts[g] - exact[g], g))[: n - sum(counts.values())]:
        counts[g] += 1
    rng = random.Random(seed)
    chosen = {t for g in sorted(groups) for t in rng.sample(groups[g], counts[g])}
    return [t for t in tasks if t in chosen]


def assign_splits(tasks: dict[str, dict[str, Any]], seed: int) -> dict[str, str]:
    """task id -> split: in each category (else kind), the ids in sorted order shuffled
    with ``seed``, cut by ``SPLIT_SHARES``."""
    groups: dict[str, list[str]] = defaultdict(list)
    for task_id in sorted(tasks):
        task = tasks[task_id]
        groups[str(task.get("category") or task.get("kind"))].append(task_id)
    rng = random.Random(seed)
    out: dict[str, str] = {}
    for group in sorted(groups):
        ids = groups[group]
        rng.shuffle(ids)
        n_train = round(len(ids) * SPLIT_SHARES[0])
        n_validation = round(len(ids) * SPLIT_SHARES[1])
        bounds = (n_train, n_train + n_validation, len(ids))
        start = 0
        for split, end in zip(SPLITS, bounds, strict=True):
            out.update((task_id, split) for task_id in ids[start:end])
            start = end
    return out


def _listed(labels: Sequence[str]) -> str:
    """``question_id 94, 96 and 3 more``: the labels' shared first word said once."""
    head = labels[0].rsplit(" ", 1)[0] + " " if labels and " " in labels[0] else ""
    if head and all(label.startswith(head) for label in labels):
        labels = [label[len(head) :] for label in labels]
    shown = head + ", ".join(labels[:MAX_IDS_IN_NOTE])
    more = len(labels) - MAX_IDS_IN_NOTE
    return shown + (f" and {more} more" if more > 0 else "")


def _differing(values: list[Any]) -> list[str]:
    """The values of one field as a message shows them: short ones whole; long texts
    from a little before the first place where they differ."""
    texts = [v if isinstance(v, str) else repr(v) for v in values]
    if all(len(t) <= 60 for t in texts):
        return [repr(v) for v in values]
    start = 0
    while all(start < len(t) for t in texts) and len({t[start] for t in texts}) == 1:
        start += 1
    begin = max(0, start - 20)
    return [
        ("…" if begin else "") + repr(t[begin : begin + 60]) + ("…" if begin + 60 < len(t) else "")
        for t in texts
    ]
