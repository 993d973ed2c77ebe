"""``records``: recorded pools (real models' answers kept in the workspace): import, list,
show, remove (docs/guides/recorded-pools.md)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from workbench.cli.common import UserError, print_json, seed_arg, table, workspace
from workbench.cli.progress import Counter, Display, add_progress_option


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


FORMATS = ("jsonl", "mmlu-pro", "lm-eval")


def cmd_records_import(args) -> int:
    from workbench.core.recordings import (
        RecordsValidationError,
        import_file,
        import_from_cache,
        import_from_run,
    )

    if args.format != "jsonl":
        return _import_format(args)
    if args.drop_mismatched or args.common_only or args.sample or args.split_seed is not None:
        raise UserError(
            "--drop-mismatched, --common-only, --sample and --split-seed apply to --format "
            "mmlu-pro and lm-eval (a JSONL file's answers belong to an existing --suite)"
        )
    ws = workspace(args)
    if len(args.file) > 1:
        raise UserError(
            f"a JSONL import reads one FILE, got {len(args.file)}: join them into one file "
            "(or import each as its own pool)"
        )
    args.file = args.file[0] if args.file else None
    sources = [s for s in (args.file, args.from_run) if s] + (["cache"] if args.from_cache else [])
    if len(sources) != 1:
        raise UserError(
            "import from what? give one of: a JSONL FILE, --from-cache (with --suite) or "
            "--from-run RUN (or FILE... with --format mmlu-pro or lm-eval)"
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


def _import_format(args) -> int:
    """``--format mmlu-pro`` / ``lm-eval``: files (or WORKER=FILE) into a suite and a pool,
    with progress on stderr."""
    from workbench.core.importers.build import ImportOptions
    from workbench.core.importers.lm_eval import import_lm_eval
    from workbench.core.importers.mmlu_pro import import_mmlu_pro
    from workbench.core.recordings import RecordsValidationError

    if args.from_cache or args.from_run or args.suite or args.price:
        raise UserError(
            f"--format {args.format} builds its own suite from the FILEs: --suite, --price, "
            "--from-cache and --from-run do not apply"
        )
    if not args.file:
        what = "model_outputs_<MODEL>_5shots.zip" if args.format == "mmlu-pro" else "samples"
        raise UserError(f"give the files to import: one {what} file per model (or WORKER=FILE)")
    if args.sample < 0:
        raise UserError(f"--sample {args.sample}: give a number of questions, or leave it out")
    files = [_worker_and_path(text) for text in args.file]
    run = import_mmlu_pro if args.format == "mmlu-pro" else import_lm_eval
    ws = workspace(args)
    try:
        with Display(args.progress, verbose=args.verbose) as display:
            info = run(
                ws,
                files,
                args.name,
                ImportOptions(
                    drop_mismatched=args.drop_mismatched,
                    common_only=args.common_only,
                    sample=args.sample,
                    split_seed=0 if args.split_seed is None else args.split_seed,
                    replace=args.replace,
                ),
                progress=_import_listener(display),
            )
    except RecordsValidationError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    tasks = info.workers[0].suite_tasks if info.workers else 0
    print(
        f"imported {info.answers} answers of {len(info.workers)} workers to {tasks} questions as "
        f"suite '{info.suite}' and recorded pool '{info.name}' (use suite = \"{info.suite}\" "
        f'and workers = ["recorded:{info.name}"] in a run)'
    )
    _print_pool(info, header=False)
    return 0


_IMPORT_STAGES = {
    "read": ("reading the files", "files"),
    "check": ("checking every question and answer", "questions"),
    "write": ("writing the answers", "answers"),
    "suite": ("writing the suite", "questions"),
}


def _import_listener(display: Display) -> Callable[[Any], None]:
    """A listener of an import's ``ImportProgress``: a line naming each file as it is
    read, and a bar a stage."""
    counters: dict[str, Counter] = {}
    named: set[str] = set()

    def heard(event: Any) -> None:
        if event.stage == "read" and event.item and event.item not in named:
            named.add(event.item)  # a line a file, above the bar
            display.say(f"reading {event.item}")
        what, unit = _IMPORT_STAGES[event.stage]
        counter = counters.get(event.stage)
        if counter is None:
            counter = counters[event.stage] = display.count(what, max(1, event.total), unit)
        counter.update(event.done)

    return heard


def _download_listener(display: Display) -> Callable[[Any], None]:
    """A listener of a download's ``DownloadProgress``: a bar a file in MB (a spinner
    while its size is not announced), then its checksum checked."""
    counters: dict[tuple[str, str], Counter] = {}

    def heard(event: Any) -> None:
        key = (event.model, event.phase)
        if event.total is None:
            if key not in counters:
                display.stage(f"downloading {event.model} (size not announced)")
            return
        counter = counters.get(key)
        if counter is None:
            what = (
                f"checking {event.model}"
                if event.phase == "checking"
                else f"downloading {event.model}"
                + (f" from byte {event.resumed_from}" if event.resumed_from else "")
            )
            counter = counters[key] = display.count(
                what, event.total / 1e6, "MB", start=event.resumed_from / 1e6
            )
        counter.update(event.done / 1e6)

    return heard


def _worker_and_path(text: str) -> tuple[str | None, str]:
    """``WORKER=FILE`` (a worker named by hand) or ``FILE``; a path that exists as given
    is a path, whatever it holds."""
    import os

    worker, sep, path = text.partition("=")
    if sep and worker and not os.path.exists(text):
        return worker, path
    return None, text


def cmd_records_download(args) -> int:
    from workbench.core.importers.download import BASE_URL, KNOWN, download
    from workbench.core.printable import shown_path

    if args.list:
        rows = [(m, f"{size / 1e6:.1f} MB", digest) for m, (digest, size) in KNOWN.items()]
        print(table(rows, ("model", "size", "SHA-256 (checked after download)")))
        print("other models: any name in the repository's eval_results/ folder (not checked)")
        return 0
    if not args.models:
        raise UserError(
            "name the models to download (e.g. gemma-7b mathstral-7B); "
            "records download --list shows those whose checksum is known"
        )
    with Display(args.progress, verbose=args.verbose) as display:
        done = download(
            args.models,
            args.dir,
            base_url=args.base_url or BASE_URL,
            progress=_download_listener(display),
        )
    for item in done:
        how = (
            "already there"
            if item.already
            else f"resumed at {item.resumed_from} bytes"
            if item.resumed_from
            else "downloaded"
        )
        check = "matches the published checksum" if item.checked else "not known: not checked"
        print(f"{shown_path(item.path)}: {how}, {item.size} bytes, SHA-256 {item.sha256} ({check})")
    files = " ".join(shown_path(item.path) for item in done)
    print(
        f"import them with: trinity-workbench records import --format mmlu-pro {files} --name NAME"
    )
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
        help="validate and import recorded answers (a JSONL file, MMLU-Pro's or "
        "lm-evaluation-harness's per-model outputs, the cache or a run)",
    )
    p.add_argument(
        "file",
        nargs="*",
        metavar="FILE",
        help="JSONL file: task_id, worker, response per line; with --format mmlu-pro or "
        "lm-eval, the files of one or more models (or folders of them), each as FILE or "
        "WORKER=FILE",
    )
    p.add_argument("--name", required=True, help="pool name (letters, digits, - and _)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help="jsonl (default: answers to --suite's tasks); mmlu-pro (MMLU-Pro's "
        "model_outputs_<MODEL>_5shots.zip files, or the JSON inside); lm-eval "
        "(lm-evaluation-harness --log_samples files); the last two build the suite NAME too",
    )
    p.add_argument(
        "--drop-mismatched",
        action="store_true",
        help="with --format mmlu-pro or lm-eval: leave out the questions whose text, "
        "options or answer differ between the files (else they are errors)",
    )
    p.add_argument(
        "--common-only",
        action="store_true",
        help="with --format mmlu-pro or lm-eval: keep only the questions every file answers, "
        "so every model is compared on the same questions",
    )
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="with --format mmlu-pro or lm-eval: keep N questions, each category its share, "
        "drawn with --split-seed (a first look before the whole benchmark)",
    )
    p.add_argument(
        "--split-seed",
        type=seed_arg,
        help="with --format mmlu-pro or lm-eval: the seed of the suite's split, 60/20/20 in "
        "each category (default 0)",
    )
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
    p = rs.add_parser(
        "download",
        parents=[common],
        help="download MMLU-Pro's published outputs of these models (resumable, checked)",
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="model names as in the repository's model_outputs_<MODEL>_5shots.zip files",
    )
    p.add_argument("--dir", default=".", help="folder to download into (default: here)")
    p.add_argument(
        "--list", action="store_true", help="the models whose published checksum is known"
    )
    p.add_argument(
        "--base-url",
        metavar="URL",
        help="a mirror of the repository's eval_results/ folder (default: the repository at "
        "the commit the workbench pins)",
    )
    add_progress_option(p)
    p.set_defaults(func=cmd_records_download)
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
