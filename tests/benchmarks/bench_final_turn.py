"""What restricting an episode's last turn to the Worker role does to test scores.

    python tests/benchmarks/bench_final_turn.py [--generations 4] [--popsize 16] [--turns 2]
        [--out docs/results/data/final-turn.json]

Trains the bundled sandbox and team examples briefly (few generations, so that some
episodes still end without a Worker's answer, as a briefly trained served team did),
then evaluates each run's best coordinator on its test split twice, with
``final_turn = "free"`` (the paper's protocol) and ``"worker"`` (what ``serve`` does by
default), beside the random-routing baseline. Prints accuracy with its 95% interval and
the share of episodes that ended without an answer, per pool and setting. ``--out``
also writes them as a results file (``tests/benchmarks/results.py``): per pool and system
``POOL/SYSTEM/SETTING/accuracy``, ``.../ci``, ``.../no_answer``, the gain of ``worker`` over
``free`` (``POOL/SYSTEM/gain``) and a table ``final_turn`` as docs/guides/serving.md shows it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import write_results  # noqa: E402

from workbench.core.config import RunConfig  # noqa: E402
from workbench.core.evaluate import SystemResult  # noqa: E402
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
    parser.add_argument("--out", type=Path, help="also write the results file here (JSON)")
    args = parser.parse_args()
    figures: dict[str, object] = {
        "generations": args.generations,
        "popsize": args.popsize,
        "turns": args.turns,
    }
    # (pool, system, setting) -> the system's figures, episodes without an answer, episodes
    measured: dict[tuple[str, str, str], tuple[SystemResult, int, int]] = {}
    ws = Workspace.open(Path(tempfile.mkdtemp(prefix="final-turn-")))
    for example in args.pools.split(","):
        config = RunConfig.load(resources_dir() / "examples" / f"{example}.toml").replace(
            budget={"generations": args.generations, "minutes": 0},
            optimizer={"popsize": args.popsize, "exploring_starts": 0},
            protocol={"max_turns": args.turns},
        )
        started = time.perf_counter()
        run_id = train(config, ws)
        seconds = time.perf_counter() - started
        figures[f"{example}/train_seconds"] = round(seconds)
        print(f"{example}: trained {args.generations} generations in {seconds:.0f} s", flush=True)
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
                measured[(example, system.name, final_turn)] = (system, no_answer, len(mine))
    if args.out:
        write_results(args.out, figures_of(measured, figures), final_turn=table_of(measured))


def figures_of(
    measured: dict[tuple[str, str, str], tuple[SystemResult, int, int]], figures: dict
) -> dict:
    for (pool, name, setting), (system, no_answer, _) in measured.items():
        figures[f"{pool}/test_tasks"] = system.n
        figures[f"{pool}/{name}/{setting}/accuracy"] = round(system.accuracy, 4)
        figures[f"{pool}/{name}/{setting}/ci"] = [round(system.ci_low, 4), round(system.ci_high, 4)]
        figures[f"{pool}/{name}/{setting}/no_answer"] = no_answer
        if setting == "worker" and (pool, name, "free") in measured:
            free = measured[(pool, name, "free")][0]
            figures[f"{pool}/{name}/gain"] = round(system.accuracy - free.accuracy, 4)
    return figures


def table_of(measured: dict[tuple[str, str, str], tuple[SystemResult, int, int]]) -> dict:
    """The table docs/guides/serving.md shows: a row per pool and system."""

    def shown(system: SystemResult) -> str:
        return f"{system.accuracy:.3f} [{system.ci_low:.3f}, {system.ci_high:.3f}]"

    rows = []
    for (pool, name, setting), (worker, _, _) in measured.items():
        if setting != "worker" or (pool, name, "free") not in measured:
            continue
        free, no_answer, episodes = measured[(pool, name, "free")]
        system = "random routing" if name == "random" else name
        rows.append(
            [f"{pool} ({free.n})", system, shown(free), shown(worker), f"{no_answer} / {episodes}"]
        )
    columns = ["pool (test tasks)", "system", "`free`", "`worker`"]
    return {"columns": [*columns, "episodes without an answer (`free`)"], "rows": rows}


if __name__ == "__main__":
    main()
