"""``serve``: the trained team behind an OpenAI-compatible API; ``serve set-key`` and
``serve delete-key``: the server's own API key in the keychain."""

from __future__ import annotations

import argparse
import getpass
import os
import signal
import sys
import threading

from workbench.cli.common import UserError, workspace
from workbench.cli.progress import Display


def cmd_serve(args) -> int:
    if args.serve_command is not None:
        return args.serve_func(args)
    if (args.run is None) == (args.coordinator is None):
        raise UserError(
            "serve what? give a trained run (--run RUN) or a coordinator file (--coordinator FILE)"
        )
    from workbench.core.serving.api import ServeSettings
    from workbench.core.serving.server import Server, is_loopback, listen_socket, loopback_key
    from workbench.core.serving.team import load_team
    from workbench.core.spend import is_recorded

    # refused before anything loads
    if args.grace < 1:
        raise UserError("--grace must be at least 1 second")
    if args.max_connections < 1:
        raise UserError("--max-connections must be at least 1")
    if args.max_prompt_tokens is not None and args.max_prompt_tokens < 1:
        raise UserError("--max-prompt-tokens must be at least 1")
    key = loopback_key() if is_loopback(args.host) else _required_key(args.host)
    settings = ServeSettings(concurrency=args.concurrency, queue=args.queue, api_key=key)
    sock = listen_socket(args.host, args.port)  # a busy port is said before the model loads
    with Display(verbose=args.verbose) as display:  # gone before the server logs
        display.stage("loading the coordinator, its backbone and its workers")
        team = load_team(
            workspace(args),
            run=args.run,
            coordinator_file=args.coordinator,
            max_turns=args.max_turns,
            final_turn=args.final_turn,
            max_prompt_tokens=args.max_prompt_tokens,
            to_serve=True,
        )
    watchdog = _Watchdog(args.grace + FORCE_MARGIN_S)
    server = Server(
        team,
        settings,
        host=args.host,
        port=args.port,
        log_level="warning",
        sock=sock,
        graceful_s=args.grace,
        max_connections=args.max_connections,
        on_stop=watchdog.signalled,
    )

    recorded = [w for w in team.source.pool if is_recorded(w)]

    def ready(url: str) -> None:
        print(
            f"serving '{team.model_id}' (pool: {', '.join(team.source.pool)}) at {url}"
            + (" (API key required)" if key else "")
            + "; Ctrl+C stops it",
            file=sys.stderr,
        )
        if recorded:  # all of them is refused (Server): some may be chosen, and answer nothing
            print(
                f"note: {', '.join(recorded)} answer{'s' if len(recorded) == 1 else ''} no "
                "request (recorded answers to a suite's questions): a turn the coordinator "
                "gives to one fails",
                file=sys.stderr,
            )
        print(url, flush=True)  # standard output: the URL alone, for scripts

    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again: end
    # quietly after that, with the code that says how the stop went
    previous = signal.signal(signal.SIGTERM, _exit_quietly)
    try:
        server.run(ready)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    code = EXIT_CANCELLED if server.cancelled_on_stop else EXIT_CLEAN
    stored = f"{team.episodes} episode(s) stored in run {team.run_id}"
    if code == EXIT_CANCELLED:
        print(
            f"stopped after the {args.grace:g} s grace: {server.cancelled_on_stop} request(s) "
            f"in flight cancelled (the turns they played stored as cancelled); {stored}",
            file=sys.stderr,
        )
    else:
        print(f"stopped; {stored}", file=sys.stderr)
    # a forward or a worker thread still running (abandoned by a cancelled episode) must
    # not hold the exit: leave with this code if the interpreter has not within seconds
    watchdog.finish(code)
    return code


# exit codes of `serve` (docs/guides/serving.md)
EXIT_CLEAN = 0  # stopped; every admitted request was answered
EXIT_CANCELLED = 3  # stopped after the grace; requests in flight were cancelled
EXIT_FORCED = 4  # the stop itself overran grace + FORCE_MARGIN_S (or a second signal)
FORCE_MARGIN_S = 5.0  # past the grace: the lifespan's shutdown and storing what finished
EXIT_AFTER_S = 2.0  # once stopped, how long the interpreter's own exit may take


class _Watchdog:
    """Ends the process when a stop overruns: ``signalled`` (each signal) starts a
    deadline of ``limit_s`` (a second signal ends it at once), ``finish(code)`` one of
    ``EXIT_AFTER_S`` with the stop's own code. ``os._exit`` then, whatever a thread is
    doing: a backbone forward cannot be interrupted, and Python waits for it otherwise."""

    def __init__(self, limit_s: float):
        self.limit_s = limit_s
        self._signals = 0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def signalled(self, signum: int) -> None:
        with self._lock:
            self._signals += 1
            if self._signals == 1:
                self._start(self.limit_s, EXIT_FORCED)
                return
        print("a second signal: stopping now", file=sys.stderr, flush=True)
        self._exit(EXIT_FORCED)

    def finish(self, code: int) -> None:
        with self._lock:
            self._start(EXIT_AFTER_S, code)

    def _start(self, seconds: float, code: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(seconds, self._exit, args=(code,))
        self._timer.daemon = True
        self._timer.start()

    @staticmethod
    def _exit(code: int) -> None:
        if code == EXIT_FORCED:
            print("the stop overran its grace: exiting now", file=sys.stderr, flush=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _exit_quietly(signum, frame) -> None:
    raise KeyboardInterrupt


def _required_key(host: str) -> str:
    """Off loopback the server needs its key; say how to store one."""
    from workbench.core.keychain import KeychainUnavailable
    from workbench.core.serving.server import server_key

    store = "store one with `trinity-workbench serve set-key --key-stdin`, or bind to 127.0.0.1"
    try:
        key = server_key()
    except KeychainUnavailable as exc:
        # the keychain's own fix, without its advice about worker key variables
        reason = str(exc).split("; or set the environment variable")[0]
        raise UserError(
            f"serving on {host} (not loopback) needs an API key for the server, kept in the "
            f"keychain: {reason}; then {store}"
        ) from None
    if key is None:
        raise UserError(
            f"serving on {host} (not loopback) needs an API key for the server: {store}"
        )
    return key


def cmd_set_key(args) -> int:
    from workbench.core.serving.server import set_server_key

    if args.key_stdin:
        key = sys.stdin.readline()
    elif sys.stdin.isatty():
        key = getpass.getpass("API key for the server (input hidden): ")
    else:
        raise UserError(
            "no key given: pipe it in with --key-stdin (e.g. `printenv TEAM_KEY | "
            "trinity-workbench serve set-key --key-stdin`)"
        )
    set_server_key(key)
    print("stored the server's API key in the keychain")
    return 0


def cmd_delete_key(args) -> int:
    from workbench.core.serving.server import delete_server_key

    print(
        "deleted the server's API key"
        if delete_server_key()
        else "the keychain holds no server API key"
    )
    return 0


def _port(text: str) -> int:
    """A TCP port for argparse: 0 (a free one) to 65535, refused before anything loads."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give 0-65535 (0: a free one)")
    return port


def register(sub, common) -> None:
    """Add ``serve`` and its key actions to the parser."""
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="serve a trained team as one model behind an OpenAI-compatible API",
        description="Serve a trained run's best coordinator (or a coordinator file) with its "
        "pool as one model at /v1/models and /v1/chat/completions. Each request runs one "
        "episode (argmax acting, the run's protocol), stored as part of a `serve` run.",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--run", help="a trained run (id or unique prefix)")
    source.add_argument("--coordinator", metavar="FILE", help="a coordinator file (.safetensors)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: a free one)")
    p.add_argument("--max-turns", type=int, default=None, help="K per episode (default: the run's)")
    p.add_argument("--concurrency", type=int, default=4, help="episodes at once (default 4)")
    p.add_argument(
        "--queue",
        type=int,
        default=16,
        help="requests that may wait for a slot before 429 (default 16)",
    )
    p.add_argument(
        "--max-prompt-tokens",
        type=int,
        default=None,
        help="longest conversation the coordinator reads, in its backbone's tokens; longer "
        "requests get 400 context_length_exceeded (default 4096, or the backbone's context "
        "if smaller)",
    )
    p.add_argument(
        "--final-turn",
        choices=("worker", "free"),
        default="worker",
        help="worker (default): a turn that would end an episode without a Worker's answer "
        "is played as a Worker, so every request gets an answer; free: the paper's protocol "
        "(such a request gets 502 no_answer)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds (at least 1) a stopping server (SIGTERM, Ctrl+C) lets requests in "
        "flight finish before cancelling them (default 30); it exits within grace + 5 s",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=256,
        help="open connections at most; more get 503 (default 256)",
    )
    p.set_defaults(func=cmd_serve, serve_command=None)
    actions = p.add_subparsers(dest="serve_command", metavar="ACTION")
    k = actions.add_parser(
        "set-key",
        parents=[common],
        help="store the server's API key in the keychain (required off loopback)",
    )
    k.add_argument("--key-stdin", action="store_true", help="read the key from standard input")
    k.set_defaults(serve_func=cmd_set_key)
    k = actions.add_parser(
        "delete-key", parents=[common], help="delete the server's API key from the keychain"
    )
    k.set_defaults(serve_func=cmd_delete_key)
