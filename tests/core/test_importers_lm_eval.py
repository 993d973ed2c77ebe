"""The lm-evaluation-harness importer on samples files written by hand in the harness's
documented ``--log_samples`` shape (one line per document and filter: doc_id, doc,
target, arguments as gen_args_i / arg_j, resps, filtered_resps, filter, metrics and each
metric's value): a generation task (GSM8K, two filters), a generated multiple choice (a
letter target with the options in the document), a text target with several references,
a loglikelihood multiple-choice task (ARC), models as folders; the harness's own
per-sample metric agrees with our grade of what was imported; every error kind is
reported and nothing imported."""

from __future__ import annotations

import json

import pytest

from workbench.core.importers.build import ImportOptions
from workbench.core.importers.lm_eval import import_lm_eval
from workbench.core.recordings import RecordedPoolError, RecordsValidationError, list_pools
from workbench.core.tasks.graders import grade
from workbench.core.tasks.suites import imported_path, load_suite
from workbench.core.workers.pool import build_pool
from workbench.core.workspace import Workspace

DATE = "2024-06-01T12-00-00.123456"
ARC = [
    # question, options, gold index, the model's loglikelihood per option
    ("Which gas do plants take in?", ["oxygen", "carbon dioxide", "helium", "neon"], 1,
     [-9.5, -4.25, -12.0, -11.0]),
    ("What melts ice fastest?", ["salt", "sand", "sugar", "water at 0 C"], 0,
     [-7.0, -6.5, -8.0, -9.0]),
    ("Which is a mammal?", ["shark", "whale", "trout", "eel"], 1,
     [-3.0, -3.0, -5.0, -6.0]),  # a tie: the first option, as the harness's acc reads it
]  # fmt: skip
GSM = [
    ("Natalia sold 48 clips in April and half as many in May. How many in all?", "72",
     "She sold 48 / 2 = 24 in May, so 48 + 24 = 72. The answer is 72."),
    ("A book costs $1,250 and a pen $3. What do both cost?", "1253",
     "1250 + 3 = 1,253 dollars... The answer is 1252."),
]  # fmt: skip


def _arc_lines(rows=ARC, task="arc_easy"):
    lines = []
    for doc_id, (question, options, gold, scores) in enumerate(rows):
        context = f"Question: {question}\nAnswer:"
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        lines.append(
            {
                "doc_id": doc_id,
                "doc": {
                    "id": f"{task}-{doc_id}",
                    "question": question,
                    "choices": {"text": options, "label": list("ABCD")},
                    "answerKey": "ABCD"[gold],
                },
                "target": str(gold),
                "arguments": {
                    f"gen_args_{i}": {"arg_0": context, "arg_1": f" {option}"}
                    for i, option in enumerate(options)
                },
                "resps": [[[str(s), "False"]] for s in scores],
                "filtered_resps": [[str(s), "False"] for s in scores],
                "filter": "none",
                "metrics": ["acc", "acc_norm"],
                "doc_hash": "d",
                "prompt_hash": "p",
                "target_hash": "t",
                "acc": 1.0 if best == gold else 0.0,
                "acc_norm": 1.0 if best == gold else 0.0,
            }
        )
    return lines


def _generation_lines(rows=GSM):
    lines = []
    for doc_id, (question, answer, said) in enumerate(rows):
        target = f"Some working.\n#### {answer}"
        for name, filtered in (("strict-match", said.rsplit(" ", 1)[1].rstrip(".")), ("flexible-extract", said.rsplit(" ", 1)[1].rstrip("."))):  # fmt: skip
            lines.append(
                {
                    "doc_id": doc_id,
                    "doc": {"question": question, "answer": target},
                    "target": target,
                    "arguments": {
                        "gen_args_0": {
                            "arg_0": f"Question: {question}\nAnswer:",
                            "arg_1": {"until": ["Question:"], "do_sample": False},
                        }
                    },
                    "resps": [[said]],
                    "filtered_resps": [filtered],
                    "filter": name,
                    "metrics": ["exact_match"],
                    "exact_match": 1.0 if filtered == answer else 0.0,
                }
            )
    return lines


def _lettered_lines():
    doc = {"question": "2 + 2 = ?", "options": ["3", "4", "5"], "answer": "B"}
    return [
        {
            "doc_id": 0,
            "doc": doc,
            "target": "B",
            "arguments": {"gen_args_0": {"arg_0": "2 + 2 = ?\n(A) 3 (B) 4 (C) 5", "arg_1": {}}},
            "resps": [["Two and two make four. The answer is (B)."]],
            "filtered_resps": ["B"],
            "filter": "custom-extract",
            "metrics": ["exact_match"],
            "exact_match": 1.0,
        },
        {
            "doc_id": 1,
            "doc": {"question": "Who wrote Babbitt?"},
            "target": str(["Sinclair Lewis", "Harry Sinclair Lewis"]),
            "arguments": {"gen_args_0": {"arg_0": "Who wrote Babbitt?", "arg_1": {}}},
            "resps": [["Sinclair Lewis"]],
            "filtered_resps": ["Sinclair Lewis"],
            "filter": "none",
            "metrics": ["exact_match"],
            "exact_match": 1.0,
        },
    ]


def _write(folder, task, lines):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_{DATE}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return Workspace.open(tmp_path / "ws")


@pytest.fixture()
def results(tmp_path):
    """A --output_path folder with two models' samples (the harness names each model's
    folder after it, '/' written '__')."""
    root = tmp_path / "results"
    for model in ("EleutherAI__pythia-160m", "Qwen__Qwen2-0.5B"):
        _write(root / model, "arc_easy", _arc_lines())
        _write(root / model, "gsm8k", _generation_lines())
        _write(root / model, "mixed_gen", _lettered_lines())
    return root


def test_a_results_folder_becomes_one_suite_and_a_worker_per_model(ws, results):
    info = import_lm_eval(ws, [(None, results)], "harness")
    assert [w.worker_id for w in info.workers] == [
        "recorded:harness/EleutherAI__pythia-160m",
        "recorded:harness/Qwen__Qwen2-0.5B",
    ]
    suite = load_suite("harness", ws)
    kinds = {t.id: (t.kind, t.category, t.answer) for t in suite.tasks}
    assert kinds == {
        "arc_easy-0": ("choice", "arc_easy", "B"),
        "arc_easy-1": ("choice", "arc_easy", "A"),
        "arc_easy-2": ("choice", "arc_easy", "B"),
        "gsm8k-0": ("math", "gsm8k", "72"),
        "gsm8k-1": ("math", "gsm8k", "1253"),
        "mixed_gen-0": ("choice", "mixed_gen", "B"),
        "mixed_gen-1": ("text", "mixed_gen", "Sinclair Lewis"),
    }
    arc = suite.get("arc_easy-0")
    assert arc.choices == tuple(ARC[0][1]) and arc.prompt == f"Question: {ARC[0][0]}\nAnswer:"
    assert suite.get("mixed_gen-0").choices == ("3", "4", "5")
    worker = build_pool(["recorded:harness/Qwen__Qwen2-0.5B"], workspace=ws)[0]
    table = worker.table  # type: ignore[attr-defined]
    assert table["arc_easy-0"].response == "Answer: B"
    assert table["arc_easy-2"].response == "Answer: A"  # the tie goes to the first option
    assert table["gsm8k-0"].response == GSM[0][2]  # the generation, before any filter
    assert table["gsm8k-0"].model == "Qwen/Qwen2-0.5B"
    meta = table["gsm8k-0"].meta
    assert meta["metrics"] == {
        "strict-match": {"exact_match": 1.0},
        "flexible-extract": {"exact_match": 1.0},
    }
    assert meta["filtered"] == {"strict-match": "72", "flexible-extract": "72"}
    assert table["arc_easy-1"].meta["loglikelihoods"] == ARC[1][3]


def test_our_grade_agrees_with_the_harnesss_own_per_sample_metric(ws, results):
    import_lm_eval(ws, [(None, results)], "harness")
    suite = load_suite("harness", ws)
    checked = 0
    for worker in build_pool(["recorded:harness"], workspace=ws):
        for task_id, rec in worker.table.items():  # type: ignore[attr-defined]
            theirs = next(iter(rec.meta["metrics"].values()))
            harness = theirs.get("acc", theirs.get("exact_match"))
            assert grade(suite.get(task_id), rec.response).reward == harness, task_id
            checked += 1
    assert checked == 14
    wrong = build_pool(["recorded:harness/EleutherAI__pythia-160m"], workspace=ws)[0]
    assert grade(suite.get("gsm8k-1"), wrong.table["gsm8k-1"].response).reward == 0.0  # type: ignore[attr-defined]


def test_documents_that_differ_between_models_are_reported_or_left_out(ws, tmp_path):
    root = tmp_path / "results"
    _write(root / "model-a", "arc_easy", _arc_lines())
    changed = [list(row) for row in ARC]
    changed[2][2] = 3  # another gold answer for doc 2: not the same question
    _write(root / "model-b", "arc_easy", _arc_lines([tuple(r) for r in changed]))
    with pytest.raises(RecordsValidationError) as caught:
        import_lm_eval(ws, [(None, root)], "diff")
    (issue,) = caught.value.issues[:1]
    assert issue.path == "arc_easy doc 2" and issue.field == "doc"
    assert {i.field for i in caught.value.issues} == {"doc", "target"}
    info = import_lm_eval(ws, [(None, root)], "diff", ImportOptions(drop_mismatched=True))
    assert info.workers[0].suite_tasks == 2
    assert any("arc_easy doc 2" in n for n in info.notes)


def test_every_error_kind_is_reported_and_nothing_imported(ws, tmp_path):
    root = tmp_path / "results"
    good = _arc_lines()
    bad = [dict(line) for line in good]
    bad[0] = {k: v for k, v in bad[0].items() if k != "resps"}
    bad[1] = {**bad[1], "arguments": "context"}
    bad[2] = {**bad[2], "target": "not an option"}
    extra = {**good[0], "filtered_resps": good[0]["filtered_resps"][:2]}
    valid = {**good[0], "doc_id": 5}
    path = _write(root / "m", "arc_easy", bad + [extra, valid, valid])
    with path.open("a", encoding="utf-8") as out:
        out.write("{not json\n")
    rolling = {
        "doc_id": 0,
        "doc": {"page": "text"},
        "target": "",
        "arguments": {"gen_args_0": {"arg_0": "A long page of text."}},
        "resps": [[["-123.5"]]],
        "filtered_resps": [["-123.5"]],
        "filter": "none",
        "metrics": ["word_perplexity"],
    }
    _write(root / "m", "wikitext", [rolling, {**rolling, "doc_id": 1}])
    with pytest.raises(RecordsValidationError) as caught:
        import_lm_eval(ws, [(None, root)], "bad")
    found = [(i.path, i.line, i.field) for i in caught.value.issues]
    arc = f"m/samples_arc_easy_{DATE}.jsonl"
    assert found == [
        (arc, 1, "resps"),
        (arc, 2, "arguments"),
        (arc, 3, "target"),
        (arc, 4, "filtered_resps"),
        (arc, 6, "doc_id"),
        (arc, 7, None),
        (f"m/samples_wikitext_{DATE}.jsonl", 0, None),
    ]
    text = str(caught.value)
    assert "neither a generation" in text and "leave this file out" in text
    assert "'not an option' is neither an option's index, text nor letter" in text
    assert "2 scores for 4 options" in text and "not valid JSON" in text
    assert "appears twice for filter 'none' (first on line 5)" in text
    assert [p.name for p in list_pools(ws)] == ["champ"] and not imported_path("bad", ws).exists()


def test_two_runs_of_one_task_for_one_model_and_no_samples_are_refused(ws, tmp_path):
    root = tmp_path / "results"
    _write(root / "m", "arc_easy", _arc_lines())
    (root / "m" / "samples_arc_easy_2024-07-01T00-00-00.000001.jsonl").write_text(
        json.dumps(_arc_lines()[0]) + "\n", encoding="utf-8"
    )
    with pytest.raises(RecordedPoolError, match="two samples files of task 'arc_easy'"):
        import_lm_eval(ws, [(None, root)], "runs")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordedPoolError, match="no samples_<task>_<date>.jsonl"):
        import_lm_eval(ws, [(None, tmp_path / "empty")], "none")
    # one of them, named by hand
    info = import_lm_eval(ws, [("pythia", root / "m" / f"samples_arc_easy_{DATE}.jsonl")], "one")
    assert [w.worker_id for w in info.workers] == ["recorded:one/pythia"]
