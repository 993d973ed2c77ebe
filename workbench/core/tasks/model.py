"""The task model: one query with its reference, and named suites of them."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.core.errors import BadInput

KINDS = ("math", "choice", "code", "text")
SPLITS = ("train", "validation", "test")


class TaskNotFound(BadInput, KeyError):
    """A task id that the suite does not hold."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the sentence
        return str(self.args[0])


@dataclass(frozen=True, kw_only=True)
class Task:
    """One query and what a correct answer must match.

    ``answer`` is the reference for math and text, the option letter for choice.
    ``choices`` lists the options of a choice task (letters A, B, ... in order).
    ``tests`` is a code task's test spec: ``{"style": "humaneval", "entry_point", "test"}``
    or ``{"style": "stdio", "cases": [{"input", "output"}]}``.
    ``solution`` is an optional reference program or derivation (shown in replay, and used
    by the sandbox simulation to write a correct answer).
    """

    id: str
    kind: str
    prompt: str
    answer: str | None = None
    choices: tuple[str, ...] | None = None
    tests: dict[str, Any] | None = field(default=None, hash=False, compare=True)
    category: str | None = None
    split: str | None = None
    solution: str | None = None

    @property
    def group(self) -> str:
        """The category if given, else the kind: what per-category statistics group by."""
        return self.category or self.kind

    def full_prompt(self) -> str:
        """The query as a worker sees it: the prompt, plus lettered options for choice tasks."""
        if self.kind == "choice" and self.choices:
            letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            options = "\n".join(f"({letters[i]}) {c}" for i, c in enumerate(self.choices))
            return f"{self.prompt}\n\n{options}"
        return self.prompt

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["choices"] is not None:
            d["choices"] = list(d["choices"])
        return {k: v for k, v in d.items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        d = dict(d)
        if d.get("choices") is not None:
            d["choices"] = tuple(d["choices"])
        return cls(**d)


@dataclass(frozen=True)
class Grade:
    """A grader's verdict: reward in [0, 1] and details a user can read (what was
    extracted, what was expected, why it failed)."""

    reward: float
    details: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A named, versioned set of tasks."""

    name: str
    tasks: tuple[Task, ...]
    version: str = "1"
    source: str = ""
    description: str = ""

    def __len__(self) -> int:
        return len(self.tasks)

    def get(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise TaskNotFound(
            f"suite '{self.name}' has no task '{task_id}': "
            f"list its tasks with trinity-workbench suites show {self.name}"
        )

    def splits(
        self, seed: int = 0, fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
    ) -> dict[str, tuple[Task, ...]]:
        """Deterministic train/validation/test splits.

        Tasks that name their ``split`` keep it; the rest are shuffled with ``seed``
        (in id order first, so the result does not depend on file order) and cut by
        ``fractions``.
        """
        out: dict[str, list[Task]] = {s: [] for s in SPLITS}
        free = []
        for task in self.tasks:
            if task.split in out:
                out[task.split].append(task)
            else:
                free.append(task)
        free.sort(key=lambda t: t.id)
        random.Random(seed).shuffle(free)
        total = sum(fractions)
        n_train = round(len(free) * fractions[0] / total)
        n_val = round(len(free) * fractions[1] / total)
        out["train"] += free[:n_train]
        out["validation"] += free[n_train : n_train + n_val]
        out["test"] += free[n_train + n_val :]
        return {k: tuple(v) for k, v in out.items()}

    def counts(self, seed: int = 0) -> dict[str, dict[str, int]]:
        """Task counts per kind, per category and per split (for listings)."""
        splits = self.splits(seed)
        return {
            "kind": dict(Counter(t.kind for t in self.tasks)),
            "category": dict(Counter(t.group for t in self.tasks)),
            "split": {k: len(v) for k, v in splits.items()},
        }
