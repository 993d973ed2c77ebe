"""Suites from Hugging Face datasets: MATH-500, GSM8K, MMLU, GPQA-Diamond, LiveCodeBench.

``rows_to_tasks(dataset, rows)`` turns rows in a dataset's own schema into tasks (pure, no
network). ``load_hub_suite(dataset)`` fetches the rows with the ``datasets`` library (the
``hub`` extra), or reads a local file of the same rows (``data_files=``; a ``.jsonl`` or
``.json`` file is read without ``datasets``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.errors import BadInput, read_text
from workbench.core.tasks.model import Suite, Task

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_INSTALL_HINT = "pip install 'trinity-workbench[hub]'"


@dataclass(frozen=True, kw_only=True)
class HubDataset:
    """Where a dataset lives on the Hub and which split a suite uses by default.

    ``files`` names the data files inside the repository when the dataset must be read as
    plain files (LiveCodeBench ships a loading script that recent ``datasets`` refuses).
    """

    path: str
    config: str | None
    split: str
    description: str
    files: str | None = None


HUB_DATASETS: dict[str, HubDataset] = {
    "math500": HubDataset(
        path="HuggingFaceH4/MATH-500",
        config=None,
        split="test",
        description="500 MATH competition problems (MATH-500)",
    ),
    "gsm8k": HubDataset(
        path="openai/gsm8k",
        config="main",
        split="test",
        description="grade-school math word problems (GSM8K)",
    ),
    "mmlu": HubDataset(
        path="cais/mmlu",
        config="all",
        split="test",
        description="multiple-choice questions in 57 subjects (MMLU)",
    ),
    "gpqa-diamond": HubDataset(
        path="Idavidrein/gpqa",
        config="gpqa_diamond",
        split="train",
        description="graduate-level science multiple choice (GPQA Diamond; gated: accept its terms on the Hub)",
    ),
    "livecodebench": HubDataset(
        path="livecodebench/code_generation_lite",
        config=None,
        split="train",
        description="competitive programming problems with stdin/stdout tests (LiveCodeBench)",
        files="test.jsonl",
    ),
}


class HubRowError(BadInput, ValueError):
    """A dataset row that does not have the dataset's schema."""


def _field(dataset: str, index: int, row: dict[str, Any], name: str) -> Any:
    if name not in row or row[name] is None:
        raise HubRowError(
            f"{dataset} row {index}: missing field '{name}' (fields: {', '.join(sorted(row))}); "
            f"is this the {HUB_DATASETS[dataset].path} schema?"
        )
    return row[name]


def _math500(rows: Iterable[dict[str, Any]], seed: int) -> Iterator[Task]:
    for i, row in enumerate(rows):
        yield Task(
            id=str(row.get("unique_id") or f"math500-{i:04d}"),
            kind="math",
            prompt=_field("math500", i, row, "problem"),
            answer=str(_field("math500", i, row, "answer")),
            category=row.get("subject"),
            solution=row.get("solution"),
        )


def gsm8k_answer(answer_text: str) -> str:
    """The final number of a GSM8K answer (after ``####``), without thousands commas."""
    if "####" not in answer_text:
        raise HubRowError(f"GSM8K answer has no '#### N' line: {answer_text[-80:]!r}")
    return answer_text.rsplit("####", 1)[1].strip().replace(",", "").rstrip(".")


def _gsm8k(rows: Iterable[dict[str, Any]], seed: int) -> Iterator[Task]:
    for i, row in enumerate(rows):
        text = str(_field("gsm8k", i, row, "answer"))
        try:
            answer = gsm8k_answer(text)
        except HubRowError as error:
            raise HubRowError(f"gsm8k row {i}: {error}") from None
        yield Task(
            id=f"gsm8k-{i:05d}",
            kind="math",
            prompt=_field("gsm8k", i, row, "question"),
            answer=answer,
            category="word problems",
            solution=text.rsplit("####", 1)[0].strip(),
        )


def _mmlu(rows: Iterable[dict[str, Any]], seed: int) -> Iterator[Task]:
    for i, row in enumerate(rows):
        choices = [str(c) for c in _field("mmlu", i, row, "choices")]
        index = _field("mmlu", i, row, "answer")
        if isinstance(index, str) and index.strip().upper() in LETTERS[: len(choices)]:
            index = LETTERS.index(index.strip().upper())
        if not isinstance(index, int) or not 0 <= index < len(choices):
            raise HubRowError(f"mmlu row {i}: answer {index!r} is not an option index")
        subject = row.get("subject") or "mmlu"
        yield Task(
            id=f"mmlu-{subject}-{i:05d}",
            kind="choice",
            prompt=_field("mmlu", i, row, "question"),
            answer=LETTERS[index],
            choices=tuple(choices),
            category=subject,
        )


def _gpqa(rows: Iterable[dict[str, Any]], seed: int) -> Iterator[Task]:
    for i, row in enumerate(rows):
        right = str(_field("gpqa-diamond", i, row, "Correct Answer")).strip()
        wrong = [
            str(_field("gpqa-diamond", i, row, f"Incorrect Answer {k}")).strip() for k in (1, 2, 3)
        ]
        record = str(row.get("Record ID") or f"{i:03d}")
        options = [right, *wrong]
        # the order depends on the seed and the record only, not on the row's position
        random.Random(f"gpqa/{seed}/{record}").shuffle(options)
        yield Task(
            id=f"gpqa-{record}",
            kind="choice",
            prompt=str(_field("gpqa-diamond", i, row, "Question")).strip(),
            answer=LETTERS[options.index(right)],
            choices=tuple(options),
            category=row.get("High-level domain") or row.get("Subdomain"),
            solution=row.get("Explanation"),
        )


_STDIO_NOTE = (
    "\n\nWrite a complete Python program that reads the input from standard input and "
    "prints the answer to standard output."
)


def _livecodebench(rows: Iterable[dict[str, Any]], seed: int) -> Iterator[Task]:
    for i, row in enumerate(rows):
        raw = _field("livecodebench", i, row, "public_test_cases")
        try:
            cases = json.loads(raw) if isinstance(raw, str) else list(raw)
        except (json.JSONDecodeError, TypeError) as error:
            raise HubRowError(
                f"livecodebench row {i}: public_test_cases is not JSON: {error}"
            ) from None
        stdio = [
            {"input": str(c.get("input", "")), "output": str(c.get("output", ""))}
            for c in cases
            if isinstance(c, dict) and c.get("testtype", "stdin") == "stdin"
        ]
        if not stdio:  # function-call (LeetCode) problems: not gradable as a program
            continue
        qid = row.get("question_id") or f"{i:05d}"
        yield Task(
            id=f"lcb-{qid}",
            kind="code",
            prompt=str(_field("livecodebench", i, row, "question_content")).strip() + _STDIO_NOTE,
            tests={"style": "stdio", "cases": stdio},
            category=row.get("difficulty") or "code",
        )


_CONVERTERS: dict[str, Callable[[Iterable[dict[str, Any]], int], Iterator[Task]]] = {
    "math500": _math500,
    "gsm8k": _gsm8k,
    "mmlu": _mmlu,
    "gpqa-diamond": _gpqa,
    "livecodebench": _livecodebench,
}


def _known(dataset: str) -> HubDataset:
    if dataset not in HUB_DATASETS:
        raise ValueError(f"unknown Hub dataset '{dataset}': known are {', '.join(HUB_DATASETS)}")
    return HUB_DATASETS[dataset]


def rows_to_tasks(dataset: str, rows: Iterable[dict[str, Any]], seed: int = 0) -> list[Task]:
    """Turn rows of ``dataset`` (a key of ``HUB_DATASETS``, rows in that dataset's Hub
    schema) into tasks. ``seed`` fixes the option order where the source has none (GPQA).

    Raises ``HubRowError`` naming the row and field when a row has another schema.
    """
    _known(dataset)
    return list(_CONVERTERS[dataset](rows, seed))


def load_hub_suite(
    dataset: str,
    split: str | None = None,
    limit: int | None = None,
    data_files: str | Path | None = None,
    seed: int = 0,
) -> Suite:
    """The suite of a Hub dataset: its rows from the Hub (needs the ``datasets`` package
    and network, or its cache), or from the local file ``data_files`` in the same schema.
    ``limit`` keeps the first tasks only."""
    spec = _known(dataset)
    split = split or spec.split
    if data_files is not None:
        rows = _read_local(Path(data_files))
        source = str(data_files)
    else:
        rows = _read_hub(spec, split)
        source = f"{spec.path} ({spec.config or 'default'}, {split})"
    tasks = rows_to_tasks(dataset, rows, seed=seed)
    if limit is not None:
        tasks = tasks[: max(0, limit)]
    if not tasks:
        raise ValueError(f"{source} gave no {dataset} tasks: check the split and the file")
    return Suite(
        name=dataset,
        tasks=tuple(tasks),
        version=split,
        source=source,
        description=f"{len(tasks)} tasks: {spec.description}",
    )


def _read_local(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"data file {path} does not exist: check the path")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(read_text("data file", path).splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not valid JSON: {error.msg}") from None
        return rows
    if suffix == ".json":
        data = json.loads(read_text("data file", path))
        if isinstance(data, dict) and isinstance(data.get("rows"), list):
            data = [r.get("row", r) for r in data["rows"]]  # the Hub's rows API
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of rows")
        return data
    datasets = _datasets()
    builder = {".parquet": "parquet", ".csv": "csv"}.get(suffix)
    if builder is None:
        raise ValueError(
            f"{path}: unsupported data file type '{suffix}' (use .jsonl, .json or .parquet)"
        )
    return list(datasets.load_dataset(builder, data_files=str(path), split="train"))


def _read_hub(spec: HubDataset, split: str) -> list[dict[str, Any]]:
    datasets = _datasets()
    try:
        if spec.files is not None:
            url = f"hf://datasets/{spec.path}/{spec.files}"
            data = datasets.load_dataset("json", data_files=url, split=split)
        else:
            data = datasets.load_dataset(spec.path, spec.config, split=split)
    except Exception as error:  # network, gating, unknown split: say which and how
        raise RuntimeError(
            f"could not load {spec.path} ({spec.config or 'default'}, split {split}) from the "
            f"Hugging Face Hub: {error}. Check the network, log in with `huggingface-cli login` "
            "for gated datasets, or pass a local file with data_files="
        ) from error
    return list(data)


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as error:
        raise ImportError(
            f"loading Hugging Face datasets needs the 'datasets' package: {_INSTALL_HINT}"
        ) from error
    return datasets
