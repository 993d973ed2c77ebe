"""The waits of the README's first hour, as a user at an 80-column terminal meets them.

    python tests/benchmarks/bench_cli_waits.py --out docs/results/data/cli-waits.json
    python tests/benchmarks/bench_cli_waits.py --before 7c13405 --out ...

Each command runs in a real pseudo-terminal of 80 x 24 (``tests/support/terminal.py``),
in a new temporary folder that stands in for the user's data and cache directories
(``XDG_DATA_HOME``, ``XDG_CACHE_HOME``: a new workspace, and the offline model converted
from its GGUF file on the first command, as on a first install):

- ``train`` of the README's example (``workbench/resources/examples/sandbox.toml``): when
  the first output came, the longest silence, the whole time, the widest line and how
  many lines were wider than 80 columns, and how many log lines (``INFO``) showed;
- ``eval --run RUN`` and the README's ``run-episode`` on that run: the same waits (and
  on this code also the README's ``run-episode`` of before, an untrained coordinator
  over ``local:smollm2,sandbox``, whose SmolLM2 answer takes the longest);
- Ctrl-C pressed at ``--interrupt-at`` seconds into the example's ``train`` (each a new
  workspace, the model already converted): how long it took to return, and whether it
  printed the run id and the command that resumes it.

``--before COMMIT`` measures the same commands on that commit's code too (its tree
extracted with ``git archive``, run with this interpreter), in the same sitting, so the
two stand under the same machine load; its ``run-episode`` is its README's (an untrained
coordinator over ``local:smollm2,sandbox``). ``--generations N`` trains the example with a
shorter budget (the waits a user meets are the same; the run ends sooner). Writes every
wait, and a table of them, to ``--out`` (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from results import ROOT, write_results  # noqa: E402

from tests.support.terminal import Session, run_in_terminal  # noqa: E402

EXAMPLE = "workbench/resources/examples/sandbox.toml"
TASK = "mixed-math-001"
OLD_EPISODE = ["--backbone", "offline", "--pool", "local:smollm2,sandbox", "--suite", "mixed"]
LOG_LINE = re.compile(r"^(?:INFO|DEBUG)\b|\bINFO\b.*:\d+\]|^\[?\d{4}-\d\d-\d\d.*\bINFO\b", re.M)


def waits(session: Session, columns: int = 80) -> dict[str, object]:
    """What one command made its user wait for, and how its lines fit."""
    lines = session.screen_lines()
    return {
        "first_output_s": round(session.first_output_s or session.ended_at, 1),
        "longest_silence_s": round(session.longest_silence_s(), 1),
        "total_s": round(session.ended_at, 1),
        "exit_code": session.status,
        "widest_line": max((len(line) for line in lines), default=0),
        "lines_wider_than_80": len(session.wide_lines(columns)),
        "log_lines": len(LOG_LINE.findall("\n".join(lines))),
    }


def extract(commit: str, into: Path) -> Path:
    """The tree of ``commit`` (``git archive``) under ``into``."""
    archive = into / "tree.tar"
    subprocess.run(
        ["git", "archive", "--format=tar", f"--output={archive}", commit], cwd=ROOT, check=True
    )
    tree = into / f"tree-{commit}"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


class Tree:
    """One version of the CLI: ``python -m workbench`` run from its tree."""

    def __init__(self, label: str, root: Path, home: Path):
        self.label, self.root, self.home = label, root, home
        self.env = {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "PYTHONPATH": str(root),
        }

    def terminal(self, *args: str, env: dict[str, str] | None = None, **kwargs) -> Session:
        """``python -m workbench ARGS`` in an 80 x 24 terminal (``env`` over the tree's)."""
        argv = [sys.executable, "-m", "workbench", *args]
        print(f"[{self.label}] {' '.join(args)}", file=sys.stderr, flush=True)
        return run_in_terminal(argv, env={**self.env, **(env or {})}, cwd=str(self.root), **kwargs)

    def quiet(self, *args: str, data: Path | None = None) -> str:
        env = {**os.environ, **self.env}
        if data is not None:
            env["XDG_DATA_HOME"] = str(data)
        done = subprocess.run(
            [sys.executable, "-m", "workbench", *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def fresh_data(self, name: str) -> dict[str, str]:
        return {"XDG_DATA_HOME": str(self.home / name)}


def measure(
    tree: Tree, interrupt_at: list[float], new_episode: bool, example: str
) -> dict[str, object]:
    out: dict[str, object] = {}
    train = tree.terminal("train", example)
    out["train"] = waits(train)
    runs = json.loads(tree.quiet("runs", "list", "--json"))
    run_id = runs[-1]["id"]
    out["eval"] = waits(tree.terminal("eval", "--run", run_id))
    episode = ["--run", run_id] if new_episode else OLD_EPISODE
    out["run_episode"] = waits(tree.terminal("run-episode", *episode, "--task", TASK))
    if new_episode:  # the README's command before, on this code: the same wait, now shown
        out["run_episode_untrained"] = waits(
            tree.terminal("run-episode", *OLD_EPISODE, "--task", TASK)
        )
    stops = []
    for i, at in enumerate(interrupt_at):
        data = tree.home / f"interrupted-{i}"
        session = tree.terminal("train", example, interrupt_at=at, env={"XDG_DATA_HOME": str(data)})
        listed = json.loads(tree.quiet("runs", "list", "--json", data=data) or "[]")
        stopped_id = listed[-1]["id"] if listed else None
        text = "\n".join(session.screen_lines())
        resume = f"train --resume {stopped_id[:8]}" if stopped_id else None
        stops.append(
            {
                "pressed_at_s": round(session.interrupted_at or 0, 1),
                "returned_after_s": round(session.return_after_interrupt_s or 0, 1),
                "exit_code": session.status,
                "status": listed[-1]["status"] if listed else "no run yet",
                "generations_kept": listed[-1]["generations"] if listed else 0,
                "names_the_run": bool(stopped_id and stopped_id[:8] in text),
                "prints_the_resume_command": bool(resume and resume in text),
                "last_lines": session.screen_lines()[-3:],
            }
        )
    out["ctrl_c"] = stops
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="results file to write (JSON)")
    parser.add_argument("--before", metavar="COMMIT", help="also measure this commit's CLI")
    parser.add_argument(
        "--interrupt-at",
        default="45,90,150",
        help="seconds into a train at which Ctrl-C is pressed, comma-separated",
    )
    parser.add_argument(
        "--generations", type=int, help="the example with a shorter budget (its waits are the same)"
    )
    args = parser.parse_args()
    interrupt_at = [float(x) for x in args.interrupt_at.split(",") if x.strip()]
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    measured: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="cli-waits-") as scratch:
        example = str(ROOT / EXAMPLE)
        if args.generations:
            config = tomllib.loads((ROOT / EXAMPLE).read_text(encoding="utf-8"))
            config["budget"]["generations"] = args.generations
            example = str(Path(scratch) / "sandbox.toml")
            Path(example).write_text(tomli_w.dumps(config), encoding="utf-8")
        trees = [Tree("now", ROOT, Path(scratch) / "now")]
        if args.before:
            root = extract(args.before, Path(scratch))
            trees.insert(0, Tree(f"before ({args.before})", root, Path(scratch) / "before"))
        for tree in trees:
            key = "now" if tree.root == ROOT else "before"
            measured[key] = measure(tree, interrupt_at, key == "now", example)
            print(json.dumps(measured[key], indent=1), file=sys.stderr, flush=True)
    figures: dict[str, object] = {
        "generations": args.generations
        or tomllib.loads((ROOT / EXAMPLE).read_text())["budget"]["generations"],
        "load_average_at_start": load_at_start[0],
        "load_average_at_end": round(os.getloadavg()[0], 2),
        "terminal": {"columns": 80, "rows": 24},
        **measured,
    }
    if args.before:
        figures["before_commit"] = args.before
    write_results(args.out, figures, waits=waits_table(measured), ctrl_c=ctrl_c_table(measured))
    return 0


def waits_table(measured: dict[str, dict[str, object]]) -> dict[str, list]:
    columns = [
        "command",
        "code",
        "first output (s)",
        "longest silence (s)",
        "whole (s)",
        "widest line",
        "lines over 80",
        "log lines",
    ]
    rows = []
    for command in ("train", "eval", "run_episode", "run_episode_untrained"):
        for version, of in measured.items():
            w = of.get(command)
            if not isinstance(w, dict):
                continue
            rows.append(
                [
                    command.replace("_untrained", " (untrained)").replace("_", "-"),
                    version,
                    w["first_output_s"],
                    w["longest_silence_s"],
                    w["total_s"],
                    w["widest_line"],
                    w["lines_wider_than_80"],
                    w["log_lines"],
                ]
            )
    return {"columns": columns, "rows": rows}


def ctrl_c_table(measured: dict[str, dict[str, object]]) -> dict[str, list]:
    columns = [
        "code",
        "pressed at (s)",
        "returned after (s)",
        "run",
        "generations kept",
        "printed its id",
        "printed the resume command",
    ]
    rows = []
    for version, of in measured.items():
        stops = of["ctrl_c"]
        assert isinstance(stops, list)
        rows += [
            [
                version,
                stop["pressed_at_s"],
                stop["returned_after_s"],
                stop["status"],
                stop["generations_kept"],
                "yes" if stop["names_the_run"] else "no",
                "yes" if stop["prints_the_resume_command"] else "no",
            ]
            for stop in stops
        ]
    return {"columns": columns, "rows": rows}


if __name__ == "__main__":
    raise SystemExit(main())
