"""``crossval``: k-fold cross-validated training and evaluation of a run config
(docs/guides/recorded-pools.md, "Cross-validated evaluation")."""

from __future__ import annotations

import sys

from workbench.cli.common import print_written, workspace


def cmd_crossval(args) -> int:
    from workbench.cli.training import Progress
    from workbench.core.config import RunConfig
    from workbench.core.crossval import FoldProgress, cross_validate

    config = RunConfig.load(args.config)

    shown = {"table": -1, "features": -1}

    def said(event: FoldProgress) -> None:
        repeat = f"repeat {event.repeat}/{event.repeats}, " if event.repeats > 1 else ""
        if event.stage in shown:
            # a line each twentieth of the way (the features take a while the first time)
            step = event.done * 20 // max(1, event.total)
            if step > shown[event.stage]:
                shown[event.stage] = step
                what = "answers graded" if event.stage == "table" else "query features"
                print(f"{what}: {event.done}/{event.total}", file=sys.stderr, flush=True)
        elif event.stage == "training":
            print(f"{repeat}fold {event.fold}/{event.folds}: training", file=sys.stderr, flush=True)
        elif event.stage == "trained":
            print(
                f"{repeat}fold {event.fold}/{event.folds}: run {event.run_id} trained in "
                f"{event.seconds:.0f} s; evaluating",
                file=sys.stderr,
                flush=True,
            )

    listeners = [] if args.quiet else [Progress()]
    report = cross_validate(
        config,
        workspace(args),
        folds=args.folds,
        seed=args.seed,
        repeats=args.repeats,
        paper_settings=args.paper_settings,
        listeners=listeners,
        progress=said,
    )
    print(report.table())
    print_written(report.write(args.out) if args.out else [])
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    p = sub.add_parser(
        "crossval",
        parents=[common],
        help="k-fold cross-validated training and evaluation (each task tested once, "
        "paired against the best single worker)",
    )
    p.add_argument("config", help="run config (TOML; its split sizes are ignored)")
    p.add_argument("--folds", type=int, default=5, help="k (default 5)")
    p.add_argument(
        "--seed", type=int, default=None, help="the folds' seed (default: tasks.split_seed)"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="deal the folds this many times (seeds SEED, SEED+1, ...), each task's reward "
        "its mean over them (a recorded pool routed in one Worker turn only)",
    )
    p.add_argument(
        "--paper-settings",
        action="store_true",
        help="also train a coordinator at the paper's settings (16 tasks a candidate, 60 "
        "generations) on every fold (a recorded pool routed in one Worker turn only)",
    )
    p.add_argument("--out", metavar="DIR", help="write crossval.json and crossval.md there")
    p.add_argument("--quiet", action="store_true", help="no per-generation progress lines")
    p.set_defaults(func=cmd_crossval)
