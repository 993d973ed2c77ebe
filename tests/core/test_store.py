"""The workspace database, on real SQLite files: what is written comes back, all of a
generation or none of it, one writer thread, and a database that survives a kill -9."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.core import store as store_module
from workbench.core.records import (
    Episode,
    Role,
    RunStatus,
    RunStopReason,
    StopReason,
    Turn,
    Verdict,
)
from workbench.core.store import (
    AmbiguousEpisodeId,
    AmbiguousRunId,
    DuplicateEpisode,
    EpisodeNotFound,
    GenerationExists,
    RunNotFound,
    Store,
    StoreError,
    StoreVersionError,
    parse_episode_json,
    schema,
    schema_version,
)
from workbench.core.workspace import Workspace

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_episode(
    episode_id: str | None = None,
    *,
    run_id: str | None = None,
    generation: int | None = None,
    candidate: int | None = None,
    task_id: str = "gsm8k/0001",
    reward: float = 1.0,
    stop_reason: StopReason = StopReason.ACCEPTED,
    workers: tuple[str, ...] = ("gpt", "claude"),
    created_at: float = 1_700_000_000.25,
) -> Episode:
    """An episode with one turn per worker in ``workers`` and a final Verifier turn."""
    pool = ("gpt", "claude", "local")
    turns = []
    for i, worker in enumerate(workers):
        verifier = i == len(workers) - 1
        turns.append(
            Turn(
                index=i,
                worker=worker,
                role=Role.VERIFIER if verifier else Role.WORKER,
                worker_probs=(0.1 + i / 10, 0.7 - i / 10, 0.2),
                role_probs=(1 / 3, 0.5, 1 / 6),
                messages=(
                    {"role": "system", "content": "You are a careful solver."},
                    {"role": "user", "content": f"Q: 17 × {i} = ?  — ünïcode ✓"},
                ),
                response=f"answer {i}",
                verdict=Verdict.ACCEPT if verifier else None,
                verdict_parsed=not (verifier and i == 3),
                tokens_in=100 + i,
                tokens_out=20 + i,
                latency_s=0.125 * (i + 1),
                cost=0.000123 * (i + 1),
                usage_estimated=i % 2 == 1,
                error="timeout after 30 s" if worker == "local" else None,
            )
        )
    return Episode(
        id=episode_id or uuid.uuid4().hex,
        suite="gsm8k",
        task_id=task_id,
        pool=pool,
        max_turns=5,
        turns=tuple(turns),
        answer="42" if workers else None,
        reward=reward,
        stop_reason=stop_reason,
        grade_details={"expected": "42", "parsed": ["42", 42.0], "nested": {"ok": True}},
        seed=1234,
        run_id=run_id,
        generation=generation,
        candidate=candidate,
        created_at=created_at,
    )


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "workbench.sqlite3") as s:
        yield s


def writer_threads_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("workbench-store-writer")]


# --------------------------------------------------------------------------- opening


def test_open_workspace_creates_database_in_wal_mode(tmp_path: Path) -> None:
    workspace = Workspace.open(tmp_path / "ws")
    with Store.open(workspace) as s:
        assert s.path == workspace.db_path
        assert s.list_runs() == []
    conn = sqlite3.connect(workspace.db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_version()
    conn.close()


def test_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "workbench.sqlite3"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {schema_version() + 1}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreVersionError) as info:
        Store(path)
    assert str(info.value) == (
        f"workspace database {path} has schema version {schema_version() + 1}, this "
        f"workbench knows up to {schema_version()}: upgrade trinity-workbench"
    )
    assert path.read_bytes() == before
    assert writer_threads_alive() == []


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="not a workbench database") as info:
        Store(path)
    assert str(path) in str(info.value)
    assert writer_threads_alive() == []


def test_someone_elses_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE contacts (name TEXT)")
    conn.close()
    with pytest.raises(StoreError, match="not a workbench database"):
        Store(path)


def test_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "nowhere" / "workbench.sqlite3")


def test_empty_v0_database_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "workbench.sqlite3"
    sqlite3.connect(path).close()  # a valid, empty SQLite file at user_version 0
    with Store(path) as s:
        run_id = s.create_run("r", "train", {})
        assert s.get_run(run_id).status is RunStatus.CREATED


def test_older_schema_is_migrated_in_order(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "workbench.sqlite3"
    with Store(path) as s:
        run_id = s.create_run("old run", "train", {"lr": 0.1})
    step2 = schema._sql("ALTER TABLE runs ADD COLUMN note TEXT")
    step3 = schema._sql("UPDATE runs SET note = 'migrated'")
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, step2, step3])
    with Store(path) as s:
        assert s.get_run(run_id).config_data == {"lr": 0.1}
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    assert conn.execute("SELECT note FROM runs").fetchall() == [("migrated",)]
    conn.close()


def test_failed_migration_leaves_database_unchanged(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "workbench.sqlite3"
    Store(path).close()
    good = schema._sql("ALTER TABLE runs ADD COLUMN note TEXT")
    bad = schema._sql("ALTER TABLE no_such_table ADD COLUMN x TEXT")
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, good, bad])
    with pytest.raises(StoreError, match="from schema version 2 to 3") as info:
        Store(path)
    assert str(path) in str(info.value)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    assert "note" not in columns
    conn.close()


# --------------------------------------------------------------------------- runs


def test_create_list_get_runs(store: Store) -> None:
    a = store.create_run("first", "train", {"lambda": 16, "pool": ["gpt", "claude"]})
    b = store.create_run("second", "eval", {"split": "test"})
    assert len(a) == 32 and a != b
    assert [r.id for r in store.list_runs()] == [a, b]
    assert [r.id for r in store.list_runs(kind="eval")] == [b]
    run = store.get_run(a)
    assert (run.name, run.kind, run.status) == ("first", "train", RunStatus.CREATED)
    assert run.config_data == {"lambda": 16, "pool": ["gpt", "claude"]}
    assert run.result is None and run.stop_reason is None
    assert store.get_run(a[:4]) == run
    assert store.get_run(a[:9]).id == a


def test_run_status_changes(store: Store) -> None:
    run_id = store.create_run("r", "train", {})
    created = store.get_run(run_id)
    store.set_run_status(run_id, RunStatus.PAUSED, stop_reason=RunStopReason.STOPPED)
    assert store.get_run(run_id).stop_reason is RunStopReason.STOPPED
    store.set_run_status(run_id, RunStatus.RUNNING)
    store.set_run_status(
        run_id, RunStatus.FINISHED, stop_reason=RunStopReason.EPISODES, result={"best": 0.8}
    )
    run = store.get_run(run_id)
    assert run.status is RunStatus.FINISHED
    assert (run.stop_reason, run.result) == (RunStopReason.EPISODES, {"best": 0.8})
    assert run.stop_reason == "budget.episodes"  # the string stored and compared
    assert run.updated_at >= created.updated_at
    store.set_run_status(run_id, RunStatus.FAILED, error="worker gpt: 401")
    run = store.get_run(run_id)
    assert (run.error, run.result, run.stop_reason) == ("worker gpt: 401", {"best": 0.8}, None)
    with pytest.raises(ValueError, match="use one of created"):
        store.set_run_status(run_id, "exploded")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown stop reason 'budget': use one of budget"):
        store.set_run_status(run_id, RunStatus.FINISHED, stop_reason="budget")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="never stored as interrupted"):
        store.set_run_status(run_id, RunStatus.INTERRUPTED)
    with pytest.raises(RunNotFound):
        store.set_run_status("f" * 32, RunStatus.RUNNING)


def test_a_run_stored_as_failed_reads_as_ended_by_an_error(store: Store) -> None:
    """A stop reason stored as "failed" (a served question that raised, in the Playground)
    reads as the one name for it, ``RunStopReason.ERROR``."""
    run_id = store.create_run("question", "serve", {})
    with sqlite3.connect(store.path) as conn:
        conn.execute(
            "UPDATE runs SET status = 'finished', stop_reason = 'failed' WHERE id = ?", (run_id,)
        )
    assert store.get_run(run_id).stop_reason is RunStopReason.ERROR


def test_missing_short_and_ambiguous_run_ids(store: Store, monkeypatch) -> None:
    ids = iter(["abcd1111" + "0" * 24, "abcd2222" + "0" * 24, "ffff" + "0" * 28])
    monkeypatch.setattr(store_module.uuid, "uuid4", lambda: uuid.UUID(hex=next(ids)))
    a, b, _ = (store.create_run(n, "train", {}) for n in "abc")
    with pytest.raises(RunNotFound, match="trinity-workbench runs list"):
        store.get_run("0123456789")
    with pytest.raises(RunNotFound, match="at least 4 characters"):
        store.get_run("abc")
    with pytest.raises(AmbiguousRunId, match="abcd1111.*abcd2222"):
        store.get_run("abcd")
    assert store.get_run("abcd1").id == a
    assert store.get_run("abcd2").id == b
    assert store.get_run(b).id == b


def test_episode_ids_resolve_from_a_unique_prefix(store: Store) -> None:
    """Episode ids are printed shortened (``episodes list``): a unique prefix names one."""
    a, b = "abcd1111" + "0" * 24, "abcd2222" + "0" * 24
    for episode_id in (a, b):
        store.add_episode(make_episode(episode_id))
    assert store.resolve_episode_id("abcd1") == a and store.resolve_episode_id(b) == b
    assert store.get_episode(store.resolve_episode_id("abcd2")).id == b
    with pytest.raises(AmbiguousEpisodeId, match="abcd1111.*abcd2222"):
        store.resolve_episode_id("abcd")
    with pytest.raises(EpisodeNotFound, match="trinity-workbench episodes list"):
        store.resolve_episode_id("0123")
    run_id = store.create_run("r", "train", {})
    store.add_episode(make_episode("abcd3333" + "0" * 24, run_id=run_id))
    assert store.resolve_episode_id("abcd", run_id=run_id) == "abcd3333" + "0" * 24
    with pytest.raises(EpisodeNotFound, match=f"no episode 'abcd1' in run {run_id[:8]}"):
        store.resolve_episode_id("abcd1", run_id=run_id)


def test_delete_run_cascades(store: Store, tmp_path: Path) -> None:
    keep = store.create_run("keep", "train", {})
    gone = store.create_run("gone", "train", {})
    for run_id in (keep, gone):
        store.commit_generation(
            run_id,
            0,
            {"best": 1},
            b"state",
            [make_episode(run_id=run_id, generation=0, candidate=c) for c in range(2)],
        )
    store.delete_run(gone[:6])
    assert [r.id for r in store.list_runs()] == [keep]
    assert store.list_episodes(gone) == []
    assert store.generations(gone) == [] and store.latest_checkpoint(gone) is None
    assert len(store.list_episodes(keep)) == 2
    conn = sqlite3.connect(store.path)
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 4
    conn.close()
    with pytest.raises(RunNotFound):
        store.delete_run(gone)


# --------------------------------------------------------------------------- episodes


def test_episode_round_trips_exactly(store: Store) -> None:
    run_id = store.create_run("r", "episode", {})
    episode = make_episode(
        run_id=run_id, generation=3, candidate=7, workers=("gpt", "local", "claude", "gpt")
    )
    bare = make_episode(workers=(), reward=0.0, stop_reason=StopReason.WORKER_ERRORS)
    store.add_episode(episode)
    store.add_episode(bare)
    assert store.get_episode(episode.id) == episode
    assert store.get_episode(bare.id) == bare
    assert store.get_episode(bare.id).answer is None


def test_export_counts_from_1_and_parses_back(store: Store) -> None:
    """An export counts generations, candidates and turns from 1, as the GUI and the CLI
    do (the store keeps them from 0): a 0-based export again fails here."""
    run_id = store.create_run("r", "train", {})
    episode = replace(
        make_episode(run_id=run_id, generation=0, candidate=2, workers=("gpt", "claude", "gpt")),
        grade_details={"reason": "ok", "thinker_role_turns": [0], "worker_only_turns": [2]},
    )
    store.add_episode(episode)
    text = store.export_episode_json(episode.id)
    doc = json.loads(text)
    assert doc["format"] == "trinity-workbench/episode" and doc["version"] == 2
    assert "\n  " in text  # pretty
    assert doc["generation"] == 1 and doc["candidate"] == 3  # stored 0 and 2
    assert [t["index"] for t in doc["turns"]] == [1, 2, 3]  # stored 0, 1, 2
    assert doc["grade_details"]["thinker_role_turns"] == [1]
    assert doc["grade_details"]["worker_only_turns"] == [3]
    assert parse_episode_json(text) == store.get_episode(episode.id)  # back to the store's
    with pytest.raises(ValueError, match="not a trinity-workbench/episode"):
        parse_episode_json("{}")
    with pytest.raises(ValueError, match="not JSON"):
        parse_episode_json("{")
    with pytest.raises(ValueError, match="version 3, this workbench reads versions 1, 2"):
        parse_episode_json(json.dumps({**doc, "version": 3}))


def test_an_episode_without_generation_or_candidate_keeps_them_empty(store: Store) -> None:
    episode = make_episode()  # run-episode's: no generation, no candidate
    store.add_episode(episode)
    doc = json.loads(store.export_episode_json(episode.id))
    assert doc["generation"] is None and doc["candidate"] is None
    assert doc["turns"][0]["index"] == 1
    assert parse_episode_json(json.dumps(doc)) == episode


def test_a_version_1_export_counted_from_0_is_still_read(store: Store) -> None:
    """Exports of workbenches before version 2 carried the stored numbers (from 0): they
    read back as the same episode, not shifted by one."""
    episode = make_episode(run_id=store.create_run("r", "train", {}), generation=4, candidate=0)
    old = {"format": "trinity-workbench/episode", "version": 1, **episode.to_dict()}
    assert parse_episode_json(json.dumps(old)) == episode


def test_missing_and_duplicate_episodes(store: Store) -> None:
    with pytest.raises(EpisodeNotFound, match="nope"):
        store.get_episode("nope")
    episode = make_episode("e1")
    store.add_episode(episode)
    with pytest.raises(DuplicateEpisode, match="e1"):
        store.add_episode(episode)
    with pytest.raises(RunNotFound):
        store.add_episode(make_episode(run_id="f" * 32))
    # a batch is all or nothing
    with pytest.raises(DuplicateEpisode):
        store.add_episodes([make_episode("e2"), make_episode("e3"), make_episode("e1")])
    assert [e.id for e in store.list_episodes()] == ["e1"]
    store.add_episodes([make_episode("e2"), make_episode("e3")])
    assert len(store.list_episodes()) == 3


def test_a_turn_the_store_cannot_hold_is_named_for_what_it_is(store: Store) -> None:
    """Two turns with one index, and a turn without a text response, each refused with
    its own sentence (a missing response was once called two turns with one index), and
    nothing of the episode stored."""
    twice = make_episode("twice", workers=("gpt", "claude"))
    twice = replace(twice, turns=(twice.turns[0], replace(twice.turns[1], index=0)))
    with pytest.raises(StoreError, match="two turns with the same index"):
        store.add_episode(twice)
    unanswered = make_episode("unanswered", workers=("gpt",))
    unanswered = replace(unanswered, turns=(replace(unanswered.turns[0], response=None),))
    with pytest.raises(StoreError, match="a turn the store cannot hold.*turns.response"):
        store.add_episode(unanswered)
    assert store.list_episodes() == []


def test_list_episodes_filters(store: Store) -> None:
    r1 = store.create_run("r1", "train", {})
    r2 = store.create_run("r2", "train", {})
    episodes = [
        make_episode("a", run_id=r1, generation=0, candidate=0, reward=1.0, created_at=1.0),
        make_episode("b", run_id=r1, generation=0, candidate=1, reward=0.0, created_at=2.0,
                     stop_reason=StopReason.MAX_TURNS, workers=("local", "local")),
        make_episode("c", run_id=r1, generation=1, candidate=0, reward=0.5, created_at=3.0,
                     task_id="gsm8k/0002"),
        make_episode("d", run_id=r2, generation=0, candidate=0, reward=1.0, created_at=4.0,
                     workers=("claude",)),
        make_episode("e", reward=0.25, created_at=5.0, task_id="gsm8k/0002"),
    ]  # fmt: skip
    store.add_episodes(episodes)

    def ids(**filters) -> list[str]:
        return [s.id for s in store.list_episodes(**filters)]

    assert ids() == ["a", "b", "c", "d", "e"]
    assert ids(run_id=r1) == ["a", "b", "c"]
    assert ids(run_id=r1, generation=0) == ["a", "b"]
    assert ids(run_id=r1, generation=0, candidate=1) == ["b"]
    assert ids(task_id="gsm8k/0002") == ["c", "e"]
    assert ids(min_reward=0.5) == ["a", "c", "d"]
    assert ids(max_reward=0.25) == ["b", "e"]
    assert ids(min_reward=0.2, max_reward=0.6) == ["c", "e"]
    assert ids(stop_reason=StopReason.MAX_TURNS) == ["b"]
    assert ids(stop_reason="accepted", run_id=r1) == ["a", "c"]
    assert ids(worker="local") == ["b"]
    assert ids(worker="claude") == ["a", "c", "d", "e"]
    assert ids(worker="nobody") == []
    assert ids(limit=2) == ["a", "b"]
    assert ids(outside_runs=True) == ["e"]
    assert ids(outside_runs=True, task_id="gsm8k/0002") == ["e"]
    assert ids(outside_runs=True, run_id=r1) == []

    b = store.list_episodes(candidate=1)[0]
    assert (b.run_id, b.generation, b.suite, b.n_turns) == (r1, 0, "gsm8k", 2)
    assert b.stop_reason is StopReason.MAX_TURNS
    assert (b.tokens_in, b.tokens_out) == (episodes[1].tokens_in, episodes[1].tokens_out)
    assert b.cost == pytest.approx(episodes[1].cost)


def test_the_runs_with_episodes_are_read_from_the_index(store: Store) -> None:
    """The runs that have an episode, None for episodes outside any run; a run with none
    (trained on a routing table) is not among them."""
    played, empty = store.create_run("played", "train", {}), store.create_run("e", "train", {})
    assert store.runs_with_episodes() == set()
    store.add_episodes([make_episode("a", run_id=played), make_episode("b", run_id=played)])
    assert store.runs_with_episodes() == {played}
    store.add_episode(make_episode("loose"))
    assert store.runs_with_episodes() == {played, None}
    assert empty not in store.runs_with_episodes()


# --------------------------------------------------------------------------- generations


def test_generations_and_checkpoints(tmp_path: Path) -> None:
    with Store(tmp_path / "w.sqlite3", keep_checkpoints=2) as s:
        run_id = s.create_run("r", "train", {})
        assert s.latest_checkpoint(run_id) is None
        for g in range(5):
            eps = [make_episode(run_id=run_id, generation=g, candidate=c) for c in range(3)]
            s.commit_generation(run_id, g, {"best": g / 10, "mean": 0.1}, bytes([g]) * 10, eps)
        assert s.generations(run_id) == [
            {"best": g / 10, "mean": 0.1, "generation": g} for g in range(5)
        ]
        assert s.latest_checkpoint(run_id) == (4, bytes([4]) * 10)
        assert len(s.list_episodes(run_id, generation=2)) == 3
        conn = sqlite3.connect(s.path)
        kept = conn.execute("SELECT generation FROM checkpoints ORDER BY generation").fetchall()
        conn.close()
        assert kept == [(3,), (4,)]


def test_duplicate_generation_is_refused(store: Store) -> None:
    run_id = store.create_run("r", "train", {})
    store.commit_generation(run_id, 0, {"best": 1}, b"first")
    with pytest.raises(GenerationExists, match="already has generation 0"):
        store.commit_generation(run_id, 0, {"best": 2}, b"second")
    assert store.generations(run_id) == [{"best": 1, "generation": 0}]
    assert store.latest_checkpoint(run_id) == (0, b"first")
    with pytest.raises(RunNotFound):
        store.commit_generation("f" * 32, 0, {}, b"")
    with pytest.raises(ValueError, match="build it with the run id"):
        store.commit_generation(run_id, 1, {}, b"", [make_episode(run_id=run_id, generation=9)])


def test_commit_generation_is_all_or_nothing(store: Store) -> None:
    run_id = store.create_run("r", "train", {})
    store.commit_generation(
        run_id, 0, {"best": 1}, b"g0", [make_episode("dup", run_id=run_id, generation=0)]
    )
    # generation 1: its second episode reuses an id, so the transaction fails midway,
    # after the generation row, the checkpoint and the first episode were inserted
    first = make_episode("fresh", run_id=run_id, generation=1)
    clash = make_episode("dup", run_id=run_id, generation=1)
    with pytest.raises(DuplicateEpisode):
        store.commit_generation(run_id, 1, {"best": 2}, b"g1", [first, clash])
    assert store.generations(run_id) == [{"best": 1, "generation": 0}]
    assert store.latest_checkpoint(run_id) == (0, b"g0")
    assert store.list_episodes(run_id, generation=1) == []
    with pytest.raises(EpisodeNotFound):
        store.get_episode("fresh")
    # and the generation can then be committed properly
    store.commit_generation(run_id, 1, {"best": 2}, b"g1", [first])
    assert store.latest_checkpoint(run_id) == (1, b"g1")


# --------------------------------------------------------------------------- responses


def test_response_cache(store: Store) -> None:
    assert store.get_response("k1") is None
    assert store.response_count() == 0
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    store.put_response(
        "k1",
        provider="openai",
        model="gpt-4o-mini",
        request=request,
        response={"text": "hello", "usage": {"in": 3, "out": 1}},
    )
    assert store.get_response("k1") == {"text": "hello", "usage": {"in": 3, "out": 1}}
    assert store.get_response("k1") is not None
    store.flush()
    conn = sqlite3.connect(store.path)
    assert conn.execute("SELECT hits FROM responses WHERE key = 'k1'").fetchone() == (2,)
    store.put_response(
        "k1",
        provider="openai",
        model="gpt-4o-mini",
        request=request,
        response={"text": "hello again"},
    )
    assert conn.execute("SELECT hits FROM responses WHERE key = 'k1'").fetchone() == (0,)
    conn.close()
    assert store.get_response("k1") == {"text": "hello again"}
    assert store.response_count() == 1


# --------------------------------------------------------------------------- threads


def test_concurrent_writes_land_through_one_writer_thread(store: Store, monkeypatch) -> None:
    executed_on: list[int] = []
    original = store_module._insert_episode

    def recording(conn, rows, path):
        executed_on.append(threading.get_ident())
        return original(conn, rows, path)

    monkeypatch.setattr(store_module, "_insert_episode", recording)
    run_id = store.create_run("r", "train", {})
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(25):
                store.add_episode(make_episode(f"t{n}-{i}", run_id=run_id))
                store.put_response(
                    f"t{n}-{i}", provider="p", model="m", request={}, response={"i": i}
                )
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.list_episodes(run_id)) == 200
    assert store.response_count() == 200
    assert len(executed_on) == 200
    assert set(executed_on) == {store.writer_thread.ident}
    assert store.writer_thread.ident not in {t.ident for t in threads}


def test_reads_do_not_wait_for_an_open_write(store: Store, monkeypatch) -> None:
    inside, release = threading.Event(), threading.Event()
    original = store_module._insert_episode

    def slow(conn, rows, path):
        original(conn, rows, path)
        inside.set()
        assert release.wait(10)

    monkeypatch.setattr(store_module, "_insert_episode", slow)
    episode = make_episode("slow")
    writer = threading.Thread(target=store.add_episode, args=(episode,))
    writer.start()
    try:
        assert inside.wait(10)
        # the writer holds an open transaction with the episode inserted: readers see the
        # last committed state, at once
        started = time.monotonic()
        assert store.list_episodes() == []
        with pytest.raises(EpisodeNotFound):
            store.get_episode("slow")
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
        writer.join()
    assert store.get_episode("slow") == episode


def test_reads_from_another_thread_while_writing(store: Store) -> None:
    run_id = store.create_run("r", "train", {})
    done = threading.Event()
    seen: list[int] = []
    failures: list[BaseException] = []

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(len(store.list_episodes(run_id)))
        except BaseException as e:  # pragma: no cover - reported below
            failures.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    for g in range(30):
        eps = [make_episode(run_id=run_id, generation=g, candidate=c) for c in range(4)]
        store.commit_generation(run_id, g, {"g": g}, b"x" * 1000, eps)
    done.set()
    reader.join()
    assert failures == []
    assert seen and seen == sorted(seen)  # never goes back
    assert all(n % 4 == 0 for n in seen)  # never half a generation
    assert len(store.list_episodes(run_id)) == 120


def test_close_drains_writes_and_stops_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "workbench.sqlite3"
    s = Store(path)
    writer = s.writer_thread
    assert writer.is_alive()
    s.put_response("k", provider="p", model="m", request={}, response={})
    for _ in range(50):
        s.get_response("k")  # hit counts are queued, not waited for
    reader = threading.Thread(target=s.list_runs)  # a reader connection in another thread
    reader.start()
    reader.join()
    s.close()
    assert not writer.is_alive()
    assert writer_threads_alive() == []
    assert not Path(f"{path}-wal").exists()  # the last connection checkpointed the WAL
    with pytest.raises(StoreError, match="closed"):
        s.create_run("late", "train", {})
    with pytest.raises(StoreError, match="closed"):
        s.list_runs()
    s.close()  # closing twice is harmless
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT hits FROM responses").fetchone() == (50,)
    conn.close()


# --------------------------------------------------------------------------- crash safety

CRASH_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from workbench.core.store import Store
    from tests.core.test_store import make_episode

    with Store(sys.argv[1]) as s:
        runs = s.list_runs(kind="train")
        run_id = runs[0].id if runs else s.create_run("crash", "train", {})
        g = len(s.generations(run_id))
        while True:
            eps = [make_episode(run_id=run_id, generation=g, candidate=c) for c in range(4)]
            s.commit_generation(run_id, g, {"best": g}, os.urandom(256_000), eps)
            print(g, flush=True)
            g += 1
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_kill_9_mid_commit_leaves_a_consistent_database(tmp_path: Path) -> None:
    path = tmp_path / "workbench.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    for round_ in range(3):  # kill, reopen, resume, kill again
        proc = subprocess.Popen(
            [sys.executable, "-c", CRASH_SCRIPT, str(path)],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            committed = 0
            while committed < 8:
                line = proc.stdout.readline()
                assert line, f"writer exited early: {proc.stderr.read()}"
                committed += 1
            time.sleep(0.002 * round_)  # land the kill at different points of a commit
        finally:
            proc.kill()  # SIGKILL
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        assert proc.returncode == -9

        with Store(path) as s:
            (run,) = s.list_runs()
            gens = [g["generation"] for g in s.generations(run.id)]
            assert gens == list(range(len(gens))) and len(gens) >= 8 * (round_ + 1)
            assert s.latest_checkpoint(run.id)[0] == gens[-1]
            summaries = s.list_episodes(run.id)
            assert len(summaries) == 4 * len(gens)
            assert {e.generation for e in summaries} == set(gens)
            assert all(e.n_turns == 2 for e in summaries)
            sample = s.get_episode(summaries[-1].id)
            assert len(sample.turns) == 2
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 8 * len(gens)
        conn.close()
