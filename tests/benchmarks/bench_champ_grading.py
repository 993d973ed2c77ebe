"""CHAMP with real model answers: each model's 0-shot accuracy under the math grader, and
the grader's agreement with the hand labels of tests/conformance/champ_labels.jsonl.

    python tests/benchmarks/bench_champ_grading.py [--setting 0-Shot] [--json OUT]

For every one of the 270 CHAMP v0 problems and each of GPT-3.5, GPT-4, GPT-4 Turbo and
PaLM 2 Medium, the model's final message in ``--setting`` (its one-sentence summary; an
empty reply, cut by the length limit, scores 0) is graded against the problem's reference
by ``workbench.core.tasks.grade``, as a run grades a worker's answer. Printed: accuracy
per model and category with a 95% Wilson interval, then agreement and false accepts on
the labelled messages. GPT-4 Turbo's 0-shot figure is the one to set next to the CHAMP
paper's 58.1%.

To measure another version of the grader (say main's, for a before/after), run this file
with PYTHONPATH pointing at that version's checkout and from a folder outside this one:

    git -C REPO archive main workbench | tar -x -C /tmp/main_pkg
    cd /tmp && PYTHONPATH=/tmp/main_pkg python REPO/tests/benchmarks/bench_champ_grading.py

or let ``--before REV[,REV...]`` do that for each named commit (each graded in a
subprocess with only that commit's ``workbench`` package on its path), and ``--out`` write
the results file (tests/benchmarks/results.py) with this grader's and each earlier one's
accuracy and agreement figures:

    python tests/benchmarks/bench_champ_grading.py --before 000c052,86371b0 \
        --out docs/results/data/champ-grading.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from workbench.core.stats import wilson
from workbench.core.tasks import Task, grade

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

MODELS = ("GPT-3.5", "GPT-4", "GPT-4 Turbo", "PaLM 2 Medium")
LABELS = Path(__file__).resolve().parents[1] / "conformance" / "champ_labels.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setting", default="0-Shot", help="CHAMP prompt setting")
    parser.add_argument("--json", type=Path, help="write every verdict here")
    parser.add_argument("--before", help="also grade with these commits' graders (comma-separated)")
    parser.add_argument("--out", type=Path, help="write the results file here")
    args = parser.parse_args()
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    import champ_dataset

    problems = champ_dataset.load("v0").problems
    verdicts = {}
    start = time.monotonic()
    for identifier, problem in problems.items():
        task = Task(
            id=identifier, kind="math", prompt=problem.text, answer=problem.answer,
            category=problem.category,
        )  # fmt: skip
        for model in MODELS:
            answer = problem.conversations[f"{model}|{args.setting}"].messages[-1].text or ""
            result = grade(task, answer)
            verdicts[(identifier, model)] = {
                "problem": identifier, "model": model, "category": problem.category,
                "reward": result.reward, "rule": result.details.get("rule"),
                "extracted": result.details.get("extracted"),
            }  # fmt: skip
    elapsed = time.monotonic() - start
    print(f"CHAMP v0, {args.setting}: {len(problems)} problems x {len(MODELS)} models "
          f"graded in {elapsed:.1f} s")  # fmt: skip
    for model in MODELS:
        rewards = [v["reward"] for v in verdicts.values() if v["model"] == model]
        low, high = wilson(sum(rewards), len(rewards))
        by_category = defaultdict(list)
        for v in verdicts.values():
            if v["model"] == model:
                by_category[v["category"]].append(v["reward"])
        categories = ", ".join(f"{c} {sum(r):.0f}/{len(r)}" for c, r in sorted(by_category.items()))
        print(f"  {model:14s} {sum(rewards):4.0f}/{len(rewards)} = {sum(rewards) / len(rewards):.1%} "
              f"[{low:.1%}, {high:.1%}]  ({categories})")  # fmt: skip
    if args.setting == "0-Shot" and LABELS.is_file():
        rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
        for sample in ("random", None):
            chosen = [r for r in rows if sample is None or r["sample"] == sample]
            paid = [verdicts[(r["problem"], r["model"])]["reward"] == 1.0 for r in chosen]
            right = [r["label"] == "right" for r in chosen]
            agree = sum(p == g for p, g in zip(paid, right, strict=True))
            false_accepts = sum(p and not g for p, g in zip(paid, right, strict=True))
            false_rejects = sum(g and not p for p, g in zip(paid, right, strict=True))
            low, high = wilson(agree, len(chosen))
            print(f"  labels ({sample or 'all'}): {agree}/{len(chosen)} agree = "
                  f"{agree / len(chosen):.1%} [{low:.1%}, {high:.1%}], "
                  f"false accepts {false_accepts}, false rejects {false_rejects}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(list(verdicts.values()), indent=1), encoding="utf-8")
    if args.out:
        graders = {"current": summary(list(verdicts.values()))}
        graders["current"]["grade_seconds"] = round(elapsed, 1)
        for rev in (args.before or "").split(","):
            if rev.strip():
                graders[rev.strip()] = earlier(rev.strip(), args.setting)
        figures = {
            "setting": args.setting,
            "champ_paper/gpt-4-turbo": 0.581,
            "problems": len(problems),
            "messages": len(verdicts),
        }
        for name, g in graders.items():
            for key, value in g.items():
                figures[f"{name}/{key}"] = value
        write_results(args.out, figures, graders=graders)


def summary(verdicts: list[dict]) -> dict:
    """Accuracy per model (right, share, Wilson interval) and agreement with the labels."""
    out: dict = {}
    for model in MODELS:
        rewards = [v["reward"] for v in verdicts if v["model"] == model]
        n_right = int(sum(r == 1.0 for r in rewards))
        low, high = wilson(n_right, len(rewards))
        key = model.lower().replace(" medium", "").replace(" ", "-")
        out[f"{key}/right"] = n_right
        out[f"{key}/accuracy"] = round(n_right / len(rewards), 4)
        out[f"{key}/ci"] = [round(low, 4), round(high, 4)]
    paid_of = {(v["problem"], v["model"]): v["reward"] == 1.0 for v in verdicts}
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    for sample in ("random", None):
        chosen = [r for r in rows if sample is None or r["sample"] == sample]
        paid = [paid_of[(r["problem"], r["model"])] for r in chosen]
        right = [r["label"] == "right" for r in chosen]
        agree = sum(p == g for p, g in zip(paid, right, strict=True))
        low, high = wilson(agree, len(chosen))
        name = f"labels/{sample or 'all'}"
        out[f"{name}/n"] = len(chosen)
        out[f"{name}/agree"] = agree
        out[f"{name}/agreement"] = round(agree / len(chosen), 4)
        out[f"{name}/ci"] = [round(low, 4), round(high, 4)]
        out[f"{name}/false_accepts"] = sum(p and not g for p, g in zip(paid, right, strict=True))
        out[f"{name}/false_rejects"] = sum(g and not p for p, g in zip(paid, right, strict=True))
        # of the answers labelled right, how many this grader pays
        out[f"{name}/labelled_right"] = sum(right)
        out[f"{name}/right_paid"] = sum(p and g for p, g in zip(paid, right, strict=True))
        out[f"{name}/right_paid_share"] = round(out[f"{name}/right_paid"] / max(1, sum(right)), 4)
    # GPT-4 Turbo's accuracy divided by the share of right answers paid on the random sample:
    # what it would score if the grader missed no right answer (and paid no wrong one)
    share = out["labels/random/right_paid_share"]
    if share:
        out["gpt-4-turbo/accuracy_over_right_paid_share"] = round(
            out["gpt-4-turbo/accuracy"] / share, 4
        )
    return out


def earlier(rev: str, setting: str) -> dict:
    """The summary of commit ``rev``'s grader: its ``workbench`` package extracted alone,
    this file run on it in a subprocess from a folder outside the checkout."""
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", rev, "workbench"], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        out = Path(tmp) / "verdicts.json"
        env = {**os.environ, "PYTHONPATH": tmp}
        started = time.monotonic()
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--setting", setting, "--json", str(out)],
            check=True, cwd=tmp, env=env,
        )  # fmt: skip
        result = summary(json.loads(out.read_text(encoding="utf-8")))
        result["grade_seconds"] = round(time.monotonic() - started, 1)
        return result


if __name__ == "__main__":
    main()
