"""``workers``: the workers a pool can name. Built-in ones (``local:*``, ``sandbox*``) and
the ones registered here (specs in the user's workers.toml, keys in the OS keychain).

Keys are read from standard input (``--key-stdin``) or a hidden prompt, never from the
command line (where they would land in the shell history and the process list), and
never printed.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import sys

from workbench.cli.common import UserError, print_json, table
from workbench.cli.progress import Display
from workbench.core.errors import EXIT_OK, EXIT_WORK_FAILED


def _registry():
    from workbench.core.workers.registry import Registry

    return Registry.open()


def _read_key(args, worker_id: str) -> str:
    from workbench.core.keychain import InvalidKey, clean_key

    if args.key_stdin:
        key = sys.stdin.read()
    elif sys.stdin.isatty():
        key = getpass.getpass(f"API key for worker '{worker_id}' (input hidden): ")
    else:
        raise UserError(
            "no key given: pipe it in with --key-stdin (e.g. `printenv MY_KEY | trinity-workbench "
            f"workers set-key {worker_id} --key-stdin`)"
        )
    try:
        return clean_key(worker_id, key)
    except InvalidKey as exc:
        raise UserError(f"{exc} (pipe exactly one key into --key-stdin)") from None


def _builtin_rows() -> list[dict]:
    from workbench.core.workers.pool import builtin_workers

    return [
        {"id": w.id, "provider": w.provider, "model": w.model, "builtin": True, "key": "not needed"}
        for w in builtin_workers()
    ]


def cmd_workers_list(args) -> int:
    registry = _registry()
    registered = []
    for spec in registry.list():
        registered.append(
            {**spec.to_dict(), "builtin": False, "key": registry.key_status(spec).label}
        )
    rows = _builtin_rows() + registered
    if args.json:
        print_json(rows)
        return 0
    print(
        table(
            [
                (
                    r["id"],
                    r["provider"],
                    r["model"],
                    r.get("base_url") or "",
                    f"{r['price_in']:g}/{r['price_out']:g}" if not r["builtin"] else "",
                    r["key"],
                )
                for r in rows
            ],
            ("worker", "provider", "model", "base url", "$/M in/out", "key"),
        )
    )
    print("\n'sandbox' names the whole sandbox pool; 'local:PATH_OR_HUB_ID' any other local model.")
    print(f"registered workers: {registry.path} (keys in the OS keychain, never in that file)")
    return 0


def cmd_workers_add(args) -> int:
    from workbench.core.workers.spec import SpecError, Timeouts, spec_from_options

    extra = None
    if args.extra is not None:
        try:
            extra = json.loads(args.extra)
        except RecursionError:
            raise UserError(
                "--extra nests lists or objects too deeply: a request field needs a few levels"
            ) from None
        except ValueError as exc:
            raise UserError(
                f"--extra is not valid JSON ({exc}): give an object, e.g. "
                '--extra \'{"reasoning_effort": "low"}\''
            ) from None
        if not isinstance(extra, dict):
            raise UserError(
                '--extra must be a JSON object of request fields, e.g. \'{"reasoning_effort": "low"}\''
            )
    timeouts = None
    if any(t is not None for t in (args.timeout_connect, args.timeout_read, args.timeout_total)):
        d = Timeouts()
        try:  # "is None", not "or": --timeout-connect 0 is an error, not 10 s
            timeouts = Timeouts(
                d.connect if args.timeout_connect is None else args.timeout_connect,
                d.read if args.timeout_read is None else args.timeout_read,
                d.total if args.timeout_total is None else args.timeout_total,
            )
        except SpecError as exc:
            raise UserError(
                f"{exc} (--timeout-connect, --timeout-read, --timeout-total: seconds, "
                "more than 0; the total at least the others)"
            ) from None
    spec = spec_from_options(
        args.id,
        args.provider,
        args.model,
        base_url=args.base_url,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        extra=extra,
        price_in=args.price_in,
        price_out=args.price_out,
        context_window=args.context_window,
        concurrency=args.concurrency,
        rpm=args.rpm,
        timeouts=timeouts,
        key_env=args.key_env,
    )
    key = _read_key(args, spec.id) if args.key_stdin else None
    registry = _registry()
    existed = registry.find(spec.id) is not None
    registry.add(spec, key=key, replace=args.replace)
    status = registry.key_status(spec)
    print(
        f"{'updated' if existed else 'added'} worker '{spec.id}' ({spec.provider}, model {spec.model}"
        f"{', ' + spec.base_url if spec.base_url else ''}); key: {status.label}"
    )
    if status.source == "missing" and spec.provider != "local":
        print(
            f"store its key with: trinity-workbench workers set-key {spec.id} --key-stdin"
            + (f" (or export {status.env})" if status.env else "")
        )
    return 0


def cmd_workers_set_key(args) -> int:
    registry = _registry()
    registry.get(args.id)  # an unknown id fails before asking for the key
    registry.set_key(args.id, _read_key(args, args.id))
    print(f"stored the key of worker '{args.id}' in the keychain")
    return 0


def cmd_workers_remove(args) -> int:
    deleted = _registry().remove(args.id)
    print(
        f"removed worker '{args.id}'"
        + (" and its key" if deleted else " (it had no key in the keychain)")
    )
    return 0


def cmd_workers_rename(args) -> int:
    _registry().rename(args.old, args.new)
    print(f"renamed worker '{args.old}' to '{args.new}' (its key moved with it)")
    return 0


def cmd_workers_test(args) -> int:
    from workbench.core.workers.checks import test_worker

    with Display(verbose=args.verbose) as display:  # a slow endpoint, a local model loading
        display.stage(f"asking worker {args.id} for a short reply")
        report = asyncio.run(test_worker(args.id, registry=_registry()))
    if args.json:
        print_json(report.to_dict())
    elif report.ok:
        print(
            f"worker '{report.worker}': OK in {report.latency_s * 1000:.0f} ms; model {report.model}; "
            f"reply {report.reply[:60]!r}"
        )
    else:
        print(f"FAILED after {report.latency_s * 1000:.0f} ms: {report.error}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_WORK_FAILED


def cmd_workers_models(args) -> int:
    from workbench.core.workers.checks import worker_models

    with Display(verbose=args.verbose) as display:
        display.stage(f"asking worker {args.id}'s server for its models")
        models = asyncio.run(worker_models(args.id, registry=_registry()))
    if args.json:
        print_json(models)
    else:
        print("\n".join(models) if models else "(the server lists no models)")
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    from workbench.core.workers.spec import PRESETS

    workers = sub.add_parser(
        "workers", help="worker models: list, add, test, models, set-key, rename, remove"
    )
    ws = workers.add_subparsers(dest="workers_command", metavar="ACTION", required=True)
    p = ws.add_parser(
        "list", parents=[common], help="built-in and registered workers (never their keys)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workers_list)

    p = ws.add_parser(
        "add", parents=[common], help="register a worker (its key goes to the OS keychain)"
    )
    p.add_argument("id", help="worker id: letters, digits, '.', '_', '-'")
    p.add_argument(
        "--provider",
        required=True,
        metavar="P",
        help=f"openai, anthropic, gemini, local, or a preset: {', '.join(sorted(PRESETS))}",
    )
    p.add_argument(
        "--model", required=True, metavar="M", help="the model name the provider expects"
    )
    p.add_argument("--base-url", metavar="URL", help="the API's base URL (presets fill it)")
    p.add_argument("--price-in", type=float, metavar="X", help="dollars per million input tokens")
    p.add_argument("--price-out", type=float, metavar="Y", help="dollars per million output tokens")
    p.add_argument(
        "--temperature", type=float, help="override the run's temperature for this worker"
    )
    p.add_argument(
        "--max-tokens", type=int, help="override the run's max output tokens for this worker"
    )
    p.add_argument("--context-window", type=int, help="the model's context window in tokens")
    p.add_argument("--concurrency", type=int, help="calls in flight at most (default 8)")
    p.add_argument("--rpm", type=float, help="requests per minute at most (default: no limit)")
    p.add_argument(
        "--timeout-connect", type=float, metavar="S", help="seconds to connect (default 10)"
    )
    p.add_argument(
        "--timeout-read", type=float, metavar="S", help="seconds between reply chunks (default 120)"
    )
    p.add_argument(
        "--timeout-total", type=float, metavar="S", help="seconds for one attempt (default 300)"
    )
    p.add_argument(
        "--extra", metavar="JSON", help='extra request fields, e.g. \'{"reasoning_effort": "low"}\''
    )
    p.add_argument(
        "--key-env",
        metavar="NAME",
        help="environment variable to read the key from when the keychain "
        "has none (default: the preset's, e.g. OPENAI_API_KEY)",
    )
    p.add_argument("--key-stdin", action="store_true", help="read the API key from standard input")
    p.add_argument(
        "--replace", action="store_true", help="update a worker that is already registered"
    )
    p.set_defaults(func=cmd_workers_add)

    p = ws.add_parser("test", parents=[common], help="one tiny request: latency, model, outcome")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workers_test)

    p = ws.add_parser("models", parents=[common], help="the models the worker's endpoint offers")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workers_models)

    p = ws.add_parser(
        "set-key", parents=[common], help="store or replace a worker's key in the keychain"
    )
    p.add_argument("id")
    p.add_argument("--key-stdin", action="store_true", help="read the key from standard input")
    p.set_defaults(func=cmd_workers_set_key)

    p = ws.add_parser(
        "rename", parents=[common], help="give a worker a new id (its key moves with it)"
    )
    p.add_argument("old")
    p.add_argument("new")
    p.set_defaults(func=cmd_workers_rename)

    p = ws.add_parser("remove", parents=[common], help="unregister a worker and delete its key")
    p.add_argument("id")
    p.set_defaults(func=cmd_workers_remove)
