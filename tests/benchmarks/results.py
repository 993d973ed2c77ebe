"""Results files: what a benchmark measured, with how to re-run it.

A results file ``docs/results/data/<name>.json`` is what a Results page renders from
(``docs/hooks/results.py``) and what ``tests/test_results_pages.py`` checks the pages'
numbers against. Its format (shared by every writer)::

    {"command": "python tests/benchmarks/bench_x.py --out docs/results/data/x.json ...",
     "commit": "<git rev-parse --short HEAD at run time>",
     "machine": "<CPU model, cores, memory, GPU or none>",
     "date": "YYYY-MM-DD",
     "load": [1-, 5- and 15-minute load average when written],
     "figures": {...},            # every number a page quotes
     ...further tables...}

``write_results(path, figures, **tables)`` fills command, commit (as it was when this
module was imported, at the benchmark's start), machine, date and load (on a shared
machine it says how far to trust the wall times).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def command_line(argv: list[str] | None = None) -> str:
    """How this process was started, as a command to type in the repository root."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0])
    if script.is_absolute():
        try:
            argv[0] = str(script.relative_to(ROOT))
        except ValueError:
            pass
    return "python " + shlex.join(argv)


def commit() -> str:
    """The short commit of the repository, with ``+dirty`` when tracked files differ."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        raise RuntimeError(f"results: git cannot name the commit in {ROOT}: {head.stderr.strip()}")
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")


# the code that runs is the code at the start: a commit made while a long benchmark runs
# must not be written as the one it measured
try:
    _AT_START: str | None = commit()
except RuntimeError:
    _AT_START = None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return None


def _gpu() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return ", ".join(
                torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())
            )
    except ImportError:
        pass
    return "no GPU"


def machine() -> str:
    """One line: CPU model, cores, memory, GPU or none."""
    memory = _memory_gib()
    parts = [
        _cpu_model(),
        f"{os.cpu_count()} cores",
        f"{memory:.0f} GiB" if memory is not None else "memory unknown",
        _gpu(),
    ]
    return ", ".join(parts)


def write_results(path: str | Path, figures: dict[str, Any], **tables: Any) -> Path:
    """Write a results file at ``path`` (see the module's docstring) and return its path."""
    reserved = {"command", "commit", "machine", "date", "load", "figures"} & set(tables)
    if reserved:
        raise ValueError(f"results: {sorted(reserved)} are the file's own keys, not tables")
    data: dict[str, Any] = {
        "command": command_line(),
        "commit": _AT_START or commit(),
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "load": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
        **tables,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return out
