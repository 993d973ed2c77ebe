"""Figures of one training generation (issue: training).

    python tests/benchmarks/bench_training.py [--backbone offline] [--generations 2]
        [--out docs/results/data/training.json]

Runs sep-CMA-ES on the sandbox pool (lambda = 16, m = 8, K = 5) in a temporary workspace
and prints, per generation: wall time split into coordinator (backbone) time and worker
time, and the share of coordinator forwards that the feature cache saved (requests that
were answered without a forward). ``--out`` also writes them as a results file
(``tests/benchmarks/results.py``): the per-generation table and its medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from workbench.core.config import RunConfig
from workbench.core.jobs.train import train
from workbench.core.training.events import GenerationStats
from workbench.core.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backbone", default="offline")
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--popsize", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    config = RunConfig.from_dict(
        {
            "run": {"name": "bench", "seed": 0},
            "backbone": {"model": args.backbone, "device": "auto"},
            "pool": {"workers": ["sandbox"]},
            "tasks": {"suite": "mixed", "validation": 30},
            "optimizer": {
                "popsize": args.popsize,
                "rollouts": args.rollouts,
                "validate_every": 1000,
            },
            "budget": {"generations": args.generations},
            "protocol": {"max_turns": 5, "temperature": 0.0},
            "cache": {"policy": "off"},
        }
    )
    stats: list[GenerationStats] = []
    with tempfile.TemporaryDirectory() as folder:
        train(
            config,
            Workspace.open(folder),
            listeners=[lambda e: isinstance(e, GenerationStats) and stats.append(e)],
        )
    print(
        f"sep-CMA-ES, sandbox pool, lambda = {args.popsize}, m = {args.rollouts}, K = 5, backbone {args.backbone}"
    )
    print(
        "gen  wall s  coordinator s  worker s  other s  feature requests  forwards  saved by cache"
    )
    rows = []
    for s in stats:
        other = s.wall_s - s.coordinator_s - s.worker_s
        saved = 1 - s.features_computed / max(1, s.features_requested)
        print(
            f"{s.generation:3d}  {s.wall_s:6.1f}  {s.coordinator_s:13.1f}  {s.worker_s:8.2f}  {other:7.1f}  "
            f"{s.features_requested:16d}  {s.features_computed:8d}  {saved:14.1%}"
        )
        rows.append(
            [
                s.generation,
                round(s.wall_s, 2),
                round(s.coordinator_s, 2),
                round(s.worker_s, 2),
                round(other, 2),
                s.features_requested,
                s.features_computed,
                round(saved, 4),
            ]
        )
    if args.out:
        figures = {
            "backbone": args.backbone,
            "popsize": args.popsize,
            "rollouts": args.rollouts,
            "max_turns": 5,
            "generations": len(stats),
            "median_wall_s": round(statistics.median(r[1] for r in rows), 2),
            "median_coordinator_s": round(statistics.median(r[2] for r in rows), 2),
            "median_worker_s": round(statistics.median(r[3] for r in rows), 2),
            "median_saved_by_cache": round(statistics.median(r[7] for r in rows), 4),
        }
        columns = [
            "generation",
            "wall s",
            "coordinator s",
            "worker s",
            "other s",
            "feature requests",
            "forwards",
            "saved by cache",
        ]
        write_results(args.out, figures, generations={"columns": columns, "rows": rows})


if __name__ == "__main__":
    main()
