"""The simple routers (core/routers.py) on a routing table built by hand, where which
worker is right depends on the task's category and its feature says the category: each
learned router finds that out from the training share, makes its own choice on the
validation share only (changing the test rewards changes none of its choices), and the
references (random, the vote, the oracle) are what their definitions say."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from workbench.core.routers import (
    C_GRID,
    K_GRID,
    RECORDED_ORACLE,
    Split,
    best_model_labels,
    imitation,
    knn,
    logistic_regression,
    majority_vote,
    oracle,
    per_category,
    random_routing,
    simple_routers,
)
from workbench.core.tasks.model import Task
from workbench.core.training.table import RoutingTable

CATEGORIES = ("law", "math", "physics", "history")


def _table(n: int = 800, seed: int = 0) -> tuple[RoutingTable, np.ndarray, Split]:
    """Three workers; worker w is right 90% of the time on the categories c with
    c % 3 == w and 30% elsewhere; the feature is the category one-hot plus noise."""
    rng = np.random.default_rng(seed)
    cats = rng.integers(len(CATEGORIES), size=n)
    strong = cats % 3
    right = rng.random((n, 3)) < np.where(np.arange(3)[None] == strong[:, None], 0.9, 0.3)
    reward = right.astype(float)
    # what each worker answered: "A" (the reference) when right, else a wrong letter
    extracted = tuple(
        tuple("A" if right[i, w] else "BCD"[rng.integers(3)] for w in range(3)) for i in range(n)
    )
    tasks = tuple(
        Task(id=f"t{i}", kind="choice", prompt="?", answer="A", category=CATEGORIES[c])
        for i, c in enumerate(cats)
    )
    table = RoutingTable(
        tasks=tasks,
        workers=("w0", "w1", "w2"),
        reward=reward,
        cost=np.zeros((n, 3)),
        tokens=np.zeros((n, 3), dtype=np.int64),
        latency=np.zeros((n, 3)),
        answered=np.ones((n, 3), dtype=bool),
        extracted=extracted,
    )
    features = np.eye(len(CATEGORIES))[cats] + rng.normal(0, 0.3, size=(n, len(CATEGORIES)))
    features = np.hstack([features, rng.normal(0, 0.3, size=(n, 4))])
    order = rng.permutation(n)
    split = Split(
        train=order[: n // 2], validation=order[n // 2 : 3 * n // 4], test=order[3 * n // 4 :]
    )
    return table, features, split


def _best_single(table: RoutingTable, rows: np.ndarray) -> float:
    return float(table.reward[rows].mean(axis=0).max())


@pytest.mark.parametrize("router", ["per_category", "logistic_regression", "knn", "imitation"])
def test_a_learned_router_sends_each_category_to_its_strong_worker(router):
    table, features, split = _table()
    routed = (
        per_category(table, split)
        if router == "per_category"
        else {"logistic_regression": logistic_regression, "knn": knn, "imitation": imitation}[
            router
        ](table, features, split)
    )
    cats = np.array([CATEGORIES.index(table.tasks[r].category) for r in split.test])
    if router == "imitation":
        # its labels favour the strongest worker where several are right (the best-model
        # labels' tie rule), so it learns the categories that worker is weak on less well
        assert (routed.choices == cats % 3).mean() > 0.7
        assert routed.rewards.mean() > _best_single(table, split.test) + 0.1
    else:
        assert (routed.choices == cats % 3).mean() > 0.85
        assert routed.rewards.mean() > _best_single(table, split.test) + 0.2
    assert routed.rewards.tolist() == table.reward[split.test, routed.choices].tolist()


@pytest.mark.parametrize("router", [logistic_regression, knn, imitation])
def test_a_router_chooses_on_validation_never_on_test(router):
    table, features, split = _table()
    routed = router(table, features, split)
    assert routed.chosen.split(" = ")[1] in {str(v) for v in (*C_GRID, *K_GRID)}
    # the same table with the test rows' rewards scrambled: the same choices
    scrambled = table.reward.copy()
    scrambled[split.test] = np.random.default_rng(9).permutation(scrambled[split.test])
    other = dataclasses.replace(table, reward=scrambled)
    again = router(other, features, split)
    assert again.choices.tolist() == routed.choices.tolist()
    assert again.chosen == routed.chosen


def test_a_worker_without_an_answer_is_never_chosen():
    table, features, split = _table()
    answered = table.answered.copy()
    answered[split.test, 0] = False  # worker 0 answered none of the test tasks
    other = dataclasses.replace(table, answered=answered)
    for routed in (per_category(other, split), knn(other, features, split)):
        assert (routed.choices != 0).all()


def test_the_references_are_their_definitions():
    table, _, split = _table()
    rows = split.test
    assert random_routing(table, rows).rewards.tolist() == pytest.approx(
        table.reward[rows].mean(axis=1).tolist()
    )
    best = oracle(table, rows)
    assert best.name == RECORDED_ORACLE
    assert best.rewards.tolist() == table.reward[rows].max(axis=1).tolist()
    vote = majority_vote(table, split)
    assert vote.calls == 3
    for i, row in enumerate(rows):
        said = table.extracted[row]
        counts = {a: said.count(a) for a in said}
        top = max(counts.values())
        if list(counts.values()).count(top) == 1:  # a clear majority decides alone
            winner = max(counts, key=counts.get)  # type: ignore[arg-type]
            assert vote.rewards[i] == (1.0 if winner == "A" else 0.0)


def test_imitation_labels_are_the_best_right_worker():
    table, _, split = _table()
    labels = best_model_labels(table, split.train)
    strength = table.reward[split.train].mean(axis=0)
    for label, row in zip(labels, split.train, strict=True):
        right = np.flatnonzero(table.reward[row] > 0.5)
        if len(right):
            assert label == right[np.argmax(strength[right])]
        else:
            assert label == np.argmax(strength)


def test_every_router_and_reference_in_one_call():
    table, features, split = _table()
    names = [r.name for r in simple_routers(table, features, split)]
    assert names == [
        "best model per category",
        "logistic regression",
        "kNN",
        "imitation",
        "single:w0",
        "single:w1",
        "single:w2",
        "random",
        "majority vote",
        RECORDED_ORACLE,
    ]
