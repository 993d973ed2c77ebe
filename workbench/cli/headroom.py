"""``headroom`` (is a coordinator worth training on this pool?) and ``study frontier``
(what do coordinators trained at several cost penalties buy, and at what price?):
docs/guides/headroom-and-cost.md."""

from __future__ import annotations

from workbench.cli.common import UserError, print_json, print_written, workspace
from workbench.cli.progress import Display, add_progress_option
from workbench.core.jobs.headroom import DEFAULT_SAMPLE


def cmd_headroom(args) -> int:
    from workbench.core.config import RunConfig
    from workbench.core.jobs.headroom import check_headroom

    config = RunConfig.load(args.config)
    if args.pool:
        config = config.replace(pool={"workers": [w.strip() for w in args.pool.split(",")]})
    if args.suite:
        config = config.replace(tasks={"suite": args.suite})
    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("starting the check")
        report = check_headroom(
            config,
            workspace(args),
            sample=args.sample,
            progress=display.counting("asking the workers", "answers"),
        )
    written = report.write(args.out) if args.out else []
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.table())
    print_written(written)
    return 0


def parse_penalties(text: str) -> list[float]:
    """``0,500,1000`` as numbers; a word that is not one is an error naming it."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            values.append(float(part))
        except ValueError:
            raise UserError(
                f"--penalties: '{part}' is not a number: give cost penalties per dollar "
                "separated by commas, e.g. --penalties 0,500,1000"
            ) from None
    return values


def cmd_frontier(args) -> int:
    from workbench.cli.views import RunsView
    from workbench.core.config import RunConfig
    from workbench.core.jobs.frontier import study_frontier

    config = RunConfig.load(args.config)
    penalties = parse_penalties(args.penalties)
    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("starting the frontier")
        view = RunsView(display, "frontier", len(penalties))
        frontier = study_frontier(
            config,
            workspace(args),
            penalties,
            progress=view.evaluated,
            listeners=[view.training],
            stages=display.heard,
        )
    written = frontier.write(args.out) if args.out else []
    if args.json:
        print_json(frontier.to_dict())
    else:
        print(frontier.table())
        print(f"\nstored as run {frontier.run_id[:8] if frontier.run_id else '-'}")
    print_written(written)
    return 0


def register(sub, common) -> None:
    """Add ``headroom`` to the parser (``study frontier`` is added by ``register_study``)."""
    p = sub.add_parser(
        "headroom",
        parents=[common],
        help="before training: each worker's accuracy, what routing by category gains on "
        "held-out tasks beside the any-right oracle's ceiling, and whether a coordinator can help",
    )
    p.add_argument("config", help="run config (TOML): its pool, suite and protocol are used")
    p.add_argument(
        "--sample",
        type=int,
        default=DEFAULT_SAMPLE,
        help=f"training tasks to check (default {DEFAULT_SAMPLE}; 0: all), plus every training task "
        "whose answers are already cached or recorded",
    )
    p.add_argument("--pool", help="comma-separated worker ids instead of the config's pool")
    p.add_argument("--suite", help="another suite than the config's")
    p.add_argument("--out", metavar="DIR", help="write headroom.json and headroom.md here")
    p.add_argument("--json", action="store_true")
    add_progress_option(p)
    p.set_defaults(func=cmd_headroom)


def register_study(study_sub, common) -> None:
    """Add ``study frontier`` to the ``study`` command's actions."""
    p = study_sub.add_parser(
        "frontier",
        parents=[common],
        help="train coordinators at several cost penalties and plot accuracy against "
        "dollars per task beside every single worker, random routing and the oracle",
    )
    p.add_argument("config")
    p.add_argument(
        "--penalties",
        required=True,
        help="optimizer.cost_penalty values, per dollar, comma-separated (one run each), "
        "e.g. 0,500,1000,2000",
    )
    p.add_argument(
        "--out", metavar="DIR", help="write frontier.json, frontier.md and frontier.svg here"
    )
    p.add_argument("--json", action="store_true")
    add_progress_option(p)
    p.set_defaults(func=cmd_frontier)
