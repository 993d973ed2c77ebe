"""Checking a workspace database and salvaging what is readable from a damaged one.

``check`` opens the database read-only and reports what SQLite's ``integrity_check`` finds,
the schema version, and each table of the schema with its row count (or why it cannot be
read). It never writes.

``salvage`` copies every row that can still be read into a new workspace: a fresh database
with the current schema, filled table by table, row by row, in key order; when a damaged
page stops a scan, the scan resumes past it. Rows whose parent was lost (turns of a lost
episode, checkpoints of a lost generation) are dropped, so the new database holds its
foreign keys. The report says, per table, how many rows were copied and what was lost.
The damaged database is never changed. Imported suites are copied along.

SQLite's own ``.recover`` needs the ``sqlite3`` command-line shell, which is not always
installed; this needs only Python's ``sqlite3`` module.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkFailed
from workbench.core.store import (
    TABLES,
    Store,
    read_only_reason,
    schema_version,
    translate_error,
)
from workbench.core.workspace import Workspace

_INTEGRITY_LINES = 20  # integrity_check messages kept: enough to show the kind of damage
# How rows are ordered and resumed: the table's own key (rowid, or the primary key of a
# WITHOUT ROWID table), so that a scan walks the table's b-tree and not an index.
_KEYS = {"turns": ("episode_id", "idx")}
# Rows that point at a parent row, as (table, its columns, parent table, parent columns).
_PARENTS = (
    ("generations", ("run_id",), "runs", ("id",)),
    ("checkpoints", ("run_id", "generation"), "generations", ("run_id", "generation")),
    ("episodes", ("run_id",), "runs", ("id",)),
    ("turns", ("episode_id",), "episodes", ("id",)),
)


class DoctorError(WorkFailed):
    """A check or salvage that cannot start (no workspace, no database, a target in use)."""


@dataclass(frozen=True)
class TableState:
    """One table of the schema as found: its row count, or why it cannot be read."""

    name: str
    rows: int | None
    problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckReport:
    """What ``check`` found in one workspace database."""

    path: Path
    version: int | None
    integrity: tuple[str, ...]  # ("ok",) when SQLite finds nothing wrong
    tables: tuple[TableState, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # how it was read, when that matters

    @property
    def healthy(self) -> bool:
        return not self.problems


@dataclass(kw_only=True)
class TableSalvage:
    """One table's salvage: rows copied, rows dropped for a lost parent, unread ranges."""

    name: str
    copied: int = 0
    orphans: int = 0
    source_rows: int | None = None  # what count(*) said, if it could be read
    gaps: list[str] = field(default_factory=list)

    @property
    def lost(self) -> str:
        """Rows lost, in words."""
        parts = []
        if self.source_rows is not None and self.source_rows > self.copied:
            parts.append(f"{self.source_rows - self.copied} row(s)")
        elif self.gaps:
            parts.append("an unknown number of rows")
        if self.orphans:
            parts.append(f"{self.orphans} of them whose parent was lost")
        return ", ".join(parts) or "nothing"


@dataclass(frozen=True, kw_only=True)
class SalvageReport:
    """What ``salvage`` copied from ``source`` into the new database ``target``."""

    source: Path
    target: Path
    tables: tuple[TableSalvage, ...]
    suites: tuple[str, ...]
    integrity: tuple[str, ...]  # the new database's integrity_check


def _open_read_only(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """A read-only connection to ``path``, and a note when it had to be opened as
    immutable (a read-only folder, where SQLite cannot make its shared-memory file)."""
    if not path.is_file():
        raise DoctorError(f"there is no workspace database at {path}: check the --workspace folder")
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None)
    note = None
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.OperationalError as error:
        name = getattr(error, "sqlite_errorname", "")
        if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
            conn.close()
            conn = sqlite3.connect(
                f"{path.as_uri()}?mode=ro&immutable=1", uri=True, isolation_level=None
            )
            wal = Path(f"{path}-wal")
            note = f"read as immutable: {read_only_reason(path)}" + (
                f"; {wal} holds writes that were not read" if wal.exists() else ""
            )
    except sqlite3.DatabaseError:
        pass  # damage: reported by the caller
    conn.row_factory = sqlite3.Row
    return conn, note


def check(workspace: Workspace) -> CheckReport:
    """Check the database of ``workspace`` without changing it (see the module docstring)."""
    path = workspace.db_path
    conn, note = _open_read_only(path)
    notes = (note,) if note else ()
    problems: list[str] = []
    try:
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as error:
            return CheckReport(
                path=path,
                version=None,
                integrity=(str(error),),
                tables=(),
                problems=(_unreadable(error, path),),
                notes=notes,
            )
        try:
            integrity = tuple(
                row[0]
                for row in conn.execute(f"PRAGMA integrity_check({_INTEGRITY_LINES})").fetchall()
            )
        except sqlite3.DatabaseError as error:
            integrity = (f"the check itself failed: {error}",)
        if integrity != ("ok",):
            problems.append("SQLite's integrity check found damage")
        if version > schema_version():
            problems.append(
                f"schema version {version} is newer than this workbench's "
                f"({schema_version()}): upgrade trinity-workbench"
            )
        elif version < schema_version():
            problems.append(
                f"schema version {version} (this workbench writes {schema_version()}): "
                "opening the workspace upgrades it"
            )
        present = _table_names(conn)
        tables = []
        for name in TABLES:
            if name not in present:
                tables.append(TableState(name, None, "missing"))
                problems.append(f"table {name} is missing")
                continue
            try:
                count = conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
            except sqlite3.DatabaseError as error:
                tables.append(TableState(name, None, f"unreadable: {error}"))
                problems.append(f"table {name} cannot be read ({error})")
            else:
                tables.append(TableState(name, count))
    finally:
        conn.close()
    return CheckReport(
        path=path,
        version=version,
        integrity=integrity,
        tables=tuple(tables),
        problems=tuple(problems),
        notes=notes,
    )


def _unreadable(error: sqlite3.Error, path: Path) -> str:
    """Why the database cannot be read at all, and what to do."""
    if getattr(error, "sqlite_errorname", "") == "SQLITE_NOTADB":
        return f"it cannot be read as a database: {error}"
    return str(translate_error(error, path))


def _table_names(conn: sqlite3.Connection) -> set[str]:
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError:
        return set()
    return {row[0] for row in rows}


def salvage(workspace: Workspace, out: str | Path) -> SalvageReport:
    """Copy what is readable from the database of ``workspace`` into a new workspace at
    ``out`` (a folder that does not exist yet, or an empty one); the source is not changed."""
    target_ws = Workspace(Path(out).expanduser().resolve())
    if target_ws.root == workspace.root:
        raise DoctorError("salvage into another folder than the damaged workspace")
    if target_ws.root.exists() and (not target_ws.root.is_dir() or any(target_ws.root.iterdir())):
        raise DoctorError(
            f"{target_ws.root} is not an empty folder: salvage into a new folder, so that "
            "nothing there is overwritten"
        )
    source, _ = _open_read_only(workspace.db_path)
    try:
        try:
            source.execute("PRAGMA user_version").fetchone()
        except sqlite3.DatabaseError as error:
            name = getattr(error, "sqlite_errorname", "")
            if not (name == "SQLITE_NOTADB" or name.startswith("SQLITE_CORRUPT")):
                raise DoctorError(_unreadable(error, workspace.db_path)) from None
        target_ws = Workspace.open(target_ws.root)
        Store.open(target_ws).close()  # the current schema, created private to the user
        target = sqlite3.connect(target_ws.db_path, isolation_level=None)
        try:
            present = _table_names(source)
            target.execute("BEGIN")
            results = []
            for name in TABLES:
                result = TableSalvage(name=name)
                if name not in present:
                    result.gaps.append("the table is missing from the damaged database")
                else:
                    _copy_table(source, target, name, result)
                results.append(result)
            by_name = {r.name: r for r in results}
            for child, columns, parent, parent_columns in _PARENTS:
                by_name[child].orphans = _drop_orphans(
                    target, child, columns, parent, parent_columns
                )
                by_name[child].copied -= by_name[child].orphans
            target.execute("COMMIT")
            integrity = tuple(r[0] for r in target.execute("PRAGMA integrity_check"))
        finally:
            target.close()
    finally:
        source.close()
    suites = _copy_suites(workspace, target_ws)
    return SalvageReport(
        source=workspace.db_path,
        target=target_ws.db_path,
        tables=tuple(results),
        suites=suites,
        integrity=integrity,
    )


def _copy_table(
    source: sqlite3.Connection, target: sqlite3.Connection, name: str, result: TableSalvage
) -> None:
    columns = [row[1] for row in target.execute(f"PRAGMA table_info({name})")]
    try:
        result.source_rows = source.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
    except sqlite3.DatabaseError:
        result.source_rows = None
    insert = (
        f"INSERT OR IGNORE INTO {name} ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)})"
    )
    for row in _readable_rows(source, name, columns, result):
        target.execute(insert, row)
        result.copied += 1


def _readable_rows(
    source: sqlite3.Connection, name: str, columns: list[str], result: TableSalvage
) -> Iterator[tuple]:
    """Every row of ``name`` that can be read, in key order, resuming past damage.

    After a failure the scan resumes past the last good key: for a rowid table further and
    further ahead (1, 2, 4, ... rowids) until a read succeeds; for a table with a composite
    key (turns), at the next value of its first column (the next episode). A table whose
    first page cannot be read is lost.
    """
    key = _KEYS.get(name, ("rowid",))
    n = len(key)
    select = f"SELECT {', '.join([*key, *columns])} FROM {name}"
    order = f" ORDER BY {', '.join(key)}"
    last: tuple | None = None
    jump = 0
    while True:
        args: tuple[Any, ...]
        if last is None:
            where, args = "", ()
        elif n == 1:
            where, args = f" WHERE {key[0]} > ?", (last[0] + jump,)
        elif jump == 0:
            where, args = f" WHERE ({', '.join(key)}) > ({', '.join('?' * n)})", last
        else:
            where, args = f" WHERE {key[0]} > ?", (last[0],)
        try:
            for row in source.execute(select + where + order, args):
                last, jump = tuple(row[:n]), 0
                yield tuple(row[n:])
            return
        except sqlite3.DatabaseError as error:
            place = "from its start" if last is None else f"after key {last!r}"
            if last is None or jump >= 2**62 or (n > 1 and jump):
                result.gaps.append(f"unreadable {place} ({error}): the rest is lost")
                return
            if not result.gaps or jump == 0:
                result.gaps.append(f"unreadable {place} ({error}): skipped ahead")
            jump = jump * 2 or 1


def _drop_orphans(
    conn: sqlite3.Connection,
    child: str,
    columns: tuple[str, ...],
    parent: str,
    parent_columns: tuple[str, ...],
) -> int:
    """Delete rows of ``child`` whose parent row is absent (NULL references are kept)."""
    match = " AND ".join(
        f"p.{pc} = {child}.{cc}" for cc, pc in zip(columns, parent_columns, strict=True)
    )
    not_null = " AND ".join(f"{child}.{cc} IS NOT NULL" for cc in columns)
    cursor = conn.execute(
        f"DELETE FROM {child} WHERE {not_null} "
        f"AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {match})"
    )
    return max(cursor.rowcount, 0)


def _copy_suites(source: Workspace, target: Workspace) -> tuple[str, ...]:
    """Copy the imported suite files (they live beside the database, not in it)."""
    if not source.suites_dir.is_dir():
        return ()
    target.suites_dir.mkdir(mode=0o700, exist_ok=True)
    copied = []
    for path in sorted(source.suites_dir.glob("*.jsonl")):
        try:
            shutil.copy2(path, target.suites_dir / path.name)
        except OSError:
            continue
        copied.append(path.stem)
    return tuple(copied)
