"""The headroom check and the cost-quality frontier on one pool, in a fresh workspace,
timed, with what the check cost and whether the training run after it reuses its answers.

    python tests/benchmarks/bench_headroom.py tests/benchmarks/configs/headroom-sandbox.toml \
        --penalties 0,300,1000,3000 --out docs/results/data/headroom-sandbox.json

Runs, as subprocesses of the CLI in one temporary workspace (cache read-write):

1. ``headroom CONFIG --sample N`` (default 100): each worker's accuracy, the one-turn
   oracle and its gap, the check's calls, tokens and dollars, its wall time;
2. ``train CONFIG``: one training run after the check; the response cache's rows and hits
   per provider are counted before and after, and each new row is put down to the split
   its task is in (a training task the check covered must cost no new call);
3. ``study frontier CONFIG --penalties ...``: one coordinator per penalty, each evaluated
   on the test split beside every single worker, random routing and the oracle.

On a simulated pool every figure also has its exact value; the script says whether each
measured 95% interval holds it. ``--out`` writes the results file (tests/benchmarks/
results.py) that docs/results/headroom-and-frontier.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import ROOT, write_results  # noqa: E402

from workbench.core.config import RunConfig  # noqa: E402
from workbench.core.tasks.suites import load_suite  # noqa: E402
from workbench.core.training.state import task_splits  # noqa: E402


def cli(workspace: Path, *args: str) -> float:
    """Run ``trinity-workbench ARGS`` in ``workspace``; its wall seconds."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "workbench", "--workspace", str(workspace), *args]
    print("$", " ".join(command[1:]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, cwd=ROOT, env={**os.environ})
    return time.perf_counter() - started


def cache_rows(workspace: Path) -> list[dict]:
    """The response cache's rows: provider, hits and the request's messages."""
    db = workspace / "workbench.sqlite3"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT key, provider, hits, request FROM responses").fetchall()
    return [
        {"key": k, "provider": p, "hits": h, "messages": json.loads(r).get("messages", [])}
        for k, p, h, r in rows
    ]


def by_provider(rows: list[dict]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        d = out.setdefault(r["provider"], {"rows": 0, "hits": 0})
        d["rows"] += 1
        d["hits"] += r["hits"]
    return out


def split_of(row: dict, splits: dict[str, list]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in row["messages"])
    for name, tasks in splits.items():
        if any(t.prompt in text for t in tasks):
            return name
    return "unknown"


def holds(value: float | None, low: float, high: float) -> bool | None:
    return None if value is None else bool(low - 1e-12 <= value <= high + 1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--penalties", required=True, help="cost penalties per dollar")
    parser.add_argument("--sample", type=int, default=100, help="the check's sample size")
    parser.add_argument("--out", type=Path, help="write the results file here")
    args = parser.parse_args()
    config = RunConfig.load(args.config)
    suite = load_suite(config.tasks.suite)
    splits = {k: list(v) for k, v in task_splits(config.tasks, suite).items()}
    figures: dict = {"pool": ", ".join(config.pool.workers), "suite": suite.name}
    tables: dict = {}
    with tempfile.TemporaryDirectory(prefix="headroom-") as tmp:
        ws, out = Path(tmp) / "ws", Path(tmp) / "out"
        # 1. the check
        wall = cli(
            ws, "headroom", str(args.config), "--sample", str(args.sample), "--out", f"{out}/h"
        )
        head = json.loads((out / "h" / "headroom.json").read_text(encoding="utf-8"))
        tables["headroom"] = head
        figures["headroom/wall_seconds"] = round(wall, 1)
        figures["headroom/n"] = head["n"]
        figures["headroom/best"] = head["best"]
        figures["headroom/sentence"] = head["sentence"]
        figures["headroom/spend"] = head["spend"]
        for key in ("calls", "tokens_in", "tokens_out", "cached", "recorded"):
            figures[f"headroom/cost/{key}"] = head["cost"][key]
        figures["headroom/cost/dollars"] = round(head["cost"]["dollars"], 6)
        checks: dict[str, bool | None] = {}
        for w in head["workers"]:
            name = w["worker"]
            figures[f"headroom/{name}/accuracy"] = round(w["accuracy"], 4)
            figures[f"headroom/{name}/ci"] = [round(w["ci_low"], 4), round(w["ci_high"], 4)]
            figures[f"headroom/{name}/dollars_per_task"] = round(w["dollars_per_task"], 7)
            if w.get("exact") is not None:
                figures[f"headroom/{name}/exact"] = round(w["exact"], 4)
                checks[f"headroom/{name}"] = holds(w["exact"], w["ci_low"], w["ci_high"])
        acc, low, high = head["oracle"]
        figures["headroom/oracle/accuracy"] = round(acc, 4)
        figures["headroom/oracle/ci"] = [round(low, 4), round(high, 4)]
        gap, glow, ghigh = head["gap"]
        figures["headroom/gap"] = round(gap, 4)
        figures["headroom/gap/ci"] = [round(glow, 4), round(ghigh, 4)]
        if head.get("exact_oracle") is not None:
            figures["headroom/oracle/exact"] = round(head["exact_oracle"], 4)
            figures["headroom/gap/exact"] = round(head["exact_gap"], 4)
            figures["headroom/by_category/exact"] = round(head["exact_by_category"], 4)
            checks["headroom/oracle"] = holds(head["exact_oracle"], low, high)
            checks["headroom/gap"] = holds(head["exact_gap"], glow, ghigh)
        # 2. a training run after the check: what it asks the workers anew
        before = cache_rows(ws)
        known = {r["key"] for r in before}
        wall = cli(ws, "train", str(args.config))
        after = cache_rows(ws)
        new = [r for r in after if r["key"] not in known]
        hits_before = by_provider(before)
        reuse = {}
        for provider, d in by_provider(after).items():
            old = hits_before.get(provider, {"rows": 0, "hits": 0})
            reuse[provider] = {
                "rows_after_check": old["rows"],
                "new_calls": d["rows"] - old["rows"],
                "hits_of_check_answers": sum(
                    r["hits"] for r in after if r["provider"] == provider and r["key"] in known
                )
                - old["hits"],
                "new_calls_by_split": {
                    s: sum(1 for r in new if r["provider"] == provider and split_of(r, splits) == s)
                    for s in ("train", "validation", "test", "unknown")
                },
            }
        tables["training_after_check"] = reuse
        figures["train/wall_seconds"] = round(wall, 1)
        for provider, d in reuse.items():
            figures[f"train/{provider}/check_answers"] = d["rows_after_check"]
            figures[f"train/{provider}/reused"] = d["hits_of_check_answers"]
            figures[f"train/{provider}/new_calls"] = d["new_calls"]
            for s, c in d["new_calls_by_split"].items():
                figures[f"train/{provider}/new_calls/{s}"] = c
        # 3. the frontier
        wall = cli(
            ws, "study", "frontier", str(args.config), "--penalties", args.penalties,
            "--out", f"{out}/f",
        )  # fmt: skip
        front = json.loads((out / "f" / "frontier.json").read_text(encoding="utf-8"))
        tables["frontier"] = front
        figures["frontier/wall_seconds"] = round(wall, 1)
        figures["frontier/penalties"] = args.penalties
        figures["frontier/best_single"] = front["best_single"]
        figures["frontier/cheapest_within_one_point"] = front["cheapest_within_one_point"]
        figures["frontier/best_at_best_single_cost"] = front["best_at_best_single_cost"]
        figures["frontier/spend"] = front["spend"]
        for p in front["points"]:
            name = p["name"]
            figures[f"frontier/{name}/accuracy"] = round(p["accuracy"], 4)
            figures[f"frontier/{name}/ci"] = [round(p["ci_low"], 4), round(p["ci_high"], 4)]
            figures[f"frontier/{name}/dollars_per_task"] = round(p["dollars"], 7)
            figures[f"frontier/{name}/dollars_ci"] = [
                round(p["dollars_low"], 7), round(p["dollars_high"], 7)
            ]  # fmt: skip
            figures[f"frontier/{name}/pareto"] = p["pareto"]
            figures[f"frontier/{name}/n"] = p["n"]
            if p.get("exact") is not None:
                figures[f"frontier/{name}/exact"] = round(p["exact"], 4)
                checks[f"frontier/{name}"] = holds(p["exact"], p["ci_low"], p["ci_high"])
            for k, v in (p.get("training") or {}).items():
                figures[f"frontier/{name}/training/{k}"] = (
                    round(v, 6) if isinstance(v, float) else v
                )
    if checks:
        figures["exact_within_interval"] = {k: v for k, v in checks.items()}
        figures["exact_within_interval/all"] = all(v for v in checks.values() if v is not None)
        figures["exact_within_interval/count"] = (
            f"{sum(1 for v in checks.values() if v)} of {len(checks)}"
        )
        for part in ("headroom", "frontier"):  # how many exact values each part checked
            figures[f"exact_within_interval/{part}"] = sum(
                1 for k in checks if k.startswith(f"{part}/")
            )
    print(json.dumps(figures, indent=1))
    if args.out:
        write_results(args.out, figures, **tables)


if __name__ == "__main__":
    main()
