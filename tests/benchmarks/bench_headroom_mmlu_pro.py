"""The headroom check on real recorded pools of 12,000 questions: how long it takes, and
whether its figures agree with MMLU-Pro's own.

    python tests/benchmarks/bench_headroom_mmlu_pro.py --out docs/results/data/headroom-mmlu-pro.json

The pools are MMLU-Pro's published per-model outputs (``../shared/data/mmlu-pro/``, nine
official zips; its README says what they hold), the two of the pre-registered comparison
(tests/benchmarks/configs/mmlu-pro-preregistered.toml): ``small-6`` (six small models, on
the 12,032 questions all six answered) and ``mixed-5`` (five, on 12,012). For each, the
script turns the zips into today's import formats, a suite
JSONL (``suites import``) and a recorded-answers JSONL (``records import``), converting a
few fields (the question id as the task id, the options as the choices, each model's chain
of thought as its response); every question is put in the training split but the 32 of
the highest ids, which make the validation split a run needs, so the check measures 12,000.

Then, in a fresh workspace, it times ``headroom CONFIG --sample 0`` as a subprocess (wall
and CPU seconds of the whole command, and the check's own wall time) with every answer of
every model graded by the workbench's choice grader, and checks the figures against
outside references:

- MMLU-Pro's own extraction (each record's ``pred``) on the same questions: each model's
  accuracy, the any-right oracle, and the held-out gain of routing by category computed by
  the same function (``workbench.core.jobs.headroom_figures.analyse``) on ``pred``'s right and
  wrong;
- the figures published with the data (measured from outside on all the pool's questions,
  routing by category 5-fold cross-validated): on small-6 best single 0.442, any-of-six
  oracle 0.730, routing by category +2.1 points [+1.4, +2.9]; on mixed-5 0.639, 0.839 and
  +1.4 [+0.8, +2.0].
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import ROOT, write_results  # noqa: E402

from workbench.core.jobs.headroom_figures import Outcomes, analyse  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "mmlu-pro"
# the pools of tests/benchmarks/configs/mmlu-pro-preregistered.toml
POOLS = {
    "small-6": (
        "Meta-Llama-3_1-8B-Instruct",
        "mathstral-7B",
        "Phi-3-mini-4k-instruct",
        "Mistral-7B-Instruct-v0.2",
        "Qwen1.5-7B-Chat",
        "gemma-7b",
    ),
    "mixed-5": (
        "gemini-1.5-flash-002",
        "Meta-Llama-3_1-70B-Instruct",
        "jamba-1.5-large",
        "Meta-Llama-3_1-8B-Instruct",
        "mathstral-7B",
    ),
}
VALIDATION = 32  # questions of the highest ids: the validation split a run config needs
# published with the data (its README, "Pools measured from outside"): each pool on all
# the questions its models answered, routing by category 5-fold cross-validated over 3
# fold seeds, with a paired bootstrap interval
PUBLISHED = {
    "small-6": {
        "best_single": 0.442,
        "oracle": 0.730,
        "by_category_gain": 0.021,
        "by_category_ci": [0.014, 0.029],
    },
    "mixed-5": {
        "best_single": 0.639,
        "oracle": 0.839,
        "by_category_gain": 0.014,
        "by_category_ci": [0.008, 0.020],
    },
}


def load(model: str) -> list[dict]:
    """One model's records from its official zip."""
    name = f"model_outputs_{model}_5shots"
    path = DATA / f"{name}.zip"
    if not path.exists():
        sys.exit(f"{path} is missing: the MMLU-Pro zips belong in {DATA} (its README)")
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(f"{name}.json"))


def convert(models: tuple[str, ...], folder: Path) -> tuple[Path, Path, list[dict], dict]:
    """The suite and answers JSONL files of ``models`` on the questions all of them
    answered, those questions in id order, and each model's records by question id."""
    by_model = {m: {r["question_id"]: r for r in load(m)} for m in models}
    common = sorted(set.intersection(*(set(r) for r in by_model.values())))
    questions = [by_model[models[0]][q] for q in common]
    held = set(common[-VALIDATION:])
    suite, answers = folder / "suite.jsonl", folder / "answers.jsonl"
    with suite.open("w", encoding="utf-8") as f:
        for r in questions:
            options = r["options"]
            if isinstance(options, str):  # some files hold the list's Python repr
                options = ast.literal_eval(options)
            task = {
                "id": f"q{r['question_id']}",
                "kind": "choice",
                "prompt": r["question"],
                "choices": options,
                "answer": r["answer"],
                "category": r["category"],
                "split": "validation" if r["question_id"] in held else "train",
            }
            f.write(json.dumps(task, ensure_ascii=False) + "\n")
    with answers.open("w", encoding="utf-8") as f:
        for m in models:
            for q in common:
                r = by_model[m][q]
                text = r.get("generated_text") or r.get("model_outputs") or ""
                if text.strip():  # no answer: no line (the import's rule)
                    line = {"task_id": f"q{q}", "worker": m, "response": text}
                    f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return suite, answers, questions, by_model


def cli(workspace: Path, *args: str) -> tuple[float, float]:
    """Run ``trinity-workbench ARGS`` in ``workspace``: its wall and CPU seconds."""
    command = [sys.executable, "-m", "workbench", "--workspace", str(workspace), *args]
    print("$", " ".join(command[1:]), file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, env={**os.environ}, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def pred_figures(models: tuple[str, ...], questions: list[dict], by_model: dict) -> dict:
    """MMLU-Pro's own extraction on the training questions: each model's accuracy and the
    check's figures (``analyse``) on pred == answer."""
    train = questions[:-VALIDATION]
    right = np.array(
        [[by_model[m][r["question_id"]]["pred"] == r["answer"] for r in train] for m in models]
    )
    outcomes = Outcomes(
        workers=models,
        tasks=tuple(str(r["question_id"]) for r in train),
        groups=tuple(r["category"] for r in train),
        right=right,
        cost=np.zeros(right.shape),
    )
    f = analyse(outcomes)
    assert f.held_out is not None
    return {
        "accuracy": {m: float(a) for m, a in zip(models, right.mean(axis=1), strict=True)},
        "best": f.best,
        "oracle": f.oracle[0],
        "gap": list(f.gap),
        "held_out": {
            "gain": f.held_out.gain,
            "ci": [f.held_out.gain_low, f.held_out.gain_high],
            "p_value": f.held_out.p_value,
            "accuracy": f.held_out.accuracy,
            "best_single": f.held_out.best_single,
        },
    }


def measure(pool: str, models: tuple[str, ...], folder: Path) -> tuple[dict, dict, dict]:
    """One pool: convert, import, check; its figures, the check's JSON and ``pred``'s."""
    figures: dict = {"models": list(models)}
    started = time.perf_counter()
    suite, answers, questions, by_model = convert(models, folder)
    figures["convert_seconds"] = round(time.perf_counter() - started, 1)
    figures["questions"] = len(questions)
    ws = folder / "ws"
    wall, _ = cli(ws, "suites", "import", str(suite), "--name", "mmlu-pro")
    figures["suite_import_seconds"] = round(wall, 1)
    wall, _ = cli(ws, "records", "import", str(answers), "--name", pool, "--suite", "mmlu-pro")
    figures["records_import_seconds"] = round(wall, 1)
    config = folder / "headroom.toml"
    config.write_text(
        f'[run]\nname = "headroom-{pool}"\n[pool]\nworkers = ["recorded:{pool}"]\n'
        '[tasks]\nsuite = "mmlu-pro"\n'
        '[protocol]\nroles = ["worker"]\nmax_turns = 1\ntemperature = 0.0\n',
        encoding="utf-8",
    )
    figures["load_before_check"] = [round(x, 2) for x in os.getloadavg()]
    wall, cpu = cli(ws, "headroom", str(config), "--sample", "0", "--out", str(folder / "h"))
    head = json.loads((folder / "h" / "headroom.json").read_text(encoding="utf-8"))
    figures["check/command_wall_seconds"] = round(wall, 1)
    figures["check/command_cpu_seconds"] = round(cpu, 1)
    figures["check/wall_seconds"] = round(head["wall_s"], 1)
    figures["check/n"] = head["n"]
    figures["check/left_out"] = sum(head["left_out"].values())
    figures["check/answers"] = head["cost"]["recorded"]
    figures["check/calls"] = head["cost"]["calls"]
    figures["check/best"] = head["best"].removeprefix(f"recorded:{pool}/")
    figures["check/sentence"] = head["sentence"]
    figures["check/oracle"] = round(head["oracle"][0], 4)
    figures["check/gap"] = [round(x, 4) for x in head["gap"]]
    held = head["held_out"]
    figures["check/held_out/gain"] = round(held["gain"], 4)
    figures["check/held_out/ci"] = [round(held["gain_low"], 4), round(held["gain_high"], 4)]
    figures["check/held_out/p_value"] = held["p_value"]
    figures["check/held_out/accuracy"] = round(held["accuracy"], 4)
    figures["check/held_out/best_single"] = round(held["best_single"], 4)
    figures["check/held_out/splits"] = held["repeats"]
    figures["check/held_out/per_split"] = [round(x, 4) for x in held["per_split"]]
    pred = pred_figures(models, questions, by_model)
    for w in head["workers"]:
        name = w["worker"].removeprefix(f"recorded:{pool}/")
        figures[f"check/{name}/accuracy"] = round(w["accuracy"], 4)
        figures[f"pred/{name}/accuracy"] = round(pred["accuracy"][name], 4)
    figures["pred/best"] = pred["best"]
    figures["pred/oracle"] = round(pred["oracle"], 4)
    figures["pred/gap"] = [round(x, 4) for x in pred["gap"]]
    figures["pred/held_out/gain"] = round(pred["held_out"]["gain"], 4)
    figures["pred/held_out/ci"] = [round(x, 4) for x in pred["held_out"]["ci"]]
    figures["pred/held_out/p_value"] = pred["held_out"]["p_value"]
    for key, value in PUBLISHED[pool].items():
        figures[f"published/{key}"] = value
    return figures, head, pred


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pools", default="small-6,mixed-5", help="comma-separated: small-6, mixed-5"
    )
    parser.add_argument("--out", type=Path, help="write the results file here")
    args = parser.parse_args()
    figures: dict = {}
    tables: dict = {}
    for pool in args.pools.split(","):
        if pool not in POOLS:
            sys.exit(f"unknown pool '{pool}': use {', '.join(POOLS)}")
        with tempfile.TemporaryDirectory(prefix=f"headroom-{pool}-") as tmp:
            got, head, pred = measure(pool, POOLS[pool], Path(tmp))
        figures.update({f"{pool}/{k}": v for k, v in got.items()})
        tables[pool] = {"headroom": head, "pred": pred}
        gc.collect()  # the pool's records (about 1 GB as Python objects) go before the next
    print(json.dumps(figures, indent=1))
    if args.out:
        write_results(args.out, figures, **tables)


if __name__ == "__main__":
    main()
