"""Does the SmolLM2 feature carry what the multi-turn oracle needs? An imitation probe.

    python tests/benchmarks/probe_multiturn.py   (after bench_multiturn.py's feature cache
    holds the oracle-path transcripts; tasks whose states are missing are skipped)

For every team task whose transcripts along the exact oracle's plan (Thinker planner ->
Worker specialist -> Verifier checker -> on REVISE Thinker planner -> Worker specialist,
with the first answer right or wrong) have cached offline-backbone features, fit a linear
head (ridge least squares on one-hot targets, worker and role) to the oracle's action on
the training tasks' states and report how often its argmax reproduces the oracle's action
on the held-out tasks' states, per turn. 100% means a head of the method's form can act
as the oracle on those tasks: any gap left by training is the optimizer's.
"""

import sys

sys.path.insert(0, "tests/benchmarks")
import numpy as np
from bench_multiturn import THINKER, VERIFIER, WORKER, Sandbox

from workbench.core.tasks.suites import load_suite
from workbench.core.training.basis import SearchBasis

tasks = list(load_suite("mixed").tasks)
sim = Sandbox("team", tasks, "offline")
order = np.random.default_rng(12345).permutation(len(tasks))
test_ids, train_ids = set(order[:200].tolist()), order[200:]
P, C = 3, 4
X, Yw, Yr, split, kinds = [], [], [], [], []
rows = []
for t in range(len(tasks)):
    S = {"math": 0, "choice": 1, "code": 2}[tasks[t].category]
    for ok in (True, False):
        plan = [
            ((), (P, THINKER)),
            (((P, THINKER, True),), (S, WORKER)),
            (((P, THINKER, True), (S, WORKER, ok)), (C, VERIFIER)),
            (((P, THINKER, True), (S, WORKER, ok), (C, VERIFIER, True)), (P, THINKER)),
            (
                ((P, THINKER, True), (S, WORKER, ok), (C, VERIFIER, True), (P, THINKER, True)),
                (S, WORKER),
            ),
        ]
        for h, (w, r) in plan:
            text = sim.transcript(t, h)
            if text in sim.features:
                rows.append((t, len(h), sim.features[text], w, r))
rows = list({(t, d, w, r, f.tobytes()): (t, d, f, w, r) for t, d, f, w, r in rows}.values())
tr = [x for x in rows if x[0] not in test_ids]
te = [x for x in rows if x[0] in test_ids]
print(
    "states: train",
    len(tr),
    "tasks",
    len({x[0] for x in tr}),
    "; test",
    len(te),
    "tasks",
    len({x[0] for x in te}),
)
Ftr = np.stack([x[2] for x in tr])
Fte = np.stack([x[2] for x in te])
basis = SearchBasis.fit(Ftr)


def fit(F, y, k, lam):
    Y = np.eye(k)[y] * 2 - 1
    return np.linalg.solve(F.T @ F + lam * np.eye(F.shape[1]), F.T @ Y)


for name, tf in (("raw", lambda F: F), ("balanced", basis.features)):
    for lam in (1e-2, 1.0, 100.0):
        Ww = fit(tf(Ftr), np.array([x[3] for x in tr]), 5, lam)
        Wr = fit(tf(Ftr), np.array([x[4] for x in tr]), 3, lam)
        pw = (tf(Fte) @ Ww).argmax(1)
        pr = (tf(Fte) @ Wr).argmax(1)
        yw = np.array([x[3] for x in te])
        yr = np.array([x[4] for x in te])
        both = (pw == yw) & (pr == yr)
        by_depth = {d: float(np.mean(both[[x[1] == d for x in te]])) for d in range(5)}
        print(
            f"{name:8s} ridge {lam:g}: held-out worker acc {np.mean(pw == yw):.3f}, role acc {np.mean(pr == yr):.3f}, both {np.mean(both):.3f}; by turn {by_depth}"
        )
# within-train fit (capacity)
Ww = fit(Ftr, np.array([x[3] for x in tr]), 5, 1e-4)
Wr = fit(Ftr, np.array([x[4] for x in tr]), 3, 1e-4)
print(
    "train fit both",
    np.mean(
        ((Ftr @ Ww).argmax(1) == [x[3] for x in tr]) & ((Ftr @ Wr).argmax(1) == [x[4] for x in tr])
    ),
)
# how far apart are the states? cosine between depth-1 (after Thinker) and depth-3 (after REVISE) features
