"""Hugging Face dataset rows become tasks (offline: rows written here in each Hub schema)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from workbench.core.tasks import grade
from workbench.core.tasks.hub import HUB_DATASETS, HubRowError, load_hub_suite, rows_to_tasks

HAS_DATASETS = importlib.util.find_spec("datasets") is not None

MATH500 = [
    {
        "problem": "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.",
        "solution": "We have that $r = 3$ ... $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$",
        "answer": "\\left( 3, \\frac{\\pi}{2} \\right)",
        "subject": "Precalculus",
        "level": 2,
        "unique_id": "test/precalculus/807.json",
    },
    {
        "problem": "What is $\\frac{1}{2} + \\frac{1}{4}$?",
        "solution": "...",
        "answer": "\\frac{3}{4}",
        "subject": "Prealgebra",
        "level": 1,
        "unique_id": "test/prealgebra/1.json",
    },
]
GSM8K = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
    },
    {"question": "A big sum?", "answer": "It is large.\n#### 1,234"},
]
MMLU = [
    {
        "question": "Find the degree for the given field extension Q(sqrt(2)) over Q.",
        "subject": "abstract_algebra",
        "choices": ["0", "4", "2", "6"],
        "answer": 2,
    },
    {
        "question": "2 + 2 = ?",
        "subject": "elementary_mathematics",
        "choices": ["3", "4"],
        "answer": 1,
    },
]
GPQA = [
    {
        "Question": f"Question number {i}?",
        "Correct Answer": f"right {i}",
        "Incorrect Answer 1": f"wrong {i}a",
        "Incorrect Answer 2": f"wrong {i}b",
        "Incorrect Answer 3": f"wrong {i}c",
        "Explanation": "because",
        "Subdomain": "Physics (general)",
        "High-level domain": "Physics",
        "Record ID": f"rec{i:03d}",
    }
    for i in range(12)
]
LCB = [
    {
        "question_title": "Add",
        "question_content": "Read two integers A and B and print A+B.",
        "platform": "atcoder",
        "question_id": "abc001_a",
        "contest_id": "abc001",
        "contest_date": "2023-05-01T00:00:00",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(
            [
                {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
                {"input": "5 7\n", "output": "12\n", "testtype": "stdin"},
            ]
        ),
        "private_test_cases": "eJxLy8kHAAKtAPI=",
        "metadata": "{}",
    },
    {
        "question_title": "Two Sum",
        "question_content": "Given nums and target ...",
        "platform": "leetcode",
        "question_id": "1",
        "contest_id": "weekly-1",
        "contest_date": "2023-05-01T00:00:00",
        "starter_code": "class Solution:\n    def twoSum(self, nums, target):\n        ",
        "difficulty": "medium",
        "public_test_cases": json.dumps(
            [{"input": "[2,7]\n9", "output": "[0,1]", "testtype": "functional"}]
        ),
        "private_test_cases": "",
        "metadata": '{"func_name": "twoSum"}',
    },
]
ROWS = {
    "math500": MATH500,
    "gsm8k": GSM8K,
    "mmlu": MMLU,
    "gpqa-diamond": GPQA,
    "livecodebench": LCB,
}


def test_every_hub_dataset_has_a_converter_and_rows_here() -> None:
    assert (
        set(HUB_DATASETS)
        == set(ROWS)
        == {"math500", "gsm8k", "mmlu", "gpqa-diamond", "livecodebench"}
    )


def test_math500() -> None:
    tasks = rows_to_tasks("math500", MATH500)
    assert [t.id for t in tasks] == ["test/precalculus/807.json", "test/prealgebra/1.json"]
    assert tasks[0].kind == "math" and tasks[0].category == "Precalculus"
    assert grade(tasks[0], "So $\\boxed{(3, \\frac{\\pi}{2})}$").reward == 1.0
    assert grade(tasks[1], "The answer is 0.75").reward == 1.0


def test_gsm8k_takes_the_number_after_the_marks() -> None:
    tasks = rows_to_tasks("gsm8k", GSM8K)
    assert [t.answer for t in tasks] == ["72", "1234"]
    assert tasks[0].solution.endswith("altogether in April and May.")
    assert grade(tasks[1], "\\boxed{1234}").reward == 1.0


def test_mmlu_index_becomes_a_letter() -> None:
    tasks = rows_to_tasks("mmlu", MMLU)
    assert [t.answer for t in tasks] == ["C", "B"]
    assert tasks[0].choices == ("0", "4", "2", "6") and tasks[0].category == "abstract_algebra"
    assert grade(tasks[0], "Answer: C").reward == 1.0


def test_gpqa_shuffles_by_seed_and_records_the_letter() -> None:
    tasks = rows_to_tasks("gpqa-diamond", GPQA, seed=0)
    for task, row in zip(tasks, GPQA, strict=True):
        assert task.choices[ord(task.answer) - ord("A")] == row["Correct Answer"]
        assert sorted(task.choices) == sorted(
            [row["Correct Answer"]] + [row[f"Incorrect Answer {k}"] for k in (1, 2, 3)]
        )
    assert rows_to_tasks("gpqa-diamond", GPQA, seed=0) == tasks  # deterministic
    assert len({t.answer for t in tasks}) > 1  # the right option is not always first
    assert rows_to_tasks("gpqa-diamond", GPQA, seed=1) != tasks
    # a row's order depends on its record, not on its position
    assert rows_to_tasks("gpqa-diamond", GPQA[::-1], seed=0) == tasks[::-1]


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")
def test_livecodebench_keeps_stdin_tests_only() -> None:
    tasks = rows_to_tasks("livecodebench", LCB)
    assert [t.id for t in tasks] == ["lcb-abc001_a"]
    task = tasks[0]
    assert task.tests == {
        "style": "stdio",
        "cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}],
    }
    program = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    assert grade(task, program).reward == 1.0


def test_a_row_of_another_schema_names_the_row_and_field() -> None:
    with pytest.raises(HubRowError, match=r"gsm8k row 0: missing field 'question'"):
        rows_to_tasks("gsm8k", [{"problem": "x", "answer": "#### 1"}])
    with pytest.raises(HubRowError, match="####"):
        rows_to_tasks("gsm8k", [{"question": "x", "answer": "no marks"}])


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="math500"):
        rows_to_tasks("squad", [])


@pytest.mark.parametrize("dataset", sorted(ROWS))
def test_local_jsonl_file_loads_without_datasets(dataset: str, tmp_path: Path) -> None:
    path = tmp_path / f"{dataset}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS[dataset]) + "\n", encoding="utf-8")
    suite = load_hub_suite(dataset, data_files=path)
    assert suite.name == dataset
    assert suite.tasks == tuple(rows_to_tasks(dataset, ROWS[dataset]))
    assert len(load_hub_suite(dataset, data_files=path, limit=1)) == 1


def test_local_json_list_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "mmlu.json"
    path.write_text(json.dumps(MMLU), encoding="utf-8")
    assert len(load_hub_suite("mmlu", data_files=str(path))) == 2


@pytest.mark.skipif(HAS_DATASETS, reason="checks the message shown when 'datasets' is missing")
def test_without_datasets_the_error_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ImportError, match=r"trinity-workbench\[hub\]"):
        load_hub_suite("gsm8k")
    parquet = tmp_path / "rows.parquet"
    parquet.write_bytes(b"PAR1")
    with pytest.raises(ImportError, match=r"trinity-workbench\[hub\]"):
        load_hub_suite("gsm8k", data_files=parquet)
