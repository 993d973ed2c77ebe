"""Benchmark (not part of the test run): the GUI thread's event-loop stall while a run
trains (tiny backbone, sandbox pool) and the plots redraw, measured with a 10 ms timer.
Issue 5's target is p99 below 50 ms; it is not met yet (see the xfail reason), so this
lives with the benchmarks until the trainer moves out of the GUI process.

    python -m pytest tests/benchmarks/bench_gui_stall.py -p no:cacheprovider -s
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.core.test_training import config
from tests.gui.conftest import *  # noqa: F403 - the window fixture, offscreen Qt


@pytest.mark.xfail(strict=False, reason=(
    "known gap: the in-process trainer thread holds the GIL for 50-200 ms at generation ends "
    "(measured with the plot redraws disabled, too), so the GUI thread's p99 stall is 60-100 ms "
    "here; the fix is to train in a subprocess behind run_thread, not in the page"))
def test_event_loop_stall_stays_small_during_a_run(make_main_window, qtbot, tmp_path):
    from workbench.gui.qt import QTimer

    window = make_main_window()
    page = window.pages["Runs"]
    path = tmp_path / "run.toml"
    path.write_text(config(budget={"generations": 8}).to_toml())
    assert page.load_config(path)
    ticks: list[float] = []
    beat = QTimer()
    beat.setInterval(10)
    beat.timeout.connect(lambda: ticks.append(time.perf_counter()))
    page.start()
    thread = page.run_thread
    beat.start()
    with qtbot.waitSignal(thread.finished_run, timeout=120_000):
        pass
    beat.stop()
    qtbot.waitUntil(lambda: page.run_thread is None, timeout=120_000)
    stalls_ms = (np.diff(ticks) - 0.010) * 1000
    p99, worst = float(np.percentile(stalls_ms, 99)), float(stalls_ms.max())
    print(f"event-loop stall over {len(ticks)} ticks: p50 {np.median(stalls_ms):.1f} ms, "
          f"p99 {p99:.1f} ms, max {worst:.1f} ms")
    assert len(ticks) > 20
    assert p99 < 50, f"the GUI thread stalled: p99 {p99:.1f} ms, max {worst:.1f} ms"
