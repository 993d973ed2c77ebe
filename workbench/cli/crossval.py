"""``crossval``: k-fold cross-validated training and evaluation of a run config
(docs/guides/recorded-pools.md, "Cross-validated evaluation")."""

from __future__ import annotations

from workbench.cli.common import print_written, workspace
from workbench.cli.progress import Display, add_progress_option, duration_words


def cmd_crossval(args) -> int:
    from workbench.cli.views import PreparingBars, TrainingView
    from workbench.core.config import RunConfig
    from workbench.core.jobs.crossval import FoldProgress, cross_validate
    from workbench.core.jobs.shared import backbone_for
    from workbench.core.training.events import PREPARING_WORDS

    config = RunConfig.load(args.config)
    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("starting the cross-validation")
        backbone = backbone_for(config, stages=display.heard)
        folds = display.count("cross-validating", args.folds * args.repeats, "folds")
        training = TrainingView(display, resume=None, transient=True)

        # built once before the folds (the features take a while the first time)
        preparing = PreparingBars(display)

        def said(event: FoldProgress) -> None:
            repeat = f"repeat {event.repeat}/{event.repeats}, " if event.repeats > 1 else ""
            if event.stage in PREPARING_WORDS:
                preparing(event.stage, event.done, event.total)
            elif event.stage == "trained":
                display.say(
                    f"{repeat}fold {event.fold}/{event.folds}: run {str(event.run_id)[:8]} "
                    f"trained in {duration_words(event.seconds)}; evaluating it on its test tasks"
                )
            elif event.stage == "evaluated":
                folds.update((event.repeat - 1) * event.folds + event.fold)

        report = cross_validate(
            config,
            workspace(args),
            folds=args.folds,
            seed=args.seed,
            repeats=args.repeats,
            paper_settings=args.paper_settings,
            backbone=backbone,
            listeners=[] if args.quiet else [training],
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
    p.add_argument("--quiet", action="store_true", help="no bar of each fold's training")
    add_progress_option(p)
    p.set_defaults(func=cmd_crossval)
