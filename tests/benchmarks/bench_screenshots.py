"""How long ``trinity-workbench --screenshot DIR`` takes, start to exit, as a user runs it:
a fresh temporary workspace each time, the offline model already converted (its one-time
conversion on a first install is not counted; docs/results/first-run.md measures it).

    python tests/benchmarks/bench_screenshots.py --out docs/results/data/screenshots.json \
        [--repeat 2] [--baseline COMMIT]

Each run is a child process; the figures are its wall time and its processor time (user
and system, of the child and its own children), which a busy machine inflates far less
than the wall time, and the load average around it. ``--baseline COMMIT`` also measures
the code of another commit (its tree exported to a temporary folder, run with this
environment's packages) in the same way, one after the other, so that the two are
compared on the same machine at the same load. The seconds each step of the new code
reached (it prints them) are kept too.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.results import ROOT, write_results  # noqa: E402

STEP = re.compile(r"^\[\s*([\d.]+) s\]\s+(.*)$")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def export_tree(commit: str, into: Path) -> Path:
    """The repository's tree at ``commit``, written to ``into`` (``git archive``)."""
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", commit], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def one_run(tree: Path) -> dict:
    """One ``--screenshot`` of the code in ``tree``: wall and processor seconds, load,
    the steps it printed."""
    with tempfile.TemporaryDirectory(prefix="bench-shots-") as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": str(tree),
            "QT_QPA_PLATFORM": "offscreen",
        }
        load_before = os.getloadavg()[0]
        cpu_before = children_cpu()
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "--screenshot", f"{tmp}/shots"]
            + ["--workspace", f"{tmp}/ws"],
            cwd=tmp,  # not the repository: the package comes from PYTHONPATH
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        cpu = children_cpu() - cpu_before
        if done.returncode != 0:
            raise RuntimeError(f"--screenshot failed ({done.returncode}): {done.stderr[-2000:]}")
        pictures = sorted(p.name for p in Path(f"{tmp}/shots").glob("*.png"))
    steps = [
        (float(m.group(1)), m.group(2).strip())
        for m in map(STEP.match, done.stderr.splitlines())
        if m is not None
    ]
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "pictures": pictures,
        "steps": steps,
    }


def summary(runs: list[dict]) -> dict:
    return {
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 1),
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 1),
        "wall_s_min": min(r["wall_s"] for r in runs),
        "cpu_s_min": min(r["cpu_s"] for r in runs),
        "load_min": min(r["load_before"] for r in runs),
        "load_max": max(max(r["load_before"], r["load_after"]) for r in runs),
        "pictures": len(runs[0]["pictures"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="results file (docs/results/data/screenshots.json)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (default 1)")
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure this commit's code")
    args = parser.parse_args()
    measured: dict[str, list[dict]] = {"now": []}
    with tempfile.TemporaryDirectory(prefix="bench-tree-") as tmp:
        trees = {"now": ROOT}
        if args.baseline:
            trees["baseline"] = export_tree(args.baseline, Path(tmp))
            measured["baseline"] = []
        for _ in range(args.repeat):
            for name, tree in trees.items():  # interleaved: the same load for both
                run = one_run(tree)
                measured[name].append(run)
                print(
                    f"{name}: {run['wall_s']} s wall, {run['cpu_s']} s processor, load "
                    f"{run['load_before']} -> {run['load_after']}",
                    flush=True,
                )
    figures = {name: summary(runs) for name, runs in measured.items()}
    if "baseline" in figures:
        figures["cpu_ratio"] = round(figures["baseline"]["cpu_s"] / figures["now"]["cpu_s"], 1)
        figures["baseline_commit"] = args.baseline
    for name, value in figures.items():
        print(f"{name}: {value}")
    if args.out:
        write_results(args.out, figures, runs=measured)


if __name__ == "__main__":
    main()
