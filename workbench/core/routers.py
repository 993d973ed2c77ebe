"""The simple routers a trained coordinator is measured against, on its own routing table
and features (docs/guides/recorded-pools.md, "Cross-validated evaluation").

Each router learns from a fold's training share and makes its own choices (kNN's k,
logistic regression's C) on the validation share, as the coordinator picks its
generation there, then routes every test task to one worker. The table
(``training/table.py``) gives every task's outcome under every worker, so a router's
result is its choices looked up, never an episode played. What they are:

- ``per_category``: the worker with the best training accuracy in the task's category
  (the overall best where a category has no training task);
- ``logistic_regression``: per worker, P(right | feature) by logistic regression on the
  standardised features; the task goes to the most likely to be right;
- ``knn``: the same estimate from the k training tasks nearest in feature space (cosine);
- ``imitation``: one linear softmax classifier on the best-model labels (of the workers
  right on a training task, the one best on the training share; the best overall where
  none is): the paper's SFT baseline, in the coordinator's own model class;
- the unlearned references: ``random`` routing (the expected reward of a uniform choice among the
  workers with an answer), ``majority_vote`` (every worker called; the answer most of them
  give, by what the grader read of each, ties to the answer of the better worker on the
  training share) and ``oracle`` (any worker right: an upper bound that counts luck).

Every router passes over a worker without an answer for a task, as the coordinator's mask
does. scikit-learn does the fitting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.core.training.table import RoutingTable

RECORDED_ORACLE = "recorded oracle"  # any worker's recorded answer right (evaluate.py's name too)
C_GRID = (
    0.01,
    0.1,
    1.0,
    10.0,
)  # logistic regression's inverse regularisation, chosen on validation
K_GRID = (5, 10, 25, 50, 100, 200)  # kNN's neighbours, chosen on validation


@dataclass(frozen=True, kw_only=True)
class Split:
    """Table rows of one fold: ``train`` (what a router fits on), ``validation`` (where it
    makes its own choices) and ``test``."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Routed:
    """One router's result on a fold's test rows: each row's reward, the worker chosen
    (-1 where it is not one worker: random, the vote, the oracle), the worker calls it
    made a task, and what it chose on validation (in words)."""

    name: str
    kind: str
    rewards: np.ndarray
    choices: np.ndarray
    calls: float = 1.0
    chosen: str = ""


def best_worker(table: RoutingTable, rows: np.ndarray) -> int:
    """The worker with the highest accuracy on ``rows`` (ties to the first)."""
    return int(np.argmax(table.reward[rows].mean(axis=0)))


def _masked_argmax(scores: np.ndarray, answered: np.ndarray) -> np.ndarray:
    """Each row's best-scoring worker among those with an answer (any worker where none)."""
    masked = np.where(answered, scores, -np.inf)
    none = ~answered.any(axis=1)
    masked[none] = scores[none]
    return masked.argmax(axis=1)


def _outcome(table: RoutingTable, rows: np.ndarray, choices: np.ndarray) -> np.ndarray:
    return table.reward[rows, choices]


def per_category(table: RoutingTable, split: Split) -> Routed:
    groups = np.array([t.group for t in table.tasks])
    fallback = best_worker(table, split.train)
    best: dict[str, int] = {}
    for g in np.unique(groups[split.train]):
        best[str(g)] = best_worker(table, split.train[groups[split.train] == g])
    scores = np.zeros((len(split.test), len(table.workers)))
    for i, row in enumerate(split.test):
        scores[i, best.get(str(groups[row]), fallback)] = 1.0
    choices = _masked_argmax(scores, table.answered[split.test])
    return Routed(
        name="best model per category",
        kind="router",
        rewards=_outcome(table, split.test, choices),
        choices=choices,
    )


def _select(
    candidates: Sequence[object],
    score_on: Callable[[object, str], np.ndarray],
    table: RoutingTable,
    split: Split,
) -> tuple[object, np.ndarray]:
    """The candidate setting whose routing scores best on validation (ties to the first),
    and its test choices: ``score_on(setting, part)`` gives per-worker scores of the rows
    of ``part`` ("validation" or "test")."""
    best, best_value = candidates[0], -1.0
    for setting in candidates:
        picked = _masked_argmax(score_on(setting, "validation"), table.answered[split.validation])
        value = float(_outcome(table, split.validation, picked).mean())
        if value > best_value:
            best, best_value = setting, value
    choices = _masked_argmax(score_on(best, "test"), table.answered[split.test])
    return best, choices


def _standardised(features: np.ndarray, train: np.ndarray) -> np.ndarray:
    """``features`` with each dimension centred and scaled on the training rows: a
    backbone's features share one dominant direction, which leaves logistic regression
    ill-conditioned (slow to converge) on them raw."""
    mean, spread = features[train].mean(axis=0), features[train].std(axis=0)
    return (features - mean) / np.where(spread > 0, spread, 1.0)


def logistic_regression(table: RoutingTable, features: np.ndarray, split: Split) -> Routed:
    from sklearn.linear_model import LogisticRegression

    X = _standardised(features, split.train)
    fitted: dict[float, list[object | float]] = {}
    for c in C_GRID:
        models: list[object | float] = []
        for w in range(len(table.workers)):
            y = table.reward[split.train, w] > 0.5
            if y.all() or not y.any():
                models.append(float(y.mean()))  # a constant: always right, or never
            else:
                models.append(LogisticRegression(C=c, max_iter=1000).fit(X[split.train], y))
        fitted[c] = models

    def scores(c: object, part: str) -> np.ndarray:
        rows = getattr(split, part)
        out = np.zeros((len(rows), len(table.workers)))
        for w, m in enumerate(fitted[c]):  # type: ignore[index]
            out[:, w] = m if isinstance(m, float) else m.predict_proba(X[rows])[:, 1]  # type: ignore[attr-defined]
        return out

    best_c, choices = _select(C_GRID, scores, table, split)
    return Routed(
        name="logistic regression",
        kind="router",
        rewards=_outcome(table, split.test, choices),
        choices=choices,
        chosen=f"C = {best_c}",
    )


def knn(table: RoutingTable, features: np.ndarray, split: Split) -> Routed:
    from sklearn.neighbors import NearestNeighbors

    ks = [k for k in K_GRID if k <= len(split.train)] or [len(split.train)]
    index = NearestNeighbors(n_neighbors=max(ks), metric="cosine").fit(features[split.train])
    neighbours = {
        part: index.kneighbors(features[getattr(split, part)], return_distance=False)
        for part in ("validation", "test")
    }
    # each worker's accuracy on the neighbours, its overall accuracy breaking ties
    prior = table.reward[split.train].mean(axis=0)

    def scores(k: object, part: str) -> np.ndarray:
        near = neighbours[part][:, : int(k)]  # type: ignore[call-overload]
        return table.reward[split.train[near]].mean(axis=1) + 1e-6 * prior

    k, choices = _select(ks, scores, table, split)
    return Routed(
        name="kNN",
        kind="router",
        rewards=_outcome(table, split.test, choices),
        choices=choices,
        chosen=f"k = {k}",
    )


def best_model_labels(table: RoutingTable, rows: np.ndarray) -> np.ndarray:
    """Each row's label for imitation: of the workers right on it, the one with the best
    accuracy on ``rows``; the best worker overall where none is right."""
    order = np.argsort(-table.reward[rows].mean(axis=0), kind="stable")
    labels = np.full(len(rows), order[0])
    right = table.reward[rows] > 0.5
    for w in order[::-1]:  # the best last, so it wins
        labels[right[:, w]] = w
    return labels


def imitation(table: RoutingTable, features: np.ndarray, split: Split) -> Routed:
    from sklearn.linear_model import LogisticRegression

    labels = best_model_labels(table, split.train)
    fitted = {
        c: LogisticRegression(C=c, max_iter=2000).fit(features[split.train], labels) for c in C_GRID
    }

    def scores(c: object, part: str) -> np.ndarray:
        rows = getattr(split, part)
        model = fitted[c]  # type: ignore[index]
        out = np.full((len(rows), len(table.workers)), -np.inf)
        out[:, model.classes_] = model.predict_log_proba(features[rows])
        return out

    c, choices = _select(C_GRID, scores, table, split)
    return Routed(
        name="imitation",
        kind="router",
        rewards=_outcome(table, split.test, choices),
        choices=choices,
        chosen=f"C = {c}",
    )


def random_routing(table: RoutingTable, rows: np.ndarray) -> Routed:
    answered = table.answered[rows]
    counts = np.maximum(answered.sum(axis=1), 1)
    rewards = (table.reward[rows] * answered).sum(axis=1) / counts
    return Routed(
        name="random",
        kind="random",
        rewards=rewards,
        choices=np.full(len(rows), -1),
    )


def majority_vote(table: RoutingTable, split: Split) -> Routed:
    strength = table.reward[split.train].mean(axis=0)
    rewards = np.zeros(len(split.test))
    for i, row in enumerate(split.test):
        votes: dict[str, list[int]] = {}
        for w, said in enumerate(table.extracted[row]):
            if table.answered[row, w] and said is not None:
                votes.setdefault(said, []).append(w)
        if not votes:
            continue
        # the most votes; a tie goes to the answer whose best voter is the strongest worker
        winner = max(votes.values(), key=lambda ws: (len(ws), max(strength[w] for w in ws)))
        rewards[i] = table.reward[row, winner[0]]
    return Routed(
        name="majority vote",
        kind="vote",
        rewards=rewards,
        choices=np.full(len(split.test), -1),
        calls=float(table.answered[split.test].sum(axis=1).mean()),
    )


def oracle(table: RoutingTable, rows: np.ndarray) -> Routed:
    """Any worker right: it reads every worker's answer (and the reference) to know."""
    rewards = np.where(table.answered[rows], table.reward[rows], 0.0).max(axis=1)
    return Routed(
        name=RECORDED_ORACLE,
        kind="oracle",
        rewards=rewards,
        choices=np.full(len(rows), -1),
        calls=float(table.answered[rows].sum(axis=1).mean()),
    )


def singles(table: RoutingTable, rows: np.ndarray) -> list[Routed]:
    """Each worker alone (a task it has no answer for counts as wrong)."""
    return [
        Routed(
            name=f"single:{worker}",
            kind="single",
            rewards=table.reward[rows, w],
            choices=np.full(len(rows), w),
        )
        for w, worker in enumerate(table.workers)
    ]


def simple_routers(table: RoutingTable, features: np.ndarray, split: Split) -> list[Routed]:
    """Every router and reference above on ``split``'s test rows. The fits are small: one
    BLAS thread does them faster than several contending for the cores (measured: ten
    times faster on a busy 2-core machine)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1), warnings.catch_warnings():
        # a fit that stops at its iteration limit is still a candidate setting, judged on
        # validation like the others
        warnings.simplefilter("ignore", ConvergenceWarning)
        return [
            per_category(table, split),
            logistic_regression(table, features, split),
            knn(table, features, split),
            imitation(table, features, split),
            *singles(table, split.test),
            random_routing(table, split.test),
            majority_vote(table, split),
            oracle(table, split.test),
        ]
