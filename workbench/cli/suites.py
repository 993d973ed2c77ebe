"""``suites``: list, show, check, import and grade task suites."""

from __future__ import annotations

import os
import sys

from workbench.cli.common import UserError, one_line, print_json, table, workspace
from workbench.cli.progress import Display, add_progress_option
from workbench.core.printable import printable


def cmd_suites_list(args) -> int:
    from workbench.core.tasks.suites import list_suites

    infos = list_suites(workspace(args))
    if args.json:
        print_json(
            [
                {"name": i.name, "source": i.source, "count": i.count, "description": i.description}
                for i in infos
            ]
        )
        return 0
    print(
        table(
            [(i.name, i.source, i.count, one_line(i.description, 70)) for i in infos],
            ("suite", "source", "tasks", "description"),
        )
    )
    return 0


def cmd_suites_show(args) -> int:
    from workbench.core.tasks.suites import load_suite

    suite = load_suite(args.name, workspace(args))
    counts = suite.counts(seed=args.seed)
    if args.json:
        print_json(
            {
                "name": suite.name,
                "version": suite.version,
                "source": suite.source,
                "count": len(suite),
                "counts": counts,
                "tasks": [t.to_dict() for t in suite.tasks[: args.limit]],
            }
        )
        return 0
    print(f"{suite.name} (version {suite.version}, {len(suite)} tasks) from {suite.source}")
    if suite.description:
        print(suite.description)
    for what in ("kind", "category", "split"):
        print(f"  {what:9s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts[what].items())))
    print()
    rows = [(t.id, t.kind, t.group, one_line(t.prompt)) for t in suite.tasks[: args.limit]]
    print(table(rows, ("id", "kind", "category", "prompt")))
    if len(suite) > args.limit:
        print(f"... {len(suite) - args.limit} more (use --limit N)")
    return 0


def cmd_suites_check(args) -> int:
    from workbench.core.tasks.jsonl import SuiteValidationError, load_jsonl

    try:
        suite = load_jsonl(args.file)
    except SuiteValidationError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    print(f"{args.file}: {len(suite)} tasks, valid")
    return 0


def cmd_suites_import(args) -> int:
    from workbench.core.tasks.jsonl import SuiteValidationError
    from workbench.core.tasks.suites import import_suite

    try:
        suite = import_suite(args.file, args.name, workspace(args), replace=args.replace)
    except SuiteValidationError as exc:
        print(str(exc), file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return exc.exit_code
    print(f"imported {len(suite)} tasks as suite '{suite.name}'")
    return 0


MAX_ANSWER_BYTES = 1_000_000  # far above any model's answer; /dev/zero is refused


def _read_answer(args) -> str:
    """The answer from ``--answer`` or ``--answer-file``, refused with a clear error when it
    is larger than ``MAX_ANSWER_BYTES`` or not UTF-8 text (read no further than that)."""
    if args.answer_file is None:
        data = args.answer.encode("utf-8", errors="surrogatepass")
        where = "--answer"
    else:
        where = f"answer file {args.answer_file}"
        try:
            with open(args.answer_file, "rb") as f:
                data = f.read(MAX_ANSWER_BYTES + 1)
        except OSError as exc:
            raise UserError(f"cannot read {where}: {exc.strerror}") from exc
    if len(data) > MAX_ANSWER_BYTES:
        raise UserError(
            f"{where} is larger than {MAX_ANSWER_BYTES:,} bytes: an answer is a model's "
            "reply, not a data file; pass the reply's text"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{where} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from exc


def cmd_suites_grade(args) -> int:
    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.sandbox import UNISOLATED_ENV, SandboxError
    from workbench.core.tasks.suites import load_suite

    suite = load_suite(args.suite, workspace(args))
    task = suite.get(args.task)
    answer = _read_answer(args)
    if args.allow_unisolated:
        os.environ[UNISOLATED_ENV] = "1"
    try:
        with Display(args.progress, verbose=args.verbose) as display:
            # a math grade starts its checking process, a code grade its sandbox
            display.stage(f"grading the answer to {task.id}")
            result = grade(task, answer)
    except SandboxError as exc:
        raise UserError(str(exc)) from exc
    if args.json:
        print_json(
            {
                "suite": suite.name,
                "task": task.id,
                "reward": result.reward,
                "details": result.details,
            }
        )
    else:
        print(f"reward {result.reward:g}")
        for key, value in result.details.items():
            # details quote the program and its output: untrusted text, shown without
            # control characters (escape codes would reach this terminal)
            print(f"  {key}: {one_line(printable(str(value)), 200)}")
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    suites = sub.add_parser("suites", help="task suites: list, show, check, import, grade")
    ss = suites.add_subparsers(dest="suites_command", metavar="ACTION", required=True)
    p = ss.add_parser("list", parents=[common], help="bundled and imported suites")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suites_list)
    p = ss.add_parser("show", parents=[common], help="a suite's counts and tasks")
    p.add_argument("name", help="suite name or path to a .jsonl file")
    p.add_argument("--limit", type=int, default=20, help="tasks to list (default 20)")
    p.add_argument("--seed", type=int, default=0, help="split seed for the counts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suites_show)
    p = ss.add_parser(
        "check", parents=[common], help="validate a JSONL suite file (exit 2 on errors)"
    )
    p.add_argument("file")
    p.set_defaults(func=cmd_suites_check)
    p = ss.add_parser(
        "import", parents=[common], help="validate and import a JSONL suite into the workspace"
    )
    p.add_argument("file")
    p.add_argument("--name", required=True, help="suite name (letters, digits, - and _)")
    p.add_argument(
        "--replace", action="store_true", help="replace an imported suite of the same name"
    )
    p.set_defaults(func=cmd_suites_import)
    p = ss.add_parser("grade", parents=[common], help="grade an answer to one task")
    p.add_argument("suite", help="suite name or path to a .jsonl file")
    p.add_argument("task", help="task id")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--answer", help="the answer text")
    g.add_argument(
        "--answer-file", metavar="PATH", help="read the answer from a file (at most 1 MB)"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="run a code task's program even where no sandbox is available (no "
        "bubblewrap): the program then runs with your user's rights",
    )
    add_progress_option(p)
    p.set_defaults(func=cmd_suites_grade)
