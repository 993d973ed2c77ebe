"""The workbench's one tree of errors. Every error the project raises for a user to read
sits under ``WorkbenchError``, in one of four branches; the branch says what the user can
do, and the command line's exit code follows from it (docs/guides/exit-codes.md)::

    WorkbenchError                      a sentence for the user: what, which thing, the fix
    ├── BadInput           exit 2       the input is wrong: a file, an option, a name
    │   ├── ConfigError, SettingsError, SuiteImportError, HubRowError,
    │   │   SuiteValidationError > RecordsValidationError, RecordedPoolError,
    │   │   _NotJson (one line of a JSONL file that is not JSON)
    │   ├── SuiteNotFound, TaskNotFound, UnknownWorker > RecordedPoolNotFound,
    │   │   RegistryError > SpecError, UnknownModel (no such MMLU-Pro model upstream)
    │   ├── KeychainError > InvalidKey, KeychainUnavailable
    │   ├── RunNotFound, AmbiguousRunId, EpisodeNotFound, AmbiguousEpisodeId, RunLocked
    │   ├── StoreVersionError, StoreDamaged, CheckpointError > DamagedCheckpoint,
    │   │   CoordinatorFileError, OutputError
    │   ├── WorkspaceError > WorkspaceIsAFile, ModelSourceError > IncompleteInstallation,
    │   │   PortUnavailable, BadRequest, UserError (CLI),
    │   │   PromptTooLong (serve: a conversation over the prompt budget)
    │   ├── FileEncodingError                a file that is not UTF-8: file, line, fix
    │   └── InvalidInput                     any other value given that cannot be used
    │       (RecordedPoolDamaged: a recorded pool's file, with its line)
    ├── WorkFailed         exit 1       the input was fine; the work could not be done
    │   ├── WorkerError > AuthError, RateLimited, BadResponse, WorkerTimeout, CacheMiss,
    │   │                  NotRecorded (a recorded worker has no answer for the task),
    │   │                  ProviderError > WorkerUnreachable
    │   ├── DuplicateEpisode, GenerationExists, and StoreError itself
    │   │   (a family: its subclasses sit in the branch they name, e.g. RunNotFound
    │   │   in BadInput, StoreFull in SystemFailure; a bare one is "locked" or "I/O")
    │   ├── SandboxError > NoPython, NoUtilLinux
    │   ├── ExecutorError (Ray: missing, the cluster unreachable, actors that die)
    │   ├── DownloadError, ChecksumMismatch (importers: a download that stopped, a
    │   │   file that is not the published one)
    │   └── DoctorError
    ├── Interrupted        exit 3       stopped on request; resumable where it says so
    │   └── Stopped (training), EvaluationStopped, DownloadCancelled
    └── SystemFailure      exit 4       the operating system refused: disk full, no
        ├── StoreFull, StoreReadOnly              permission, a read-only file system
        └── (any OSError, through ``system_failure``)

Standard-library bases stay where callers catch them (``ConfigError`` is still a
``ValueError``, ``RunNotFound`` a ``LookupError``): the project's classes inherit from
both. Outside the tree are only the sandbox's in-jail modules (``checker.py``,
``plaindata.py``), which run in the jail without the workbench package: ``CandidateFailed``
(a ``BaseException`` on purpose: graded code's ``except Exception`` must not catch it) and
``NotPlainData``, neither ever seen outside the jail; and the self-test's ``Warn``
(gui/selftest.py), a check's "works, with a limitation" verdict that the self-test itself
catches and prints. ``tests/test_errors.py`` fails when a class is missing here.

This module imports nothing of the project, so every layer may use it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

# exit codes of the command line, by branch (docs/guides/exit-codes.md)
EXIT_OK = 0
EXIT_WORK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 3
EXIT_SYSTEM = 4


class WorkbenchError(Exception):
    """An error of the workbench, worded for the user: what happened, to which thing, and
    what to do next. Never holds a key."""

    exit_code = EXIT_WORK_FAILED


class BadInput(WorkbenchError):
    """The user's input is wrong (a file, an option, a name): fix it and run again."""

    exit_code = EXIT_BAD_INPUT


class WorkFailed(WorkbenchError):
    """The input was valid but the work could not be done (a provider, a grade, the store)."""

    exit_code = EXIT_WORK_FAILED


class Interrupted(WorkbenchError):
    """The work was stopped on request; what was completed is kept."""

    exit_code = EXIT_INTERRUPTED


class SystemFailure(WorkbenchError):
    """The operating system refused (disk full, permission denied, a read-only file system):
    the message names the path and the fix."""

    exit_code = EXIT_SYSTEM


class InvalidInput(BadInput, ValueError):
    """A value the user gave (an option, a name, a file's content) is not one the
    workbench can use; the message names it and what to give instead."""


class FileEncodingError(BadInput, ValueError):
    """A text file the workbench reads is not UTF-8: the message names the file, the line
    and the fix (as a syntax error's does); ``line`` is that line (1-based)."""

    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.line = line


def exit_code(exc: BaseException) -> int:
    """The command line's exit code for ``exc``: its branch's, 4 for an operating-system
    failure, 3 for Ctrl-C, 1 for anything else (a bug: the work failed)."""
    if isinstance(exc, WorkbenchError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, OSError) and exc.errno in _SYSTEM_ERRNOS:
        return EXIT_SYSTEM
    return EXIT_WORK_FAILED


_FIXES = {
    errno.ENOSPC: ("the disk is full", "free some space on that disk and run the command again"),
    errno.EDQUOT: (
        "the disk quota is used up",
        "free some space or raise the quota, then run again",
    ),
    errno.EACCES: (
        "permission denied",
        "make it readable and writable by you (chmod u+rw, or chown), or use another --workspace",
    ),
    errno.EPERM: (
        "the operation is not permitted",
        "make it writable by you (chmod u+rw, or chown), or use another --workspace",
    ),
    errno.EROFS: (
        "the file system is read-only",
        "use a workspace on a writable disk (--workspace DIR), or remount it read-write",
    ),
}
_SYSTEM_ERRNOS = frozenset(_FIXES)


def describe_os_error(exc: OSError, path: str | os.PathLike[str] | None = None) -> str | None:
    """One sentence for an operating-system failure the user can fix (disk full, permission
    denied, read-only file system): the path, what happened, the fix; None for others."""
    if exc.errno not in _FIXES:
        return None
    what, fix = _FIXES[exc.errno]
    where = path if path is not None else exc.filename
    return f"{Path(where)}: {what}: {fix}" if where is not None else f"{what}: {fix}"


def system_failure(exc: OSError, path: str | os.PathLike[str] | None = None) -> WorkbenchError:
    """``exc`` as a ``SystemFailure`` with one sentence (``describe_os_error``), or as a
    ``WorkFailed`` naming the path and the system's own words for other OS errors."""
    sentence = describe_os_error(exc, path)
    if sentence is not None:
        return SystemFailure(sentence)
    where = path if path is not None else exc.filename
    text = exc.strerror or str(exc) or type(exc).__name__
    return WorkFailed(f"{where}: {text}" if where is not None else text)


def not_utf8(what: str, path: str | os.PathLike[str], data: bytes, exc: UnicodeDecodeError) -> str:
    """The sentence for a text file that is not UTF-8, as for a syntax error: the file
    (``what`` says which kind), the line and column of the first bad byte, the byte, and
    the fix."""
    line = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    bad = data[exc.start : exc.start + 1].hex()
    return (
        f"{what} {Path(path)} is not UTF-8 text: line {line}, column {column} has byte "
        f"0x{bad}: save the file as UTF-8 (an editor's Save As > Encoding: UTF-8, or "
        f"iconv -f WINDOWS-1252 -t UTF-8 {Path(path).name} > fixed-{Path(path).name})"
    )


def read_text(what: str, path: str | os.PathLike[str]) -> str:
    """A text file the workbench reads, as UTF-8 (a byte order mark is no error);
    ``FileEncodingError`` with ``not_utf8``'s sentence for any other encoding. OS errors
    pass through for the caller to word."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FileEncodingError(not_utf8(what, path, data, exc), line) from None


def sentence(exc: BaseException) -> str:
    """What a user reads for ``exc``, the same on the command line and in the GUI: the
    tree's own sentence; for an OSError of a kind the user can fix (disk full, permission
    denied, a read-only file system) the path and the fix; the message of a standard
    value or lookup error; for anything else (a bug) its class and message, with where to
    find the details."""
    if isinstance(exc, WorkbenchError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, OSError):
        return describe_os_error(exc) or str(exc) or type(exc).__name__
    if isinstance(exc, KeyError):  # str() of a KeyError is the repr of its argument
        return str(exc.args[0]) if exc.args else type(exc).__name__
    if isinstance(exc, ValueError | LookupError):
        return str(exc) or type(exc).__name__
    return (
        f"internal error ({type(exc).__name__}: {exc}): run the command again with -v "
        "for the details (in the GUI: the log) and report them"
    )
