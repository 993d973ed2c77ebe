"""``doctor``: check a workspace database, and salvage what is readable from a damaged one."""

from __future__ import annotations

from pathlib import Path

from workbench.cli.common import UserError, print_json
from workbench.core.errors import EXIT_OK, EXIT_WORK_FAILED


def cmd_doctor(args) -> int:
    from workbench.core import doctor
    from workbench.core.workspace import Workspace

    root = Path(args.workspace).expanduser().resolve() if args.workspace else None
    if root is not None and not root.is_dir():
        raise UserError(f"there is no workspace folder {root}: check the --workspace path")
    workspace = Workspace(root) if root is not None else Workspace.open(None)
    try:
        report = doctor.check(workspace)
    except doctor.DoctorError as error:
        raise UserError(str(error)) from None
    salvaged = None
    if args.salvage:
        try:
            salvaged = doctor.salvage(workspace, args.salvage)
        except doctor.DoctorError as error:
            raise UserError(str(error)) from None
    if args.json:
        print_json(_as_json(report, salvaged))
    else:
        _print(report, salvaged)
    return EXIT_OK if report.healthy or salvaged is not None else EXIT_WORK_FAILED


def _print(report, salvaged) -> None:
    print(f"workspace database {report.path}")
    for note in report.notes:
        print(f"  note: {note}")
    print(f"  schema version {report.version}")
    print("  integrity: " + "; ".join(report.integrity))
    for table in report.tables:
        state = f"{table.rows} rows" if table.problem is None else table.problem
        print(f"  table {table.name:12s} {state}")
    if report.healthy:
        print("no damage found")
    else:
        print("damage found:")
        for problem in report.problems:
            print(f"  - {problem}")
        if salvaged is None:
            print(
                "copy what is readable into a new workspace with: trinity-workbench doctor "
                f"--workspace {report.path.parent} --salvage NEW_FOLDER"
            )
    if salvaged is not None:
        print(f"\nsalvaged into {salvaged.target} (the original database was not changed)")
        for table in salvaged.tables:
            print(f"  {table.name:12s} {table.copied} rows copied, lost: {table.lost}")
            for gap in table.gaps[:5]:
                print(f"      {gap}")
        if salvaged.suites:
            print(f"  imported suites copied: {', '.join(salvaged.suites)}")
        print("  integrity of the new database: " + "; ".join(salvaged.integrity))
        print(f"use it with --workspace {salvaged.target.parent}")


def _as_json(report, salvaged) -> dict:
    data = {
        "path": str(report.path),
        "healthy": report.healthy,
        "schema_version": report.version,
        "integrity": list(report.integrity),
        "tables": {t.name: {"rows": t.rows, "problem": t.problem} for t in report.tables},
        "problems": list(report.problems),
        "notes": list(report.notes),
    }
    if salvaged is not None:
        data["salvage"] = {
            "target": str(salvaged.target),
            "tables": {
                t.name: {
                    "copied": t.copied,
                    "source_rows": t.source_rows,
                    "orphans": t.orphans,
                    "lost": t.lost,
                    "gaps": t.gaps,
                }
                for t in salvaged.tables
            },
            "suites": list(salvaged.suites),
            "integrity": list(salvaged.integrity),
        }
    return data


def register(sub, common) -> None:
    """Add this module's commands to the parser."""
    p = sub.add_parser(
        "doctor",
        parents=[common],
        help="check a workspace database; --salvage copies what is readable into a new one",
        description="Check the workspace database (SQLite integrity check, schema version, "
        "tables) without changing it. Exit 0 if it is healthy, 1 if damage was found. With "
        "--salvage NEW_FOLDER, copy every readable row (and the imported suites) into a new "
        "workspace there and report what was lost; the damaged database is left as it is.",
    )
    p.add_argument(
        "--salvage", metavar="NEW_FOLDER", help="a new, empty folder for the salvaged workspace"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)
