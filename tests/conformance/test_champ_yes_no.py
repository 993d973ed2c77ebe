"""The math grader on every yes/no problem of CHAMP: the four recorded 0-shot final messages
(GPT-3.5, GPT-4, GPT-4 Turbo, PaLM 2 Medium) of each of the 33 problems whose reference is
"Yes" or "No", labelled right or wrong by hand (``champ_yes_no_labels.jsonl``: the label,
the rule that decides it, and why). The messages are read from the installed
``champ-dataset`` package, not copied here.

Also, for every one of those problems, the shapes in which an explicit final answer must
outrank earlier words: "No contradiction arises. Answer: Yes" says yes, and two final
answers that disagree are wrong whichever of them is right.

A false accept fails the test; false rejects are printed, and more than were measured when
the labels were made fails it. docs/guides/grading.md has the rules and the figures.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from workbench.core.tasks import Task, grade

LABELS = Path(__file__).with_name("champ_yes_no_labels.jsonl")
MODELS = ("GPT-3.5", "GPT-4", "GPT-4 Turbo", "PaLM 2 Medium")
# Rules a label may name (see the reasons in the file): what decides it
RULES = {
    "lead", "deny", "affirm", "opposite", "hedge", "iff", "condition", "empty", "value",
    "denied-negative",
}  # fmt: skip
# Right answers the grader does not read, measured when the labels were made: a yes stated
# as the question's own claim ("The value of A is greater than 1/15."), the opposite
# relation ("is less than 0.1"), a denial inside a value's clause. None is a false accept.
MAX_FALSE_REJECTS = 17


def load_labels() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def problems() -> dict:
    import champ_dataset

    return champ_dataset.load("v0").problems


def yes_no_problems(problems: dict) -> list[str]:
    return [pid for pid, p in problems.items() if p.answer.strip() in ("Yes", "No")]


def task_of(problem) -> Task:
    return Task(id="p", kind="math", prompt=problem.text, answer=problem.answer)


def test_every_yes_no_problem_has_its_four_answers_labelled(problems: dict) -> None:
    rows = load_labels()
    asked = yes_no_problems(problems)
    assert len(asked) == 33
    keys = Counter((row["problem"], row["model"]) for row in rows)
    assert set(keys) == {(pid, model) for pid in asked for model in MODELS}
    assert max(keys.values()) == 1
    assert all(row["setting"] == "0-Shot" for row in rows)
    assert all(row["rule"] in RULES and row["reason"].strip() for row in rows)
    assert {row["label"] for row in rows} == {"right", "wrong"}


def test_no_yes_no_answer_labelled_wrong_is_paid(problems: dict, capsys) -> None:
    graded = []
    for row in load_labels():
        problem = problems[row["problem"]]
        answer = problem.conversations[f"{row['model']}|0-Shot"].messages[-1].text or ""
        result = grade(task_of(problem), answer)
        graded.append({**row, "paid": result.reward == 1.0, "by": result.details["rule"]})
    false_accepts = [r for r in graded if r["paid"] and r["label"] == "wrong"]
    false_rejects = [r for r in graded if not r["paid"] and r["label"] == "right"]
    with capsys.disabled():
        agree = len(graded) - len(false_accepts) - len(false_rejects)
        print(
            f"\nCHAMP yes/no: {agree}/{len(graded)} agree; false accepts "
            f"{len(false_accepts)}, false rejects {len(false_rejects)}"
        )
        for r in false_rejects:
            print(f"  right but not paid: {r['problem']} [{r['model']}] {r['by']}: {r['reason']}")
    assert not false_accepts, [(r["problem"], r["model"], r["by"]) for r in false_accepts]
    assert len(false_rejects) <= MAX_FALSE_REJECTS


def marker_cases(reference: str) -> list[tuple[str, float]]:
    """Answers whose explicit final marker decides, and answers whose markers disagree."""
    other = "Yes" if reference == "No" else "No"
    return [
        (f"{other} contradiction arises. Answer: {reference}", 1.0),
        (f"{reference} contradiction arises. Answer: {other}", 0.0),
        (f"{reference}, I think so at first.\n\nFinal answer: {other}", 0.0),
        (f"{reference}. The answer is {other}.", 0.0),
        (f"{reference}. So the final answer is \\boxed{{{other}}}.", 0.0),
        (f"Answer: {reference}. Final answer: {other}", 0.0),
        (f"Answer: {other}\n\nFinal answer: \\boxed{{{reference}}}", 0.0),
        (f"Answer: {reference}\n\nFinal answer: \\boxed{{{reference}}}", 1.0),
        (f"{other} at first sight; after checking, the answer is {reference}.", 1.0),
    ]


def test_an_explicit_final_answer_outranks_earlier_words(problems: dict) -> None:
    wrong = []
    for pid in yes_no_problems(problems):
        problem = problems[pid]
        for answer, want in marker_cases(problem.answer.strip()):
            result = grade(task_of(problem), answer)
            if result.reward != want:
                wrong.append((pid, answer, result.details["rule"]))
    assert not wrong, wrong
