"""Files the user asks for (``--out``): where they go, and written whole or not at all.

``output_path``: a path to an existing folder, or one ending in ``/``, means "inside that
folder" under a default name; any other path is the file itself (with ``suffix`` appended
when given and missing). Only a regular file is ever written or replaced: a device such
as ``/dev/full`` or a pipe is refused before any work. ``write_atomically`` writes to a
temporary file in the same folder and renames it over the target, so a failed write
leaves nothing behind and never half a file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from workbench.core.errors import BadInput


class OutputError(BadInput, ValueError):
    """A place a file cannot be written; the message names it and the fix."""


def output_path(
    out: str | os.PathLike[str], default_name: str, *, suffix: str | None = None
) -> Path:
    """The file ``--out out`` names (see the module docstring); ``OutputError`` for a place
    that is not a regular file."""
    text = os.fspath(out)
    if not text:
        raise OutputError("no output path given: pass --out with a file or folder path")
    path = Path(text).expanduser()
    if path.is_dir() or text.endswith(("/", os.sep)):
        return _regular_or_missing(path / default_name)
    _regular_or_missing(path)  # /dev/full names a device, not "/dev/full.safetensors"
    if suffix and path.suffix != suffix:
        path = path.with_name(path.name + suffix)
    return _regular_or_missing(path)


def _regular_or_missing(path: Path) -> Path:
    try:
        info = path.stat()
    except FileNotFoundError:
        return path
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
        reason = getattr(error, "strerror", None) or error
        raise OutputError(f"cannot write {path}: {reason}: choose another --out") from None
    if not stat.S_ISREG(info.st_mode):
        what = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device?)"
        raise OutputError(
            f"cannot write {path}: it is {what}: pass --out with a file path, or a folder "
            "to write in"
        )
    return path


def write_atomically(path: Path, write: Callable[[str], None]) -> Path:
    """Call ``write(temporary_path)``, then rename the temporary file to ``path``; on any
    failure nothing is left, and an ``OSError`` becomes an ``OutputError`` that says why."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # the prefix is bounded, so a name that fits its folder fits with its temporary too
        handle, temporary = tempfile.mkstemp(
            prefix=f".{path.stem[:32]}.", suffix=".partial", dir=path.parent
        )
    except OSError as error:
        raise OutputError(
            f"cannot write {path}: {error.strerror or error} "
            f"({error.filename or path.parent}): choose a folder you can write to with --out"
        ) from None
    os.close(handle)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise OutputError(
                f"cannot write {path}: {error.strerror or error}: check the disk's free space "
                "and that the folder is writable; nothing was written"
            ) from None
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically (``write_atomically``)."""

    def write(temporary: str) -> None:
        with open(temporary, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # a full disk fails here, not after the rename

    return write_atomically(path, write)
