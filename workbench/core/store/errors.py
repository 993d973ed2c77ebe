"""The workspace database's errors, and what an SQLite error means for the user: each
names the file, what went wrong and what to do (``StoreDamaged`` points to
``trinity-workbench doctor``; ``StoreReadOnly`` says which of the file or its folder
cannot be written). Their places in the one error tree are drawn in core/errors.py."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from workbench.core.errors import BadInput, SystemFailure, WorkbenchError, WorkFailed

BUSY_TIMEOUT_S = 30.0  # how long a connection waits on another's lock before it says so


class StoreError(WorkbenchError):
    """A workspace database could not be opened, read or written (a family: exit 1, the
    work failed, unless a subclass names another branch first)."""


class StoreVersionError(StoreError, BadInput):
    """The database was written by a newer workbench than this one."""


class StoreDamaged(StoreError, BadInput):
    """The database file is damaged (corrupt pages, missing tables): see ``doctor``."""


class StoreReadOnly(StoreError, SystemFailure):
    """The database file, or the folder that holds it, cannot be written."""


class StoreFull(StoreError, SystemFailure):
    """The disk that holds the database is full; nothing of the failed write was kept."""


class RunNotFound(StoreError, BadInput, LookupError):
    """No run has this id (or id prefix)."""


class AmbiguousRunId(StoreError, BadInput, LookupError):
    """A run id prefix matches more than one run."""


class EpisodeNotFound(StoreError, BadInput, LookupError):
    """No episode has this id."""


class AmbiguousEpisodeId(StoreError, BadInput, LookupError):
    """An episode id prefix matches more than one episode."""


class DuplicateEpisode(StoreError, WorkFailed):
    """An episode with this id is already stored."""


class GenerationExists(StoreError, WorkFailed):
    """A generation number was committed twice for one run."""


def doctor_hint(path: Path) -> str:
    """How to check a damaged workspace database and copy what is readable."""
    return (
        f"check it with `trinity-workbench doctor --workspace {path.parent}`, and copy what "
        f"is readable into a new workspace with `--salvage NEW_FOLDER`"
    )


def _companions(path: Path) -> tuple[Path, ...]:
    """The files SQLite keeps beside the database: write-ahead log, shared memory, journal."""
    return tuple(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal"))


def read_only_reason(path: Path) -> str:
    """Which of the database file or its folder cannot be written (SQLite needs both: it
    keeps its write-ahead log in files beside the database)."""
    if path.exists() and not os.access(path, os.W_OK):
        return f"the file {path} is read-only: make it writable (chmod u+w)"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return (
            f"the folder {path.parent} is read-only, and SQLite keeps its journal files "
            "beside the database: make the folder writable, or copy the workspace elsewhere"
        )
    for companion in _companions(path):
        if companion.exists() and not os.access(companion, os.W_OK):
            return (
                f"SQLite's journal file {companion} is read-only (left by a copy or an earlier "
                "opening of a read-only database): make it writable (chmod u+w), or delete it "
                "while no workbench program has the workspace open"
            )
    return "the disk or the file system is read-only: copy the workspace to a writable place"


def translate_error(error: sqlite3.Error, path: Path) -> StoreError:
    """A ``StoreError`` that says what an SQLite error means for the workspace database at
    ``path`` and what to do about it."""
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error)
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return StoreReadOnly(f"cannot write workspace database {path}: {read_only_reason(path)}")
    if name.startswith("SQLITE_CANTOPEN") or name.startswith("SQLITE_PERM"):
        if (
            not os.access(path.parent, os.W_OK | os.X_OK)
            or (path.exists() and not os.access(path, os.R_OK | os.W_OK))
            or any(c.exists() and not os.access(c, os.R_OK | os.W_OK) for c in _companions(path))
        ):
            return StoreReadOnly(f"cannot open workspace database {path}: {read_only_reason(path)}")
        return StoreError(
            f"cannot open workspace database {path} ({text}): check that the folder exists, "
            "is on a local disk and is writable"
        )
    if name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB":
        return StoreDamaged(f"workspace database {path} is damaged ({text}): {doctor_hint(path)}")
    if text.startswith(("no such table", "no such column")):
        return StoreDamaged(
            f"workspace database {path} lacks part of its schema ({text}): it was damaged or "
            f"edited by another program; {doctor_hint(path)}"
        )
    if name == "SQLITE_FULL":
        return StoreFull(
            f"cannot write workspace database {path}: the disk is full: free some space "
            "and try again (nothing of the failed write was kept)"
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"workspace database {path} stayed locked by another program for "
            f"{BUSY_TIMEOUT_S:g} s: close other workbench windows or commands and try again"
        )
    if name.startswith("SQLITE_IOERR"):
        return StoreError(
            f"input/output error on workspace database {path} ({text}): check the disk; "
            f"if it persists, {doctor_hint(path)}"
        )
    return StoreError(f"workspace database {path}: {text}: {doctor_hint(path)}")
