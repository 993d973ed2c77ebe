"""How far the training bar's estimate of the time left is from the real time left, on
the README's example (``workbench/resources/examples/sandbox.toml``).

    python tests/benchmarks/bench_eta.py --out docs/results/data/eta.json

Trains the example in a new temporary workspace, its events heard by the CLI's own
training view (``workbench.cli.views.TrainingView`` on a ``Display`` that prints nowhere),
and records at every event the estimate the bar shows (``Eta.remaining``) beside the time.
Once the run has ended, the real time left at each moment is known: the file holds, at
20%, 50% and 80% of the run's generations, the estimate, the real time left and their
ratio (within a factor of 1.5 is the aim), and the same for the estimate the progress line
gave before (the time since the command started over the generations done, times the
generations left) on the same run. ``--generations`` trains a shorter budget.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from results import ROOT, write_results  # noqa: E402
from rich.console import Console  # noqa: E402

from workbench.cli.progress import Display  # noqa: E402
from workbench.cli.views import TrainingView  # noqa: E402
from workbench.core.config import RunConfig  # noqa: E402
from workbench.core.jobs.train import train  # noqa: E402
from workbench.core.records import GenerationStats  # noqa: E402
from workbench.core.training.events import EpisodeDone, RunStarted  # noqa: E402
from workbench.core.workspace import Workspace  # noqa: E402

EXAMPLE = ROOT / "workbench/resources/examples/sandbox.toml"
SHARES = (0.2, 0.5, 0.8)
AIM = 1.5  # the estimate within this factor of the real time left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="results file to write (JSON)")
    parser.add_argument("--generations", type=int, help="a shorter budget than the example's")
    args = parser.parse_args()
    config = RunConfig.load(EXAMPLE)
    if args.generations:
        config = config.replace(budget={"generations": args.generations})
    total = config.budget.generations
    load_at_start = [round(x, 2) for x in os.getloadavg()]

    display = Display("plain", console=Console(file=io.StringIO(), width=80))
    view = TrainingView(display, resume=None)
    samples: list[dict[str, float | None]] = []  # seconds since the command began
    began = time.monotonic()
    started: list[float] = []

    def heard(event) -> None:
        view(event)
        now = time.monotonic() - began
        if isinstance(event, RunStarted):
            started.append(now)
        if isinstance(event, EpisodeDone | GenerationStats) and view.counter is not None:
            eta = view.counter.eta
            generation = 1.0 if isinstance(event, GenerationStats) else 0.0
            samples.append(
                {"t": now, "done": eta.done, "predicted": eta.remaining(), "end": generation}
            )

    with tempfile.TemporaryDirectory(prefix="eta-") as folder:
        run_id = train(config, Workspace.open(folder), listeners=[heard])
    ended = time.monotonic() - began

    def before(sample: dict[str, float | None]) -> float | None:
        """The progress line's estimate before: all the time since the command began over
        the generations done (whole ones, as it counted them), times those left."""
        whole = int(sample["done"] or 0)
        return (float(sample["t"] or 0) / whole) * (total - whole) if whole else None

    def ratio(predicted: float | None, real: float) -> float | None:
        return None if predicted is None else round(predicted / real, 3)

    def rounded(seconds: float | None) -> float | None:
        return None if seconds is None else round(seconds, 1)

    at: dict[str, dict[str, float | None]] = {}
    for share in SHARES:
        sample = next(s for s in samples if (s["done"] or 0) >= share * total)
        real = ended - float(sample["t"] or 0)
        predicted = sample["predicted"]
        at[f"{share:.0%}"] = {
            "generations_done": round(float(sample["done"] or 0), 2),
            "seconds_in": round(float(sample["t"] or 0), 1),
            "real_left_s": round(real, 1),
            "predicted_left_s": rounded(predicted),
            "ratio": ratio(predicted, real),
            "before_predicted_left_s": rounded(before(sample)),
            "before_ratio": ratio(before(sample), real),
        }
        print(f"{share:.0%}: {at[f'{share:.0%}']}", file=sys.stderr)
    ratios = [v["ratio"] for v in at.values() if v["ratio"] is not None]
    figures = {
        "generations": total,
        "run_seconds": round(ended, 1),
        "run_started_at_s": round(started[0], 1) if started else None,
        "at": at,
        "worst_ratio": max(ratios, key=lambda r: max(r, 1 / r)) if ratios else None,
        "aim_factor": AIM,
        "aim_low": round(1 / AIM, 3),
        "within_aim": all(1 / AIM <= r <= AIM for r in ratios) and len(ratios) == len(SHARES),
        "load_average_at_start": load_at_start[0],
        "load_average_at_end": round(os.getloadavg()[0], 2),
    }
    per_generation = [
        {
            "generation": round(float(s["done"] or 0), 2),
            "seconds_in": round(float(s["t"] or 0), 1),
            "predicted_left_s": None if s["predicted"] is None else round(s["predicted"], 1),
            "real_left_s": round(ended - float(s["t"] or 0), 1),
        }
        for s in samples
        if s["end"]  # at the end of each generation
    ]
    table = {
        "columns": [
            "share of the run",
            "generations done",
            "estimate (s)",
            "real time left (s)",
            "estimate / real",
            "the old line's estimate (s)",
            "its / real",
        ],
        "rows": [
            [
                share,
                v["generations_done"],
                v["predicted_left_s"],
                v["real_left_s"],
                v["ratio"],
                v["before_predicted_left_s"],
                v["before_ratio"],
            ]
            for share, v in at.items()
        ],
    }
    write_results(args.out, figures, run=run_id, estimates=table, per_generation=per_generation)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
