"""``workers``: the workers a pool can name."""

from __future__ import annotations

from workbench.cli.common import print_json, table


def cmd_workers_list(args) -> int:
    from workbench.core.workers.local import SMOLLM2_ID
    from workbench.core.workers.simulated import PROFILES_BY_ID

    rows = [{"id": SMOLLM2_ID, "provider": "local", "model": "SmolLM2-135M-Instruct (offline, GGUF)",
             "builtin": True}]
    rows += [{"id": wid, "provider": "sandbox", "model": f"simulated/{p.name} (a simulation)", "builtin": True}
             for wid, p in PROFILES_BY_ID.items()]
    if args.json:
        print_json(rows)
    else:
        print(table([(r["id"], r["provider"], r["model"]) for r in rows], ("worker", "provider", "model")))
        print("\n'sandbox' names the whole sandbox pool; 'local:PATH_OR_HUB_ID' any other local model.")
    return 0


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    workers = sub.add_parser("workers", help="worker models")
    ws = workers.add_subparsers(dest="workers_command", metavar="ACTION", required=True)
    p = ws.add_parser("list", parents=[common], help="the workers a pool can name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_workers_list)
