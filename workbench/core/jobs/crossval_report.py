"""What a cross-validation reports (``crossval.py`` runs it): every system's accuracy with
its interval, the paired differences against the best single worker task by task (overall
and per category, a bootstrap 95% interval and an exact sign test), the report as text
and JSON, and the stored reports of the workspace (``list_crossvals``, ``load_crossval``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.errors import InvalidInput
from workbench.core.evaluate import best_single_index
from workbench.core.records import RunStatus
from workbench.core.stats import Paired, mean_ci, paired, wilson
from workbench.core.store import Store
from workbench.core.workspace import Workspace


@dataclass(frozen=True, kw_only=True)
class CVSystem:
    """One system's cross-validated result: every task's reward (from the fold it was
    tested in), the accuracy with its Wilson interval, and per category."""

    name: str
    kind: str
    rewards: dict[str, float]
    accuracy: float
    ci_low: float
    ci_high: float
    n: int
    by_group: dict[str, tuple[float, float, float, int]] = field(default_factory=dict)
    calls: float = 1.0  # worker calls a task (a vote calls every worker)
    chosen: tuple[str, ...] = ()  # what it chose on validation in each fold (a router's k or C)


def _system(
    name: str,
    kind: str,
    rewards: dict[str, float],
    groups: Mapping[str, str],
    calls: float = 1.0,
    chosen: Sequence[str] = (),
) -> CVSystem:
    n = len(rewards)
    per: dict[str, list[float]] = {}
    for task_id, r in rewards.items():
        per.setdefault(groups[task_id], []).append(r)
    accuracy, ci_low, ci_high = _interval(list(rewards.values()))
    return CVSystem(
        name=name,
        kind=kind,
        rewards=rewards,
        accuracy=accuracy,
        ci_low=ci_low,
        ci_high=ci_high,
        n=n,
        by_group={g: (*_interval(v), len(v)) for g, v in sorted(per.items())},
        calls=calls,
        chosen=tuple(chosen),
    )


def _interval(rewards: Sequence[float]) -> tuple[float, float, float]:
    """The mean reward and its 95% interval: Wilson's for right/wrong rewards, the
    t-interval over tasks for rewards averaged over repeated folds (fractions)."""
    if not rewards:
        return 0.0, 0.0, 1.0
    if all(r in (0.0, 1.0) for r in rewards):
        return sum(rewards) / len(rewards), *wilson(sum(rewards), len(rewards))
    return mean_ci(rewards)


@dataclass(frozen=True, kw_only=True)
class CrossValReport:
    """The cross-validated comparison: every system on every task, paired differences
    against the best single worker (overall and per category), the folds' runs and the
    training time."""

    suite: str
    folds: int
    seed: int
    systems: tuple[CVSystem, ...]
    best_single: str
    paired: tuple[Paired, ...]
    paired_by_group: dict[str, tuple[Paired, ...]]
    train_seconds: float
    runs: tuple[str, ...]  # each fold's training run id
    evaluations: tuple[str, ...]  # each fold's evaluation run id
    # tasks left out of the paired comparison: some worker has no recorded answer for them
    paired_left_out: int = 0
    seeds: tuple[int, ...] = ()  # every fold seed (repeats), the first being ``seed``
    # per routing system: category -> worker -> tasks sent there (every seed's folds)
    routing: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    # each fold's coordinator run, generation by generation (the first seed's folds)
    curves: tuple[dict[str, Any], ...] = ()
    run_id: str | None = None  # the stored crossval run

    def gap_share(self, name: str) -> float | None:
        """The share of the oracle's gain over the best single worker that ``name``
        recovers (None without an oracle, or when the oracle gains nothing)."""
        oracles = [s for s in self.systems if s.kind == "oracle"]
        if not oracles:
            return None
        best = self.system(self.best_single).accuracy
        gap = oracles[0].accuracy - best
        return (self.system(name).accuracy - best) / gap if gap > 0 else None

    @property
    def groups(self) -> list[str]:
        return sorted(self.paired_by_group)

    def system(self, name: str) -> CVSystem:
        return next(s for s in self.systems if s.name == name)

    def to_json(self) -> str:
        return json.dumps(
            {
                "suite": self.suite,
                "folds": self.folds,
                "seed": self.seed,
                "best_single": self.best_single,
                "train_seconds": round(self.train_seconds, 1),
                "runs": list(self.runs),
                "evaluations": list(self.evaluations),
                "paired_left_out": self.paired_left_out,
                "seeds": list(self.seeds or (self.seed,)),
                "systems": [
                    {
                        **{k: v for k, v in dataclasses.asdict(s).items() if k != "rewards"},
                        "gap_share": self.gap_share(s.name),
                    }
                    for s in self.systems
                ],
                "paired": [dataclasses.asdict(p) for p in self.paired],
                "paired_by_category": {
                    g: [dataclasses.asdict(p) for p in ps] for g, ps in self.paired_by_group.items()
                },
                "rewards": {s.name: s.rewards for s in self.systems},
                "routing": self.routing,
                "curves": list(self.curves),
                "run_id": self.run_id,
            },
            indent=2,
        )

    def table(self) -> str:
        width = max([len("system"), *(len(s.name) for s in self.systems)])
        seeds = self.seeds or (self.seed,)
        tested = "once" if len(seeds) == 1 else f"once per seed, rewards averaged over {len(seeds)}"
        lines = [
            f"{self.folds}-fold cross-validation on '{self.suite}' (seed"
            f"{'s ' + ', '.join(map(str, seeds)) if len(seeds) > 1 else ' ' + str(self.seed)}, "
            f"{self.systems[0].n if self.systems else 0} tasks, each tested {tested}; training "
            f"{self.train_seconds / 60:.1f} min)",
            "",
            f"{'system':{width}s} {'accuracy':>8s}  95% CI          vs {self.best_single}",
        ]
        if self.paired_left_out:
            n = self.paired[0].n if self.paired else 0
            lines.insert(
                1,
                f"paired differences on the {n} tasks every worker has an answer for "
                f"({self.paired_left_out} left out: a recorded worker has none)",
            )
        diffs = {p.system: p for p in self.paired}
        for s in self.systems:
            p = diffs.get(s.name)
            versus = (
                f"{p.difference:+.3f} [{p.ci_low:+.3f}, {p.ci_high:+.3f}] "
                f"won {p.wins} lost {p.losses} p={p.p_value:.3g}"
                if p is not None
                else "(reference)"
            )
            calls = f"  ({s.calls:g} calls a task)" if s.calls > 1 else ""
            lines.append(
                f"{s.name:{width}s} {s.accuracy:8.3f}  [{s.ci_low:.3f}, {s.ci_high:.3f}]  "
                f"{versus}{calls}"
            )
        if len(self.groups) > 1:
            lines += ["", f"per category, coordinator vs {self.best_single}:"]
            for g in self.groups:
                for p in self.paired_by_group[g]:
                    if p.system == "coordinator":
                        lines.append(
                            f"  {g:28s} n={p.n:3d}  {p.difference:+.3f} "
                            f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]  won {p.wins} lost {p.losses}"
                        )
        return "\n".join(lines)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CrossValReport:
        """The report ``to_json`` wrote (a stored ``crossval`` run's result holds it)."""
        rewards = data.get("rewards", {})
        systems = tuple(
            CVSystem(
                **{
                    k: v
                    for k, v in s.items()
                    if k in {f.name for f in dataclasses.fields(CVSystem)}
                    and k not in ("by_group", "chosen")
                },
                rewards=dict(rewards.get(s["name"], {})),
                by_group={g: tuple(v) for g, v in s.get("by_group", {}).items()},
                chosen=tuple(s.get("chosen", ())),
            )
            for s in data["systems"]
        )
        return cls(
            suite=data["suite"],
            folds=data["folds"],
            seed=data["seed"],
            systems=systems,
            best_single=data["best_single"],
            paired=tuple(Paired(**p) for p in data["paired"]),
            paired_by_group={
                g: tuple(Paired(**p) for p in ps)
                for g, ps in data.get("paired_by_category", {}).items()
            },
            train_seconds=data.get("train_seconds", 0.0),
            runs=tuple(data.get("runs", ())),
            evaluations=tuple(data.get("evaluations", ())),
            paired_left_out=data.get("paired_left_out", 0),
            seeds=tuple(data.get("seeds", (data["seed"],))),
            routing=data.get("routing", {}),
            curves=tuple(data.get("curves", ())),
            run_id=data.get("run_id"),
        )

    def write(self, folder: str | Path, stem: str = "crossval") -> list[Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"{stem}.json", folder / f"{stem}.md"]
        paths[0].write_text(self.to_json(), encoding="utf-8")
        paths[1].write_text("```\n" + self.table() + "\n```\n", encoding="utf-8")
        return paths


def summarise_folds(
    suite: str,
    k: int,
    seed: int,
    rewards: Mapping[str, dict[str, float]],
    kinds: Mapping[str, str],
    groups: Mapping[str, str],
    *,
    train_seconds: float = 0.0,
    runs: Sequence[str] = (),
    evaluations: Sequence[str] = (),
    covered: Collection[str] | None = None,
    costs: Mapping[str, Mapping[str, float]] | None = None,
    calls: Mapping[str, float] | None = None,
    chosen: Mapping[str, Sequence[str]] | None = None,
    **extra: Any,
) -> CrossValReport:
    """The report from every system's per-task rewards (system -> task id -> reward).
    The paired comparisons are on ``covered`` (the tasks every worker has an answer for;
    default all), against the best single worker there (``best_single_index``, ties to
    the cheaper by ``costs``: system -> task id -> dollars)."""
    systems = tuple(
        _system(n, kinds[n], r, groups, (calls or {}).get(n, 1.0), (chosen or {}).get(n, ()))
        for n, r in rewards.items()
    )
    singles = [s for s in systems if s.kind == "single"]
    if not singles:
        raise InvalidInput("a cross-validation needs the single workers as its reference")
    ids = sorted(t for t in singles[0].rewards if covered is None or t in covered)

    def mean(values: Mapping[str, float] | None) -> float:
        return sum(values[i] for i in ids) / len(ids) if values and ids else 0.0

    best = singles[
        best_single_index(
            [mean(s.rewards) for s in singles],
            [mean((costs or {}).get(s.name)) for s in singles],
        )
    ]
    pairs = tuple(
        paired(s.name, best.name, s.rewards, best.rewards, ids, seed)
        for s in systems
        if s.name != best.name
    )
    by_group: dict[str, tuple[Paired, ...]] = {}
    for g in sorted(set(groups.values())):
        gids = [i for i in ids if groups[i] == g]
        by_group[g] = tuple(
            paired(s.name, best.name, s.rewards, best.rewards, gids, seed)
            for s in systems
            if s.name != best.name
        )
    return CrossValReport(
        suite=suite,
        folds=k,
        seed=seed,
        systems=systems,
        best_single=best.name,
        paired=pairs,
        paired_by_group=by_group,
        train_seconds=train_seconds,
        runs=tuple(runs),
        evaluations=tuple(evaluations),
        paired_left_out=len(singles[0].rewards) - len(ids),
        **extra,
    )


@dataclass(frozen=True, kw_only=True)
class StoredCrossVal:
    """A cross-validation stored in the workspace, as a list shows it."""

    run_id: str
    name: str
    created_at: float


def list_crossvals(workspace: Workspace) -> list[StoredCrossVal]:
    """The workspace's finished cross-validations, newest first."""
    with Store.open(workspace) as store:
        runs = store.list_runs(kind="crossval")
    return [
        StoredCrossVal(run_id=r.id, name=r.name, created_at=r.created_at)
        for r in reversed(runs)
        if r.status is RunStatus.FINISHED and (r.result or {}).get("crossval")
    ]


def load_crossval(workspace: Workspace, run_id: str) -> CrossValReport:
    """A stored cross-validation (``list_crossvals``)."""
    with Store.open(workspace) as store:
        record = store.get_run(run_id)
    data = (record.result or {}).get("crossval")
    if record.kind != "crossval" or not data:
        raise InvalidInput(
            f"run {record.id[:8]} is no finished cross-validation: list them with "
            "trinity-workbench runs list --all"
        )
    return CrossValReport.from_dict(data)


__all__ = [
    "CVSystem",
    "CrossValReport",
    "StoredCrossVal",
    "list_crossvals",
    "load_crossval",
    "summarise_folds",
]
