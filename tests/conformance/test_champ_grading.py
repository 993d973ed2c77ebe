"""The math grader against hand labels of real model answers: 260 final messages of
CHAMP's GPT-3.5, GPT-4, GPT-4 Turbo and PaLM 2 Medium 0-shot conversations (the
one-sentence summary each model wrote), each judged right or wrong by a person who read
the message and the reference (``champ_labels.jsonl``: problem, model, setting, label, the
reason, and whether it was drawn at random or picked to test a rule). The messages
themselves are read from the installed ``champ-dataset`` package, not copied here.

A false accept (the grader pays an answer the label calls wrong) fails the test; the
agreement is reported and must stay above a floor. docs/guides/grading.md has the
figures and how the labels were made.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from workbench.core.tasks import Task, grade

LABELS = Path(__file__).with_name("champ_labels.jsonl")
MODELS = {"GPT-3.5", "GPT-4", "GPT-4 Turbo", "PaLM 2 Medium"}
CATEGORIES = {"Combinatorics", "Inequality", "Number-Theory", "Polynomial", "Sequence"}
AGREEMENT_FLOOR = 0.95  # measured 0.98 on the random sample when the set was made


def load_labels() -> list[dict]:
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if row]


@pytest.fixture(scope="module")
def graded() -> list[dict]:
    champ_dataset = pytest.importorskip("champ_dataset")
    problems = champ_dataset.load("v0").problems
    results = []
    for row in load_labels():
        problem = problems[row["problem"]]
        messages = problem.conversations[f"{row['model']}|{row['setting']}"].messages
        answer = messages[-1].text or ""  # a reply cut by the length limit is empty
        task = Task(
            id=row["problem"], kind="math", prompt=problem.text, answer=problem.answer,
            category=problem.category,
        )  # fmt: skip
        result = grade(task, answer)
        results.append({**row, "category": problem.category, "paid": result.reward == 1.0,
                        "rule": result.details.get("rule"), "answer": answer})  # fmt: skip
    return results


def test_the_labels_cover_every_model_category_and_verdict() -> None:
    rows = load_labels()
    assert len(rows) >= 200
    assert {row["model"] for row in rows} == MODELS
    assert {row["problem"][2:].rsplit("_", 1)[0] for row in rows} == CATEGORIES
    assert {row["label"] for row in rows} == {"right", "wrong"}
    assert all(row["reason"].strip() for row in rows)
    assert len({(row["problem"], row["model"], row["setting"]) for row in rows}) == len(rows)
    random = [row for row in rows if row["sample"] == "random"]
    assert len(random) >= 200
    for model in MODELS:
        labels = Counter(row["label"] for row in rows if row["model"] == model)
        assert labels["right"] and labels["wrong"], model


def test_the_grader_pays_no_answer_labelled_wrong(graded: list[dict], capsys) -> None:
    false_accepts = [r for r in graded if r["paid"] and r["label"] == "wrong"]
    false_rejects = [r for r in graded if not r["paid"] and r["label"] == "right"]
    agree = len(graded) - len(false_accepts) - len(false_rejects)
    random = [r for r in graded if r["sample"] == "random"]
    agree_random = sum(r["paid"] == (r["label"] == "right") for r in random)
    with capsys.disabled():
        print(
            f"\nCHAMP conformance: {agree}/{len(graded)} agree ({agree / len(graded):.1%}); "
            f"random sample {agree_random}/{len(random)} ({agree_random / len(random):.1%}); "
            f"false accepts {len(false_accepts)}, false rejects {len(false_rejects)}"
        )
        for r in false_rejects:
            print(f"  right but not paid: {r['problem']} [{r['model']}] {r['rule']}: {r['reason']}")
    assert not false_accepts, [
        (r["problem"], r["model"], r["rule"], r["answer"][:200]) for r in false_accepts
    ]
    assert agree_random / len(random) >= AGREEMENT_FLOOR
