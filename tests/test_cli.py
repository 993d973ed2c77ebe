"""The command-line contract, run as a user runs it: real subprocesses, a real workspace."""

import json
import os
import subprocess
import sys

import pytest

from workbench.core.store import parse_episode_json

GOOD = [
    {"id": "add", "kind": "math", "prompt": "What is 12 + 30?", "answer": "42", "category": "math"},
    {
        "id": "prime",
        "kind": "choice",
        "prompt": "Which is prime?",
        "choices": ["4", "6", "7", "9"],
        "answer": "C",
        "category": "choice",
    },
    {
        "id": "sq",
        "kind": "code",
        "prompt": "Write sq(x) returning x squared.",
        "category": "code",
        "tests": {
            "style": "humaneval",
            "entry_point": "sq",
            "test": "def check(candidate):\n    assert candidate(3) == 9\n",
        },
        "solution": "def sq(x):\n    return x * x\n",
    },
]


def cli(*args, workspace=None, check=False):
    cmd = [sys.executable, "-m", "workbench", *args]
    if workspace is not None:
        cmd += ["--workspace", str(workspace)]
    result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ}, timeout=600)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture()
def suite_file(tmp_path):
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in GOOD) + "\n")
    return path


def test_entry_point_starts_and_exits():
    assert cli("--help", check=True).stdout.startswith("usage: trinity-workbench")
    assert "trinity-workbench 0." in cli("--version", check=True).stdout
    exe = os.path.join(os.path.dirname(sys.executable), "trinity-workbench")
    assert (
        subprocess.run(
            [exe, "workers", "list", "--json"], capture_output=True, check=True
        ).returncode
        == 0
    )


def test_every_command_and_action_is_listed_in_its_help():
    """A subcommand without a help line is left out of its parent's --help listing
    (``runs list`` and ``episodes list`` were)."""
    import argparse

    from workbench.cli import build_parser

    unlisted = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                listed = {a.dest for a in action._choices_actions}
                for name, sub in action.choices.items():
                    if name not in listed:
                        unlisted.append(f"{path} {name}".strip())
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "")
    assert not unlisted, unlisted
    assert "list" in cli("runs", "--help", check=True).stdout


def test_suites_check_reports_every_error_with_its_line(tmp_path, suite_file):
    ok = cli("suites", "check", str(suite_file), check=True)
    assert "3 tasks" in ok.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "kind": "math", "prompt": "p", "answer": "1"}\n'
        "not json\n"
        '{"id": "a", "kind": "math", "prompt": "p", "answer": "1"}\n'
        '{"id": "b", "kind": "poem", "prompt": "p"}\n'
    )
    result = cli("suites", "check", str(bad))
    assert result.returncode == 2
    for line in (":2:", ":3:", ":4:"):
        assert f"bad.jsonl{line}" in result.stderr, result.stderr


def test_suites_import_list_show_and_refuse_bad_files(tmp_path, suite_file):
    ws = tmp_path / "ws"
    cli("suites", "import", str(suite_file), "--name", "tiny", workspace=ws, check=True)
    listed = json.loads(cli("suites", "list", "--json", workspace=ws, check=True).stdout)
    assert {"name": "tiny", "count": 3}.items() <= next(
        s for s in listed if s["name"] == "tiny"
    ).items()
    assert {"humaneval", "champ", "arithmetic", "mixed"} <= {s["name"] for s in listed}
    shown = json.loads(cli("suites", "show", "tiny", "--json", workspace=ws, check=True).stdout)
    assert shown["counts"]["kind"] == {"math": 1, "choice": 1, "code": 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "kind": "math", "prompt": "p"}\n')
    result = cli("suites", "import", str(bad), "--name", "broken", workspace=ws)
    assert result.returncode == 2 and "nothing was imported" in result.stderr
    assert "broken" not in cli("suites", "list", workspace=ws, check=True).stdout


def test_suites_grade_prints_reward_and_details(tmp_path, suite_file):
    right = json.loads(
        cli(
            "suites",
            "grade",
            str(suite_file),
            "add",
            "--answer",
            "\\boxed{42}",
            "--json",
            check=True,
        ).stdout
    )
    assert right["reward"] == 1.0 and "details" in right
    wrong = json.loads(
        cli(
            "suites",
            "grade",
            str(suite_file),
            "prime",
            "--answer",
            "Answer: B",
            "--json",
            check=True,
        ).stdout
    )
    assert wrong["reward"] == 0.0
    program = tmp_path / "answer.md"
    program.write_text("```python\ndef sq(x):\n    return x ** 2\n```\n")
    code = json.loads(
        cli(
            "suites",
            "grade",
            str(suite_file),
            "sq",
            "--answer-file",
            str(program),
            "--json",
            check=True,
        ).stdout
    )
    assert code["reward"] == 1.0
    assert cli(
        "suites", "grade", "champ", "P_Combinatorics_1", "--answer", "\\boxed{239}", check=True
    ).stdout.startswith("reward 1")
    missing = cli("suites", "grade", str(suite_file), "nope", "--answer", "1")
    assert missing.returncode == 2 and "has no task 'nope'" in missing.stderr


def test_run_episode_json_is_stored_and_exportable(tmp_path, suite_file):
    ws = tmp_path / "ws"
    result = cli(
        "run-episode",
        "--backbone",
        "offline",
        "--pool",
        "sandbox",
        "--suite",
        str(suite_file),
        "--task",
        "add",
        "--seed",
        "4",
        "--json",
        workspace=ws,
        check=True,
    )
    record = json.loads(result.stdout)
    assert record["task_id"] == "add" and record["pool"] == [
        "sandbox:mathlete",
        "sandbox:scholar",
        "sandbox:coder",
    ]
    assert 1 <= len(record["turns"]) <= 5
    for turn in record["turns"]:
        assert (
            turn["role"] in ("thinker", "worker", "verifier") and turn["worker"] in record["pool"]
        )
        assert len(turn["worker_probs"]) == 3 and len(turn["role_probs"]) == 3
    listed = json.loads(cli("episodes", "list", "--json", workspace=ws, check=True).stdout)
    assert [e["id"] for e in listed] == [record["id"]]
    exported = cli("episodes", "export", record["id"][:8], workspace=ws, check=True).stdout
    data = json.loads(exported)
    # --json and the export are the one export format, counted from 1 as the table is
    for doc in (record, data):
        assert doc["format"] == "trinity-workbench/episode" and doc["version"] == 2
        assert [t["index"] for t in doc["turns"]] == list(range(1, len(record["turns"]) + 1))
        assert doc["generation"] is None and doc["candidate"] is None  # no run generation
    stored = parse_episode_json(exported)  # back to the store's numbering, from 0
    assert stored.id == record["id"] and [t.index for t in stored.turns][0] == 0
    table = cli("episodes", "show", record["id"][:8], workspace=ws, check=True).stdout
    assert "p(worker)" in table and f"episode id: {record['id']}" in table
    assert f"cost: ${sum(t['cost'] for t in record['turns']):.6f} (simulated)" in table


def test_run_episode_bad_input_is_a_clear_error(tmp_path, suite_file):
    bad_worker = cli(
        "run-episode",
        "--pool",
        "gpt-9",
        "--suite",
        str(suite_file),
        "--task",
        "add",
        workspace=tmp_path,
    )
    assert bad_worker.returncode == 2 and "unknown worker 'gpt-9'" in bad_worker.stderr
    assert "Traceback" not in bad_worker.stderr
    bad_suite = cli(
        "run-episode",
        "--pool",
        "sandbox",
        "--suite",
        "no-such-suite",
        "--task",
        "x",
        workspace=tmp_path,
    )
    assert bad_suite.returncode == 2 and "no-such-suite" in bad_suite.stderr
    bad_backbone = cli(
        "run-episode",
        "--backbone",
        str(tmp_path / "none.gguf"),
        "--pool",
        "sandbox",
        "--suite",
        str(suite_file),
        "--task",
        "add",
        workspace=tmp_path,
    )
    assert bad_backbone.returncode == 2 and "none.gguf not found" in bad_backbone.stderr


def test_workspace_before_the_command_is_the_commands_workspace(tmp_path, suite_file):
    """`--workspace DIR suites import ...` once imported into the default workspace without a
    word (the subcommand's own --workspace default won over the top-level option)."""
    ws = tmp_path / "ws"
    out = cli("--workspace", str(ws), "suites", "import", str(suite_file), "--name", "tiny")
    assert out.returncode == 0, out.stderr
    listed = cli("suites", "list", workspace=ws, check=True)
    assert "tiny" in listed.stdout
    twice = cli("--workspace", str(ws), "suites", "list", workspace=tmp_path / "other")
    assert twice.returncode == 2 and "--workspace is given twice" in twice.stderr
    assert "Traceback" not in twice.stderr and not (tmp_path / "other").exists()


def test_run_episode_refuses_a_negative_seed_naming_the_option(tmp_path, suite_file):
    """numpy refused --seed -5 with "expected non-negative integer", naming no option."""
    out = cli(
        "run-episode", "--pool", "sandbox", "--suite", str(suite_file), "--task", "add",
        "--seed", "-5", workspace=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2 and "argument --seed: -5 is out of range" in out.stderr
    assert "Traceback" not in out.stderr


def test_runs_list_shows_what_the_runs_page_shows(tmp_path):
    """`runs list` prints core's run summaries (``jobs.shared.list_runs``), as the Runs page lists
    them: the effective status, and the generations committed so far (also of a run that
    has not reported a result yet); oldest first; ``--all`` adds the other kinds."""
    from tests.gui.test_start_page import stored_run
    from workbench.core.jobs.shared import list_runs
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    ws = Workspace.open(tmp_path / "ws")
    done = stored_run(ws, "done", 3, "finished")
    with Store.open(ws) as store:
        young = store.create_run("young", "train", {})  # no result yet, one generation in
        store.commit_generation(young, 0, {"best": 0.5}, b"state")
        store.set_run_status(young, "stopped", stop_reason="stopped")
        evaluation = store.create_run("an evaluation", "eval", {})
    listed = json.loads(cli("runs", "list", "--json", workspace=ws.root, check=True).stdout)
    assert [(r["id"], r["status"], r["generations"]) for r in listed] == [
        (done, "finished", 3),
        (young, "stopped", 1),
    ]
    assert listed == [{**s.to_json(), "generations": s.generations} for s in list_runs(ws)[::-1]]
    assert listed[0]["stop_reason"] == "stopped" and listed[0]["error"] is None
    table = cli("runs", "list", workspace=ws.root, check=True).stdout.splitlines()
    assert [line.split()[:2] for line in table[2:]] == [[done[:8], "done"], [young[:8], "young"]]
    every = json.loads(cli("runs", "list", "--all", "--json", workspace=ws.root, check=True).stdout)
    assert [(r["id"], r["kind"], r["generations"]) for r in every][-1] == (evaluation, "eval", 0)


def test_replay_names_an_episode_of_the_run_by_a_prefix(tmp_path):
    """`replay RUN --episode PREFIX` finds the run's episode by a unique prefix (the store
    resolves it, as `episodes show` does); another run's episode or an unknown prefix is
    a clear error (exit 2) that names the run; so is a run with no episode, which says
    why a run may have none and where its results are."""
    from tests.core.test_store import make_episode
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        run, other = store.create_run("r", "train", {}), store.create_run("o", "train", {})
        store.add_episode(make_episode("abcd1111" + "0" * 24, run_id=run))
        store.add_episode(make_episode("abcd2222" + "0" * 24, run_id=other))
    shown = cli("replay", run[:8], "--episode", "abcd", workspace=ws.root, check=True).stdout
    assert "== episode abcd11110000" in shown and "p(worker)" in shown
    elsewhere = cli("replay", run[:8], "--episode", "abcd2", workspace=ws.root)
    assert elsewhere.returncode == 2 and "Traceback" not in elsewhere.stderr
    assert f"no episode 'abcd2' in run {run[:8]}" in elsewhere.stderr
    # a filter that matches nothing, and a run that stored none (trained on a table)
    late = cli("replay", run[:8], "--generation", "9", workspace=ws.root)
    assert late.returncode == 2 and f"run {run[:8]} has no episodes matching" in late.stderr
    with Store.open(ws) as store:
        table = store.create_run("on a table", "train", {})
    none = cli("replay", table[:8], workspace=ws.root)
    assert none.returncode == 2 and "Traceback" not in none.stderr
    assert f"run {table[:8]} has no episodes stored (training on a routing table" in none.stderr
    assert f"runs show {table[:8]}" in none.stderr


def test_a_damaged_checkpoint_is_named_with_its_run_and_generation(tmp_path):
    """A checkpoint whose bytes do not read back (a damaged disk, a foreign write) is a
    clear error (exit 2) for `export` and `train --resume`, naming the run, the generation
    and what still reads, never an "internal error" to report; the run's generations are
    still listed."""
    import pickle

    from tests.gui.test_start_page import stored_run  # its checkpoints are b"state"
    from workbench.core.store import Store
    from workbench.core.training.checkpoint import Checkpoint, DamagedCheckpoint
    from workbench.core.workspace import Workspace

    ws = Workspace.open(tmp_path / "ws")
    run = stored_run(ws, "damaged", 2, "stopped")
    for command in (
        ("export", run[:8], "--out", str(tmp_path / "c.json")),
        ("train", "--resume", run[:8]),
    ):
        done = cli(*command, workspace=ws.root)
        assert done.returncode == 2, (command, done.stderr)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr
        assert f"the checkpoint of run {run[:8]}'s generation 2 is damaged" in done.stderr
        assert "UnpicklingError" in done.stderr and "episodes stay readable" in done.stderr
    assert not (tmp_path / "c.json").exists()
    shown = cli("runs", "show", run[:8], workspace=ws.root, check=True).stdout
    assert "damaged" in shown
    for blob in (pickle.dumps([1, 2]), pickle.dumps({"format": 1})[:-3], b""):
        with pytest.raises(DamagedCheckpoint):
            Checkpoint.loads(blob)
    with Store.open(ws) as store:
        assert store.latest_checkpoint(run)[1] == b"state"  # nothing was written over it


def test_runs_show_json_counts_generations_from_1(tmp_path):
    """`runs show --json` counts generations from 1, as its table, the GUI and the exports
    do: each stored generation record's ``generation`` and the result's
    ``best_validation_generation`` (the store keeps both from 0)."""
    from tests.gui.test_start_page import stored_run
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    ws = Workspace.open(tmp_path / "ws")
    run = stored_run(ws, "done", 3, "finished")
    with Store.open(ws) as store:
        result = {"generations": 3, "best_validation_generation": 1}
        store.set_run_status(run, "finished", stop_reason="stopped", result=result)
        assert [g["generation"] for g in store.generations(run)] == [0, 1, 2]
    shown = json.loads(cli("runs", "show", run[:8], "--json", workspace=ws.root, check=True).stdout)
    assert [g["generation"] for g in shown["generations"]] == [1, 2, 3]
    assert shown["result"]["best_validation_generation"] == 2
    with Store.open(ws) as store:  # the store still counts from 0
        assert store.get_run(run).result["best_validation_generation"] == 1
