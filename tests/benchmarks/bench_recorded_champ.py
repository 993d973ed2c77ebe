"""Each recorded CHAMP worker alone on all 270 problems, graded as an episode grades its
answer (``tasks.graders.grade``), with 95% Wilson intervals; the recorded oracle of the
four 0-shot workers (any right), uniformly random routing among them (expected: the mean
of the four), and GPT-4 Turbo's 0-shot and 5-shot answers together.

    python tests/benchmarks/bench_recorded_champ.py

The cross-validated comparison with a trained coordinator is ``trinity-workbench
crossval`` (docs/guides/recorded-pools.md).
"""

from __future__ import annotations

import time

from workbench.core.evaluate import wilson
from workbench.core.tasks.graders import grade
from workbench.core.tasks.suites import load_suite
from workbench.core.workers.recorded import CHAMP_MODELS, champ_tables


def main() -> None:
    started = time.perf_counter()
    tasks = load_suite("champ").tasks
    tables = champ_tables()
    right: dict[str, set[str]] = {}
    print(f"{'worker':34s} {'answered':>8s} {'right':>6s}  accuracy (95% Wilson)")
    for wid, table in tables.items():
        right[wid] = {
            t.id for t in tasks if t.id in table and grade(t, table[t.id].response).reward == 1.0
        }
        n, k = len(tasks), len(right[wid])
        low, high = wilson(k, n)
        print(f"{wid:34s} {len(table):8d} {k:6d}  {k / n:.3f} [{low:.3f}, {high:.3f}]")
    zero = [f"recorded:champ/{m}" for m in CHAMP_MODELS]
    n = len(tasks)
    for name, ids in (
        ("oracle of the four 0-shot", zero),
        (
            "gpt-4-turbo 0-shot or 5-shot",
            ["recorded:champ/gpt-4-turbo", "recorded:champ/gpt-4-turbo-5shot"],
        ),
    ):
        k = len(set().union(*(right[w] for w in ids)))
        low, high = wilson(k, n)
        print(f"{name:34s} {'':8s} {k:6d}  {k / n:.3f} [{low:.3f}, {high:.3f}]")
    mean = sum(len(right[w]) for w in zero) / len(zero)
    print(f"{'random routing (expected)':34s} {'':8s} {mean:6.1f}  {mean / n:.3f}")
    print(f"graded in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
