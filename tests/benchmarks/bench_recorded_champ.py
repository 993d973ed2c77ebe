"""Each recorded CHAMP worker alone on all 270 problems, graded as an episode grades its
answer (``tasks.graders.grade``), with 95% Wilson intervals; the recorded oracle of the
four 0-shot workers (any right), uniformly random routing among them (expected: the mean
of the four), and GPT-4 Turbo's 0-shot and 5-shot answers together.

    python tests/benchmarks/bench_recorded_champ.py
    python tests/benchmarks/bench_recorded_champ.py --crossval tests/benchmarks/configs/champ-recorded.toml \
        --folds 5 --out docs/results/data/champ.json

With ``--crossval CONFIG`` it also runs ``trinity-workbench crossval CONFIG --folds K`` in a
fresh workspace (a subprocess, timed) and keeps its report: the trained coordinator, each
model alone, random routing and the recorded oracle, cross-validated, with the paired
differences against the best single worker overall and per category. ``--out`` writes
the results file (tests/benchmarks/results.py) that docs/results/champ.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import ROOT, write_results  # noqa: E402

from workbench.core.stats import wilson  # noqa: E402
from workbench.core.tasks.graders import grade  # noqa: E402
from workbench.core.tasks.suites import load_suite  # noqa: E402
from workbench.core.workers.recorded import CHAMP_MODELS, champ_tables  # noqa: E402


def alone() -> dict:
    started = time.perf_counter()
    tasks = load_suite("champ").tasks
    tables = champ_tables()
    right: dict[str, set[str]] = {}
    rows = []
    print(f"{'worker':34s} {'answered':>8s} {'right':>6s}  accuracy (95% Wilson)")
    n = len(tasks)
    for wid, table in tables.items():
        right[wid] = {
            t.id for t in tasks if t.id in table and grade(t, table[t.id].response).reward == 1.0
        }
        k = len(right[wid])
        low, high = wilson(k, n)
        print(f"{wid:34s} {len(table):8d} {k:6d}  {k / n:.3f} [{low:.3f}, {high:.3f}]")
        rows.append(
            {"system": wid, "answered": len(table), "right": k, "n": n,
             "accuracy": k / n, "ci_low": low, "ci_high": high}
        )  # fmt: skip
    zero = [f"recorded:champ/{m}" for m in CHAMP_MODELS]
    for name, ids in (
        ("oracle of the four 0-shot", zero),
        (
            "gpt-4-turbo 0-shot or 5-shot",
            ["recorded:champ/gpt-4-turbo", "recorded:champ/gpt-4-turbo-5shot"],
        ),
    ):
        k = len(set().union(*(right[w] for w in ids)))
        low, high = wilson(k, n)
        print(f"{name:34s} {'':8s} {k:6d}  {k / n:.3f} [{low:.3f}, {high:.3f}]")
        rows.append(
            {"system": name, "answered": None, "right": k, "n": n,
             "accuracy": k / n, "ci_low": low, "ci_high": high}
        )  # fmt: skip
    mean = sum(len(right[w]) for w in zero) / len(zero)
    print(f"{'random routing (expected)':34s} {'':8s} {mean:6.1f}  {mean / n:.3f}")
    rows.append(
        {"system": "random routing (expected)", "answered": None, "right": mean, "n": n,
         "accuracy": mean / n, "ci_low": None, "ci_high": None}
    )  # fmt: skip
    print(f"graded in {time.perf_counter() - started:.0f} s")
    return {"rows": rows, "grade_seconds": round(time.perf_counter() - started, 1)}


def crossval(config: Path, folds: int, seed: int | None, generations: int | None) -> dict:
    from workbench.core.config import RunConfig

    loaded = RunConfig.load(config)
    with tempfile.TemporaryDirectory(prefix="champ-cv-") as tmp:
        if generations is not None:  # the config with another budget, in the temporary folder
            loaded = loaded.replace(budget={"generations": generations})
            config = Path(tmp) / config.name
            config.write_text(loaded.to_toml(), encoding="utf-8")
        command = [
            sys.executable, "-m", "workbench", "--workspace", f"{tmp}/ws", "crossval",
            str(config), "--folds", str(folds), "--out", f"{tmp}/out", "--quiet",
        ]  # fmt: skip
        if seed is not None:
            command += ["--seed", str(seed)]
        started = time.perf_counter()
        subprocess.run(command, check=True, cwd=ROOT, env={**os.environ})
        wall = time.perf_counter() - started
        report = json.loads(Path(f"{tmp}/out/crossval.json").read_text(encoding="utf-8"))
        report["routing"] = routing(Path(f"{tmp}/ws"), report["evaluations"])
    report["wall_seconds"] = round(wall, 1)
    report["generations"] = loaded.budget.generations
    return report


def routing(workspace: Path, evaluations: list[str]) -> dict[str, dict[str, int]]:
    """How often the coordinator sent a problem to each worker (its first turn, over every
    fold's evaluation), and how often that worker had no recorded answer (the mask then
    moved the choice: the turn names the worker that answered)."""
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace

    counts: dict[str, dict[str, int]] = {}
    with Store.open(Workspace.open(workspace)) as store:
        for eval_id in evaluations:
            for summary in store.list_episodes(eval_id, candidate=0):
                turns = store.get_episode(summary.id).turns
                if not turns:
                    continue
                d = counts.setdefault(turns[0].worker, {"problems": 0, "right": 0})
                d["problems"] += 1
                d["right"] += int(summary.reward == 1.0)
    return counts


def figures_of(single: dict, cv: dict | None) -> dict:
    figures: dict = {}
    for row in single["rows"]:
        key = row["system"].removeprefix("recorded:champ/")
        figures[f"alone/{key}/accuracy"] = round(row["accuracy"], 4)
        figures[f"alone/{key}/right"] = row["right"]
        if row["answered"] is not None:
            figures[f"alone/{key}/answered"] = row["answered"]
        if row["ci_low"] is not None:
            figures[f"alone/{key}/ci"] = [round(row["ci_low"], 4), round(row["ci_high"], 4)]
    figures["champ_paper/gpt-4-turbo"] = 0.581
    if cv is None:
        return figures
    figures["cv/generations"] = cv["generations"]
    figures["cv/folds"] = cv["folds"]
    figures["cv/seed"] = cv["seed"]
    figures["cv/best_single"] = cv["best_single"]
    figures["cv/train_seconds"] = cv["train_seconds"]
    figures["cv/wall_seconds"] = cv["wall_seconds"]
    for s in cv["systems"]:
        name = s["name"].removeprefix("single:").removeprefix("recorded:champ/")
        figures[f"cv/{name}/accuracy"] = round(s["accuracy"], 4)
        figures[f"cv/{name}/right"] = round(s["accuracy"] * s["n"], 1)
        figures[f"cv/{name}/ci"] = [round(s["ci_low"], 4), round(s["ci_high"], 4)]
    for p in cv["paired"]:
        name = p["system"].removeprefix("single:").removeprefix("recorded:champ/")
        figures[f"cv/{name}/vs_best/difference"] = round(p["difference"], 4)
        figures[f"cv/{name}/vs_best/ci"] = [round(p["ci_low"], 4), round(p["ci_high"], 4)]
        figures[f"cv/{name}/vs_best/wins"] = p["wins"]
        figures[f"cv/{name}/vs_best/losses"] = p["losses"]
        figures[f"cv/{name}/vs_best/p_value"] = float(f"{p['p_value']:.3g}")
    for worker, d in cv["routing"].items():
        name = worker.removeprefix("recorded:champ/")
        figures[f"cv/coordinator/routed/{name}"] = d["problems"]
        figures[f"cv/coordinator/routed/{name}/right"] = d["right"]
    for group, pairs in cv["paired_by_category"].items():
        for p in pairs:
            if p["system"] != "coordinator":
                continue
            figures[f"cv/by_category/{group}/n"] = p["n"]
            figures[f"cv/by_category/{group}/difference"] = round(p["difference"], 4)
            figures[f"cv/by_category/{group}/ci"] = [round(p["ci_low"], 4), round(p["ci_high"], 4)]
            figures[f"cv/by_category/{group}/wins"] = p["wins"]
            figures[f"cv/by_category/{group}/losses"] = p["losses"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crossval", type=Path, metavar="CONFIG", help="also cross-validate")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None, help="the folds' seed")
    parser.add_argument("--generations", type=int, help="override the config's budget")
    parser.add_argument("--out", type=Path, help="write the results file here")
    args = parser.parse_args()
    single = alone()
    cv = crossval(args.crossval, args.folds, args.seed, args.generations) if args.crossval else None
    if cv is not None:
        print(f"crossval: {cv['train_seconds']:.0f} s training, {cv['wall_seconds']:.0f} s in all")
    if args.out:
        tables: dict = {"alone": single["rows"]}
        if cv is not None:
            tables["crossval"] = cv
        write_results(args.out, figures_of(single, cv), **tables)


if __name__ == "__main__":
    main()
