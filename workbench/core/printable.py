"""Text made safe and short to show: an untrusted program's output without control
characters, a path with the user's home folder written as ``~``, and the prefix several
worker ids share, to say once.

A program's output is data. Before it reaches a terminal, the GUI or the store, escape
sequences (ESC, CSI), other C0/C1 control characters, DEL and the bidirectional overrides
that make text read differently than it runs are dropped; line feeds and tabs stay.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` without control characters (``\\n`` and ``\\t`` kept; ``\\r\\n`` becomes
    ``\\n``), for showing or storing what an untrusted program wrote."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def shown_path(
    path: str | os.PathLike[str],
    workspace: str | os.PathLike[str] | None = None,
    *,
    short: bool = False,
) -> str:
    """``path`` as a page or a message shows it: a file the workbench ships as
    ``bundled examples/...``; inside ``workspace`` (when given) relative to it as
    ``workspace/...``; under the home folder as ``~/...``, so the user's name and home
    layout stay off the screen (and out of screenshots). With ``short`` (a label whose
    tooltip has the full path), any other absolute path is shown by its last part as
    ``…/NAME`` (``/tmp/x/workspace``: ``…/workspace``). The full path is for tooltips and
    logs."""
    shown = _shown_path(path, workspace)
    if short and os.path.isabs(shown) and len(Path(shown).parts) > 2:
        return "…" + os.sep + Path(shown).name
    return shown


def _shown_path(path: str | os.PathLike[str], workspace: str | os.PathLike[str] | None) -> str:
    text = str(path)
    bundled = str(RESOURCES)
    if text.startswith(bundled + os.sep):  # a file the workbench ships (an example config)
        return "bundled " + text[len(bundled) + 1 :]
    if workspace is not None:
        try:
            inside = Path(path).resolve().relative_to(Path(workspace).resolve())
        except (ValueError, OSError):
            pass
        else:
            return "workspace" if str(inside) == "." else f"workspace/{inside}"
    try:
        home = str(Path.home())
    except RuntimeError:  # no home folder to shorten against
        return text
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text


def shared_prefix(worker_ids: Sequence[str]) -> str:
    """What every one of several worker ids starts with, up to a ``/``
    (``recorded:small-6/`` for a recorded pool's workers; empty for one id or none), for a
    page or a report to say once beside a list of them instead of on every row."""
    common = os.path.commonprefix(list(worker_ids)) if len(worker_ids) > 1 else ""
    return common[: common.rfind("/") + 1]
