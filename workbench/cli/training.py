"""``train``, ``runs``, ``eval``, ``export``, ``replay`` and ``study``: training runs and
what comes out of them."""

from __future__ import annotations

import json
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable

from workbench.cli.common import UserError, exit_now, one_line, print_json, table, workspace
from workbench.cli.progress import Display, add_progress_option
from workbench.cli.views import RunsView, TrainingView
from workbench.core.records import GenerationStats
from workbench.core.training.events import RunFinished, RunStarted


def command_line(args, *words: str) -> str:
    """``trinity-workbench WORDS`` in this command's workspace, ready to paste."""
    given = ["--workspace", args.workspace] if args.workspace is not None else []
    return shlex.join(["trinity-workbench", *given, *words])


def resume_command(args, run_id: str, config: str | None = None) -> str:
    """The command that resumes ``run_id`` as this one was given (its workspace, its Ray
    address), with ``config`` when its budget is to change."""
    ray = ["--ray-address", args.ray_address] if getattr(args, "ray_address", None) else []
    given = [config] if config else []
    return command_line(args, "train", *given, "--resume", run_id[:8], *ray)


class StopOnCtrlC:
    """Ctrl-C (SIGINT) during a run: the first stops it through its ``StopToken`` (work
    in flight is cancelled, the finished generations stay stored, the run is marked
    stopped); before the run has started (loading a model) and at a second Ctrl-C it
    interrupts at once, as Python's default does."""

    def __init__(self, stop):
        self.stop = stop
        self.armed = False  # the run's loop is on: the token is looked at
        self._previous = None

    def __enter__(self) -> StopOnCtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._pressed)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _pressed(self, signum, frame) -> None:
        if not self.armed or self.stop.stopped:
            raise KeyboardInterrupt
        self.stop.stop()


def cmd_train(args) -> int:
    from workbench.core.config import RunConfig
    from workbench.core.errors import EXIT_INTERRUPTED
    from workbench.core.training.basis import SearchBasis
    from workbench.core.training.events import StopToken

    if args.config is None and args.resume is None:
        raise UserError(
            "give a config file (trinity-workbench train CONFIG.toml) or --resume RUN_ID"
        )
    if args.name is not None and args.resume is not None:
        raise UserError("--name names a new run: a resumed run keeps its name")
    config = RunConfig.load(args.config) if args.config else None
    stop = StopToken()
    if args.events:  # for programs (the GUI): JSON lines, its stop on stdin
        stop.follow(sys.stdin)
        _train(args, config, stop, [_print_event], None)
        if stop.stopped:
            exit_now(0)
        return 0
    with Display(args.progress, verbose=args.verbose) as display, StopOnCtrlC(stop) as ctrl_c:
        new = config is not None and args.resume is None
        o = config.optimizer if config is not None else None
        view = TrainingView(
            display,
            lambda run_id: resume_command(args, run_id),
            fits_basis=new and o is not None and SearchBasis.fitted(o.search_basis, o.name),
        )

        def listener(event) -> None:
            view(event)
            if isinstance(event, RunStarted):
                ctrl_c.armed = True  # from here the run's loop looks at its token

        display.stage("resuming the run" if args.resume else "starting the run")
        try:
            run_id = _train(args, config, stop, [listener], display.heard)
        except KeyboardInterrupt:
            display.close()
            started = view.started
            if started is None:
                display.say("Stopped before training began: no run was stored.")
            else:  # a second Ctrl-C
                display.command("Interrupted. Resume", resume_command(args, started.run_id))
            exit_now(EXIT_INTERRUPTED)
    ended = view.ended
    if isinstance(ended, RunFinished) and ended.stop_reason == "stopped":
        total = int(view.started.budget["generations"]) if view.started else ended.generations
        display.say(
            f"Stopped. Run {run_id[:8]} saved at generation {ended.generations} of {total}."
            if ended.generations
            else f"Stopped. Run {run_id[:8]} is saved; no generation had finished yet."
        )
        display.command("Resume", resume_command(args, run_id))
        exit_now(EXIT_INTERRUPTED)
    if isinstance(ended, RunFinished):
        best = (
            ""
            if ended.best_validation is None
            else (f"; best validation score {ended.best_validation:.3f}")
        )
        why = "" if ended.stop_reason == "budget.generations" else f" ({ended.stop_reason})"
        display.say(f"Done: run {run_id[:8]} trained {ended.generations} generations{why}{best}.")
        if ended.generations:
            display.command("Next", command_line(args, "eval", "--run", run_id[:8]))
        else:  # a budget that the routing table or the search basis used up (a stop
            # before the first generation is told above)
            display.say(
                f"The work before the first generation used its {ended.stop_reason}: raise "
                "it in the config and resume the run."
            )
            display.command("Resume", resume_command(args, run_id, args.config or "CONFIG"))
    print(run_id)
    return 0


def _train(args, config, stop, listeners, stages) -> str:
    from workbench.core.jobs.train import train

    return train(
        config,
        workspace(args),
        resume=args.resume,
        name=args.name,
        listeners=listeners,
        stop=stop,
        ray_address=args.ray_address,
        stages=stages,
    )


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
    from workbench.core.jobs.learned import RunLearned, run_learned
    from workbench.core.jobs.shared import summarise_run
    from workbench.core.learned import describe_learned
    from workbench.core.spend import Spend, recorded_spend, spend_kind
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
        learned = RunLearned()
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
        "learned": [c.to_json() for c in learned.categories],
    }
    if args.json:
        print_json(data)
        return 0
    print(f"run {record.id} '{record.name}'")
    print(f"{data['status']}; stop reason: {record.stop_reason or '-'}")
    if record.error:
        print(f"error: {record.error}")
    if record.kind == "train":  # from the stored generations and episodes (a killed run too)
        print(
            f"spent: {Spend.of(data['spent']).words(spend)}"
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
    print(generations_table(stats, details=args.details, explored=explored))
    if learned.categories:
        print("\nwhat it learned (its result head on validation, per category):")
        print("\n".join(describe_learned(learned.categories)))
    elif learned.unplayed:
        print(
            "\nwhat it learned is not read here: it was validated on a routing table, "
            "without playing episodes, and its checkpoint keeps no record of that "
            f"validation's choices; `trinity-workbench eval --run {record.id[:8]}` plays them"
        )
    document = data["result"] or {}  # its best validation generation counted from 1
    if args.details and record.result:
        print(json.dumps(document, indent=2))
    elif document.get("best_validation") is not None:
        print(
            f"\nits result: generation {document.get('best_validation_generation')}'s "
            f"coordinator, validation score {document['best_validation']:.3f}\n"
            "(the whole record: runs show --details, or --json)"
        )
    return 0


def generations_table(stats, *, details: bool, explored: bool) -> str:
    """A run's generations, counted from 1 as the GUI and the progress bar count: the
    fitness of its candidates, its validation score, episodes and time; ``details`` adds
    the search's step size and where the coordinator's time went (wider than 80
    columns)."""
    columns: list[tuple[str, Callable[[GenerationStats], object]]] = [
        ("gen", lambda g: g.generation + 1),
        ("best", lambda g: f"{g.best:.3f}"),
        ("mean", lambda g: f"{g.mean:.3f}"),
        *([("median", lambda g: f"{g.median:.3f}")] if details else []),
        ("worst", lambda g: f"{g.worst:.3f}"),
        *([("sigma", lambda g: f"{g.sigma:.4f}")] if details else []),
        ("validation", lambda g: "" if g.validation is None else f"{g.validation:.3f}"),
        ("episodes", lambda g: g.evaluations),
        ("wall", lambda g: f"{g.wall_s:.1f}s"),
    ]
    if details:
        columns += [
            ("coordinator", lambda g: f"{g.coordinator_s:.1f}s"),
            ("tokens", lambda g: g.tokens_forwarded),
            ("batches", lambda g: g.batches),
            ("mean batch", lambda g: f"{g.mean_batch:.1f}"),
            ("fp32 rechecks", lambda g: f"{g.rechecks} ({g.recheck_tokens} tok)"),
        ]
    if explored:
        columns.append(("uniform openings", lambda g: f"{g.opening_share:.0%}"))
    rows = [[cell(g) for _, cell in columns] for g in stats]
    return table(rows, [name for name, _ in columns])


def cmd_eval(args) -> int:
    from workbench.core.jobs.evaluate import evaluate_run

    if (args.run is None) == (args.coordinator is None):
        raise UserError("give exactly one of --run RUN or --coordinator FILE")
    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("starting the evaluation")
        result = evaluate_run(
            workspace(args),
            run=args.run,
            coordinator_file=args.coordinator,
            suite=args.suite,
            split=args.split,
            baselines=not args.no_baselines,
            out_dir=args.out,
            final_turn=args.final_turn,
            stages=display.heard,
            # the coordinator's first episodes read their tasks' features: no estimate yet
            progress=display.counting("evaluating", "episodes", warmup=2),
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
        text = report.table()
        if report.spend:  # its label goes under the table, which then fits 80 columns
            text = text.replace(report.cost_header, "$ / query", 1)
            text += f"\n\n$ / query: {report.spend} dollars (the sandbox is a simulation)"
        print(text)
        print(f"\nevaluation episodes stored as run {result.run_id[:8]}")
        if args.out:
            print(f"wrote {args.out}/evaluation.json, .csv and .md")
    return 0


def cmd_export(args) -> int:
    from workbench.core.jobs.export import export_run

    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("reading the run")
        path = export_run(workspace(args), args.run, args.out, stages=display.heard)
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
    from workbench.core.jobs.shared import NO_EPISODES_WHY
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
            if not ids and run_id not in store.runs_with_episodes():
                raise UserError(
                    f"run {run_id[:8]} has no episodes stored ({NO_EPISODES_WHY}): "
                    f"trinity-workbench runs show {run_id[:8]} shows its results"
                )
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
    from workbench.core.config import OPTIMIZERS, RunConfig
    from workbench.core.jobs.study import study_optimizers

    config = RunConfig.load(args.config)
    optimizers = tuple(args.optimizers.split(",")) if args.optimizers else None
    runs = len(optimizers or OPTIMIZERS) * args.seeds
    with Display(args.progress, verbose=args.verbose) as display:
        display.stage("starting the study")
        view = RunsView(display, "study", runs)
        study = study_optimizers(
            config,
            workspace(args),
            seeds=args.seeds,
            optimizers=optimizers,
            progress=view.evaluated,
            margin=args.margin,
            paper=args.paper,
            listeners=[view.training],
            stages=display.heard,
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
        "--name",
        help="the new run's name, as given (default: the config's run.name and the day, "
        "with a counter when the workspace has that name: 'sandbox routing, Dec 6 (2)')",
    )
    add_progress_option(p)
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
    p.add_argument(
        "--details",
        action="store_true",
        help="every column of the generations (sigma, median, where the coordinator's time "
        "went) and the whole result record",
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
    add_progress_option(p)
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
    add_progress_option(p)
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
    add_progress_option(p)
    p.set_defaults(func=cmd_study)
    from workbench.cli.headroom import register_study

    register_study(ss, common)  # study frontier
