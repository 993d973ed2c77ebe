"""The math grader against hand labels of real CHAMP 0-shot final messages.

``champ_labels.jsonl`` holds, per item, a problem id, a model, the label a person gave
after reading the model's final (summary) message and the reference, and why. The text is
read from the installed ``champ-dataset``. The grader must never pay a message labelled
wrong (zero false accepts); agreement is reported, with its count of false rejects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.tasks.mathcheck import check_here

champ_dataset = pytest.importorskip("champ_dataset")

LABELS = Path(__file__).with_name("champ_labels.jsonl")


def _items() -> list[dict[str, str]]:
    return [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]


def test_labels_cover_every_model_and_both_labels() -> None:
    items = _items()
    assert {item["model"] for item in items} == {"GPT-3.5", "GPT-4", "GPT-4 Turbo", "PaLM 2 Medium"}
    assert {item["label"] for item in items} == {"right", "wrong"}
    assert all(item["reason"].strip() for item in items)


def test_grader_agrees_with_hand_labels_and_never_pays_a_wrong_answer() -> None:
    problems = champ_dataset.load("v0").problems
    false_accepts, false_rejects = [], []
    for item in _items():
        problem = problems[item["id"]]
        final = problem.conversations[f"{item['model']}|0-Shot"].messages[-1].text or ""
        paid = check_here(problem.answer, final)["reward"] == 1.0
        if paid and item["label"] == "wrong":
            false_accepts.append((item["id"], item["model"], item["reason"]))
        if not paid and item["label"] == "right":
            false_rejects.append((item["id"], item["model"], item["reason"]))
    total = len(_items())
    agreement = (total - len(false_accepts) - len(false_rejects)) / total
    print(
        f"\nCHAMP hand labels: {total} items, agreement {agreement:.3f}, "
        f"false accepts {len(false_accepts)}, false rejects {len(false_rejects)}: {false_rejects}"
    )
    assert not false_accepts, false_accepts
