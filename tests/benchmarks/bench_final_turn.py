"""What restricting an episode's last turn to the Worker role does to test scores.

    python tests/benchmarks/bench_final_turn.py [--generations 4] [--popsize 16] [--turns 2]

Trains the bundled sandbox and team examples briefly (few generations, so that some
episodes still end without a Worker's answer, as a briefly trained served team did),
then evaluates each run's best coordinator on its test split twice, with
``final_turn = "free"`` (the paper's protocol) and ``"worker"`` (what ``serve`` does by
default), beside the random-routing baseline. Prints accuracy with its 95% interval and
the share of episodes that ended without an answer, per pool and setting.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.config import RunConfig  # noqa: E402
from workbench.core.jobs.evaluate import evaluate_run  # noqa: E402
from workbench.core.jobs.train import train  # noqa: E402
from workbench.core.store import Store  # noqa: E402
from workbench.core.workspace import Workspace, resources_dir  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--popsize", type=int, default=16)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--pools", default="sandbox,team")
    args = parser.parse_args()
    ws = Workspace.open(Path(tempfile.mkdtemp(prefix="final-turn-")))
    for example in args.pools.split(","):
        config = RunConfig.load(resources_dir() / "examples" / f"{example}.toml").replace(
            budget={"generations": args.generations, "minutes": 0},
            optimizer={"popsize": args.popsize, "exploring_starts": 0},
            protocol={"max_turns": args.turns},
        )
        started = time.perf_counter()
        run_id = train(config, ws)
        print(
            f"{example}: trained {args.generations} generations in "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
        for final_turn in ("free", "worker"):
            result = evaluate_run(ws, run=run_id, baselines=["random"], final_turn=final_turn)
            with Store.open(ws) as store:
                episodes = [store.get_episode(e.id) for e in store.list_episodes(result.run_id)]
            for system_index, system in enumerate(result.report.systems):
                mine = [e for e in episodes if e.candidate == system_index]
                no_answer = sum(e.answer is None for e in mine)
                print(
                    f"  {example:8s} final_turn={final_turn:6s} {system.name:12s} "
                    f"accuracy {system.accuracy:.3f} [{system.ci_low:.3f}, {system.ci_high:.3f}] "
                    f"n={system.n}  no answer {no_answer}/{len(mine)}  "
                    f"turns {system.avg_turns:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
