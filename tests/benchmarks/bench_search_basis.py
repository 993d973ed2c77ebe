"""How fast sep-CMA-ES learns category routing in the identity and the balanced search basis.

    python tests/benchmarks/bench_search_basis.py [--generations 40] [--seeds 6]

A one-turn routing problem on the REAL features of the offline backbone (SmolLM2-135M,
the `mixed` suite's opening transcripts, computed once and kept in the user cache): each
candidate head picks (worker, role) for m tasks by sampling; reward is 1 with the chosen
sandbox worker's skill for the task's category when the role is Worker, else 0. After
the budget, the distribution mean acts by argmax on held-out tasks and its expected
reward is reported (the oracle routes every category to its best worker). Isolating the
first decision keeps the comparison to seconds, where a multi-turn run with backbone
forwards takes an hour on a CPU; the trainer uses the same SepCMAES and SearchBasis.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import platformdirs

from workbench.core.coordinator import Backbone
from workbench.core.evolution import CALIBRATION_TASKS, SearchBasis, SepCMAES
from workbench.core.protocol import render_transcript
from workbench.core.tasks.suites import load_suite
from workbench.core.workers.simulated import SANDBOX_PROFILES

ROLE_WORKER = 1


def suite_features(suite_name: str) -> tuple[np.ndarray, list[str]]:
    suite = load_suite(suite_name)
    cache = Path(platformdirs.user_cache_dir("trinity-workbench")) / "bench" / f"features-{suite_name}.npy"
    categories = [t.category or t.kind for t in suite.tasks]
    if cache.is_file():
        return np.load(cache), categories
    backbone = Backbone("offline", "cpu")
    features = backbone.features([render_transcript(t, ()) for t in suite.tasks])
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, features)
    return features, categories


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(features, skill, basis_name, sigma0, seed, generations, popsize, rollouts):
    n_workers = skill.shape[1]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(features))
    train, test = order[:200], order[200:]
    basis = SearchBasis.fit(features[train[:CALIBRATION_TASKS]]) if basis_name == "balanced" else SearchBasis()
    seen = basis.features(features)
    shape = (n_workers + 3, features.shape[1])
    es = SepCMAES(shape[0] * shape[1], sigma0=sigma0, popsize=popsize, rollouts=rollouts, seed=seed)
    for _ in range(generations):
        proposals = es.ask()
        batch = rng.choice(train, rollouts)
        fitness = []
        for p in proposals:
            logits = seen[batch] @ p.vector.reshape(shape).T
            workers = [rng.choice(n_workers, p=q) for q in softmax(logits[:, :n_workers])]
            roles = [rng.choice(3, p=q) for q in softmax(logits[:, n_workers:])]
            fitness.append(np.mean([(r == ROLE_WORKER) * (rng.random() < skill[t, w])
                                    for t, w, r in zip(batch, workers, roles, strict=True)]))
        es.tell(proposals, fitness, None)
    head = basis.head(es.center(), shape).reshape(shape)
    logits = features[test] @ head.T  # the stored head on the raw feature
    chosen = logits[:, :n_workers].argmax(axis=1)
    works = logits[:, n_workers:].argmax(axis=1) == ROLE_WORKER
    return float(np.mean(works * skill[test, chosen])), float(np.mean(skill[test].max(axis=1)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="mixed")
    parser.add_argument("--generations", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--popsize", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    args = parser.parse_args()
    features, categories = suite_features(args.suite)
    skill = np.array([[p.skill_for(c, c) for p in SANDBOX_PROFILES] for c in categories])
    print(f"{args.suite}: {len(features)} tasks, population {args.popsize}, {args.rollouts} rollouts, "
          f"{args.generations} generations, {args.seeds} seeds")
    for sigma0 in (0.03, 0.1):
        for basis in ("identity", "balanced"):
            results = [run(features, skill, basis, sigma0, s, args.generations, args.popsize, args.rollouts)
                       for s in range(args.seeds)]
            rewards = [r for r, _ in results]
            print(f"sigma0 {sigma0:<5} {basis:<9} expected test reward {np.mean(rewards):.3f} "
                  f"(per seed {' '.join(f'{r:.2f}' for r in rewards)}; oracle {np.mean([o for _, o in results]):.3f})")


if __name__ == "__main__":
    main()
