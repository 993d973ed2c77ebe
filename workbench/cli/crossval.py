"""``crossval``: k-fold cross-validated training and evaluation of a run config
(docs/guides/recorded-pools.md, "Cross-validated evaluation")."""

from __future__ import annotations

import sys

from workbench.cli.common import workspace


def cmd_crossval(args) -> int:
    from workbench.cli.training import Progress
    from workbench.core.config import RunConfig
    from workbench.core.crossval import FoldProgress, cross_validate

    config = RunConfig.load(args.config)

    def said(event: FoldProgress) -> None:
        if event.stage == "training":
            print(f"fold {event.fold}/{event.folds}: training", file=sys.stderr, flush=True)
        elif event.stage == "trained":
            print(
                f"fold {event.fold}/{event.folds}: run {event.run_id} trained in "
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
        listeners=listeners,
        progress=said,
    )
    print(report.table())
    if args.out:
        for path in report.write(args.out):
            print(f"wrote {path}", file=sys.stderr)
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
    p.add_argument("--out", metavar="DIR", help="write crossval.json and crossval.md there")
    p.add_argument("--quiet", action="store_true", help="no per-generation progress lines")
    p.set_defaults(func=cmd_crossval)
