"""A damaged or unwritable workspace database (issue 18): clear errors with a recovery
path instead of SQLite tracebacks, refused before work starts, files private to the user.
On real SQLite files, damaged the way disks and other programs damage them."""

from __future__ import annotations

import os
import sqlite3
import stat
import textwrap
from pathlib import Path

import pytest

from tests.core.test_store import make_episode
from tests.support.unprivileged import run_python
from workbench.cli import main
from workbench.core.store import Store, StoreDamaged, StoreReadOnly
from workbench.core.workspace import Workspace


@pytest.fixture
def filled(tmp_path: Path) -> Workspace:
    """A workspace with a run of 40 episodes (several pages per table)."""
    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        run_id = store.create_run("r", "train", {"x": 1})
        store.add_episodes(make_episode(run_id=run_id, generation=0) for _ in range(40))
    return ws


def _corrupt_root_page(db: Path, table: str) -> None:
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
    conn.close()
    with db.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xa5" * page_size)


def test_a_dropped_table_is_reported_with_the_doctor(filled: Workspace, capsys) -> None:
    with sqlite3.connect(filled.db_path) as conn:
        conn.execute("DROP TABLE turns")
    conn.close()
    with pytest.raises(StoreDamaged, match=r"missing its table\(s\) turns.*doctor"):
        Store.open(filled)
    assert main(["runs", "list", "--workspace", str(filled.root)]) == 2
    err = capsys.readouterr().err
    assert "missing its table(s) turns" in err and "--salvage" in err
    assert "Traceback" not in err


def test_a_corrupted_data_page_is_reported_with_the_doctor(filled: Workspace, capsys) -> None:
    _corrupt_root_page(filled.db_path, "episodes")
    with Store.open(filled) as store:
        assert len(store.list_runs()) == 1  # what is intact still reads
        with pytest.raises(StoreDamaged, match="is damaged.*doctor --workspace"):
            store.list_episodes()
    assert main(["episodes", "list", "--workspace", str(filled.root)]) == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and "trinity-workbench doctor" in err
    assert "Traceback" not in err


def test_workspace_files_are_private_to_the_user(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path / "new")
    with Store.open(ws) as store:
        store.create_run("r", "train", {})
        for path in (ws.db_path, Path(f"{ws.db_path}-wal"), Path(f"{ws.db_path}-shm")):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(ws.root.stat().st_mode) == 0o700


_OPEN = textwrap.dedent(
    """
    import sys
    from workbench.core.store import Store, StoreError
    from workbench.core.workspace import Workspace
    try:
        Store.open(Workspace(__import__("pathlib").Path(sys.argv[1]))).close()
    except StoreError as e:
        print(type(e).__name__, e)
    else:
        print("opened")
    """
)

_RUN_EPISODE = textwrap.dedent(
    """
    import sys
    from workbench.cli import main
    sys.exit(main(["run-episode", "--workspace", sys.argv[1], "--pool", "sandbox",
                   "--suite", "arithmetic", "--task", sys.argv[2], "--backbone", "tiny"]))
    """
)


def test_a_read_only_database_is_refused_before_an_episode_plays(filled: Workspace) -> None:
    with Store.open(filled) as store:
        before = len(store.list_episodes())
    filled.db_path.chmod(0o444)
    try:
        opened = run_python(_OPEN, str(filled.root))
        assert opened.stdout.startswith("StoreReadOnly"), opened
        assert "is read-only: make it writable" in opened.stdout
        from workbench.core.tasks.suites import load_suite

        task = load_suite("arithmetic").tasks[0].id
        played = run_python(_RUN_EPISODE, str(filled.root), task)
        assert played.returncode == 4, played  # the system refused (docs/guides/exit-codes.md)
        assert "is read-only" in played.stderr and "Traceback" not in played.stderr
        assert "loading backbone" not in played.stderr  # refused before it played
    finally:
        filled.db_path.chmod(0o600)
    with Store.open(filled) as store:
        assert len(store.list_episodes()) == before


def test_a_read_only_folder_is_diagnosed_as_such(filled: Workspace, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o500)
    filled.root.chmod(0o500)
    try:
        for folder in (empty, filled.root):  # a new database, and one that exists
            opened = run_python(_OPEN, str(folder))
            assert opened.stdout.startswith("StoreReadOnly"), (folder, opened)
            assert f"the folder {folder} is read-only" in opened.stdout
            assert "not a workbench database" not in opened.stdout
    finally:
        empty.chmod(0o700)
        filled.root.chmod(0o700)


def test_translated_errors_keep_the_sqlite_cause(filled: Workspace) -> None:
    _corrupt_root_page(filled.db_path, "runs")
    with Store.open(filled) as store, pytest.raises(StoreDamaged) as caught:
        store.list_runs()
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert isinstance(caught.value, StoreDamaged) and not isinstance(caught.value, StoreReadOnly)
    assert os.fspath(filled.db_path) in str(caught.value)


def test_a_workspace_that_cannot_be_made_is_a_clear_error(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["runs", "list", "--workspace", str(blocker / "ws")]) == 2
    err = capsys.readouterr().err
    assert f"cannot create workspace folder {blocker / 'ws'}" in err and "Traceback" not in err
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        done = run_python(
            "import sys; from workbench.cli import main; "
            "sys.exit(main(['runs', 'list', '--workspace', sys.argv[1]]))",
            str(locked / "ws"),
        )
    finally:
        locked.chmod(0o700)
    # the operating system refused: exit 4, the path and the fix (docs/guides/exit-codes.md)
    assert done.returncode == 4 and "permission denied" in done.stderr, done
    assert str(locked / "ws") in done.stderr and "use another --workspace" in done.stderr


def test_a_read_only_journal_file_beside_the_database_is_named(filled: Workspace) -> None:
    """A -shm left read-only by an earlier opening of a read-only database (or a copy):
    once misdiagnosed as 'the disk or the file system is read-only'."""
    shm = Path(f"{filled.db_path}-shm")
    shm.write_bytes(b"\0" * 32768)
    shm.chmod(0o444)
    try:
        opened = run_python(_OPEN, str(filled.root))
    finally:
        shm.chmod(0o600)
    assert opened.stdout.startswith("StoreReadOnly"), opened
    assert f"journal file {shm} is read-only" in opened.stdout
    assert "file system is read-only" not in opened.stdout
