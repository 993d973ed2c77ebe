"""The workspace database: runs, generations, checkpoints, episodes, turns and the
response cache, in one SQLite file per workspace.

One writer for the database: every write is a callable put on a queue and executed by a
single dedicated thread, on that thread's own connection, each in its own transaction.
Callers get the result (or the exception) back through a ``Future`` and, by default,
block until the transaction has committed. Reads use one read-only connection per calling
thread, so in WAL mode a reader never waits for the writer and never sees half a write.

The schema is versioned with ``PRAGMA user_version``: ``MIGRATIONS[i]`` takes a database
from version ``i`` to ``i + 1``. Opening a database applies the missing steps in one
transaction; a database written by a newer workbench is refused, never touched.

Damage and permissions: every SQLite error is reported as a ``StoreError`` that names the
file, what went wrong and what to do (``StoreDamaged`` points to ``trinity-workbench
doctor``, which checks a workspace and salvages what is readable; ``StoreReadOnly`` says
which of the file or its folder cannot be written). Opening checks the schema's tables and
that the database can be written, so a job that would store results fails before it
starts, not after. A new database file is created readable by its owner only (0600).

Checkpoints: ``commit_generation`` keeps the last ``keep_checkpoints`` (default 3)
checkpoints of each run and deletes older ones in the same transaction; ``None`` keeps all.
A checkpoint holds the optimizer state, the RNG states and the best vector, so the latest
one is all a resume or an export needs; the few before it are a margin, not a history.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from workbench.core.config import RunConfig
from workbench.core.errors import InvalidInput
from workbench.core.records import (
    Episode,
    GenerationStats,
    Role,
    RunResult,
    RunStatus,
    RunStopReason,
    StopReason,
    Turn,
    Verdict,
)
from workbench.core.store import schema
from workbench.core.store.episode_file import episode_json, parse_episode_json
from workbench.core.store.errors import (
    BUSY_TIMEOUT_S,
    AmbiguousEpisodeId,
    AmbiguousRunId,
    DuplicateEpisode,
    EpisodeNotFound,
    GenerationExists,
    RunNotFound,
    StoreDamaged,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreVersionError,
    doctor_hint,
    read_only_reason,
    translate_error,
)
from workbench.core.store.schema import TABLES, schema_version
from workbench.core.workspace import Workspace

# the package's public names, its errors among them (defined in store/errors.py)
__all__ = [
    "AmbiguousEpisodeId",
    "AmbiguousRunId",
    "DuplicateEpisode",
    "EpisodeNotFound",
    "EpisodeSummary",
    "GenerationExists",
    "RunNotFound",
    "RunRecord",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreFull",
    "StoreReadOnly",
    "StoreVersionError",
    "TABLES",
    "doctor_hint",
    "parse_episode_json",
    "read_only_reason",
    "schema_version",
    "translate_error",
]

T = TypeVar("T")

DEFAULT_KEEP_CHECKPOINTS = 3
MIN_PREFIX = 4  # shortest run id prefix accepted, like git's short hashes


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One stored run: what it was asked to do and how it ended."""

    id: str
    name: str
    kind: str  # 'train', 'episode', 'eval', ...
    config_data: dict[str, Any] = field(hash=False)  # the stored config, as JSON
    status: RunStatus
    stop_reason: RunStopReason | None
    error: str | None
    created_at: float
    updated_at: float
    result: dict[str, Any] | None = field(hash=False)

    def config(self) -> RunConfig:
        """The run's config, parsed; ``ConfigError`` names the run if it is not valid."""
        return RunConfig.from_stored(self.config_data, f"run {self.id}")

    def run_result(self) -> RunResult | None:
        """The typed result of a training run (None before it reports one, and for runs of
        other kinds, whose results have other shapes)."""
        if not self.result or "generations" not in self.result:
            return None
        return RunResult.from_dict(self.result)


@dataclass(frozen=True, kw_only=True)
class EpisodeSummary:
    """One row of an episode list: the outcome of an episode without its turns."""

    id: str
    run_id: str | None
    generation: int | None
    candidate: int | None
    suite: str
    task_id: str
    reward: float
    stop_reason: StopReason
    n_turns: int
    cost: float
    tokens_in: int
    tokens_out: int
    created_at: float
    # the role of its last turn (None: no turn), which tells an episode that ran out of
    # turns on a Worker's answer from one that ran out before an answer stood
    last_role: Role | None = None


def _sqlite_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Report SQLite errors of a ``Store`` method as ``StoreError`` (``translate_error``)."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            raise translate_error(error, self.path) from error

    return wrapper


# --------------------------------------------------------------------------- writer thread

_STOP = object()
_Job = tuple[Callable[[sqlite3.Connection], Any], Future]


def _connect_writer(path: Path) -> sqlite3.Connection:
    """Open, check and migrate the database at ``path``; the writer's own connection."""
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as e:
        raise translate_error(e, path) from e
    try:
        try:
            # The first read of the file: this is where a non-database fails.
            has_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as e:
            if getattr(e, "sqlite_errorname", "") == "SQLITE_NOTADB":
                raise StoreError(
                    f"{path} is not a workbench database (SQLite says: {e}): move the file "
                    "away or choose another workspace with --workspace"
                ) from e
            raise translate_error(e, path) from e
        known = schema_version()
        if version > known:
            raise StoreVersionError(
                f"workspace database {path} has schema version {version}, this workbench "
                f"knows up to {known}: upgrade trinity-workbench"
            )
        if version == 0 and has_tables:
            raise StoreError(
                f"{path} is an SQLite database but not a workbench database (it has tables "
                "and no schema version): move the file away or choose another workspace"
            )
        try:
            # A write, rolled back: a read-only file or folder is refused now, before a
            # job runs whose results could not be stored.
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"PRAGMA user_version = {version:d}")
        except sqlite3.Error as e:
            raise translate_error(e, path) from e
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(
                f"cannot put workspace database {path} in WAL mode (SQLite kept {mode!r}): "
                "keep the workspace on a local disk, not a network share"
            )
        # NORMAL is crash-safe in WAL mode: a killed process loses at most the last
        # transaction, never the database. It may lose it on power failure, not on kill.
        conn.execute("PRAGMA synchronous=NORMAL")
        if version < known:
            _migrate(conn, path)
        present = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        missing = [table for table in TABLES if table not in present]
        if missing:
            raise StoreDamaged(
                f"workspace database {path} is missing its table(s) {', '.join(missing)}: "
                f"it was damaged or edited by another program; {doctor_hint(path)}"
            )
        conn.execute("PRAGMA foreign_keys=ON")
    except sqlite3.Error as e:
        conn.close()
        raise translate_error(e, path) from e
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Apply the missing migration steps, all in one transaction.

    Foreign keys stay off while steps run (the connection turns them on afterwards), so a
    step may rebuild a table the way SQLite recommends; ``foreign_key_check`` then guards
    the result before commit.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Read again under the write lock: another process may have migrated meanwhile.
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for step in range(version, schema_version()):
            try:
                schema.MIGRATIONS[step](conn)
            except Exception as e:
                raise StoreError(
                    f"cannot upgrade workspace database {path} from schema version {step} "
                    f"to {step + 1}: {e}: the database was left unchanged; report this "
                    "with the file attached"
                ) from e
        if version < schema_version():
            if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise StoreError(
                    f"upgrading workspace database {path} broke foreign keys: the database "
                    "was left unchanged; report this with the file attached"
                )
            conn.execute(f"PRAGMA user_version = {schema_version():d}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _writer_loop(path: Path, jobs: queue.Queue, ready: Future) -> None:
    """The writer thread: open the database, then run queued jobs until told to stop."""
    try:
        conn = _connect_writer(path)
    except BaseException as e:
        ready.set_exception(e)
        return
    ready.set_result(None)
    try:
        while True:
            item = jobs.get()
            if item is _STOP:
                break
            fn, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                future.set_exception(translate_error(e, path))
            except BaseException as e:
                future.set_exception(e)
            else:
                future.set_result(result)
    finally:
        conn.close()


# --------------------------------------------------------------------------- the store


class Store:
    """The workspace database. Use as a context manager, or call ``close()``.

    ``path`` is the database file (created if missing; its folder must exist).
    ``keep_checkpoints`` is how many checkpoints per run ``commit_generation`` keeps
    (the newest ones); ``None`` keeps all.
    """

    def __init__(
        self, path: str | Path, *, keep_checkpoints: int | None = DEFAULT_KEEP_CHECKPOINTS
    ) -> None:
        path = Path(path).expanduser().resolve()
        if not path.parent.is_dir():
            raise StoreError(
                f"cannot open workspace database {path}: folder {path.parent} does not "
                "exist; open the workspace first (Workspace.open creates it)"
            )
        if path.is_dir():
            raise StoreError(f"workspace database {path} is a folder: pass a file path")
        _create_private(path)
        if keep_checkpoints is not None and keep_checkpoints < 1:
            raise ValueError(
                f"keep_checkpoints={keep_checkpoints}: keep at least 1, or None to keep all"
            )
        self.path = path
        self.keep_checkpoints = keep_checkpoints
        self._lock = threading.Lock()
        self._closed = False
        self._jobs: queue.Queue = queue.Queue()
        self._readers: dict[threading.Thread, sqlite3.Connection] = {}
        self._local = threading.local()
        ready: Future = Future()
        self._writer = threading.Thread(
            target=_writer_loop,
            args=(path, self._jobs, ready),
            name=f"workbench-store-writer:{path.name}",
            daemon=True,  # close() is the contract; a forgotten store must not hang exit
        )
        self._writer.start()
        try:
            ready.result()
        except BaseException:
            self._writer.join()
            raise
        # A store dropped without close() still stops its writer once collected.
        self._finalizer = weakref.finalize(self, self._jobs.put, _STOP)

    @classmethod
    def open(cls, workspace: Workspace, **kwargs: Any) -> Store:
        """The store of ``workspace`` (its ``db_path``)."""
        return cls(workspace.db_path, **kwargs)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}{', closed' if self._closed else ''})"

    @property
    def writer_thread(self) -> threading.Thread:
        """The one thread that writes to the database."""
        return self._writer

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Apply every queued write, stop the writer thread and close all connections."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            readers, self._readers = list(self._readers.values()), {}
        # Readers first, so the writer's connection is the last one and checkpoints the WAL.
        for conn in readers:
            conn.close()
        self._finalizer.detach()
        self._jobs.put(_STOP)  # after every queued job: the queue drains before the stop
        self._writer.join()

    def flush(self) -> None:
        """Wait until every write queued so far (including cache hit counts) is applied."""
        self._write(lambda conn: None)

    # ----------------------------------------------------------------- plumbing

    def _submit(self, fn: Callable[[sqlite3.Connection], T]) -> Future:
        """Queue ``fn(connection)`` for the writer thread; it runs in one transaction."""
        if threading.current_thread() is self._writer:
            raise RuntimeError(
                "a store write was queued from the writer thread: it would wait forever"
            )
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise StoreError(f"store {self.path} is closed: open the workspace again")
            self._jobs.put((fn, future))
        return future

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` on the writer thread in one transaction; wait for it."""
        return self._submit(fn).result()

    def _reader(self) -> sqlite3.Connection:
        """This thread's read-only connection, opened on first use."""
        conn = getattr(self._local, "conn", None)
        if self._closed:
            raise StoreError(f"store {self.path} is closed: open the workspace again")
        if conn is not None:
            return conn
        conn = sqlite3.connect(
            f"{self.path.as_uri()}?mode=ro",
            uri=True,
            isolation_level=None,  # autocommit: no read transaction outlives a call
            timeout=BUSY_TIMEOUT_S,
            check_same_thread=False,  # only so close() may close it from another thread
        )
        conn.row_factory = sqlite3.Row
        me = threading.current_thread()
        with self._lock:
            if self._closed:
                conn.close()
                raise StoreError(f"store {self.path} is closed: open the workspace again")
            # Threads come and go (pools, QThreads): drop connections of finished ones.
            for thread in [t for t in self._readers if not t.is_alive()]:
                self._readers.pop(thread).close()
            self._readers[me] = conn
        self._local.conn = conn
        return conn

    def _snapshot(self) -> _Snapshot:
        """A read transaction, for reads that need several consistent queries."""
        return _Snapshot(self._reader())

    # ----------------------------------------------------------------- runs

    def create_run(
        self, name: str, kind: str, config: dict[str, Any], *, unique: bool = False
    ) -> str:
        """Record a new run in status 'created'; returns its id (32 hex characters).
        ``unique``: a name another run of the workspace has already is followed by the
        first free counter, ``name (2)``, ``name (3)``, ... (chosen in the same transaction
        as the insert, so two processes never take the same one)."""
        if not kind:
            raise ValueError("a run needs a kind, such as 'train', 'episode' or 'eval'")
        run_id = uuid.uuid4().hex
        config_json = _dumps(config)
        now = time.time()

        def insert(conn: sqlite3.Connection) -> str:
            chosen = name
            if unique:
                taken = {r[0] for r in conn.execute("SELECT name FROM runs")}
                count = 2
                while chosen in taken:
                    chosen, count = f"{name} ({count})", count + 1
            conn.execute(
                "INSERT INTO runs (id, name, kind, config, status, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, chosen, kind, config_json, RunStatus.CREATED.value, now, now),
            )
            return run_id

        return self._write(insert)

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        stop_reason: RunStopReason | None = None,
        error: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> None:
        """Move a run to ``status``.

        ``stop_reason`` and ``error`` are replaced (``None`` clears them, so a resumed run
        loses its old stop reason); ``result`` is replaced only when given.
        """
        status, stop_reason = _run_status(status, stop_reason)
        result_json = None if result is None else _dumps(result)
        now = time.time()

        def update(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE runs SET status = ?, stop_reason = ?, error = ?,"
                " result = coalesce(?, result), updated_at = ? WHERE id = ?",
                (status.value, stop_reason and stop_reason.value, error, result_json, now, run_id),
            )
            if cur.rowcount == 0:
                raise _run_not_found(run_id, self.path)

        self._write(update)

    def update_run_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Replace a run's config (a resumed run whose budget was extended)."""
        config_json = _dumps(config)
        now = time.time()

        def update(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE runs SET config = ?, updated_at = ? WHERE id = ?",
                (config_json, now, run_id),
            )
            if cur.rowcount == 0:
                raise _run_not_found(run_id, self.path)

        self._write(update)

    @_sqlite_errors
    def resolve_run_id(self, run_id: str) -> str:
        """The full id of the run whose id is ``run_id`` or starts with it (>= 4 characters)."""
        conn = self._reader()
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
            return run_id
        if len(run_id) < MIN_PREFIX:
            raise _run_not_found(run_id, self.path, short=True)
        # A range on the primary key, so the lookup uses the index (LIKE would not).
        rows = conn.execute(
            "SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
            (run_id, run_id + "\U0010ffff"),
        ).fetchall()
        if not rows:
            raise _run_not_found(run_id, self.path)
        if len(rows) > 1:
            shown = ", ".join(r["id"] for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
            raise AmbiguousRunId(
                f"run id prefix {run_id!r} matches more than one run ({shown}): "
                "give more characters of the id"
            )
        return rows[0]["id"]

    @_sqlite_errors
    def get_run(self, run_id: str) -> RunRecord:
        """The run with this id, or with this unique id prefix (at least 4 characters)."""
        full_id = self.resolve_run_id(run_id)
        row = self._reader().execute("SELECT * FROM runs WHERE id = ?", (full_id,)).fetchone()
        if row is None:  # deleted between the two queries
            raise _run_not_found(run_id, self.path)
        return _run_record(row)

    @_sqlite_errors
    def list_runs(self, kind: str | None = None) -> list[RunRecord]:
        """All runs, oldest first; only those of ``kind`` when given."""
        sql, args = "SELECT * FROM runs", tuple[str, ...]()
        if kind is not None:
            sql, args = sql + " WHERE kind = ?", (kind,)
        rows = self._reader().execute(sql + " ORDER BY created_at, rowid", args).fetchall()
        return [_run_record(r) for r in rows]

    def delete_run(self, run_id: str) -> None:
        """Delete a run (id or unique prefix) with its generations, checkpoints, episodes
        and their turns."""
        full_id = self.resolve_run_id(run_id)

        def delete(conn: sqlite3.Connection) -> None:
            if conn.execute("DELETE FROM runs WHERE id = ?", (full_id,)).rowcount == 0:
                raise _run_not_found(run_id, self.path)

        self._write(delete)

    # ----------------------------------------------------------------- episodes

    def add_episode(self, episode: Episode) -> None:
        """Store an episode and its turns, in one transaction."""
        self.add_episodes((episode,))

    def add_episodes(self, episodes: Iterable[Episode]) -> None:
        """Store episodes and their turns, all in one transaction (all or none)."""
        rows = [_episode_rows(e) for e in episodes]
        path = self.path

        def insert(conn: sqlite3.Connection) -> None:
            for row in rows:
                _insert_episode(conn, row, path)

        self._write(insert)

    @_sqlite_errors
    def resolve_episode_id(self, episode_id: str, run_id: str | None = None) -> str:
        """The full id of the episode whose id is ``episode_id`` or starts with it (ids are
        printed shortened); only among run ``run_id``'s episodes when given (a full id)."""
        conn = self._reader()
        in_run, args = ("", ()) if run_id is None else (" AND run_id = ?", (run_id,))
        if conn.execute(
            f"SELECT 1 FROM episodes WHERE id = ?{in_run}", (episode_id, *args)
        ).fetchone():
            return episode_id
        # A range on the primary key, so the lookup uses the index (LIKE would not).
        rows = conn.execute(
            f"SELECT id FROM episodes WHERE id >= ? AND id < ?{in_run} ORDER BY id LIMIT 6",
            (episode_id, episode_id + "\U0010ffff", *args),
        ).fetchall()
        where = f"run {run_id[:8]} of workspace database" if run_id else "workspace database"
        if not rows:
            raise EpisodeNotFound(
                f"no episode {episode_id!r} in {where} {self.path}: "
                "`trinity-workbench episodes list` shows the episodes"
                + (f" (`--run {run_id[:8]}`: this run's)" if run_id else "")
            )
        if len(rows) > 1:
            shown = ", ".join(r["id"] for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
            raise AmbiguousEpisodeId(
                f"episode id prefix {episode_id!r} matches more than one episode ({shown}): "
                "give more characters of the id"
            )
        return str(rows[0]["id"])

    @_sqlite_errors
    def get_episode(self, episode_id: str) -> Episode:
        """The episode with this id, with its turns, exactly as it was stored."""
        with self._snapshot() as conn:
            row = conn.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if row is None:
                raise EpisodeNotFound(
                    f"no episode {episode_id!r} in workspace database {self.path}: check the "
                    "id against the run's episode list"
                )
            turns = conn.execute(
                "SELECT * FROM turns WHERE episode_id = ? ORDER BY idx", (episode_id,)
            ).fetchall()
        return _episode(row, turns)

    @_sqlite_errors
    def list_episodes(
        self,
        run_id: str | None = None,
        *,
        outside_runs: bool = False,
        generation: int | None = None,
        candidate: int | None = None,
        task_id: str | None = None,
        min_reward: float | None = None,
        max_reward: float | None = None,
        stop_reason: StopReason | str | None = None,
        worker: str | None = None,
        limit: int | None = None,
    ) -> list[EpisodeSummary]:
        """Episodes matching every given filter, oldest first, at most ``limit``.

        ``run_id`` None is any run's; ``outside_runs`` keeps the episodes stored outside
        any run (``run-episode``'s). ``worker`` keeps episodes in which that worker took
        at least one turn.
        """
        where: list[str] = ["run_id IS NULL"] if outside_runs else []
        args: list[Any] = []
        for column, value in (
            ("run_id", run_id),
            ("generation", generation),
            ("candidate", candidate),
            ("task_id", task_id),
            ("stop_reason", None if stop_reason is None else str(StopReason(stop_reason))),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if min_reward is not None:
            where.append("reward >= ?")
            args.append(min_reward)
        if max_reward is not None:
            where.append("reward <= ?")
            args.append(max_reward)
        if worker is not None:
            where.append("id IN (SELECT episode_id FROM turns WHERE worker = ?)")
            args.append(worker)
        sql = (
            "SELECT id, run_id, generation, candidate, suite, task_id, reward, stop_reason,"
            " n_turns, cost, tokens_in, tokens_out, created_at,"
            " (SELECT role FROM turns WHERE episode_id = episodes.id ORDER BY idx DESC"
            " LIMIT 1) AS last_role FROM episodes"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at, rowid"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        rows = self._reader().execute(sql, args).fetchall()
        return [
            EpisodeSummary(
                **{
                    **dict(r),
                    "stop_reason": StopReason(r["stop_reason"]),
                    "last_role": None if r["last_role"] is None else Role(r["last_role"]),
                }
            )
            for r in rows
        ]

    @_sqlite_errors
    def runs_with_episodes(self) -> set[str | None]:
        """The ids of the runs with at least one episode stored, None among them when an
        episode is stored outside any run: read from the episodes' run index, without
        reading the episodes (a workspace may hold a hundred thousand)."""
        rows = self._reader().execute("SELECT DISTINCT run_id FROM episodes").fetchall()
        return {r[0] for r in rows}

    @_sqlite_errors
    def export_episode_json(self, episode_id: str) -> str:
        """The episode as an export file holds it: pretty JSON, tagged with its format
        and version, generations, candidates and turns counted from 1
        (``store.episode_file``; read it back with ``parse_episode_json``)."""
        return episode_json(self.get_episode(episode_id))

    # ----------------------------------------------------------------- generations

    def commit_generation(
        self,
        run_id: str,
        generation: int,
        stats: dict[str, Any],
        checkpoint: bytes,
        episodes: Sequence[Episode] = (),
    ) -> None:
        """Store one finished generation: its stats, its checkpoint and its episodes, in
        one transaction, so a killed process leaves all of it or none.

        A generation is written once: committing a number the run already has raises
        ``GenerationExists``. Episodes must carry this run id and generation number.
        """
        if generation < 0:
            raise ValueError(f"generation {generation} of run {run_id}: must be >= 0")
        for e in episodes:
            if e.run_id != run_id or e.generation != generation:
                raise ValueError(
                    f"episode {e.id} says run {e.run_id}, generation {e.generation}, but is "
                    f"committed with run {run_id}, generation {generation}: build it with "
                    "the run id and generation it belongs to"
                )
        stats_json = _dumps(stats)
        state = bytes(checkpoint)
        rows = [_episode_rows(e) for e in episodes]
        keep, path = self.keep_checkpoints, self.path
        now = time.time()

        def commit(conn: sqlite3.Connection) -> None:
            if not conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                raise _run_not_found(run_id, path)
            if conn.execute(
                "SELECT 1 FROM generations WHERE run_id = ? AND generation = ?",
                (run_id, generation),
            ).fetchone():
                raise GenerationExists(
                    f"run {run_id} already has generation {generation}: a generation is "
                    "committed once; resume from latest_checkpoint() and commit the next one"
                )
            conn.execute(
                "INSERT INTO generations (run_id, generation, stats, created_at)"
                " VALUES (?, ?, ?, ?)",
                (run_id, generation, stats_json, now),
            )
            conn.execute(
                "INSERT INTO checkpoints (run_id, generation, state, created_at)"
                " VALUES (?, ?, ?, ?)",
                (run_id, generation, state, now),
            )
            for row in rows:
                _insert_episode(conn, row, path)
            if keep is not None:
                conn.execute(
                    "DELETE FROM checkpoints WHERE run_id = ? AND generation NOT IN"
                    " (SELECT generation FROM checkpoints WHERE run_id = ?"
                    "  ORDER BY generation DESC LIMIT ?)",
                    (run_id, run_id, keep),
                )
            conn.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (now, run_id))

        self._write(commit)

    @_sqlite_errors
    def generations(self, run_id: str) -> list[dict[str, Any]]:
        """The stats of every committed generation of a run, in order, each with its
        ``generation`` number."""
        rows = (
            self._reader()
            .execute(
                "SELECT generation, stats FROM generations WHERE run_id = ? ORDER BY generation",
                (run_id,),
            )
            .fetchall()
        )
        return [{**json.loads(r["stats"]), "generation": r["generation"]} for r in rows]

    @_sqlite_errors
    def stored_spend(self, run_id: str) -> dict[str, float]:
        """What a run's stored episodes used: ``episodes`` (its training episodes, as a
        run's spend counts them), ``calls`` (worker calls of every stored episode,
        validation included), ``dollars``; read from the episodes, so it holds whatever
        the run's own records say."""
        row = (
            self._reader()
            .execute(
                "SELECT COUNT(CASE WHEN e.candidate IS NOT NULL THEN 1 END) AS episodes,"
                " COALESCE(SUM(e.cost), 0) AS dollars,"
                " COALESCE(SUM((SELECT COUNT(*) FROM turns t WHERE t.episode_id = e.id"
                " AND t.messages != '[]')), 0) AS calls"
                " FROM episodes e WHERE e.run_id = ?",
                (run_id,),
            )
            .fetchone()
        )
        return {
            "episodes": int(row["episodes"]),
            "calls": int(row["calls"]),
            "dollars": float(row["dollars"]),
        }

    @_sqlite_errors
    def generation_counts(self) -> dict[str, int]:
        """How many generations each run has committed (runs with none are left out)."""
        rows = (
            self._reader()
            .execute("SELECT run_id, COUNT(*) AS n FROM generations GROUP BY run_id")
            .fetchall()
        )
        return {r["run_id"]: int(r["n"]) for r in rows}

    def generation_stats(self, run_id: str) -> list[GenerationStats]:
        """The stats of every committed generation of a run, in order, typed: the same
        shape as the trainer's ``GenerationStats`` event."""
        return [GenerationStats(run_id=run_id, **g) for g in self.generations(run_id)]

    @_sqlite_errors
    def latest_checkpoint(self, run_id: str) -> tuple[int, bytes] | None:
        """The newest checkpoint of a run as (generation, state), or None if it has none."""
        row = (
            self._reader()
            .execute(
                "SELECT generation, state FROM checkpoints WHERE run_id = ?"
                " ORDER BY generation DESC LIMIT 1",
                (run_id,),
            )
            .fetchone()
        )
        return None if row is None else (row["generation"], bytes(row["state"]))

    # ----------------------------------------------------------------- response cache

    @_sqlite_errors
    def get_response(self, key: str) -> dict[str, Any] | None:
        """The cached worker response stored under ``key``, or None.

        A hit is counted without waiting for the writer (``flush()`` waits for it).
        """
        row = (
            self._reader()
            .execute("SELECT response FROM responses WHERE key = ?", (key,))
            .fetchone()
        )
        if row is None:
            return None
        self._submit(
            lambda conn: conn.execute("UPDATE responses SET hits = hits + 1 WHERE key = ?", (key,))
        )
        return json.loads(row["response"])

    def put_response(
        self,
        key: str,
        *,
        provider: str,
        model: str,
        request: dict[str, Any],
        response: dict[str, Any],
    ) -> None:
        """Cache a worker response under ``key`` (replacing any, with its hit count)."""
        args = (key, provider, model, _dumps(request), _dumps(response), time.time())
        self._write(
            lambda conn: conn.execute(
                "INSERT OR REPLACE INTO responses"
                " (key, provider, model, request, response, created_at, hits)"
                " VALUES (?, ?, ?, ?, ?, ?, 0)",
                args,
            )
        )

    @_sqlite_errors
    def list_responses(self) -> list[dict[str, Any]]:
        """Every cached response, oldest first: provider, model, request and response (both
        parsed), created_at (what ``records import --from-cache`` reads)."""
        rows = (
            self._reader()
            .execute(
                "SELECT provider, model, request, response, created_at FROM responses"
                " ORDER BY created_at, key"
            )
            .fetchall()
        )
        return [
            {
                "provider": r["provider"],
                "model": r["model"],
                "request": json.loads(r["request"]),
                "response": json.loads(r["response"]),
                "created_at": r["created_at"],
            }
            for r in rows
        ]

    @_sqlite_errors
    def response_count(self) -> int:
        """How many responses the cache holds."""
        return self._reader().execute("SELECT count(*) FROM responses").fetchone()[0]


# --------------------------------------------------------------------------- helpers


def _create_private(path: Path) -> None:
    """Create an empty database file readable by its owner only (SQLite gives its journal
    files the database file's mode), unless it exists; an empty file is an empty database."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as e:
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise StoreReadOnly(
                f"cannot create workspace database {path}: {read_only_reason(path)}"
            ) from e
        raise StoreError(
            f"cannot create workspace database {path}: {e.strerror}: check the folder"
        ) from e
    os.close(handle)


class _Snapshot:
    """A deferred read transaction on a read-only connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("COMMIT")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _run_status(
    status: RunStatus, stop_reason: RunStopReason | None
) -> tuple[RunStatus, RunStopReason | None]:
    """``status`` and ``stop_reason`` as members of their enums (the strings they stand
    for are accepted); ``InvalidInput`` names an unknown one, or ``interrupted``, a status
    that is read from a run's process, never stored."""
    try:
        status = RunStatus(status)
    except ValueError:
        known = ", ".join(s.value for s in RunStatus if s is not RunStatus.INTERRUPTED)
        raise InvalidInput(f"unknown run status {status!r}: use one of {known}") from None
    if status is RunStatus.INTERRUPTED:
        raise InvalidInput("a run is never stored as interrupted: its gone process reads so")
    if stop_reason is None:
        return status, None
    try:
        return status, RunStopReason(stop_reason)
    except ValueError:
        known = ", ".join(r.value for r in RunStopReason)
        raise InvalidInput(f"unknown stop reason {stop_reason!r}: use one of {known}") from None


def _run_not_found(run_id: str, path: Path, *, short: bool = False) -> RunNotFound:
    hint = f" (a prefix needs at least {MIN_PREFIX} characters)" if short else ""
    return RunNotFound(
        f"no run {run_id!r} in workspace database {path}{hint}: "
        "`trinity-workbench runs list` shows the runs"
    )


def _run_record(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        name=row["name"],
        kind=row["kind"],
        config_data=json.loads(row["config"]),
        status=RunStatus(row["status"]),
        stop_reason=None if row["stop_reason"] is None else RunStopReason(row["stop_reason"]),
        error=row["error"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        result=None if row["result"] is None else json.loads(row["result"]),
    )


@dataclass(frozen=True)
class _EpisodeRows:
    """An episode flattened to the parameters of its INSERTs (built in the caller's
    thread, so a value that cannot be stored fails there, not in the writer)."""

    id: str
    run_id: str | None
    episode: tuple[Any, ...]
    turns: list[tuple[Any, ...]]


def _episode_rows(e: Episode) -> _EpisodeRows:
    episode = (
        e.id, e.run_id, e.generation, e.candidate, e.suite, e.task_id, _dumps(list(e.pool)),
        e.max_turns, e.answer, e.reward, str(e.stop_reason), _dumps(e.grade_details), e.seed,
        e.tokens_in, e.tokens_out, e.cost, len(e.turns), e.created_at,
    )  # fmt: skip
    turns = [
        (
            e.id,
            t.index,
            t.worker,
            str(t.role),
            _dumps(list(t.worker_probs)),
            _dumps(list(t.role_probs)),
            _dumps([dict(m) for m in t.messages]),
            t.response,
            t.verdict,
            int(t.verdict_parsed),
            t.tokens_in,
            t.tokens_out,
            t.latency_s,
            t.cost,
            int(t.usage_estimated),
            t.error,
        )
        for t in e.turns
    ]
    return _EpisodeRows(e.id, e.run_id, episode, turns)


def _insert_episode(conn: sqlite3.Connection, rows: _EpisodeRows, path: Path) -> None:
    """Insert one episode and its turns inside the writer's open transaction."""
    if conn.execute("SELECT 1 FROM episodes WHERE id = ?", (rows.id,)).fetchone():
        raise DuplicateEpisode(
            f"episode {rows.id} is already in workspace database {path}: episode ids are "
            "unique; give each episode a fresh id"
        )
    if (
        rows.run_id is not None
        and not conn.execute("SELECT 1 FROM runs WHERE id = ?", (rows.run_id,)).fetchone()
    ):
        raise _run_not_found(rows.run_id, path)
    conn.execute(
        "INSERT INTO episodes (id, run_id, generation, candidate, suite, task_id, pool,"
        " max_turns, answer, reward, stop_reason, grade_details, seed, tokens_in, tokens_out,"
        " cost, n_turns, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows.episode,
    )
    try:
        conn.executemany(
            "INSERT INTO turns (episode_id, idx, worker, role, worker_probs, role_probs,"
            " messages, response, verdict, verdict_parsed, tokens_in, tokens_out, latency_s,"
            " cost, usage_estimated, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows.turns,
        )
    except sqlite3.IntegrityError as e:
        if "UNIQUE" in str(e):
            raise StoreError(
                f"episode {rows.id} has two turns with the same index ({e}): number turns 0, 1, ..."
            ) from e
        raise StoreError(
            f"episode {rows.id} has a turn the store cannot hold ({e}): give each of its "
            "turns the fields a Turn declares (a text response, empty where none)"
        ) from e


def _episode(row: sqlite3.Row, turns: Sequence[sqlite3.Row]) -> Episode:
    return Episode(
        id=row["id"],
        suite=row["suite"],
        task_id=row["task_id"],
        pool=tuple(json.loads(row["pool"])),
        max_turns=row["max_turns"],
        turns=tuple(_turn(t) for t in turns),
        answer=row["answer"],
        reward=row["reward"],
        stop_reason=StopReason(row["stop_reason"]),
        grade_details=json.loads(row["grade_details"]),
        seed=row["seed"],
        run_id=row["run_id"],
        generation=row["generation"],
        candidate=row["candidate"],
        created_at=row["created_at"],
    )


def _turn(row: sqlite3.Row) -> Turn:
    return Turn(
        index=row["idx"],
        worker=row["worker"],
        role=Role(row["role"]),
        worker_probs=tuple(json.loads(row["worker_probs"])),
        role_probs=tuple(json.loads(row["role_probs"])),
        messages=tuple(json.loads(row["messages"])),
        response=row["response"],
        verdict=None if row["verdict"] is None else Verdict(row["verdict"]),
        verdict_parsed=bool(row["verdict_parsed"]),
        tokens_in=row["tokens_in"],
        tokens_out=row["tokens_out"],
        latency_s=row["latency_s"],
        cost=row["cost"],
        usage_estimated=bool(row["usage_estimated"]),
        error=row["error"],
    )
