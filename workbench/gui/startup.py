"""What can stand in the way of the desktop app's start, said where the user looks: a
dialog when a window can open (the workspace cannot be used, the keychain that holds the
registered workers' keys is missing), one sentence on stderr when none can (no display:
``app.display_problem``). The dialog's sentence goes to stderr as well, for a terminal
that started the app.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from workbench.core.errors import WorkbenchError, sentence
from workbench.core.workers.registry import Registry
from workbench.core.workspace import Workspace
from workbench.gui.qt import QMessageBox, QTimer, QWidget
from workbench.gui.words import keychain_sentence

log = logging.getLogger(__name__)

WORKSPACE_TITLE = "The workspace cannot be used"
KEYCHAIN_TITLE = "No keychain for the API keys"


def open_workspace(path: str | Path | None) -> Workspace:
    """The workspace at ``path`` (None: the user's default), checked to be usable: a folder (made with its parents
    if missing) that this user can write in, its logs folder made. Raises
    ``WorkspaceError``, or ``OSError`` for a folder that cannot be written, with a
    sentence (``core.errors.sentence``) that names the folder and the fix."""
    workspace = Workspace.open(path)
    workspace.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    probe = workspace.log_dir / ".writable"
    probe.touch()
    probe.unlink()
    return workspace


def workspace_problem(exc: BaseException, path: str | Path | None) -> str:
    """Why the workspace at ``path`` (None: the user's default) cannot be used, and what
    to do, in sentences (the error's own when it names the workspace)."""
    said = sentence(exc)
    if isinstance(exc, WorkbenchError):
        return said
    return f"workspace {path or 'folder (the default one)'} cannot be used: {said}"


def keychain_problem(registry: Registry | None = None) -> str | None:
    """The registered workers whose keys cannot be read because this computer has no
    secure keychain (and whose environment variable is not set), with the fix; None
    when there are none. Reads the keychain: run it off the GUI thread."""
    registry = registry or Registry.open()
    lacking: list[tuple[str, str | None]] = []
    for spec in registry.list():
        status = registry.key_status(spec)
        if status.source == "missing" and status.note:  # missing because of the keychain
            lacking.append((spec.id, status.env))
    if not lacking:
        return None
    names = ", ".join(f"'{worker}'" for worker, _ in lacking)
    env = lacking[0][1] if len(lacking) == 1 else None
    return (
        f"The registered worker{'s' if len(lacking) > 1 else ''} {names} cannot be called "
        f"until {'their keys are' if len(lacking) > 1 else 'its key is'} found: "
        f"{keychain_sentence(env)} The simulated team and local models need no key."
    )


def show_problem(
    title: str,
    text: str,
    parent: QWidget | None = None,
    *,
    modal: bool = True,
    close_after_ms: int | None = None,
) -> QMessageBox:
    """Say a start-up problem in a dialog (and on stderr, and in the log). ``modal``:
    wait until it is closed (nothing else can start); else it stays beside the window.
    ``close_after_ms``: close it after that long (the app's smoke-test timer)."""
    print(f"error: {text}", file=sys.stderr)
    log.info("%s: %s", title, text)  # the workspace's log, when there is one
    box = QMessageBox(QMessageBox.Icon.Critical if modal else QMessageBox.Icon.Warning, title, text)
    if parent is not None:
        box.setParent(parent, box.windowFlags())
    box.setObjectName("startup-problem")
    if close_after_ms is not None:
        QTimer.singleShot(close_after_ms, box.reject)
    if modal:
        box.exec()
    else:
        box.open()
    return box
