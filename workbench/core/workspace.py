"""Where a workspace keeps its database, imported suites and logs.

A workspace is one folder. By default it is the user data directory
(``platformdirs``); every command accepts ``--workspace DIR`` to use another one. Folders
the workbench creates in it are private to the user (0700), its files too (0600).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import platformdirs

from workbench.core.errors import BadInput, describe_os_error, system_failure

APP_NAME = "trinity-workbench"


def resources_dir() -> Path:
    """The folder of bundled resources (role prompt templates, icons)."""
    return Path(str(resources.files("workbench") / "resources"))


class WorkspaceError(BadInput):
    """A workspace folder that cannot be made or used; the message names it and the fix."""


class WorkspaceIsAFile(WorkspaceError, NotADirectoryError):
    """``--workspace`` names a file."""


@dataclass(frozen=True)
class Workspace:
    """A workspace folder and the fixed places inside it."""

    root: Path

    @classmethod
    def open(cls, root: str | Path | None = None) -> Workspace:
        """Open (creating if needed) the workspace at ``root``, or the user default."""
        path = Path(root) if root is not None else Path(platformdirs.user_data_dir(APP_NAME))
        path = path.expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise WorkspaceIsAFile(
                f"workspace {path} is a file, not a folder: pass --workspace with a folder path"
            )
        # private to the user: runs, transcripts and cached replies may be confidential
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            if describe_os_error(error) is not None:  # disk full, no permission, read-only
                raise system_failure(error, error.filename or path) from None
            raise WorkspaceError(
                f"cannot create workspace folder {path}: {error.strerror} "
                f"({error.filename or path}): pass --workspace with a folder you can write to"
            ) from None
        return cls(path)

    @property
    def db_path(self) -> Path:
        return self.root / "workbench.sqlite3"

    @property
    def suites_dir(self) -> Path:
        return self.root / "suites"

    @property
    def records_dir(self) -> Path:
        """Recorded pools imported with ``records import``: NAME.jsonl and NAME.json."""
        return self.root / "records"

    @property
    def features_path(self) -> Path:
        """Backbone features kept between runs (coordinator/feature_store.py)."""
        return self.root / "features.sqlite3"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"


def model_cache_dir() -> Path:
    """Where converted models (GGUF to safetensors) are kept between runs."""
    return Path(platformdirs.user_cache_dir(APP_NAME)) / "models"


def suite_cache_dir() -> Path:
    """Where bundled suites converted from their packages' own formats are kept (CHAMP)."""
    return Path(platformdirs.user_cache_dir(APP_NAME)) / "suites"
