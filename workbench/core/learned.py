"""What a coordinator learned, in words: per task category, the role/worker sequences it
actually plays most often, their share and mean reward, beside the exact oracle's plan
for that category when the pool is simulated (``workbench.core.oracle``).

Sources: a training run's validation episodes of the generation whose head is the run's
result, or, for a run scored on a routing table, that validation's choices kept in its
checkpoint (``run_learned``); or any episodes of one coordinator (an evaluation's,
``summarise_learned``). A sequence is the turns an episode took, in order, as
``Step``s (worker and role): ``Worker team:mathlete -> Verifier team:checker``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from workbench.core.oracle import OraclePlan, Step, best_plan
from workbench.core.printable import shared_prefix
from workbench.core.records import Episode, Role
from workbench.core.tasks.model import Task
from workbench.core.workers.simulated import PROFILES_BY_ID

TOP = 3  # sequences shown per category


@dataclass(frozen=True)
class PlayedSequence:
    """One sequence of turns and how the coordinator fared with it."""

    steps: tuple[Step, ...]
    count: int
    share: float  # of the category's episodes
    mean_reward: float

    def describe(self, prefix: str = "") -> str:
        """The turns in order (``Worker team:mathlete -> Verifier team:checker``), each
        worker's id without ``prefix`` (one said once above a list)."""
        turns = (str(Step(s.worker.removeprefix(prefix), s.role)) for s in self.steps)
        return " -> ".join(turns) or "(no turn)"


@dataclass(frozen=True, kw_only=True)
class CategoryLearned:
    """Per category: the episodes, their mean reward, the most frequent sequences, and the
    oracle's plan (None for a pool with real workers)."""

    category: str
    episodes: int
    mean_reward: float
    sequences: tuple[PlayedSequence, ...]
    oracle: OraclePlan | None

    def to_json(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "episodes": self.episodes,
            "mean_reward": self.mean_reward,
            "sequences": [
                {
                    "steps": [asdict(s) | {"role": str(s.role)} for s in q.steps],
                    "text": q.describe(),
                    "count": q.count,
                    "share": q.share,
                    "mean_reward": q.mean_reward,
                }
                for q in self.sequences
            ],
            "oracle": None
            if self.oracle is None
            else {
                "plan": self.oracle.describe(),
                "expected_reward": self.oracle.expected_reward,
                "category": self.oracle.category,
                "kind": self.oracle.kind,
                "max_turns": self.oracle.max_turns,
                "steps": [asdict(s) | {"role": str(s.role)} for s in self.oracle.steps],
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CategoryLearned:
        """What ``to_json`` wrote, read back (a stored evaluation's report). An oracle
        stored without its steps (by a version that kept only its sentence) reads as
        None: its plan cannot be rebuilt from the sentence."""
        oracle = data.get("oracle")
        plan = None
        if oracle and "steps" in oracle:
            plan = OraclePlan(
                category=oracle.get("category"),
                kind=str(oracle.get("kind", "")),
                max_turns=int(oracle.get("max_turns", 0)),
                steps=tuple(_step(s) for s in oracle["steps"]),
                expected_reward=float(oracle["expected_reward"]),
            )
        return cls(
            category=str(data["category"]),
            episodes=int(data["episodes"]),
            mean_reward=float(data["mean_reward"]),
            sequences=tuple(
                PlayedSequence(
                    steps=tuple(_step(s) for s in q["steps"]),
                    count=int(q["count"]),
                    share=float(q["share"]),
                    mean_reward=float(q["mean_reward"]),
                )
                for q in data.get("sequences", ())
            ),
            oracle=plan,
        )


def _step(data: Mapping[str, Any]) -> Step:
    return Step(worker=str(data["worker"]), role=Role(data["role"]))


@dataclass(frozen=True)
class Play:
    """One decision of a coordinator, as what it learned is counted: the task, the turns
    it took (``Step``s, in order) and the reward."""

    task_id: str
    steps: tuple[Step, ...]
    reward: float

    @classmethod
    def of(cls, episode: Episode) -> Play:
        return cls(
            episode.task_id, tuple(Step(t.worker, t.role) for t in episode.turns), episode.reward
        )


def summarise_learned(
    episodes: Iterable[Episode],
    tasks: Mapping[str, Task],
    pool: Sequence[str],
    max_turns: int,
    top: int = TOP,
) -> list[CategoryLearned]:
    """Group ``episodes`` (one coordinator's) by their task's category (``Task.group``;
    tasks missing from ``tasks`` are left out) and count the sequences each played."""
    return summarise_plays([Play.of(e) for e in episodes], tasks, pool, max_turns, top)


def summarise_plays(
    plays: Iterable[Play],
    tasks: Mapping[str, Task],
    pool: Sequence[str],
    max_turns: int,
    top: int = TOP,
) -> list[CategoryLearned]:
    """``summarise_learned`` of decisions that were not played as stored episodes (a
    routing table's, ``Play``) or were."""
    by_group: dict[str, list[Play]] = defaultdict(list)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    for play in plays:
        task = tasks.get(play.task_id)
        if task is None:
            continue
        by_group[task.group].append(play)
        kinds[task.group][task.kind] += 1
    simulated = all(w in PROFILES_BY_ID for w in pool)
    out = []
    for group in sorted(by_group):
        eps = by_group[group]
        played: dict[tuple[Step, ...], list[float]] = defaultdict(list)
        for e in eps:
            played[e.steps].append(e.reward)
        ranked = sorted(played.items(), key=lambda kv: (-len(kv[1]), -sum(kv[1])))[:top]
        sequences = tuple(
            PlayedSequence(steps, len(r), len(r) / len(eps), sum(r) / len(r)) for steps, r in ranked
        )
        oracle = None
        if simulated:
            kind = kinds[group].most_common(1)[0][0]
            category = next(tasks[e.task_id].category for e in eps)
            oracle = best_plan(list(pool), category, kind, max_turns)
        out.append(
            CategoryLearned(
                category=group,
                episodes=len(eps),
                mean_reward=sum(e.reward for e in eps) / len(eps),
                sequences=sequences,
                oracle=oracle,
            )
        )
    return out


def describe_learned(learned: Sequence[CategoryLearned]) -> list[str]:
    """``learned`` as lines of text (``runs show``, ``eval``, the GUI's panels). Workers
    whose ids share a prefix (a recorded pool's ``recorded:NAME/``,
    ``printable.shared_prefix``) are named without it, and a first line says it once."""
    workers = sorted({s.worker for c in learned for q in c.sequences for s in q.steps})
    prefix = shared_prefix(workers)
    lines = [f"every worker's id below starts with {prefix}"] if prefix else []
    for c in learned:
        lines.append(f"{c.category}: {c.episodes} episodes, mean reward {c.mean_reward:.3f}")
        for q in c.sequences:
            lines.append(
                f"  {q.share:6.1%}  {q.describe(prefix)}  (reward {q.mean_reward:.2f}, {q.count}x)"
            )
        if c.oracle is not None:
            plan = c.oracle.describe().split(": ", 1)[1]
            lines.append(f"  oracle: {plan}")
    return lines
