"""What the math grader pays, before and after the answer rules (docs/guides/grading.md,
"What counts as stating a final answer"), and how long it takes per answer.

    python tests/benchmarks/bench_answer_rules.py [--before REV] \
        [--out docs/results/data/answer-rules.json]

Graded, with this checkout's grader and (``--before``) with commit REV's (its
``workbench`` package extracted alone and run in a subprocess, as
``bench_champ_grading.py`` does):

- the hand labels: CHAMP's 260 (``tests/conformance/champ_labels.jsonl``) and the 132
  yes/no answers (``champ_yes_no_labels.jsonl``): false accepts and false rejects;
- the issue's three cases and their variants: the question's own expression of 40 seeded
  arithmetic tasks given bare, stated and boxed (an echo: paid is a false accept) and
  their values in the same shapes (unpaid is a false reject); every CHAMP yes/no problem
  with a final marker that contradicts or repeats its first word; closed forms written as
  double factorials and products, right and wrong;
- the local models' recorded answers, when ``tests/conformance/local_answers.jsonl`` holds
  any (each labelled by hand): false accepts and rejects, and each model's accuracy.

Grading time is the wall time of grading every answer once, divided by the answers
(the helper process started beforehand), on a machine whose load the results file notes.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

from workbench.core.tasks import Task, grade, load_suite  # noqa: E402

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
CLOSED_FORMS = [  # (reference, answer, right)
    ("(2n)!/(2^n*n!)", "\\boxed{(2n-1)!!}", True),
    ("(2n)!/(2^n*n!)", "\\boxed{\\prod_{k=1}^{n}(2k-1)}", True),
    ("(2n)!/(2^n*n!)", "\\boxed{1 \\cdot 3 \\cdot 5 \\cdots (2n-1)}", True),
    ("(2n)!/(2^n*n!)", "\\boxed{\\frac{(2n)!}{(2n)!!}}", True),
    ("2^floor(n/2)*floor(n/2)!", "\\boxed{(2\\lfloor n/2 \\rfloor)!!}", True),
    ("2^floor(n/2)*floor(n/2)!", "\\boxed{2^{\\lfloor n/2 \\rfloor}\\lfloor n/2 \\rfloor!}", True),
    ("x(x-1)(x-2)...(x-2022)", "\\boxed{\\prod_{k=0}^{2022}(x-k)}", True),
    ("n!/(2n)", "\\boxed{\\frac{(n-1)!}{2}}", True),
    ("(2n)!/(2^n*n!)", "\\boxed{(2n+1)!!}", False),
    ("(2n)!/(2^n*n!)", "\\boxed{(2n)!!}", False),
    ("(2n)!/(2^n*n!)", "\\boxed{(2n-1)!}", False),
    ("(2n)!/(2^n*n!)", "\\boxed{1 \\cdot 3 \\cdot 5 \\cdots (2n+1)}", False),
    ("2^floor(n/2)*floor(n/2)!", "\\boxed{(2\\lceil n/2 \\rceil)!!}", False),
    ("x(x-1)(x-2)...(x-2022)", "\\boxed{\\prod_{k=0}^{2021}(x-k)}", False),
    ("n!/(2n)", "\\boxed{(n-1)!!}", False),
]  # fmt: skip


def labelled(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def cases() -> list[dict]:
    """Every graded case: its set, task, answer and whether it is right."""
    import champ_dataset

    problems = champ_dataset.load("v0").problems
    out: list[dict] = []

    def champ(row: dict, which: str) -> None:
        problem = problems[row["problem"]]
        answer = problem.conversations[f"{row['model']}|0-Shot"].messages[-1].text or ""
        out.append({"set": which, "model": row["model"], "reference": problem.answer,
                    "prompt": problem.text, "answer": answer, "right": row["label"] == "right"})  # fmt: skip

    for row in labelled(CONFORMANCE / "champ_labels.jsonl"):
        champ(row, "champ-labels")
    for row in labelled(CONFORMANCE / "champ_yes_no_labels.jsonl"):
        champ(row, "champ-yes-no")
    arithmetic = [
        t for t in load_suite("arithmetic").tasks
        if re.match(r"(?:What is|Compute|Evaluate) ", t.prompt)
    ]  # fmt: skip
    for task in random.Random(0).sample(arithmetic, 40):
        match = re.match(r"(?:What is|Compute|Evaluate) (.+?)[?.](?:\s|$)", task.prompt)
        assert match
        for shape in ("%s", "The answer is %s.", "\\boxed{%s}"):
            for text, right in ((match.group(1), False), (task.answer, True)):
                out.append({"set": "echo", "model": "", "reference": task.answer,
                            "prompt": task.prompt, "answer": shape % text, "right": right})  # fmt: skip
    for problem in problems.values():
        ref = problem.answer.strip()
        if ref not in ("Yes", "No"):
            continue
        other = "Yes" if ref == "No" else "No"
        for answer, right in (
            (f"{other} contradiction arises. Answer: {ref}", True),
            (f"{ref} contradiction arises. Answer: {other}", False),
            (f"Answer: {ref}. Final answer: {other}", False),
            (f"{ref}. So the final answer is \\boxed{{{other}}}.", False),
        ):
            out.append({"set": "yes-no-markers", "model": "", "reference": ref,
                        "prompt": problem.text, "answer": answer, "right": right})  # fmt: skip
    for reference, answer, right in CLOSED_FORMS:
        out.append({"set": "closed-forms", "model": "", "reference": reference,
                    "prompt": "Find it.", "answer": answer, "right": right})  # fmt: skip
    suites = {name: {t.id: t for t in load_suite(name).tasks} for name in ("arithmetic", "mixed")}
    for row in labelled(CONFORMANCE / "local_answers.jsonl"):
        task = suites[row["suite"]][row["task"]]
        out.append({"set": "local-models", "model": row["worker"], "reference": task.answer,
                    "prompt": task.prompt, "answer": row["answer"], "right": row["label"] == "right",
                    "suite": row["suite"]})  # fmt: skip
    return out


def grade_all(rows: list[dict]) -> tuple[list[bool], float]:
    """Whether each answer is paid, and the seconds per answer."""
    grade(Task(id="w", kind="math", prompt="", answer="x+1"), "\\boxed{x+1}")  # start the helper
    started = time.perf_counter()
    paid = [
        grade(Task(id="c", kind="math", prompt=r["prompt"], answer=r["reference"]),
              r["answer"]).reward == 1.0
        for r in rows
    ]  # fmt: skip
    return paid, (time.perf_counter() - started) / max(1, len(rows))


def summary(rows: list[dict], paid: list[bool]) -> dict:
    out: dict = {}
    for which in dict.fromkeys(r["set"] for r in rows):
        pairs = [(p, r["right"]) for p, r in zip(paid, rows, strict=True) if r["set"] == which]
        out[f"{which}/n"] = len(pairs)
        out[f"{which}/false_accepts"] = sum(p and not right for p, right in pairs)
        out[f"{which}/false_rejects"] = sum(right and not p for p, right in pairs)
        out[f"{which}/paid"] = sum(p for p, _ in pairs)
    for model in sorted({r["model"] for r in rows if r["set"] == "local-models"}):
        chosen = [
            (p, r) for p, r in zip(paid, rows, strict=True)
            if r["set"] == "local-models" and r["model"] == model and r["suite"] == "arithmetic"
        ]  # fmt: skip
        if chosen:
            out[f"local-models/{model}/arithmetic/n"] = len(chosen)
            out[f"local-models/{model}/arithmetic/paid"] = sum(p for p, _ in chosen)
            out[f"local-models/{model}/arithmetic/right"] = sum(r["right"] for _, r in chosen)
    return out


def earlier(rev: str) -> dict:
    """Commit ``rev``'s grader on the same cases: its ``workbench`` package alone, this file
    run on it in a subprocess from a folder outside the checkout."""
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", rev, "workbench"], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        out = Path(tmp) / "paid.json"
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--json", str(out)],
            check=True, cwd=tmp, env={**os.environ, "PYTHONPATH": tmp},
        )  # fmt: skip
        return json.loads(out.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="also grade with this commit's grader")
    parser.add_argument("--json", type=Path, help="write whether each case is paid here")
    parser.add_argument("--out", type=Path, help="write the results file here")
    args = parser.parse_args()
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    rows = cases()
    paid, per_answer = grade_all(rows)
    if args.json:
        args.json.write_text(json.dumps({"paid": paid, "seconds_per_answer": per_answer}))
        return
    graders = {"current": {**summary(rows, paid), "seconds_per_answer": round(per_answer, 4)}}
    if args.before:
        before = earlier(args.before)
        graders[args.before] = {
            **summary(rows, before["paid"]),
            "seconds_per_answer": round(before["seconds_per_answer"], 4),
        }
    figures = {"answers": len(rows)}
    for name, values in graders.items():
        print(name)
        for key, value in values.items():
            print(f"  {key}: {value}")
            figures[f"{name}/{key}"] = value
    if args.out:
        write_results(args.out, figures, graders=graders)


if __name__ == "__main__":
    main()
