"""A fork bomb in the code sandbox: how many processes it reaches, how long its grade
takes, and what it does to grades running beside it.

    python tests/benchmarks/bench_fork_bomb.py [--bombs 3] [--timeout 5]
        [--out docs/results/data/fork-bomb.json]

- alone: ``--bombs`` grades of a classic fork bomb (every process forks for ever), one after
  another; for each the most processes of the sandbox's user seen at once (sampled every
  10 ms from /proc: what the bomb added to the machine) and the grade's wall time;
- beside: the same bombs graded on one thread while another thread grades a right answer
  that forks 8 children, back to back, for as long as the bombs run: how many of those
  right answers failed (each failure is a grade the bomb spoiled).
Prints the sandbox's process-limit mechanism (``process_limit()``) if it has one.
``--out`` also writes the figures as a results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from workbench.core.tasks import sandbox
from workbench.core.tasks.sandbox import box
from workbench.core.tasks.sandbox.isolation import NOBODY

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

BOMB = (
    "import os\n"
    "def f(x):\n"
    "    while True:\n"
    "        try:\n"
    "            os.fork()\n"
    "        except OSError:\n"
    "            pass\n"
)
FORKER = (
    "import os\n"
    "def f(x):\n"
    "    pids = []\n"
    "    for _ in range(8):\n"
    "        pid = os.fork()\n"
    "        if pid == 0:\n"
    "            os._exit(0)\n"
    "        pids.append(pid)\n"
    "    for pid in pids:\n"
    "        os.waitpid(pid, 0)\n"
    "    return x\n"
)
TEST = "def check(candidate):\n    assert candidate(3) == 3\n"


def _user() -> int:
    return NOBODY if os.geteuid() == 0 else os.getuid()


def _bomb(timeout_s: float) -> tuple[int, float, sandbox.Check]:
    """One bomb's grade: (most processes of the user above the baseline, seconds, check)."""
    user = _user()
    base = box.count_tasks_of(user)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], box.count_tasks_of(user) - base)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.monotonic()
    check = sandbox.check_function(
        BOMB, prelude="", test=TEST, entry_point="f", timeout_s=timeout_s
    )
    took = time.monotonic() - start
    done.set()
    sampler.join()
    return peak[0], took, check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bombs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    limit = getattr(sandbox, "process_limit", None)
    print("isolation:", sandbox.detect_isolation().kind)
    mechanism = limit().detail if limit else "RLIMIT_NPROC of the user (before)"
    print("process limit:", mechanism)

    peaks, times = [], []
    for _ in range(args.bombs):
        peak, took, check = _bomb(args.timeout)
        peaks.append(peak)
        times.append(took)
        print(f"  bomb alone: {peak} processes at most, {took:.2f} s, passed={check.passed}")
        sandbox.end_spare_sandboxes()
        time.sleep(1)  # the bomb's processes reaped before the next one counts
    print(f"alone: processes max {max(peaks)}, grade median {statistics.median(times):.2f} s")

    stop = threading.Event()
    results: list[bool] = []

    def right_answers() -> None:
        while not stop.is_set():
            check = sandbox.check_function(
                FORKER, prelude="", test=TEST, entry_point="f", timeout_s=args.timeout
            )
            results.append(check.passed)
            if not check.passed:
                print("  right answer failed:", check.reason)

    grader = threading.Thread(target=right_answers)
    grader.start()
    time.sleep(0.5)
    beside_peaks, beside_times = [], []
    try:
        for _ in range(args.bombs):
            peak, took, _ = _bomb(args.timeout)
            print(f"  bomb beside: {peak} processes at most, {took:.2f} s")
            beside_peaks.append(peak)
            beside_times.append(took)
    finally:
        stop.set()
        grader.join()
        sandbox.end_spare_sandboxes()
    failed = results.count(False)
    print(f"beside: {failed} of {len(results)} right answers graded during the bombs failed")
    if args.out:
        figures = {
            "isolation": sandbox.detect_isolation().kind,
            "process_limit": mechanism,
            "bombs": args.bombs,
            "timeout_s": args.timeout,
            "alone/processes": peaks,
            "processes/min": min(peaks + beside_peaks),
            "processes/max": max(peaks + beside_peaks),
            "seconds/min": round(min(times + beside_times), 2),
            "seconds/max": round(max(times + beside_times), 2),
            "alone/seconds": [round(t, 2) for t in times],
            "beside/processes": beside_peaks,
            "beside/seconds": [round(t, 2) for t in beside_times],
            "right_answer_children": 8,  # FORKER's
            "beside/right_answers": len(results),
            "beside/right_answers_failed": failed,
        }
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
