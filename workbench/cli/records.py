"""``records``: recorded pools (real models' answers kept in the workspace): import, list,
show, remove (docs/guides/recorded-pools.md)."""

from __future__ import annotations

import sys
import time

from workbench.cli.common import UserError, print_json, table, workspace
from workbench.cli.progress import Display, add_progress_option


def _print_pool(info, *, header: bool = True) -> None:
    when = (
        time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created_at)) if info.created_at else "-"
    )
    if header:
        print(f"recorded pool '{info.name}': {info.answers} answers, from {info.source}, {when}")
    rows = [
        (
            w.worker_id,
            w.model,
            w.answers,
            f"{w.covered}/{w.suite_tasks} ({w.share:.0%})" if w.suite_tasks else "-",
        )
        for w in info.workers
    ]
    print(table(rows, ("worker", "model", "answers", f"covers of {info.suite}")))
    for note in info.notes:
        print(f"  note: {note}")


def cmd_records_import(args) -> int:
    from workbench.core.recordings import (
        RecordsValidationError,
        import_file,
        import_from_cache,
        import_from_run,
    )

    ws = workspace(args)
    sources = [s for s in (args.file, args.from_run) if s] + (["cache"] if args.from_cache else [])
    if len(sources) != 1:
        raise UserError(
            "import from what? give one of: a JSONL FILE, --from-cache (with --suite) or "
            "--from-run RUN"
        )
    if (args.file or args.from_cache) and not args.suite:
        raise UserError(
            "--suite is needed: the suite whose task ids the answers belong to (e.g. --suite "
            "champ); an import checks every task id against it"
        )
    prices = _prices(args.price or [])
    if prices and not args.file:
        raise UserError("--price applies to a FILE import: the cache and runs hold real costs")
    source = args.file or ("the response cache" if args.from_cache else f"run {args.from_run}")
    try:
        with Display(args.progress, verbose=args.verbose) as display:
            display.stage(f"reading and checking the answers of {source}")
            if args.file:
                info = import_file(
                    ws, args.file, args.name, args.suite, replace=args.replace, prices=prices
                )
            elif args.from_cache:
                info = import_from_cache(
                    ws, args.suite, args.name, prompts=args.prompts, replace=args.replace
                )
            else:
                info = import_from_run(ws, args.from_run, args.name, replace=args.replace)
    except RecordsValidationError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    print(
        f"imported {info.answers} answers of {len(info.workers)} workers as recorded pool "
        f"'{info.name}' (use it as recorded:{info.name} in a pool)"
    )
    _print_pool(info, header=False)
    return 0


def _prices(values: list[str]) -> dict[str, tuple[float, float]]:
    """``WORKER=IN,OUT`` (USD per million tokens) per --price, checked."""
    out: dict[str, tuple[float, float]] = {}
    for value in values:
        worker, _, pair = value.partition("=")
        parts = pair.split(",")
        try:
            if not worker.strip() or len(parts) != 2:
                raise ValueError
            out[worker.strip()] = (float(parts[0]), float(parts[1]))
        except ValueError:
            raise UserError(
                f"--price {value}: write WORKER=IN,OUT in USD per million tokens, e.g. "
                "--price gpt-4o=2.5,10"
            ) from None
    return out


def cmd_records_list(args) -> int:
    from workbench.core.recordings import list_pools

    pools = list_pools(workspace(args), args.suite)
    if args.json:
        print_json([p.to_json() for p in pools])
        return 0
    rows = [
        (
            f"recorded:{p.name}",
            p.source,
            p.suite,
            len(p.workers),
            p.answers,
        )
        for p in pools
    ]
    print(table(rows, ("pool", "source", "suite", "workers", "answers")))
    return 0


def cmd_records_show(args) -> int:
    from workbench.core.recordings import show_pool

    info = show_pool(workspace(args), args.name.removeprefix("recorded:"), args.suite)
    if args.json:
        print_json(info.to_json())
        return 0
    _print_pool(info)
    return 0


def cmd_records_remove(args) -> int:
    from workbench.core.recordings import remove_pool

    remove_pool(workspace(args), args.name.removeprefix("recorded:"))
    print(f"removed recorded pool '{args.name}'")
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    records = sub.add_parser(
        "records", help="recorded pools (real models' answers): import, list, show, remove"
    )
    rs = records.add_subparsers(dest="records_command", metavar="ACTION", required=True)
    p = rs.add_parser(
        "import",
        parents=[common],
        help="validate and import recorded answers (a JSONL file, the cache or a run)",
    )
    p.add_argument("file", nargs="?", help="JSONL file: task_id, worker, response per line")
    p.add_argument("--name", required=True, help="pool name (letters, digits, - and _)")
    p.add_argument("--suite", help="the suite the answers belong to (a file or --from-cache)")
    p.add_argument(
        "--from-cache",
        action="store_true",
        help="the workspace's cached replies to the suite's Worker prompts",
    )
    p.add_argument(
        "--from-run", metavar="RUN", help="a stored run's first Worker answer per task and worker"
    )
    p.add_argument(
        "--prompts",
        metavar="DIR",
        help="with --from-cache: the role prompts the replies were asked with (default bundled)",
    )
    p.add_argument(
        "--replace", action="store_true", help="replace an imported pool of the same name"
    )
    p.add_argument(
        "--price",
        action="append",
        metavar="WORKER=IN,OUT",
        help="a FILE's worker's price in USD per million tokens in and out, for answers "
        "without a recorded cost (repeat per worker; without one they cost $0)",
    )
    add_progress_option(p)
    p.set_defaults(func=cmd_records_import)
    p = rs.add_parser("list", parents=[common], help="built-in and imported recorded pools")
    p.add_argument("--suite", help="show coverage of this suite (default: each pool's own)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_records_list)
    p = rs.add_parser(
        "show", parents=[common], help="a recorded pool's workers, answers and coverage"
    )
    p.add_argument("name", help="pool name (champ, or an imported one)")
    p.add_argument("--suite", help="show coverage of this suite (default: the pool's own)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_records_show)
    p = rs.add_parser("remove", parents=[common], help="remove an imported recorded pool")
    p.add_argument("name")
    p.set_defaults(func=cmd_records_remove)
