"""``train``, ``runs``, ``eval``, ``export``, ``replay`` and ``study``: training runs and
what comes out of them."""

from __future__ import annotations

import json
import sys
import time

from workbench.cli.common import UserError, one_line, print_json, table, workspace


class Progress:
    """A one-line progress display on stderr: generation, best, mean, spend, ETA."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.total = 0
        self.first = 0
        self.tty = self.stream.isatty()
        self.workers: set[str] = set()  # the workers called so far: is the spend simulated?

    def __call__(self, event) -> None:
        from workbench.core.spend import dollars, spend_kind
        from workbench.core.training.events import (
            GenerationStats,
            RunFailed,
            RunFinished,
            RunStarted,
        )

        if isinstance(event, RunStarted):
            self.total = int(event.budget["generations"])
            self.first = event.start_generation
            resumed = (
                f", resumed at generation {event.start_generation + 1}"
                if event.start_generation
                else ""
            )
            print(
                f"run {event.run_id} '{event.name}': {event.n_params} parameters, population {event.popsize}, "
                f"{event.rollouts} rollouts per candidate{resumed}{event.executor_note()}",
                file=self.stream,
            )
        elif isinstance(event, GenerationStats):
            done = event.generation + 1
            elapsed = time.perf_counter() - self.started
            rate = elapsed / max(1, done - self.first)
            eta = rate * (self.total - done)
            width = 24
            filled = int(width * done / max(1, self.total))
            val = f"  val {event.validation:.3f}" if event.validation is not None else ""
            self.workers.update(key.rpartition("/")[0] for key in event.usage)
            spend = dollars(event.totals["dollars"], spend_kind(self.workers))
            line = (
                f"[{'#' * filled}{'.' * (width - filled)}] gen {done}/{self.total}  best {event.best:.3f}  "
                f"mean {event.mean:.3f}{val}  sigma {event.sigma:.4f}{event.opening_note()}  {spend}  "
                f"calls {int(event.totals['calls'])}  coordinator {event.coordinator_s:.1f}s/"
                f"{event.wall_s:.1f}s ({event.tokens_forwarded} tok, {event.batches} batches of "
                f"{event.mean_batch:.1f}{event.recheck_note()})  ETA {eta:5.0f}s"
            )
            print(
                ("\r" + line) if self.tty else line,
                end="" if self.tty else "\n",
                file=self.stream,
                flush=True,
            )
        elif isinstance(event, RunFinished):
            if self.tty:
                print(file=self.stream)
            best = "none" if event.best_validation is None else f"{event.best_validation:.3f}"
            print(
                f"run {event.run_id} ended: {event.stop_reason} after {event.generations} generations; "
                f"best validation {best}",
                file=self.stream,
            )
        elif isinstance(event, RunFailed):
            # the error's own sentence follows (the command's "error: ..." line)
            print(
                f"\nrun {event.run_id} stopped on an error; once it is fixed, resume it with "
                f"trinity-workbench train --resume {event.run_id[:8]}",
                file=self.stream,
            )


def cmd_train(args) -> int:
    from workbench.core.config import RunConfig
    from workbench.core.errors import EXIT_INTERRUPTED
    from workbench.core.jobs.train import train
    from workbench.core.training.events import StopToken

    config = RunConfig.load(args.config) if args.config else None
    if config is None and args.resume is None:
        raise UserError(
            "give a config file (trinity-workbench train CONFIG.toml) or --resume RUN_ID"
        )
    stop = StopToken()
    if args.events:
        stop.follow(sys.stdin)
        listeners = [_print_event]
    else:
        listeners = [Progress()]
    try:
        run_id = train(
            config,
            workspace(args),
            resume=args.resume,
            listeners=listeners,
            stop=stop,
            ray_address=args.ray_address,
        )
    except KeyboardInterrupt:
        print(
            "\ninterrupted: the last completed generation is checkpointed; resume with --resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if not args.events:
        print(run_id)
    return 0


def _print_event(event) -> None:
    from workbench.core.training.events import event_to_json

    print(event_to_json(event), flush=True)


def cmd_runs_list(args) -> int:
    from workbench.core.jobs.shared import list_runs

    runs = list_runs(workspace(args), kind=None if args.all else "train")[::-1]  # oldest first
    if args.json:
        print_json([{**r.to_json(), "generations": r.generations} for r in runs])
        return 0
    rows = [
        (
            r.id[:8],
            one_line(r.name, 30),
            r.kind,
            r.status,
            r.stop_reason or "",
            r.generations,
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)),
        )
        for r in runs
    ]
    print(table(rows, ("run", "name", "kind", "status", "stop reason", "generations", "created")))
    return 0


def cmd_runs_show(args) -> int:
    from workbench.core.config import ConfigError
    from workbench.core.jobs.learned import run_learned
    from workbench.core.jobs.shared import summarise_run
    from workbench.core.learned import describe_learned
    from workbench.core.spend import dollars, recorded_spend, spend_kind
    from workbench.core.store import Store
    from workbench.core.store.episode_file import counted_from_1, run_result_document
    from workbench.core.training.events import where_episodes_ran

    with Store.open(workspace(args)) as store:
        record = store.get_run(args.run)
        generations = store.generations(record.id)  # as stored, counted from 0
        stats = store.generation_stats(record.id)  # typed: what the table shows
        stored_spend = store.stored_spend(record.id)
    summary = summarise_run(record, len(stats))
    try:  # every effective setting, keys the run predates included (as it ran)
        config = record.config().to_dict()
    except ConfigError:
        config = record.config_data
    try:  # what its result head played on validation, per category
        learned = run_learned(workspace(args), record.id, gone_ok=True)
    except Exception as exc:  # a damaged checkpoint: the rest of the run still shows
        print(f"note: what run {record.id[:8]} learned cannot be read: {exc}", file=sys.stderr)
        learned = []
    pool = (config.get("pool") or {}).get("workers") or () if isinstance(config, dict) else ()
    spend = spend_kind(pool)  # a simulated pool's dollars are no real spend: labelled
    data = {
        **summary.to_json(),
        "config": config,
        # counted from 1, as the table, the GUI and the exports count generations
        "result": run_result_document(record.result),
        "spend": spend or "real",
        # what the run used, from its stored records: never less than what they hold
        "spent": recorded_spend(generations, stored_spend, (record.result or {}).get("spend")),
        "generations": [{**g, "generation": counted_from_1(g["generation"])} for g in generations],
        "learned": [c.to_json() for c in learned],
    }
    if args.json:
        print_json(data)
        return 0
    print(
        f"run {record.id}  '{record.name}'  {data['status']}  stop reason: {record.stop_reason or '-'}"
    )
    if record.error:
        print(f"error: {record.error}")
    if record.kind == "train":  # from the stored generations and episodes (a killed run too)
        spent = data["spent"]
        print(
            f"spent: {int(spent['episodes'])} episodes, {int(spent['calls'])} "
            f"calls, {dollars(spent['dollars'], spend)}, {spent['minutes']:.1f} min"
            + (
                " (from its stored generations and what it recorded while running)"
                if data["status"] == "interrupted"
                else ""
            )
        )
        result = record.run_result()
        where = result and where_episodes_ran(result.executor, result.actors, result.nodes or ())
        if where:
            print(where)
    explored = any(g.opening_share for g in stats)  # optimizer.exploring_starts
    rows = [
        (
            g.generation + 1,  # counted from 1, as the GUI and the progress line count
            f"{g.best:.3f}",
            f"{g.mean:.3f}",
            f"{g.median:.3f}",
            f"{g.worst:.3f}",
            f"{g.sigma:.4f}",
            "" if g.validation is None else f"{g.validation:.3f}",
            g.evaluations,
            f"{g.wall_s:.1f}s",
            f"{g.coordinator_s:.1f}s",
            g.tokens_forwarded,
            g.batches,
            f"{g.mean_batch:.1f}",
            f"{g.rechecks} ({g.recheck_tokens} tok)",
            *((f"{g.opening_share:.0%}",) if explored else ()),
        )
        for g in stats
    ]
    print(
        table(
            rows,
            (
                "gen",
                "best",
                "mean",
                "median",
                "worst",
                "sigma",
                "validation",
                "episodes",
                "wall",
                "coordinator",
                "tokens",
                "batches",
                "mean batch",
                "fp32 rechecks",
                *(("uniform openings",) if explored else ()),
            ),
        )
    )
    if learned:
        print("\nwhat it learned (its result head on validation, per category):")
        print("\n".join(describe_learned(learned)))
    if record.result:  # its best validation generation counted from 1, as in the table
        print(json.dumps(data["result"], indent=2))
    return 0


def cmd_eval(args) -> int:
    from workbench.core.jobs.evaluate import evaluate_run

    if (args.run is None) == (args.coordinator is None):
        raise UserError("give exactly one of --run RUN or --coordinator FILE")
    result = evaluate_run(
        workspace(args),
        run=args.run,
        coordinator_file=args.coordinator,
        suite=args.suite,
        split=args.split,
        baselines=not args.no_baselines,
        out_dir=args.out,
        final_turn=args.final_turn,
    )
    report = result.report
    if args.json:
        print_json(
            [
                {
                    "system": s.name,
                    "kind": s.kind,
                    "accuracy": s.accuracy,
                    "ci_low": s.ci_low,
                    "ci_high": s.ci_high,
                    "n": s.n,
                    "avg_turns": s.avg_turns,
                    "avg_tokens": s.avg_tokens,
                    "avg_cost": s.avg_cost,
                    "spend": report.spend or "real",
                    "usage": s.usage,
                }
                for s in report.systems
            ]
        )
    else:
        print(report.table())
        print(f"\nevaluation episodes stored as run {result.run_id[:8]}")
        if args.out:
            print(f"wrote {args.out}/evaluation.json, .csv and .md")
    return 0


def cmd_export(args) -> int:
    from workbench.core.jobs.export import export_run

    path = export_run(workspace(args), args.run, args.out)
    print(f"wrote {path}")
    return 0


def _counted(index: int | None) -> str:
    """A stored index (from 0) as shown (from 1); "-" for an episode outside training."""
    return "-" if index is None else str(index + 1)


def _from_one(number: int | None, option: str) -> int | None:
    """A generation or candidate as the user counts it (from 1, as every page and table
    shows it) to its stored index (from 0)."""
    if number is None:
        return None
    if number < 1:
        raise UserError(f"{option} counts from 1 (the first is 1), not {number}")
    return number - 1


def cmd_replay(args) -> int:
    from workbench.cli.episodes import print_episode
    from workbench.core.store import Store

    with Store.open(workspace(args)) as store:
        run_id = store.resolve_run_id(args.run)
        if args.episode:
            ids = [store.resolve_episode_id(args.episode, run_id=run_id)]
        else:
            summaries = store.list_episodes(
                run_id,
                generation=_from_one(args.generation, "--generation"),
                candidate=_from_one(args.candidate, "--candidate"),
                limit=args.limit,
            )
            ids = [e.id for e in summaries]
            if not ids:
                raise UserError(f"run {run_id[:8]} has no episodes matching that")
        for i, episode_id in enumerate(ids):
            episode = store.get_episode(episode_id)
            print(
                f"== episode {episode.id[:12]}  task {episode.task_id}  "
                f"generation {_counted(episode.generation)}  "
                f"candidate {_counted(episode.candidate)}"
            )
            if args.full:
                for t in episode.turns:
                    print(f"\n-- turn {t.index + 1}: {t.role} by {t.worker}")
                    print(
                        f"   p(worker) {', '.join(f'{p:.2f}' for p in t.worker_probs)}   "
                        f"p(role) {', '.join(f'{p:.2f}' for p in t.role_probs)}"
                    )
                    for m in t.messages:
                        print(f"   [{m['role']}] {m['content']}")
                    print(f"   response: {t.response or t.error or '(not called)'}")
                print()
            print_episode(episode)
            if i + 1 < len(ids):
                print()
    return 0


def cmd_study(args) -> int:
    from workbench.core.config import RunConfig
    from workbench.core.jobs.study import study_optimizers

    config = RunConfig.load(args.config)
    optimizers = tuple(args.optimizers.split(",")) if args.optimizers else None
    study = study_optimizers(
        config,
        workspace(args),
        seeds=args.seeds,
        optimizers=optimizers,
        progress=lambda line: print(line, file=sys.stderr),
        margin=args.margin,
        paper=args.paper,
    )
    if args.json:
        print_json(study.to_dict())
    else:
        print(study.table())
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    p = sub.add_parser(
        "train", parents=[common], help="train a coordinator (sep-CMA-ES or a baseline)"
    )
    p.add_argument("config", nargs="?", help="run config (TOML; see docs/reference/config.md)")
    p.add_argument("--resume", metavar="RUN_ID", help="continue a stopped, failed or killed run")
    p.add_argument(
        "--events",
        action="store_true",
        help="for programs: one JSON event per line on stdout instead of the progress bar; "
        "reads pause, resume and stop lines on stdin (its end stops the run)",
    )
    p.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help='with run.executor = "ray": the Ray cluster to join (default: RAY_ADDRESS, '
        "else a Ray instance started on this machine)",
    )
    p.set_defaults(func=cmd_train)

    runs = sub.add_parser("runs", help="training runs: list, show")
    rs = runs.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    p = rs.add_parser(
        "list",
        parents=[common],
        help="the workspace's training runs: id, name, status, generations",
    )
    p.add_argument("--all", action="store_true", help="include evaluation runs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs_list)
    p = rs.add_parser("show", parents=[common], help="a run's config, status and generations")
    p.add_argument("run", help="run id (or a unique prefix of 4+ characters)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print it as JSON: generations counted from 1, as in the table",
    )
    p.set_defaults(func=cmd_runs_show)

    p = sub.add_parser(
        "eval", parents=[common], help="evaluate a run or coordinator file against baselines"
    )
    p.add_argument("--run", help="a training run (its best-on-validation vector)")
    p.add_argument(
        "--coordinator", metavar="FILE", help="a coordinator file (trinity-workbench export)"
    )
    p.add_argument("--suite", help="another suite than the run's")
    p.add_argument("--split", default="test", choices=("train", "validation", "test"))
    p.add_argument("--no-baselines", action="store_true", help="only the coordinator")
    p.add_argument(
        "--final-turn",
        choices=("free", "worker"),
        default="free",
        help="free (default, the paper's protocol): an episode may end without a Worker's "
        "answer; worker: a turn that would leave it without one is played as a Worker, as "
        "`serve` does (scores of every multi-turn system rise: docs/guides/serving.md)",
    )
    p.add_argument("--out", metavar="DIR", help="write evaluation.json, .csv and .md here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("export", parents=[common], help="write a run's coordinator to a file")
    p.add_argument("run")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the coordinator file (.safetensors), or a folder to write "
        "coordinator-RUNID.safetensors in",
    )
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("replay", parents=[common], help="a run's episodes, turn by turn, as text")
    p.add_argument("run")
    p.add_argument("--episode", help="one episode (id or prefix)")
    p.add_argument(
        "--generation", type=int, help="only this generation's episodes (counted from 1)"
    )
    p.add_argument("--candidate", type=int, help="only this candidate's episodes (counted from 1)")
    p.add_argument("--limit", type=int, default=5, help="episodes to show (default 5)")
    p.add_argument("--full", action="store_true", help="show prompts and full responses")
    p.set_defaults(func=cmd_replay)

    study = sub.add_parser("study", help="comparisons")
    ss = study.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    p = ss.add_parser("optimizers", parents=[common], help="every optimizer under the same budget")
    p.add_argument("config")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--optimizers", help="comma-separated (default: all four)")
    p.add_argument(
        "--paper",
        action="store_true",
        help="paper-faithful: the paper's settings, one SVF setting and one episode budget "
        "for every optimizer",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=0.05,
        help="the difference of test reward the power estimate sizes seeds and tasks for",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_study)
    from workbench.cli.headroom import register_study

    register_study(ss, common)  # study frontier
