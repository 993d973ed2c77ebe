"""Imitation's labels on the sandbox's choice tasks, read two ways from the same stored
episodes: the old rule (the lowest-index worker that solved a task, the first time) and
the best worker per task (``Imitation.label``, issue 15).

    python tests/benchmarks/bench_imitation_labels.py [--generations 5]
        [--out docs/results/data/imitation-labels.json]

Trains imitation at the example's budget (population 28 x 16 rollouts, one turn) with the
tiny test backbone: the labels depend only on the sandbox's outcomes, not the backbone.
``--out`` also writes the shares as a results file (``tests/benchmarks/results.py``), with
each worker's declared skill on the choice category beside them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from tests.conftest import build_tiny_lm
from tests.core.test_training import config
from workbench.core.coordinator import Backbone, HeadConfig
from workbench.core.jobs.train import train
from workbench.core.optimizers.baselines import Imitation
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.training.checkpoint import latest_checkpoint
from workbench.core.workers.simulated import SANDBOX_PROFILES
from workbench.core.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    model, tokenizer = build_tiny_lm()
    workspace = Workspace.open(tempfile.mkdtemp())
    run = train(
        config(
            tasks={"train": 0, "validation": 30, "test": 0},
            optimizer={"name": "imitation", "popsize": 28, "rollouts": 16, "validate_every": 100},
            budget={"generations": args.generations},
            protocol={"max_turns": 1},
        ),
        workspace,
        backbone=Backbone("tiny", model=model, tokenizer=tokenizer),
    )
    suite = load_suite("mixed")
    groups = {t.id: t.group for t in suite.tasks}
    best = Imitation(
        HeadConfig(3, 4),
        lambda texts: np.ones((len(texts), 4)),
        popsize=3,
        rollouts=1,
        lr=0.01,
        tasks={t.id: t for t in suite.tasks},
    )
    first: dict[str, int] = {}  # the old rule: the lowest index that solved it, first time
    with Store.open(workspace) as store:
        best.loads(latest_checkpoint(store, run).optimizer)
        for g in range(args.generations):
            episodes = [
                e for e in store.list_episodes(run, generation=g) if e.candidate is not None
            ]
            for e in sorted(episodes, key=lambda e: e.candidate):
                if e.reward >= 1 and e.task_id not in first:
                    first[e.task_id] = e.candidate
    names = [p.name for p in SANDBOX_PROFILES]
    figures: dict[str, object] = {"generations": args.generations, "popsize": 28, "rollouts": 16}
    for key, rule, labels in (
        ("lowest_index", "lowest index that solved", first),
        ("best_worker", "best worker per task", best.labels),
    ):
        choice = Counter(names[w] for t, w in labels.items() if groups[t] == "choice")
        total = sum(choice.values())
        shares = ", ".join(f"{n} {choice[n] / total:.1%}" for n in names)
        print(f"{rule:26s} choice-task labels: {shares} ({total} tasks)")
        figures[f"{key}/choice_tasks"] = total
        for n in names:
            figures[f"{key}/{n}/share"] = round(choice[n] / total, 4)
    if args.out:
        for profile in SANDBOX_PROFILES:
            figures[f"skill_on_choice/{profile.name}"] = profile.skill["choice"]
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
