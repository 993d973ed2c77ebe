"""The README's first run, timed from a clean workspace, and the sandbox example's result.

    python tests/benchmarks/bench_first_run.py --out docs/results/data/first-run.json

Runs, in a new temporary folder that stands in for the user's data and cache directories
(``XDG_DATA_HOME``, ``XDG_CACHE_HOME``: so the workspace is new and the offline model is
converted from its GGUF file as on a first install), exactly the README's command::

    trinity-workbench train workbench/resources/examples/sandbox.toml

then ``trinity-workbench eval --run RUN --json`` on the run, and last, in another new
cache folder, the offline model's conversion from its GGUF file alone
(``workbench.core.models.local_directory``). Writes the wall times (train start to end,
eval, the conversion), the example's budget as its config says, and every system's test
reward with its 95% Wilson interval to ``--out`` (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import ROOT, write_results  # noqa: E402

EXAMPLE = "workbench/resources/examples/sandbox.toml"


def cli() -> list[str]:
    """``trinity-workbench`` as installed, else this interpreter's ``-m workbench``."""
    found = shutil.which("trinity-workbench")
    return [found] if found else [sys.executable, "-m", "workbench"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="results file to write (JSON)")
    args = parser.parse_args()

    load_at_start = round(os.getloadavg()[0], 1)
    with tempfile.TemporaryDirectory(prefix="first-run-") as home:
        env = dict(os.environ, XDG_DATA_HOME=f"{home}/data", XDG_CACHE_HOME=f"{home}/cache")
        start = time.perf_counter()
        train = subprocess.run(
            [*cli(), "train", EXAMPLE], cwd=ROOT, env=env, capture_output=True, text=True
        )
        train_s = time.perf_counter() - start
        if train.returncode != 0:
            sys.stderr.write(train.stdout + train.stderr)
            raise SystemExit(f"train failed with exit code {train.returncode}")
        listed = subprocess.run(
            [*cli(), "runs", "list", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs = json.loads(listed.stdout)
        if len(runs) != 1:
            raise SystemExit(f"expected one run in the new workspace, found {len(runs)}")
        run_id = runs[0]["id"]
        start = time.perf_counter()
        evaluated = subprocess.run(
            [*cli(), "eval", "--run", run_id, "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        eval_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="first-run-cache-") as cache:
        timed = subprocess.run(
            [
                sys.executable,
                "-c",
                "import time; from workbench.core.models import local_directory; "
                "t = time.perf_counter(); local_directory('offline'); "
                "print(time.perf_counter() - t)",
            ],
            cwd=ROOT,
            env=dict(os.environ, XDG_CACHE_HOME=cache),
            capture_output=True,
            text=True,
            check=True,
        )
        convert_s = float(timed.stdout.strip().splitlines()[-1])
    config = tomllib.loads((ROOT / EXAMPLE).read_text(encoding="utf-8"))
    systems = json.loads(evaluated.stdout)
    log = train.stdout + train.stderr
    generations = len(re.findall(r"(?m)^\s*(?:gen|generation)\s+\d+", log))
    by_kind = {s["system"]: s for s in systems}
    coordinator = next(s for s in systems if s["kind"] == "coordinator")
    figures = {
        "train_minutes": round(train_s / 60, 1),
        "train_seconds": round(train_s),
        "eval_seconds": round(eval_s),
        "model_conversion_seconds": round(convert_s, 1),
        "generations": config["budget"]["generations"],
        "rollouts": config["optimizer"]["rollouts"],
        "max_turns": config["protocol"]["max_turns"],
        "validation_tasks": config["tasks"]["validation"],
        "interval_percent": 95,
        "population": int(m.group(1)) if (m := re.search(r"population (\d+)", log)) else None,
        "load_average_at_start": load_at_start,
        "load_average_at_end": round(os.getloadavg()[0], 1),
        "test_tasks": coordinator["n"],
        "coordinator": {
            "reward": round(coordinator["accuracy"], 3),
            "low": round(coordinator["ci_low"], 3),
            "high": round(coordinator["ci_high"], 3),
        },
    }
    table = [
        {
            "system": s["system"],
            "kind": s["kind"],
            "reward": round(s["accuracy"], 3),
            "low": round(s["ci_low"], 3),
            "high": round(s["ci_high"], 3),
            "n": s["n"],
        }
        for s in systems
    ]
    out = write_results(
        args.out, figures, systems=table, train_log_tail=log.strip().splitlines()[-5:]
    )
    print(
        json.dumps(figures, indent=2),
        f"(generation lines seen: {generations}; {len(by_kind)} systems)",
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
