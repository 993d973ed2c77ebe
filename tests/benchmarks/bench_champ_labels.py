"""The math grader on real CHAMP 0-shot final messages: agreement with the hand labels in
tests/conformance/champ_labels.jsonl, and each model's 0-shot accuracy on all 270 problems.

    python tests/benchmarks/bench_champ_labels.py                      # this checkout
    git show main:workbench/core/tasks/mathcheck.py > /tmp/old.py
    python tests/benchmarks/bench_champ_labels.py /tmp/old.py          # another grader
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import champ_dataset

MODELS = ("GPT-3.5", "GPT-4", "GPT-4 Turbo", "PaLM 2 Medium")
ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else ROOT / "workbench/core/tasks/mathcheck.py"
    spec = importlib.util.spec_from_file_location("grader_under_test", path)
    assert spec and spec.loader
    grader = importlib.util.module_from_spec(spec)
    sys.modules["grader_under_test"] = grader
    spec.loader.exec_module(grader)
    problems = champ_dataset.load("v0").problems

    def final(pid: str, model: str) -> str:
        return problems[pid].conversations[f"{model}|0-Shot"].messages[-1].text or ""

    labels = ROOT / "tests/conformance/champ_labels.jsonl"
    items = [json.loads(line) for line in labels.read_text().splitlines() if line.strip()]
    false_accepts = false_rejects = 0
    for item in items:
        paid = grader.check_here(problems[item["id"]].answer, final(item["id"], item["model"]))
        paid_it = paid["reward"] == 1.0
        false_accepts += paid_it and item["label"] == "wrong"
        false_rejects += (not paid_it) and item["label"] == "right"
    agreement = (len(items) - false_accepts - false_rejects) / len(items)
    print(
        f"labels: {len(items)} items, agreement {agreement:.3f}, "
        f"false accepts {false_accepts}, false rejects {false_rejects}"
    )
    for model in MODELS:
        paid = sum(
            grader.check_here(p.answer, final(pid, model))["reward"] for pid, p in problems.items()
        )
        n = len(problems)
        rate = paid / n
        half = 1.96 * (rate * (1 - rate) / n) ** 0.5
        print(f"{model}: {int(paid)}/{n} = {rate:.3f} (95% normal interval ±{half:.3f})")


if __name__ == "__main__":
    main()
