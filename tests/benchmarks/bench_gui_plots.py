"""The Runs page's redraw cost as a run grows to 1,000 generations (issue: GUI).

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_gui_plots.py
        [--out docs/results/data/gui-plots.json]

Feeds synthetic generations (three workers x three roles of usage each) to the page and
times one redraw (setData on the preallocated arrays, the heatmap image) plus the
paint of the plots, at 10, 100 and 1,000 generations. A redraw runs every 200 ms, so
staying well under that keeps the GUI smooth. ``--out`` also writes the figures as a
results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from workbench.core.workspace import Workspace  # noqa: E402
from workbench.gui.qt import QApplication  # noqa: E402
from workbench.gui.qt_runs import QtRuns  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

WORKERS = ("sandbox:mathlete", "sandbox:scholar", "sandbox:coder")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        page = QtRuns(Workspace.open(os.path.join(tmp, "ws")))
        page.timer.stop()  # redraws are timed here, one by one
        page.resize(1280, 800)
        page.show()
        app.processEvents()
        g = 0
        for target in (10, 100, 1000):
            while g < target:
                usage = {
                    f"{w}/{r}": (g * 7 + i * 3 + j) % 11
                    for i, w in enumerate(WORKERS)
                    for j, r in enumerate(("thinker", "worker", "verifier"))
                }
                page.plots.add_generation(
                    g, 0.5 + g / 4000, 0.4, 0.4, 0.2, 0.03, 0.5 if g % 5 == 4 else None, usage
                )
                g += 1
            times = []
            for _ in range(20):
                page.plots.add_generation(g, 0.6, 0.4, 0.4, 0.2, 0.03, None, usage)
                g += 1
                started = time.perf_counter()
                page.redraw()
                page.repaint()  # the paint the redraw causes
                app.processEvents()
                times.append((time.perf_counter() - started) * 1000)
            print(
                f"{target:>5} generations: redraw + paint median {statistics.median(times):.1f} ms, "
                f"max {max(times):.1f} ms"
            )
            figures[f"{target}/median_ms"] = round(statistics.median(times), 1)
            figures[f"{target}/max_ms"] = round(max(times), 1)
        page.shutdown()
    if args.out:
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
