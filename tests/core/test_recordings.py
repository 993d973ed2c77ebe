"""Recorded pools in a workspace: import validation (every error kind with its line,
nothing imported on any error), list / show / remove, a pool built from an imported one
(hits, the worker mask, a miss), and imports from a stored run and from the response
cache of a real model (the offline SmolLM2)."""

from __future__ import annotations

import asyncio
import json

import pytest

from workbench.core.policies import FixedPolicy, RandomPolicy
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.recordings import (
    RecordedPoolError,
    RecordsValidationError,
    import_file,
    import_from_cache,
    import_from_run,
    list_pools,
    remove_pool,
    show_pool,
)
from workbench.core.records import Role
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.workers.cache import cached_pool
from workbench.core.workers.pool import build_pool
from workbench.core.workers.recorded import RecordedPoolNotFound
from workbench.core.workspace import Workspace

SUITE = "arithmetic"


@pytest.fixture()
def ws(tmp_path) -> Workspace:
    return Workspace.open(tmp_path / "ws")


@pytest.fixture(scope="module")
def tasks():
    return load_suite(SUITE).tasks


def _line(**fields) -> str:
    return json.dumps(fields)


def _write(path, lines) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _good(tasks) -> list[str]:
    return [
        _line(task_id=tasks[0].id, worker="alpha", response=f"\\boxed{{{tasks[0].answer}}}"),
        _line(task_id=tasks[1].id, worker="alpha", response="\\boxed{-1}", tokens_in=9),
        _line(
            task_id=tasks[1].id,
            worker="beta",
            response=f"The answer is {tasks[1].answer}.",
            model="Beta 1",
            tokens_in=12,
            tokens_out=6,
            cost=0.002,
            latency_s=1.25,
            role="worker",
            setting="0-shot",
        ),
    ]


BAD_LINES = [
    ("not json", None, "not valid JSON"),
    ("[1, 2]", None, "expected a JSON object"),
    (_line(task_id="T0", worker="w", response="r", answr="x"), "answr", "unknown field"),
    (_line(worker="w", response="r"), "task_id", "missing"),
    (_line(task_id="T0", response="r"), "worker", "missing"),
    (_line(task_id="T0", worker="w"), "response", "missing"),
    (_line(task_id="T0", worker="w", response=5), "response", "must be a string"),
    (_line(task_id="T0", worker="w", response="  "), "response", "must not be empty"),
    (_line(task_id="T0", worker="a b", response="r"), "worker", "not a worker name"),
    (_line(task_id="T0", worker="w", response="r", role="boss"), "role", "must be one of"),
    (_line(task_id="T0", worker="w", response="r", tokens_in=-1), "tokens_in", "whole number"),
    (_line(task_id="T0", worker="w", response="r", tokens_out=1.5), "tokens_out", "whole"),
    (_line(task_id="T0", worker="w", response="r", cost="$1"), "cost", "a number"),
    (_line(task_id="T0", worker="w", response="r", latency_s=-2), "latency_s", "a number"),
    (_line(task_id="no-such-task", worker="w", response="r"), "task_id", "unknown task id"),
    (_line(task_id="T0", worker="w", response="r", meta=["C"]), "meta", "must be an object"),
]


@pytest.mark.parametrize(("bad", "field", "message"), BAD_LINES)
def test_each_error_kind_is_reported_on_its_line_and_nothing_is_imported(
    ws, tmp_path, tasks, bad, field, message
):
    bad = bad.replace('"T0"', json.dumps(tasks[0].id))
    path = _write(tmp_path / "a.jsonl", [*_good(tasks), bad])
    with pytest.raises(RecordsValidationError) as caught:
        import_file(ws, path, "mine", SUITE)
    (issue,) = caught.value.issues
    assert issue.line == 4 and issue.field == field
    assert message in issue.message
    assert "nothing was imported" in str(caught.value)
    assert not ws.records_dir.exists() or not any(ws.records_dir.iterdir())
    assert [p.name for p in list_pools(ws)] == ["champ"]


def test_every_problem_of_a_file_is_listed_with_duplicates_and_unknown_ids(ws, tmp_path, tasks):
    lines = [
        *_good(tasks),
        _line(task_id=tasks[0].id, worker="alpha", response="again"),
        _line(task_id="ghost-1", worker="alpha", response="r"),
        _line(task_id="ghost-2", worker="beta", response="r"),
    ]
    with pytest.raises(RecordsValidationError) as caught:
        import_file(ws, _write(tmp_path / "a.jsonl", lines), "mine", SUITE)
    issues = caught.value.issues
    assert [(i.line, i.field) for i in issues] == [(4, "worker"), (5, "task_id"), (6, "task_id")]
    assert "first on line 1" in issues[0].message
    assert "2 unknown task ids" in str(caught.value)
    assert not ws.records_dir.exists() or not any(ws.records_dir.iterdir())


def test_a_missing_file_an_empty_one_and_bad_names_are_refused(ws, tmp_path, tasks):
    with pytest.raises(RecordsValidationError, match="does not exist"):
        import_file(ws, tmp_path / "none.jsonl", "mine", SUITE)
    with pytest.raises(RecordsValidationError, match="no answers"):
        import_file(ws, _write(tmp_path / "e.jsonl", [""]), "mine", SUITE)
    path = _write(tmp_path / "a.jsonl", _good(tasks))
    for name, why in (("champ", "built-in"), ("a/b", "cannot name"), ("", "cannot name")):
        with pytest.raises(RecordedPoolError, match=why):
            import_file(ws, path, name, SUITE)


def test_an_imported_pool_is_listed_shown_used_and_removed(ws, tmp_path, tasks):
    info = import_file(ws, _write(tmp_path / "a.jsonl", _good(tasks)), "mine", SUITE)
    assert info.answers == 3 and info.suite == SUITE
    assert [(w.worker_id, w.answers, w.covered, w.suite_tasks) for w in info.workers] == [
        ("recorded:mine/alpha", 2, 2, len(tasks)),
        ("recorded:mine/beta", 1, 1, len(tasks)),
    ]
    assert info.workers[1].model == "Beta 1"
    assert [p.name for p in list_pools(ws)] == ["champ", "mine"]
    with pytest.raises(RecordedPoolError, match="already imported"):
        import_file(ws, _write(tmp_path / "a.jsonl", _good(tasks)), "mine", SUITE)

    pool = build_pool(["recorded:mine", "sandbox:mathlete"], workspace=ws)
    assert [w.id for w in pool] == [
        "recorded:mine/alpha",
        "recorded:mine/beta",
        "sandbox:mathlete",
    ]
    settings = EpisodeSettings(max_turns=1, roles=("worker",))
    right = asyncio.run(run_episode(FixedPolicy(3, 0), pool, tasks[0], settings))
    assert right.reward == 1.0 and right.turns[0].role is Role.WORKER
    beta = asyncio.run(run_episode(FixedPolicy(3, 1), pool, tasks[1], settings)).turns[0]
    assert (beta.tokens_in, beta.tokens_out, beta.cost, beta.latency_s) == (12, 6, 0.002, 1.25)
    miss = asyncio.run(run_episode(FixedPolicy(3, 1), pool, tasks[0], settings))
    assert "no recorded answer" in (miss.turns[0].error or "") and miss.reward == 0.0
    # random routing never lands on beta for tasks[0]: beta is masked there
    for seed in range(20):
        import numpy as np

        ep = asyncio.run(
            run_episode(RandomPolicy(3), pool, tasks[0], settings, rng=np.random.default_rng(seed))
        )
        assert ep.turns[0].worker != "recorded:mine/beta" and ep.turns[0].error is None

    with pytest.raises(RecordedPoolNotFound, match="no worker 'gamma'"):
        build_pool(["recorded:mine/gamma"], workspace=ws)
    with pytest.raises(RecordedPoolNotFound, match="no workspace"):
        build_pool(["recorded:mine"])
    remove_pool(ws, "mine")
    assert [p.name for p in list_pools(ws)] == ["champ"]
    with pytest.raises(RecordedPoolNotFound, match="no recorded pool named 'mine'"):
        build_pool(["recorded:mine"], workspace=ws)
    with pytest.raises(RecordedPoolError, match="built in"):
        remove_pool(ws, "champ")
    with pytest.raises(RecordedPoolError, match="no imported recorded pool"):
        remove_pool(ws, "mine")


def test_the_built_in_champ_pool_shows_its_coverage(ws):
    info = show_pool(ws, "champ")
    assert len(info.workers) == 8 and info.suite == "champ"
    turbo = next(w for w in info.workers if w.worker_id == "recorded:champ/gpt-4-turbo")
    assert (turbo.answers, turbo.covered, turbo.suite_tasks) == (266, 266, 270)
    # coverage of another suite: CHAMP's answers cover none of its tasks
    assert all(w.covered == 0 for w in show_pool(ws, "champ", suite=SUITE).workers)


def _play_live(ws, tasks):
    """Episodes of a real model (the offline SmolLM2, in-process) and a simulated worker,
    stored as a run and through the response cache; returns (run id, the local worker's
    id, the episodes)."""
    ids = ["local:smollm2", "sandbox:mathlete"]
    settings = EpisodeSettings(suite=SUITE, max_turns=2, max_tokens=6, temperature=0.0)
    with Store.open(ws) as store:
        run_id = store.create_run("live", "eval", {})
        pool, _ = cached_pool(build_pool(ids, workspace=ws), store, "read-write")

        async def play():
            episodes = []
            for task in tasks[:3]:
                for index in (0, 1):
                    episodes.append(
                        await run_episode(
                            FixedPolicy(2, index), pool, task, settings, seed=0, tag=_tag(run_id)
                        )
                    )
            # a second answer of the local worker to a task already answered
            episodes.append(
                await run_episode(FixedPolicy(2, 0), pool, tasks[0], settings, tag=_tag(run_id))
            )
            return episodes

        episodes = asyncio.run(play())
        store.add_episodes(episodes)
        for worker in pool:
            asyncio.run(worker.aclose())
    return run_id, ids[0], episodes


def _tag(run_id):
    from workbench.core.protocol import EpisodeTag

    return EpisodeTag(run_id=run_id)


@pytest.mark.slow
def test_import_from_a_run_and_from_the_cache_keeps_a_real_models_first_answers(ws, tasks):
    run_id, local_id, episodes = _play_live(ws, tasks)
    expected = {
        e.task_id: e.turns[0].response
        for e in episodes
        if e.turns[0].worker == local_id
        and e.turns[0].error is None
        and e.turns[0].response.strip()
    }
    assert expected  # the tiny model said something

    info = import_from_run(ws, run_id, "from-run")
    (worker,) = info.workers  # the simulated worker is left out
    assert worker.answers == len(expected)
    assert any("simulated" in n for n in info.notes)
    assert any("later answers" in n for n in info.notes)
    (recorded,) = build_pool(["recorded:from-run"], workspace=ws)
    assert {t: r.response for t, r in recorded.table.items()} == expected  # type: ignore[attr-defined]

    cached = import_from_cache(ws, SUITE, "from-cache")
    (worker,) = cached.workers
    assert worker.answers == len(expected)
    (recorded,) = build_pool(["recorded:from-cache"], workspace=ws)
    assert {t: r.response for t, r in recorded.table.items()} == expected  # type: ignore[attr-defined]
    assert any("simulated" in n for n in cached.notes)

    # the CHAMP suite's prompts match no cached reply: a sentence, nothing imported
    with pytest.raises(RecordsValidationError, match="holds no reply"):
        import_from_cache(ws, "champ", "none")
    assert "none" not in [p.name for p in list_pools(ws)]


def test_the_records_commands_import_list_show_and_remove(tmp_path, tasks):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "workbench", "--workspace", str(tmp_path / "w"), *args],
            capture_output=True,
            text=True,
            timeout=300,
        )

    bad = _write(tmp_path / "bad.jsonl", [*_good(tasks), _line(task_id="ghost", worker="a")])
    done = cli("records", "import", bad, "--name", "mine", "--suite", SUITE)
    assert done.returncode == 2
    assert f"{bad}:4: task_id: unknown task id 'ghost'" in done.stderr
    assert f"{bad}:4: response: missing" in done.stderr
    assert "nothing was imported" in done.stderr
    good = _write(tmp_path / "good.jsonl", _good(tasks))
    done = cli("records", "import", good, "--name", "mine")
    assert done.returncode == 2 and "--suite is needed" in done.stderr
    done = cli("records", "import", good, "--name", "mine", "--suite", SUITE)
    assert done.returncode == 0, done.stderr
    assert "imported 3 answers of 2 workers as recorded pool 'mine'" in done.stdout
    listed = cli("records", "list", "--json")
    assert [p["name"] for p in json.loads(listed.stdout)] == ["champ", "mine"]
    shown = cli("records", "show", "recorded:mine")
    assert "recorded:mine/alpha" in shown.stdout and f"2/{len(tasks)}" in shown.stdout
    assert cli("records", "remove", "mine").returncode == 0
    assert cli("records", "show", "mine").returncode == 2
    # prices for the answers without a recorded cost
    done = cli("records", "import", good, "--name", "p", "--suite", SUITE, "--price", "alpha=x")
    assert done.returncode == 2 and "WORKER=IN,OUT" in done.stderr
    args = ("records", "import", good, "--name", "p", "--suite", SUITE)
    done = cli(*args, "--price", "gamma=1,2")
    assert done.returncode == 2 and "no worker 'gamma'" in done.stderr
    assert cli(*args, "--price", "alpha=2,8").returncode == 0
    (alpha, _beta) = build_pool(["recorded:p"], workspace=Workspace.open(tmp_path / "w"))
    assert (alpha.price_in, alpha.price_out) == (2.0, 8.0)
    settings = EpisodeSettings(max_turns=1, roles=("worker",))
    turn = asyncio.run(run_episode(FixedPolicy(1, 0), [alpha], tasks[1], settings)).turns[0]
    assert turn.tokens_in == 9 and turn.cost == pytest.approx((9 * 2 + turn.tokens_out * 8) / 1e6)


def test_an_evaluation_of_a_recorded_pool_has_the_oracle_and_paired_differences(
    ws, tmp_path, tasks
):
    from workbench.core.evaluate import baseline_names, evaluate

    import_file(ws, _write(tmp_path / "a.jsonl", _good(tasks)), "mine", SUITE)
    pool = build_pool(["recorded:mine"], workspace=ws)
    ids = [w.id for w in pool]
    assert baseline_names(ids)[-1] == "recorded oracle"
    assert "recorded oracle" not in baseline_names(["recorded:mine/alpha", "sandbox:mathlete"])
    report, episodes = asyncio.run(
        evaluate(
            FixedPolicy(2, 1),  # always beta: no answer to tasks[0], right on tasks[1]
            pool,
            tasks[:2],
            EpisodeSettings(suite=SUITE, max_turns=1, roles=("worker",)),
            baselines=["recorded oracle"],  # brings the single workers it is read from
        )
    )
    by_name = {s.name: s for s in report.systems}
    assert list(by_name) == [
        "coordinator",
        "single:recorded:mine/alpha",
        "single:recorded:mine/beta",
        "recorded oracle",
    ]
    assert [by_name[n].accuracy for n in by_name] == [0.5, 0.5, 0.5, 1.0]
    # beta has no answer to tasks[0]: counted as wrong for single:beta while the coordinator
    # would be routed around it, so the paired comparison is on tasks[1] alone, which every
    # worker covers (there alpha is wrong, beta right: beta is the best single worker)
    assert report.best_single == "single:recorded:mine/beta" and report.paired_left_out == 1
    coordinator = report.paired[0]
    assert (coordinator.system, coordinator.wins, coordinator.losses) == ("coordinator", 0, 0)
    assert coordinator.n == 1 and coordinator.difference == 0.0
    alpha = next(p for p in report.paired if p.system == "single:recorded:mine/alpha")
    assert (alpha.wins, alpha.losses, alpha.n) == (0, 1, 1)
    assert len([e for e in episodes if e.candidate == 3]) == 2  # the oracle's, replayable
    for text in (report.to_markdown(), report.table()):
        assert "task by task on the 1 tasks every worker has an answer for (1 left out" in text


def test_a_damaged_pool_file_is_a_clear_error_and_hides_no_other_pool(ws, tmp_path, tasks):
    from workbench.core.workers.recorded import RecordedPoolDamaged, pool_paths

    import_file(ws, _write(tmp_path / "a.jsonl", _good(tasks)), "mine", SUITE)
    import_file(ws, _write(tmp_path / "b.jsonl", _good(tasks)), "other", SUITE)
    answers, meta = pool_paths(ws, "mine")
    lines = answers.read_text(encoding="utf-8").splitlines()
    # an extra field on line 2 (edited by hand)
    answers.write_text(
        lines[0] + "\n" + lines[1][:-1] + ', "answr": "x"}\n' + lines[2] + "\n", encoding="utf-8"
    )
    with pytest.raises(RecordedPoolDamaged, match=r"workspace/records/mine\.jsonl:2: .*answr"):
        build_pool(["recorded:mine"], workspace=ws)
    answers.write_text("not json\n", encoding="utf-8")
    with pytest.raises(RecordedPoolDamaged, match=r"mine\.jsonl:1: .*--replace"):
        build_pool(["recorded:mine"], workspace=ws)
    meta.write_text("{", encoding="utf-8")
    with pytest.raises(RecordedPoolDamaged, match=r"workspace/records/mine\.json: "):
        build_pool(["recorded:mine"], workspace=ws)
    # the listing (records list, the Workers page) shows the others and says what is wrong
    pools = {p.name: p for p in list_pools(ws)}
    assert set(pools) == {"champ", "mine", "other"} and pools["other"].answers == 3
    assert pools["mine"].source == "damaged" and "mine.json" in pools["mine"].notes[0]
    assert str(ws.root) not in pools["mine"].notes[0]  # no full path in output


def test_messages_show_short_paths_not_the_full_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = Workspace.open(tmp_path / "ws")
    with pytest.raises(RecordsValidationError) as missing:
        import_file(ws, ws.root / "none.jsonl", "mine", SUITE)
    assert "workspace/none.jsonl does not exist" in str(missing.value)
    for error in (RecordedPoolNotFound, RecordedPoolError):
        with pytest.raises(error) as unknown:
            if error is RecordedPoolNotFound:
                build_pool(["recorded:nothing"], workspace=ws)
            else:
                show_pool(ws, "nothing")
        assert "workspace ~/ws:" in str(unknown.value) and str(tmp_path) not in str(unknown.value)


def test_unknown_task_ids_with_an_apostrophe_are_counted_one_each(ws, tmp_path):
    lines = [_line(task_id=t, worker="w", response="r") for t in ("a'b", "a'c", "a'c")]
    with pytest.raises(RecordsValidationError) as error:
        import_file(ws, _write(tmp_path / "q.jsonl", lines), "mine", SUITE)
    assert "(2 unknown task ids)" in error.value.summary


def test_answers_keep_their_meta_and_pools_of_either_format_version_read(ws, tmp_path, tasks):
    """Format 2 adds each answer's ``meta`` (what its source said of it); a pool written in
    format 1 reads as before, and one of a newer format is refused, naming the fix."""
    from workbench.core.workers.recorded import RecordedPoolDamaged, pool_paths

    lines = [
        *_good(tasks),
        _line(task_id=tasks[2].id, worker="beta", response="r", meta={"pred": "C"}),
    ]
    import_file(ws, _write(tmp_path / "a.jsonl", lines), "mine", SUITE)
    answers, meta = pool_paths(ws, "mine")
    assert json.loads(meta.read_text(encoding="utf-8"))["format"] == 2
    _alpha, beta = build_pool(["recorded:mine"], workspace=ws)
    assert beta.table[tasks[2].id].meta == {"pred": "C"}  # type: ignore[attr-defined]
    assert beta.table[tasks[1].id].meta is None  # type: ignore[attr-defined]

    info = json.loads(meta.read_text(encoding="utf-8"))
    old = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    answers.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "meta"}) + "\n" for r in old)
    )
    meta.write_text(json.dumps({k: v for k, v in info.items() if k != "format"}), encoding="utf-8")
    assert len(build_pool(["recorded:mine"], workspace=ws)) == 2  # format 1: no "format" key
    meta.write_text(json.dumps({**info, "format": 3}), encoding="utf-8")
    with pytest.raises(RecordedPoolDamaged, match="format 3: .*reads formats 1 to 2.*update"):
        build_pool(["recorded:mine"], workspace=ws)
