"""How long the Replay page waits for its run list and a run's episodes, read from a real
workspace database: the background reads ``read_runs`` and ``read_episodes``.

    python tests/benchmarks/bench_replay.py [--workspace WS] [--episodes 100000] [--repeats 5]

Without ``--workspace`` it builds one in a temporary folder: one evaluation run with
``--episodes`` one-turn episodes (a cross-validation's evaluations on a recorded pool hold
about that many), 100 runs with none (training on a routing table stores none) and one
episode outside any run. Each read is timed ``--repeats`` times; the median is printed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.core.records import Episode, Role, StopReason, Turn
from workbench.core.store import Store
from workbench.core.workspace import Workspace
from workbench.gui.replay_model import LOOSE, read_episodes, read_runs


def episode(number: int, run_id: str | None) -> Episode:
    turn = Turn(
        index=0,
        worker="recorded:a",
        role=Role.WORKER,
        worker_probs=(1.0,),
        role_probs=(0.0, 1.0, 0.0),
        messages=({"role": "user", "content": f"question {number}"},),
        response="The answer is (A)",
    )
    return Episode(
        id=f"e{number:07d}",
        suite="bench",
        task_id=f"q-{number % 3000}",
        pool=("recorded:a",),
        max_turns=1,
        turns=(turn,),
        answer="A",
        reward=float(number % 2),
        stop_reason=StopReason.ACCEPTED,
        run_id=run_id,
        generation=None,
        candidate=number % 20 if run_id else None,
        created_at=1_800_000_000 + number,
    )


def build(folder: Path, episodes: int) -> tuple[Workspace, str]:
    workspace = Workspace.open(folder)
    with Store.open(workspace) as store:
        played = store.create_run("evaluation", "eval", {})
        for start in range(0, episodes, 10_000):
            end = min(start + 10_000, episodes)
            store.add_episodes(episode(n, played) for n in range(start, end))
        for n in range(100):
            store.create_run(f"on a table {n}", "train", {})
        store.add_episode(episode(episodes, None))
    return workspace, played


def median_seconds(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", type=Path, help="an existing workspace to read")
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        if args.workspace is not None:
            workspace = Workspace.open(args.workspace)
            with Store.open(workspace) as store:
                counts = store.runs_with_episodes()
                largest = max(
                    (r for r in counts if r is not None),
                    key=lambda r: len(store.list_episodes(r)),
                )
        else:
            print(f"building a workspace of {args.episodes:,} episodes ...", flush=True)
            workspace, largest = build(Path(scratch) / "ws", args.episodes)
        offered = read_runs(workspace)
        print(f"{len(offered.choices)} runs offered, {offered.unlisted} left out")
        print(f"read_runs: {median_seconds(lambda: read_runs(workspace), args.repeats):.3f} s")
        for name, run_id in (("largest run", largest), ("outside any run", LOOSE)):
            seconds = median_seconds(
                lambda r=run_id: read_episodes(workspace, r, {}, ""), args.repeats
            )
            found = len(read_episodes(workspace, run_id, {}, "").episodes)
            print(f"read_episodes, {name} ({found:,} episodes read): {seconds:.3f} s")


if __name__ == "__main__":
    main()
