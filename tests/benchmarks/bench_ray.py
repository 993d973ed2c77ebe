"""Generation wall time on the local executor and on 1 and N Ray actors (this machine).

    python tests/benchmarks/bench_ray.py [--actors 1,2] [--generations 4] [--backbone offline]
        [--out docs/results/data/ray.json]

Trains the same sandbox run (K turns, popsize x rollouts) once per executor, each in a
new workspace, and reports per executor: the median wall time of a generation (the first
generation, which warms the backbones, and the last, which validates, left out), its ratio
to the local executor's, the generations' histories compared (equal or not), and for Ray
the driver's overhead per candidate call (the call's round trip minus the actor's own
time on it: putting the work in the object store, scheduling, returning the episodes).
Actor start-up (loading the backbone in each actor) is reported apart.

On a machine with C cores, N actors can at best approach min(N, C)x when the coordinator's
forwards are the bottleneck; each actor also batches fewer episodes per forward than one
process holding them all. ``--out`` also writes the figures as a results file
(``tests/benchmarks/results.py``): ``EXECUTOR/generation_s`` and the rest per executor
(``local``, ``ray x1``, ...) and the printed table as ``executors``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from workbench.core.config import RunConfig
from workbench.core.jobs.shared import backbone_for, new_train_run, open_pool, train_plan
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.events import GenerationStats
from workbench.core.training.trainer import Trainer
from workbench.core.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)


def make_config(args: argparse.Namespace, executor: str, actors: int) -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": f"bench-{executor}-{actors}", "seed": 0, "executor": executor},
            "backbone": {"model": args.backbone, "precision": args.precision},
            "pool": {"workers": ["sandbox"]},
            "tasks": {"suite": "mixed", "train": 64, "validation": 8, "test": 8},
            "optimizer": {
                "popsize": args.popsize,
                "rollouts": args.rollouts,
                "validate_every": 1000,
            },
            "budget": {"generations": args.generations},
            "protocol": {"max_turns": args.turns, "temperature": 0.0},
            "cache": {"policy": "off"},
        }
    )


def one(args: argparse.Namespace, executor: str, actors: int) -> dict:
    cfg = make_config(args, executor, actors)
    ws = Workspace.open(Path(tempfile.mkdtemp(prefix="bench-ray-")) / "ws")
    started = time.perf_counter()
    ex = None
    if executor == "ray":
        from workbench.core.jobs.train import recipe_for
        from workbench.core.training.ray_executor import RayExecutor

        ex = RayExecutor(recipe_for(cfg), actors=actors)
    startup = time.perf_counter() - started
    walls: list[float] = []
    with Store.open(ws) as store:
        session = open_pool(cfg, store)
        suite = load_suite(cfg.tasks.suite, ws)
        trainer = Trainer(
            train_plan(cfg, suite.name, session.pool),
            store,
            suite=suite,
            pool=session.pool,
            backbone=backbone_for(cfg),
            listeners=[lambda e: walls.append(e.wall_s) if isinstance(e, GenerationStats) else 0],
            executor=ex,
        )
        trainer.attach(new_train_run(store, cfg))
        session.run(trainer.run_async())
        history = [
            (g["best"], g["mean"], g["worst"], g["usage"])
            for g in store.generations(trainer.run_id)
        ]
    overheads = list(ex.overheads) if ex is not None else []
    if ex is not None:
        ex.close()
    return {
        "executor": executor if executor == "local" else f"ray x{actors}",
        "startup_s": startup,
        "generation_s": statistics.median(walls[1:-1] or walls),
        "walls": walls,
        "history": history,
        "overhead_ms": 1000 * statistics.median(overheads) if overheads else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--actors", default="1,2")
    p.add_argument("--generations", type=int, default=4)
    p.add_argument("--popsize", type=int, default=16)
    p.add_argument("--rollouts", type=int, default=8)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--backbone", default="offline")
    p.add_argument("--precision", default="auto", help="the backbone's: auto, fp32, bf16-mixed")
    p.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = p.parse_args()
    print(
        f"K = {args.turns}, {args.popsize} x {args.rollouts}, {args.generations} generations, "
        f"backbone {args.backbone} ({args.precision})"
    )
    print(
        f"{'executor':<10} {'start s':>8} {'gen s':>7} {'ratio':>6} {'overhead/cand ms':>17} same"
    )
    base = None
    figures: dict[str, object] = {
        "turns": args.turns,
        "popsize": args.popsize,
        "rollouts": args.rollouts,
        "generations": args.generations,
        "backbone": args.backbone,
        "precision": args.precision,
    }
    rows = []
    for executor, actors in [("local", 0)] + [("ray", int(n)) for n in args.actors.split(",")]:
        r = one(args, executor, actors)
        base = base or r
        ratio = base["generation_s"] / r["generation_s"]
        ms = "" if r["overhead_ms"] is None else f"{r['overhead_ms']:.1f}"
        same = "yes" if r["history"] == base["history"] else "NO"
        print(
            f"{r['executor']:<10} {r['startup_s']:>8.1f} {r['generation_s']:>7.2f} "
            f"{ratio:>5.2f}x {ms:>17} {same}  (generations: "
            f"{', '.join(f'{w:.1f}' for w in r['walls'])} s)",
            flush=True,
        )
        name = r["executor"]
        figures[f"{name}/startup_s"] = round(r["startup_s"], 1)
        figures[f"{name}/generation_s"] = round(r["generation_s"], 2)
        figures[f"{name}/vs_local"] = round(ratio, 2)
        figures[f"{name}/overhead_ms"] = (
            None if r["overhead_ms"] is None else round(r["overhead_ms"], 1)
        )
        figures[f"{name}/history_equals_local"] = "yes" if r["history"] == base["history"] else "no"
        figures[f"{name}/generations_s"] = [round(w, 2) for w in r["walls"]]
        rows.append(
            [
                name,
                round(r["startup_s"], 1),
                round(r["generation_s"], 2),
                f"{ratio:.2f}x",
                ms or "-",
                same,
            ]
        )
    if args.out:
        columns = [
            "executor",
            "start s",
            "generation s",
            "vs local",
            "overhead per candidate ms",
            "history = local's",
        ]
        write_results(args.out, figures, executors={"columns": columns, "rows": rows})


if __name__ == "__main__":
    main()
