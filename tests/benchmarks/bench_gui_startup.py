"""Cold start of the desktop workbench: from launching the process to the main window
being shown (issue: GUI). Each run is a fresh process on a fresh workspace.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_gui_startup.py [--runs 5] [--command trinity-workbench]
        [--out docs/results/data/gui-startup.json]

The app prints nothing when it starts; the window's first paint is detected by the
hidden ``--quit-after 0`` (close right after the window is shown and the event loop
runs), so the figure is launch -> shown window -> closed, an upper bound of the start.
``--out`` also writes the figures as a results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--command",
        default=f"{sys.executable} -m workbench",
        help="how to start the app (e.g. dist/trinity-workbench/trinity-workbench)",
    )
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    times = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            subprocess.run(
                [
                    *shlex.split(args.command),
                    "--quit-after",
                    "0",
                    "--workspace",
                    os.path.join(tmp, "ws"),
                ],
                check=True,
                env=env,
                capture_output=True,
            )
            times.append(time.perf_counter() - started)
    print(
        f"launch to shown window (and closed), {args.runs} runs: median {statistics.median(times):.2f} s, "
        f"min {min(times):.2f} s, max {max(times):.2f} s"
    )
    if args.out:
        figures = {
            "runs": args.runs,
            "median_s": round(statistics.median(times), 2),
            "min_s": round(min(times), 2),
            "max_s": round(max(times), 2),
            "times_s": [round(t, 3) for t in times],
        }
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
