"""``serve``: the trained team behind an OpenAI-compatible API; ``serve set-key`` and
``serve delete-key``: the server's own API key in the keychain."""

from __future__ import annotations

import argparse
import getpass
import signal
import sys

from workbench.cli.common import UserError, workspace


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

    key = loopback_key() if is_loopback(args.host) else _required_key(args.host)
    settings = ServeSettings(concurrency=args.concurrency, queue=args.queue, api_key=key)
    sock = listen_socket(args.host, args.port)  # a busy port is said before the model loads
    print("loading the coordinator ...", file=sys.stderr)
    team = load_team(
        workspace(args), run=args.run, coordinator_file=args.coordinator, max_turns=args.max_turns
    )
    server = Server(team, settings, host=args.host, port=args.port, log_level="warning", sock=sock)

    def ready(url: str) -> None:
        print(
            f"serving '{team.model_id}' (pool: {', '.join(team.source.pool)}) at {url}"
            + (" (API key required)" if key else "")
            + "; Ctrl+C stops it",
            file=sys.stderr,
        )
        print(url, flush=True)  # standard output: the URL alone, for scripts

    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again: end
    # quietly with 0 after that, since the stop was asked for and the run is complete
    previous = signal.signal(signal.SIGTERM, _exit_quietly)
    try:
        server.run(ready)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"stopped; {team.episodes} episode(s) stored in run {team.run_id}", file=sys.stderr)
    return 0


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
