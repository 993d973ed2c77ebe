"""``trinity-workbench doctor`` (issue 18): check a workspace database, report damage, and
salvage every readable row into a new workspace, on real SQLite files damaged on purpose."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
from pathlib import Path

import pytest

from tests.core.test_store import make_episode
from workbench.cli import main
from workbench.core import doctor
from workbench.core.store import Store
from workbench.core.workspace import Workspace

EPISODES = 200


@pytest.fixture
def filled(tmp_path: Path) -> Workspace:
    """A workspace with one run, a generation and 200 episodes of 2 turns (many pages)."""
    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        run_id = store.create_run("r", "train", {"x": 1})
        store.commit_generation(run_id, 0, {"best": 1.0}, b"state")
        store.add_episodes(
            make_episode(f"e{i:04d}", run_id=run_id, generation=0, candidate=i)
            for i in range(EPISODES)
        )
    ws.suites_dir.mkdir()
    (ws.suites_dir / "mine.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    return ws


def _pages(db: Path, table: str) -> tuple[int, list[int]]:
    """The page size and the leaf pages under a table's root (an interior page)."""
    with sqlite3.connect(db) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
    conn.close()
    page = db.read_bytes()[(root - 1) * size : root * size]
    assert page[0] == 0x05, "the table must span several pages"  # interior table b-tree page
    cells = struct.unpack(">H", page[3:5])[0]
    pointers = struct.unpack(f">{cells}H", page[12 : 12 + 2 * cells])
    children = [struct.unpack(">I", page[p : p + 4])[0] for p in pointers]
    return size, [*children, struct.unpack(">I", page[8:12])[0]]


def _smash(db: Path, page_number: int, size: int) -> None:
    with db.open("r+b") as f:
        f.seek((page_number - 1) * size)
        f.write(b"\xa5" * size)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_healthy_workspace_checks_clean(filled: Workspace, capsys) -> None:
    report = doctor.check(filled)
    assert report.healthy and report.integrity == ("ok",)
    assert {t.name: t.rows for t in report.tables}["episodes"] == EPISODES
    assert main(["doctor", "--workspace", str(filled.root)]) == 0
    assert "no damage found" in capsys.readouterr().out


def test_a_dropped_table_is_reported_and_the_rest_salvaged(
    filled: Workspace, tmp_path: Path, capsys
) -> None:
    with sqlite3.connect(filled.db_path) as conn:
        conn.execute("DROP TABLE turns")
    conn.close()
    assert main(["doctor", "--workspace", str(filled.root)]) == 1
    out = capsys.readouterr().out
    assert "table turns is missing" in out and "--salvage NEW_FOLDER" in out
    before = _digest(filled.db_path)
    new = tmp_path / "saved"
    assert main(["doctor", "--workspace", str(filled.root), "--salvage", str(new)]) == 0
    out = capsys.readouterr().out
    assert f"salvaged into {new / 'workbench.sqlite3'}" in out
    assert _digest(filled.db_path) == before  # the damaged database is left as it was
    with Store.open(Workspace.open(new)) as store:  # a sound workspace again
        (run,) = store.list_runs()
        assert len(store.list_episodes(run.id)) == EPISODES
        assert store.get_episode("e0007").turns == ()  # the turns were in the lost table
        assert store.latest_checkpoint(run.id) == (0, b"state")
    assert (new / "suites" / "mine.jsonl").is_file()


def test_a_corrupted_page_loses_only_its_rows(filled: Workspace, tmp_path: Path) -> None:
    size, leaves = _pages(filled.db_path, "episodes")
    _smash(filled.db_path, leaves[1], size)  # a page in the middle of the table
    report = doctor.check(filled)
    assert not report.healthy and report.integrity != ("ok",)
    saved = doctor.salvage(filled, tmp_path / "saved")
    tables = {t.name: t for t in saved.tables}
    episodes = tables["episodes"]
    assert 0 < episodes.copied < EPISODES and episodes.gaps
    assert saved.integrity == ("ok",)
    with Store.open(Workspace.open(tmp_path / "saved")) as store:
        kept = store.list_episodes()
        assert len(kept) == episodes.copied
        # rows after the smashed page were read too, not only those before it
        assert kept[-1].id == f"e{EPISODES - 1:04d}"
        for summary in kept[::37]:  # every kept episode reads whole, turns included
            assert len(store.get_episode(summary.id).turns) == 2
        # the turns of lost episodes were dropped, so foreign keys hold
        turns = sqlite3.connect(tmp_path / "saved" / "workbench.sqlite3")
        assert turns.execute("PRAGMA foreign_key_check").fetchall() == []
        assert turns.execute("SELECT count(*) FROM turns").fetchone()[0] == 2 * len(kept)
        turns.close()
    assert tables["turns"].orphans == 2 * (EPISODES - episodes.copied)


def test_doctor_json_and_refusals(filled: Workspace, tmp_path: Path, capsys) -> None:
    assert main(["doctor", "--workspace", str(filled.root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] and data["tables"]["turns"]["rows"] == 2 * EPISODES
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("keep me")
    assert main(["doctor", "--workspace", str(filled.root), "--salvage", str(busy)]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (busy / "x").read_text() == "keep me"
    assert main(["doctor", "--workspace", str(tmp_path / "nowhere")]) == 2
    assert "no workspace folder" in capsys.readouterr().err


def test_a_read_only_workspace_is_checked_and_copied_not_called_damaged(
    filled: Workspace, tmp_path: Path
) -> None:
    from tests.support.unprivileged import run_python

    filled.root.chmod(0o500)
    try:
        done = run_python(
            "import sys; from workbench.cli import main; "
            "sys.exit(main(['doctor', '--workspace', sys.argv[1], '--salvage', sys.argv[2]]))",
            str(filled.root),
            str(tmp_path / "copy"),
        )
    finally:
        filled.root.chmod(0o700)
    assert done.returncode == 0, done
    assert "note: read as immutable: the folder" in done.stdout
    assert "no damage found" in done.stdout and "Traceback" not in done.stderr
    with Store.open(Workspace.open(tmp_path / "copy")) as store:
        assert len(store.list_episodes()) == EPISODES
