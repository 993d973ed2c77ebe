"""Helpers shared by the command modules: the workspace, tables, JSON, user errors."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from workbench.core.errors import BadInput


class UserError(BadInput):
    """Bad input from the user: printed without a traceback, exit code 2."""


def workspace(args):
    from workbench.core.workspace import Workspace

    return Workspace.open(args.workspace)


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def print_written(paths) -> None:
    """One 'wrote PATH' line per file a command wrote (a report's --out), on stderr, so
    stdout holds only the report; paths shortened as everywhere (``shown_path``)."""
    from workbench.core.printable import shown_path

    for path in paths:
        print(f"wrote {shown_path(path)}", file=sys.stderr)


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def one_line(text: str, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def seed_arg(text: str) -> int:
    """An argparse ``type`` for ``--seed``: a whole number from 0 to 2**31 - 1, as a run
    config's ``run.seed`` (numpy refuses a negative seed with a message naming no option)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"{value} is out of range: use 0 to {2**31 - 1}")
    return value


def exit_now(code: int) -> NoReturn:
    """End the process at once, after a stop or Ctrl-C once the job has unwound (its run
    stored and marked, its store and lock closed): a forward of a model the stop
    abandoned in a thread (a minute on a busy CPU) is not waited for, as an ordinary
    exit would wait for it."""
    import logging

    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)
