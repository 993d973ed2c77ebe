"""The workspace database's schema, versioned with ``PRAGMA user_version``:
``MIGRATIONS[i]`` takes a database from version ``i`` to ``i + 1`` (one step a function,
in order; append, never edit a shipped step). ``Store`` applies the missing steps in one
transaction when it opens a database."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def _sql(*statements: str) -> Migration:
    """A migration step made of SQL statements, run one by one inside the open transaction.

    (``executescript`` would commit the transaction first, so it is not used.)
    """

    def step(conn: sqlite3.Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return step


_V1 = _sql(
    """CREATE TABLE runs (
        id          TEXT PRIMARY KEY,            -- uuid4 hex
        name        TEXT NOT NULL,
        kind        TEXT NOT NULL,               -- 'train', 'episode', 'eval', ...
        config      TEXT NOT NULL,               -- JSON
        status      TEXT NOT NULL,               -- RunStatus
        stop_reason TEXT,
        error       TEXT,
        created_at  REAL NOT NULL,               -- unix time
        updated_at  REAL NOT NULL,
        result      TEXT                         -- JSON, or NULL
    )""",
    "CREATE INDEX runs_by_kind ON runs(kind, created_at)",
    "CREATE INDEX runs_by_created ON runs(created_at)",
    """CREATE TABLE generations (
        run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        generation INTEGER NOT NULL CHECK (generation >= 0),
        stats      TEXT NOT NULL,                -- JSON
        created_at REAL NOT NULL,
        PRIMARY KEY (run_id, generation)
    )""",
    """CREATE TABLE checkpoints (
        run_id     TEXT NOT NULL,
        generation INTEGER NOT NULL,
        state      BLOB NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (run_id, generation),
        FOREIGN KEY (run_id, generation)
            REFERENCES generations(run_id, generation) ON DELETE CASCADE
    )""",
    """CREATE TABLE episodes (
        id            TEXT PRIMARY KEY,
        run_id        TEXT REFERENCES runs(id) ON DELETE CASCADE,
        generation    INTEGER,
        candidate     INTEGER,
        suite         TEXT NOT NULL,
        task_id       TEXT NOT NULL,
        pool          TEXT NOT NULL,             -- JSON list of worker ids
        max_turns     INTEGER NOT NULL,
        answer        TEXT,
        reward        REAL NOT NULL,
        stop_reason   TEXT NOT NULL,
        grade_details TEXT NOT NULL,             -- JSON
        seed          INTEGER,
        tokens_in     INTEGER NOT NULL,
        tokens_out    INTEGER NOT NULL,
        cost          REAL NOT NULL,
        n_turns       INTEGER NOT NULL,
        created_at    REAL NOT NULL
    )""",
    "CREATE INDEX episodes_by_run ON episodes(run_id, generation, candidate)",
    "CREATE INDEX episodes_by_task ON episodes(task_id)",
    "CREATE INDEX episodes_by_created ON episodes(created_at)",
    """CREATE TABLE turns (
        episode_id      TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
        idx             INTEGER NOT NULL,
        worker          TEXT NOT NULL,
        role            TEXT NOT NULL,
        worker_probs    TEXT NOT NULL,           -- JSON list of floats
        role_probs      TEXT NOT NULL,           -- JSON list of floats
        messages        TEXT NOT NULL,           -- JSON list of chat messages
        response        TEXT NOT NULL,
        verdict         TEXT,
        verdict_parsed  INTEGER NOT NULL,        -- 0/1
        tokens_in       INTEGER NOT NULL,
        tokens_out      INTEGER NOT NULL,
        latency_s       REAL NOT NULL,
        cost            REAL NOT NULL,
        usage_estimated INTEGER NOT NULL,        -- 0/1
        error           TEXT,
        PRIMARY KEY (episode_id, idx)
    ) WITHOUT ROWID""",
    "CREATE INDEX turns_by_worker ON turns(worker, episode_id)",
    """CREATE TABLE responses (
        key        TEXT PRIMARY KEY,             -- hex digest computed by the caller
        provider   TEXT NOT NULL,
        model      TEXT NOT NULL,
        request    TEXT NOT NULL,                -- JSON
        response   TEXT NOT NULL,                -- JSON
        created_at REAL NOT NULL,
        hits       INTEGER NOT NULL DEFAULT 0
    )""",
)

# MIGRATIONS[i] takes the schema from version i to i + 1. Append, never edit a shipped step.
MIGRATIONS: list[Migration] = [_V1]

# The tables of the current schema, in an order where each table's references come first
# (the order doctor salvages them in).
TABLES = ("runs", "generations", "checkpoints", "episodes", "turns", "responses")


def schema_version() -> int:
    """The schema version this workbench writes (the number of migration steps)."""
    return len(MIGRATIONS)
