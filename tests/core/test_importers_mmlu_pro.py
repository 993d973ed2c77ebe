"""The MMLU-Pro importer on MMLU-Pro's official files (the shared copies, else downloaded
and checked against the checksums the project keeps) and on hand-made files: every
variation a real file has is read, every error kind is reported with its file, item and
field, all at once, and nothing is imported when there is any."""

from __future__ import annotations

import asyncio
import json
import zipfile
from collections import Counter, defaultdict

import pytest

from tests.support.mmlu_pro import mmlu_pro_file, records
from workbench.core.importers.build import SPLIT_SHARES, ImportOptions
from workbench.core.importers.mmlu_pro import import_mmlu_pro, task_id
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.recordings import RecordedPoolError, RecordsValidationError, list_pools
from workbench.core.tasks.graders import grade
from workbench.core.tasks.suites import imported_path, load_suite
from workbench.core.workers.pool import build_pool
from workbench.core.workspace import Workspace

TWO = ("Meta-Llama-3_1-8B-Instruct", "gemma-7b")


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return Workspace.open(tmp_path / "ws")


def _versions(models):
    """question_id -> the distinct (question, options, answer, category) the models'
    files hold, read with the standard library: the reference for the mismatch check. A
    question whose options a file cut to one is no choice: that file's answer is a miss."""
    out = defaultdict(set)
    for model in models:
        for r in records(model):
            if len(r["options"]) < 2:
                continue
            out[r["question_id"]].add(
                (r["question"], tuple(r["options"]), r["answer"], r["category"])
            )
    return out


def _nothing_imported(ws: Workspace, name: str) -> bool:
    return [p.name for p in list_pools(ws)] == ["champ"] and not imported_path(name, ws).exists()


def test_two_official_files_with_revised_questions_report_every_difference_at_once(ws):
    files = [(None, mmlu_pro_file(m)) for m in TWO]
    with pytest.raises(RecordsValidationError) as caught:
        import_mmlu_pro(ws, files, "two")
    differing = {q for q, v in _versions(TWO).items() if len(v) > 1}
    assert len(differing) == 9  # MMLU-Pro revised these between the two evaluations
    reported = {i.path for i in caught.value.issues if i.path.startswith("question_id")}
    assert reported == {f"question_id {q}" for q in differing}
    text = str(caught.value)
    assert "question_id 143: answer: differs between the files: 'I' in " in text
    assert "--drop-mismatched" in caught.value.summary and "nothing was imported" in text
    assert _nothing_imported(ws, "two")


def test_the_official_files_become_one_suite_and_one_pool_with_their_own_answers(ws):
    files = [(None, mmlu_pro_file(m)) for m in TWO]
    info = import_mmlu_pro(ws, files, "two", ImportOptions(drop_mismatched=True, split_seed=3))
    versions = _versions(TWO)
    same = {q for q, v in versions.items() if len(v) == 1}
    suite = load_suite("two", ws)
    assert {t.id for t in suite.tasks} == {task_id(q) for q in same}
    assert [w.worker_id for w in info.workers] == [f"recorded:two/{m}" for m in TWO]
    assert any("9 question(s) differ between the files and were left out" in n for n in info.notes)
    cut = "5 question(s) with fewer than two options left out, with their answers"
    assert any(n.startswith(f"model_outputs_gemma-7b_5shots.zip: {cut}") for n in info.notes)
    # every question as the file holds it, and every answer with MMLU-Pro's own letter
    by_id = {t.id: t for t in suite.tasks}
    pool = {w.id.rsplit("/", 1)[1]: w for w in build_pool(["recorded:two"], workspace=ws)}
    for model in TWO:
        table = pool[model].table  # type: ignore[attr-defined]
        for r in records(model):
            if r["question_id"] not in same or len(r["options"]) < 2:
                assert task_id(r["question_id"]) not in table
                continue
            task = by_id[task_id(r["question_id"])]
            assert (task.prompt, list(task.choices), task.answer, task.category) == (
                r["question"],
                r["options"],
                r["answer"],
                r["category"],
            )
            recorded = table[task.id]
            assert recorded.response == r["generated_text"]
            assert recorded.meta == {"pred": r["pred"]} and recorded.model == model
    # the split: seeded, 60/20/20 within each category
    for category, count in Counter(t.category for t in suite.tasks).items():
        splits = Counter(t.split for t in suite.tasks if t.category == category)
        assert abs(splits["train"] - count * SPLIT_SHARES[0]) <= 1
        assert abs(splits["validation"] - count * SPLIT_SHARES[1]) <= 1
    again = Workspace.open(ws.root.parent / "again")
    import_mmlu_pro(again, files, "two", ImportOptions(drop_mismatched=True, split_seed=3))
    assert load_suite("two", again).tasks == suite.tasks
    other = Workspace.open(ws.root.parent / "other")
    import_mmlu_pro(other, files, "two", ImportOptions(drop_mismatched=True, split_seed=4))
    assert [t.split for t in load_suite("two", other).tasks] != [t.split for t in suite.tasks]


def test_our_grade_of_each_imported_answer_agrees_with_mmlu_pros_own_letter(ws):
    """MMLU-Pro's ``pred`` (their regex's letter) is an outside reference: our choice grade
    of the same chain of thought agrees with it on nearly every answer (the rest are
    answers that name two letters, which our grader scores as a hedge)."""
    import_mmlu_pro(
        ws, [(None, mmlu_pro_file(m)) for m in TWO], "two", ImportOptions(drop_mismatched=True)
    )
    suite = load_suite("two", ws)
    for worker in build_pool(["recorded:two"], workspace=ws):
        agree = total = 0
        for task in suite.tasks[:3000]:
            rec = worker.table.get(task.id)  # type: ignore[attr-defined]
            if rec is None:  # a miss
                continue
            ours = grade(task, rec.response).reward == 1.0
            agree += ours == (rec.meta["pred"] == task.answer)
            total += 1
        assert agree / total >= 0.985, (worker.id, agree, total)


def _item(qid, **changes):
    item = {
        "question_id": qid,
        "question": f"Question {qid}: which is right?",
        "options": ["one", "two", "three", "four"],
        "answer": "B",
        "answer_index": 1,
        "cot_content": "",
        "category": "math" if qid % 2 else "law",
        "src": "hand-made",
        "pred": "B",
        "generated_text": f"Thinking about {qid}. The answer is (B).",
    }
    item.update(changes)
    return {k: v for k, v in item.items() if v is not ...}


def _zip(path, items, member=None, raw=None):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            member or path.stem + ".json", raw if raw is not None else json.dumps(items)
        )
    return path


def test_the_variations_real_files_have_are_read(ws, tmp_path):
    """generated_text or model_outputs; options as a Python repr; stray items; a question
    one model lacks; an empty answer; a bare JSON file with a byte order mark."""
    first = _zip(
        tmp_path / "model_outputs_alpha_5shots.zip",
        [
            _item(1),
            "a stray string",
            {"note": "no question_id here"},
            _item(
                2, options=str(["it's", 'say "hi"', "three", "four"]), answer="A", answer_index=0
            ),
            _item(3, generated_text=""),
            [1, 2],
        ],
    )
    second = tmp_path / "model_outputs_beta_5shots.json"
    items = [
        _item(1, generated_text=..., model_outputs="The answer is (C).", pred="C"),
        _item(
            2,
            options=["it's", 'say "hi"', "three", "four"],
            answer="A",
            answer_index=0,
            generated_text=...,
            model_outputs="(A)",
            pred=None,
        ),
        _item(3, generated_text=..., model_outputs="The answer is (B)."),
        _item(4, generated_text=..., model_outputs="The answer is (B)."),
    ]
    second.write_bytes(b"\xef\xbb\xbf" + json.dumps(items).encode())
    info = import_mmlu_pro(ws, [(None, first), (None, second)], "hand")
    suite = load_suite("hand", ws)
    assert [t.id for t in suite.tasks] == [task_id(q) for q in (1, 2, 3, 4)]
    assert suite.get(task_id(2)).choices == ("it's", 'say "hi"', "three", "four")
    workers = {w.worker_id: w for w in info.workers}
    assert workers["recorded:hand/alpha"].answers == 2  # 3 is empty, 4 absent: misses
    assert workers["recorded:hand/beta"].answers == 4
    notes = "\n".join(info.notes)
    assert "3 item(s) that are not question records skipped (items 2, 3, 6)" in notes
    assert "1 empty answer(s) left out: misses" in notes
    assert "recorded:hand/alpha has no answer to 2 of 4 questions" in notes
    alpha, beta = build_pool(["recorded:hand"], workspace=ws)
    assert beta.table[task_id(1)].response == "The answer is (C)."  # type: ignore[attr-defined]
    assert beta.table[task_id(2)].meta == {"pred": None}  # type: ignore[attr-defined]
    # a miss is a failed call in an episode, never an answer made up
    settings = EpisodeSettings(max_turns=1, roles=("worker",))
    from workbench.core.policies import FixedPolicy

    missed = asyncio.run(run_episode(FixedPolicy(1, 0), [alpha], suite.get(task_id(4)), settings))
    assert "no recorded answer" in (missed.turns[0].error or "") and missed.reward == 0.0
    right = asyncio.run(run_episode(FixedPolicy(1, 0), [beta], suite.get(task_id(3)), settings))
    assert right.reward == 1.0


def test_a_python_repr_is_read_never_evaluated(ws, tmp_path):
    marker = tmp_path / "pwned"
    hostile = f"__import__('os').system('touch {marker}')"
    path = _zip(tmp_path / "model_outputs_x_5shots.zip", [_item(1, options=hostile)])
    with pytest.raises(RecordsValidationError) as caught:
        import_mmlu_pro(ws, [(None, path)], "hostile")
    (issue,) = caught.value.issues
    assert (issue.line, issue.field) == (1, "options") and "not a Python list" in issue.message
    assert not marker.exists()


def test_every_error_kind_is_reported_with_its_file_item_and_field_at_once(ws, tmp_path):
    truncated = tmp_path / "model_outputs_cut_5shots.zip"
    whole = _zip(tmp_path / "whole.zip", [_item(1)]).read_bytes()
    truncated.write_bytes(whole[: len(whole) // 2])
    two_members = tmp_path / "model_outputs_twice_5shots.zip"
    with zipfile.ZipFile(two_members, "w") as archive:
        archive.writestr("a.json", "[]")
        archive.writestr("b.json", "[]")
    not_utf8 = tmp_path / "model_outputs_latin_5shots.json"
    not_utf8.write_bytes(
        json.dumps([_item(1, question="caf\u00e9?")], ensure_ascii=False).encode("latin-1")
    )
    not_json = _zip(tmp_path / "model_outputs_broken_5shots.zip", None, raw='[{"question_id": 1,')
    not_list = _zip(tmp_path / "model_outputs_object_5shots.zip", {"question_id": 1})
    no_answers = _zip(
        tmp_path / "model_outputs_results_5shots.zip", [{"question_id": 1, "question": "q"}]
    )
    bad_items = _zip(
        tmp_path / "model_outputs_bad_5shots.zip",
        [
            _item(True),
            _item(2, question="  "),
            _item(3, options="not a list ["),
            _item(4, options=["a", 2]),
            _item(5, answer="AB"),
            _item(6, answer="K"),
            _item(7, category=7),
            _item(8, generated_text=["a list"]),
            _item(9, options=[f"o{i}" for i in range(27)]),
            _item(10),
            _item(10),
        ],
    )
    missing = tmp_path / "model_outputs_absent_5shots.zip"
    files = [truncated, two_members, not_utf8, not_json, not_list, no_answers, bad_items, missing]
    with pytest.raises(RecordsValidationError) as caught:
        import_mmlu_pro(ws, [(None, f) for f in files], "bad")
    found = [(i.path, i.line, i.field) for i in caught.value.issues]
    messages = {(i.path, i.line, i.field): i.message for i in caught.value.issues}
    bad = "model_outputs_bad_5shots.zip"
    assert found == [
        ("model_outputs_cut_5shots.zip", 0, None),
        ("model_outputs_twice_5shots.zip", 0, None),
        ("model_outputs_latin_5shots.json", 0, None),
        ("model_outputs_broken_5shots.zip", 0, None),
        ("model_outputs_object_5shots.zip", 0, None),
        ("model_outputs_results_5shots.zip", 0, None),
        (bad, 1, "question_id"),
        (bad, 2, "question"),
        (bad, 3, "options"),
        (bad, 4, "options"),
        (bad, 5, "answer"),
        (bad, 7, "category"),
        (bad, 8, "generated_text"),
        ("model_outputs_absent_5shots.zip", 0, None),
        (bad, 6, "answer"),  # the suite's own check: a letter past the options
        (bad, 9, "options"),  # the suite's own check, named by the file's field
        (bad, 11, "worker"),  # the recorded answers' own check: a second answer
    ]
    assert (
        "not a complete zip file" in messages[found[0]]
        and "download it again" in messages[found[0]].lower()
    )
    assert "holds 2 JSON files" in messages[found[1]]
    assert "not UTF-8" in messages[found[2]]
    assert "not valid JSON" in messages[found[3]] and "line 1" in messages[found[3]]
    assert "expected a JSON list" in messages[found[4]]
    assert "generated_text or model_outputs" in messages[found[5]]
    assert "out of range: options are A-D" in messages[(bad, 6, "answer")]
    assert "between 2 and 26 options, got 27" in messages[(bad, 9, "options")]
    assert "first on item 10" in messages[(bad, 11, "worker")]
    assert "does not exist" in messages[("model_outputs_absent_5shots.zip", 0, None)]
    text = str(caught.value)
    assert f"{bad}, item 5: answer: must be an option letter" in text
    assert _nothing_imported(ws, "bad")


def test_names_and_workers_are_checked_before_any_file_is_read(ws, tmp_path):
    path = _zip(tmp_path / "model_outputs_alpha_5shots.zip", [_item(1)])
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    other = _zip(copy / "model_outputs_alpha_5shots.zip", [_item(1)])
    with pytest.raises(RecordedPoolError, match="same worker alpha.*WORKER=FILE"):
        import_mmlu_pro(ws, [(None, path), (None, other)], "twice")
    info = import_mmlu_pro(ws, [(None, path), ("alpha-2", other)], "twice")
    assert [w.worker_id for w in info.workers] == ["recorded:twice/alpha", "recorded:twice/alpha-2"]
    _zip(copy / "model_outputs_beta_5shots.zip", [_item(1)])
    info = import_mmlu_pro(ws, [(None, copy)], "folder")  # a folder: every output file in it
    assert [w.worker_id for w in info.workers] == ["recorded:folder/alpha", "recorded:folder/beta"]
    with pytest.raises(RecordedPoolError, match="already imported"):
        import_mmlu_pro(ws, [(None, path)], "twice")
    for name, why in (("champ", "built-in"), ("mixed", "bundled suite"), ("a b", "cannot name")):
        with pytest.raises(RecordedPoolError, match=why):
            import_mmlu_pro(ws, [(None, path)], name)
    ws.suites_dir.mkdir(parents=True, exist_ok=True)
    (ws.suites_dir / "taken.jsonl").write_text(
        '{"id": "t", "kind": "math", "prompt": "1+1", "answer": "2"}\n', encoding="utf-8"
    )
    with pytest.raises(RecordedPoolError, match="suite named 'taken' already exists"):
        import_mmlu_pro(ws, [(None, path)], "taken")
    import_mmlu_pro(ws, [(None, path)], "taken", ImportOptions(replace=True))
    assert load_suite("taken", ws).tasks[0].id == task_id(1)


def test_the_import_command_shows_progress_and_every_problem(tmp_path):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "workbench", "--workspace", str(tmp_path / "w"), *args],
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = _zip(tmp_path / "model_outputs_alpha_5shots.zip", [_item(1), _item(2)])
    second = _zip(tmp_path / "b.zip", [_item(1), _item(2, answer="C", answer_index=2)])
    args = ("records", "import", "--format", "mmlu-pro", str(first), f"beta={second}")
    done = cli(*args, "--name", "cli")
    assert done.returncode == 2
    assert "reading model_outputs_alpha_5shots.zip" in done.stderr  # progress, off a terminal
    assert "question_id 2: answer: differs between the files: 'B' in model_outputs_alpha" in (
        done.stderr
    )
    assert "nothing was imported" in done.stderr and "Traceback" not in done.stderr
    done = cli(*args, "--name", "cli", "--drop-mismatched")
    assert done.returncode == 0, done.stderr
    assert "imported 2 answers of 2 workers to 1 questions as suite 'cli' and recorded pool" in (
        done.stdout
    )
    assert "recorded:cli/beta" in done.stdout and "writing the suite" in done.stderr
    shown = cli("suites", "show", "cli")
    assert "mmlu-pro-1" in shown.stdout and "mmlu-pro-2" not in shown.stdout
    wrong = cli("records", "import", str(first), str(second), "--name", "j", "--suite", "cli")
    assert wrong.returncode == 2 and "a JSONL import reads one FILE" in wrong.stderr
    wrong = cli(*args, "--name", "k", "--suite", "cli")
    assert wrong.returncode == 2 and "builds its own suite" in wrong.stderr


def test_a_sample_is_each_categorys_share_drawn_by_the_seed():
    from workbench.core.importers.build import sample_by_group

    tasks = {f"t{i:03d}": {"category": "abc"[i % 3] if i < 90 else "d"} for i in range(100)}
    picked = sample_by_group(tasks, 20, seed=1)
    assert len(picked) == 20 and len(set(picked)) == 20
    counts = {c: sum(tasks[t]["category"] == c for t in picked) for c in "abcd"}
    assert counts == {"a": 6, "b": 6, "c": 6, "d": 2}  # 30/30/30/10 of 100
    assert picked == sample_by_group(tasks, 20, seed=1)
    assert picked != sample_by_group(tasks, 20, seed=2)
    assert picked == sorted(picked)  # in the tasks' order
