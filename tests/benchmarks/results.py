"""The shared results-file format (docs/results/data/<name>.json): every figure a results
page quotes, with how it was measured.

    from results import write_results
    write_results("docs/results/data/x.json", {"accuracy": 0.52}, table=[...])

writes ``{"command", "commit", "machine", "date", "figures", ...tables}``: the command
from ``sys.argv`` (as it can be re-run from the repository root), the commit from
``git rev-parse --short HEAD`` (``+dirty`` when tracked files differ from it), the machine
in one line (CPU model, cores, memory, GPU or none) and today's date (UTC). ``load``, beside
them, is the machine's 1-, 5- and 15-minute load average when the file was written: on a
shared machine it says how far to trust the wall times.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def command_line() -> str:
    """How this process was started, relative to the repository root where possible."""
    argv = list(sys.argv)
    script = Path(argv[0]).resolve()
    try:
        argv[0] = str(script.relative_to(ROOT))
    except ValueError:
        argv[0] = str(script)
    return "python " + shlex.join(argv)


def commit() -> str:
    """The short hash of HEAD, with ``+dirty`` when tracked files differ from it."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine() -> str:
    """One line: CPU model, cores, memory, GPU (or none)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = " ".join(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = "unknown memory"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024**2:.0f} GiB"
                break
    except OSError:
        pass
    gpu = "GPU none"
    try:
        import torch

        if torch.cuda.is_available():
            gpu = "GPU " + torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return f"{model}, {cores} cores, {memory}, {gpu}"


def write_results(path: str | Path, figures: dict[str, Any], **tables: Any) -> Path:
    """Write the results file at ``path`` (folders made) and return its path."""
    clash = {"command", "commit", "machine", "date", "load", "figures"} & set(tables)
    if clash:
        raise ValueError(f"table names {sorted(clash)} are the format's own fields: rename them")
    document = {
        "command": command_line(),
        "commit": commit(),
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "load": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
        **tables,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return out
