"""Progress of long imports and downloads on stderr: a rich progress bar on a terminal,
plain lines (one per file, then the totals) when stderr is a file or a pipe, so that a
log holds no redraws."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

_STAGES = {
    "read": "reading",
    "check": "checking",
    "write": "writing",
    "suite": "writing the suite",
}


@contextlib.contextmanager
def import_progress() -> Iterator[Callable[[Any], None]]:
    """A listener of ``importers.build.ImportProgress`` events, shown while the block runs."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        said: set[tuple[str, str]] = set()

        def plain(event: Any) -> None:
            key = (event.stage, event.item)
            if key not in said and (event.item or event.stage != "read"):
                said.add(key)
                what = f"{event.total} answers" if event.stage == "write" else event.item
                print(f"{_STAGES[event.stage]} {what}".rstrip(), file=sys.stderr)

        yield plain
        return
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    tasks: dict[str, Any] = {}

    def show(event: Any) -> None:
        task = tasks.get(event.stage)
        if task is None:
            task = tasks[event.stage] = bars.add_task(_STAGES[event.stage], total=event.total)
        if event.stage == "read":
            what = f"reading {event.item}" if event.item else "read the files"
        else:
            what = "writing answers" if event.stage == "write" else _STAGES[event.stage]
        bars.update(task, completed=event.done, total=event.total, description=what)

    with bars:
        yield show


@contextlib.contextmanager
def download_progress() -> Iterator[Callable[[Any], None]]:
    """A listener of ``importers.download.DownloadProgress`` events: bytes, speed and the
    time left per file on a terminal; a line per file and phase otherwise."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        said: set[tuple[str, str]] = set()

        def plain(event: Any) -> None:
            key = (event.model, event.phase)
            if key in said:
                return
            said.add(key)
            if event.phase == "checking":
                print(f"checking {event.model}", file=sys.stderr)
            elif event.resumed_from:
                print(
                    f"downloading {event.model}: resuming at {event.resumed_from} bytes",
                    file=sys.stderr,
                )
            else:
                print(f"downloading {event.model}", file=sys.stderr)

        yield plain
        return
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    tasks: dict[str, Any] = {}

    def show(event: Any) -> None:
        task = tasks.get(event.model)
        if task is None:
            task = tasks[event.model] = bars.add_task(event.model, total=event.total)
        label = f"{event.model} (checking)" if event.phase == "checking" else event.model
        bars.update(task, completed=event.done, total=event.total, description=label)

    with bars:
        yield show
