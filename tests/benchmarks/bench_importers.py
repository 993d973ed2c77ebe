"""How long importing MMLU-Pro's published outputs takes, and loading the pool for a run.

    nice -n 10 python tests/benchmarks/bench_importers.py --out docs/results/data/mmlu-pro-import.json

Two pools of MMLU-Pro's official files (the shared copies, else downloaded and checked:
tests/support/mmlu_pro.py), each imported with ``--drop-mismatched`` into a fresh
workspace, in a child process of its own (its peak memory is the import's): all nine
files, and MMLU-Pro's own small-6 pool. Per pool: each file's read time, the check, the
answers written, the suite written and read back, and the pool read back for the
listing; the total (median of ``--repeats``). Then, in another fresh child, what a run
pays before its first episode: the pool and the suite loaded (``build_pool`` and
``load_suite``), and the pickling of the pool a Ray run ships to its actors.

Each imported answer is also checked against outside references: MMLU-Pro's own letter
(``pred``): its accuracy (``pred == answer``, null counted wrong) beside the one MMLU-Pro's
README publishes, and how often our choice grade of the same chain of thought agrees
with it. Times are wall seconds on a shared machine: the results file keeps the load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from results import write_results  # noqa: E402

from tests.support.mmlu_pro import ALL_NINE, SMALL_SIX, mmlu_pro_file  # noqa: E402

POOLS = {"nine": ALL_NINE, "six": SMALL_SIX}
# MMLU-Pro's README (eval_results), as the shared folder's README quotes it: pred == answer
PUBLISHED = {
    "Meta-Llama-3_1-8B-Instruct": 0.442,
    "mathstral-7B": 0.420,
    "Phi-3-mini-4k-instruct": 0.415,
    "gemma-7b": 0.324,
    "Mistral-7B-Instruct-v0.2": 0.288,
    "Qwen1.5-7B-Chat": 0.264,
    "gemini-1.5-flash-002": 0.639,
    "Meta-Llama-3_1-70B-Instruct": 0.628,
    "jamba-1.5-large": 0.493,
}


def import_once(pool: str, workspace: Path) -> dict:
    """One import (in this process): each stage's wall and CPU seconds, the peak memory."""
    from workbench.core.importers.build import ImportOptions
    from workbench.core.importers.mmlu_pro import import_mmlu_pro
    from workbench.core.workspace import Workspace

    files = [mmlu_pro_file(m) for m in POOLS[pool]]
    marks: list[tuple[str, int, str, float, float]] = []

    def mark(stage: str, done: int = 0, item: str = "") -> None:
        marks.append((stage, done, item, time.perf_counter(), time.process_time()))

    mark("start")
    info = import_mmlu_pro(
        Workspace.open(workspace), [(None, f) for f in files], pool,
        ImportOptions(drop_mismatched=True),
        progress=lambda e: mark(e.stage, e.done, e.item),
    )  # fmt: skip
    mark("end")
    out: dict = {}
    for clock, suffix in ((3, "_s"), (4, "_cpu_s")):
        at = {(m[0], m[1]): m[clock] for m in reversed(marks)}  # each stage's first mark
        reads = [m for m in marks if m[0] == "read"]
        out["per_file" + suffix] = {
            reads[i][2]: reads[i + 1][clock] - reads[i][clock]
            for i in range(len(reads) - 1)
            if reads[i][2]
        }
        start, end = at[("start", 0)], at[("end", 0)]
        out["total" + suffix] = end - start
        out["read" + suffix] = reads[-1][clock] - start
        out["check" + suffix] = at[("write", 0)] - at[("check", 0)]
        out["write" + suffix] = at[("suite", 0)] - at[("write", 0)]
        out["suite" + suffix] = at[("suite", 1)] - at[("suite", 0)]
        out["read_back" + suffix] = end - at[("suite", 1)]
    notes = "\n".join(info.notes)
    return {
        **out,
        "answers": info.answers,
        "questions": info.workers[0].suite_tasks,
        "differing": sum(int(n) for n in re.findall(r"(\d+) question\(s\) differ", notes)),
        "cut_answers": sum(int(n) for n in re.findall(r"(\d+) question\(s\) with fewer", notes)),
        "notes": list(info.notes),
        "workers": len(info.workers),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def load_once(pool: str, workspace: Path) -> dict:
    """What a run pays for the imported pool (in a fresh process): the pool's workers
    built and the suite loaded, and the pickle Ray ships to its actors (wall and CPU)."""
    import pickle

    from workbench.core.tasks.suites import load_suite
    from workbench.core.workers.pool import build_pool
    from workbench.core.workers.recorded import load_recorded_pool
    from workbench.core.workspace import Workspace

    ws = Workspace.open(workspace)
    out: dict = {}

    def timed(name, call):
        wall, cpu = time.perf_counter(), time.process_time()
        value = call()
        out[f"{name}_s"] = time.perf_counter() - wall
        out[f"{name}_cpu_s"] = time.process_time() - cpu
        return value

    workers = timed("pool", lambda: build_pool([f"recorded:{pool}"], workspace=ws))
    suite = timed("suite", lambda: load_suite(pool, ws))
    shipped = timed("ship_pickle", lambda: pickle.dumps({pool: load_recorded_pool(ws, pool)}))
    timed("ship_unpickle", lambda: pickle.loads(shipped))
    return {
        **out,
        "ship_mb": len(shipped) / 1e6,
        "workers": len(workers),
        "tasks": len(suite),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def references(pool: str, workspace: Path) -> list[dict]:
    """Per worker: MMLU-Pro's own letter's accuracy, and our grade's agreement with it."""
    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.suites import load_suite
    from workbench.core.workers.pool import build_pool
    from workbench.core.workspace import Workspace

    ws = Workspace.open(workspace)
    suite = load_suite(pool, ws)
    rows = []
    for worker in build_pool([f"recorded:{pool}"], workspace=ws):
        model = worker.id.rsplit("/", 1)[1]
        answered = pred_right = ours_right = agree = 0
        for task in suite.tasks:
            rec = worker.table.get(task.id)  # type: ignore[attr-defined]
            if rec is None:
                continue
            answered += 1
            theirs = rec.meta["pred"] == task.answer
            ours = grade(task, rec.response).reward == 1.0
            pred_right += theirs
            ours_right += ours
            agree += theirs == ours
        rows.append(
            {
                "worker": model,
                "answered": answered,
                "pred_accuracy": pred_right / answered,
                "published_accuracy": PUBLISHED[model],
                "our_accuracy": ours_right / answered,
                "agreement": agree / answered,
            }
        )
        print(
            f"{model:30s} answered {answered:6d}  pred {pred_right / answered:.3f} "
            f"(published {PUBLISHED[model]:.3f})  ours {ours_right / answered:.3f}  "
            f"agreement {agree / answered:.4f}",
            file=sys.stderr,
        )
    return rows


def child(what: str, pool: str, workspace: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", what, "--pool", pool, "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} {pool} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results file here")
    parser.add_argument("--repeats", type=int, default=3, help="imports per pool (median)")
    parser.add_argument("--child", choices=("import", "load", "references"), help=argparse.SUPPRESS)
    parser.add_argument("--pool", choices=sorted(POOLS), help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run = {"import": import_once, "load": load_once, "references": references}[args.child]
        print(json.dumps(run(args.pool, args.workspace)))
        return
    for pool in POOLS.values():  # fetched (or found) before any clock starts
        for model in pool:
            mmlu_pro_file(model)
    figures: dict = {}
    tables: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pool in POOLS:
            runs = []
            for repeat in range(args.repeats):
                workspace = Path(tmp) / f"{pool}-{repeat}"
                runs.append(child("import", pool, workspace))
                print(f"{pool}: import {repeat + 1}: {runs[-1]['total_s']:.1f} s", file=sys.stderr)
            middle = sorted(runs, key=lambda r: r["total_s"])[len(runs) // 2]
            loaded = child("load", pool, Path(tmp) / f"{pool}-0")
            rows = child("references", pool, Path(tmp) / f"{pool}-0")
            for row in rows:
                print(f"{pool}: {row}", file=sys.stderr)
            for clock in ("_s", "_cpu_s"):
                for stage in ("total", "read", "check", "write", "suite", "read_back"):
                    figures[f"{pool}/{stage}{clock}"] = round(middle[stage + clock], 2)
                per_file = statistics.median(middle["per_file" + clock].values())
                figures[f"{pool}/per_file_median{clock}"] = round(per_file, 2)
            for key in ("answers", "questions", "workers", "differing", "cut_answers"):
                figures[f"{pool}/{key}"] = middle[key]
            tables[f"{pool}_notes"] = middle["notes"]
            figures[f"{pool}/peak_rss_mb"] = round(middle["peak_rss_mb"])
            figures[f"{pool}/total_all_s"] = [round(r["total_s"], 2) for r in runs]
            for key, value in loaded.items():
                figures[f"{pool}/load/{key}"] = (
                    round(value, 2) if isinstance(value, float) else value
                )
            figures[f"{pool}/agreement_min"] = round(min(r["agreement"] for r in rows), 4)
            tables[f"{pool}_files"] = [
                {"file": name, "read_s": round(seconds, 2),
                 "read_cpu_s": round(middle["per_file_cpu_s"][name], 2),
                 "zip_mb": round(Path(mmlu_pro_file(_model(name))).stat().st_size / 1e6, 1)}
                for name, seconds in middle["per_file_s"].items()
            ]  # fmt: skip
            tables[f"{pool}_workers"] = [
                {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows
            ]
    for key, value in figures.items():
        print(f"{key:32s} {value}", file=sys.stderr)
    if args.out:
        write_results(args.out, figures, **tables, cpus=os.cpu_count())


def _model(file_name: str) -> str:
    from workbench.core.importers.mmlu_pro import model_of

    return model_of(Path(file_name))


if __name__ == "__main__":
    main()
