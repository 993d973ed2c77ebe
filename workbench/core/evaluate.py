"""Test-split evaluation of a trained coordinator (argmax acting) against every single
worker (one turn as Worker), random (worker, role) choices over K turns and, on a
simulated pool, the oracle (the known best worker per category) and, when K > 1, the
multi-turn oracle (the exact best plan per category, ``workbench.core.oracle``).

Reports accuracy with 95% Wilson intervals, average turns, tokens and dollars per query
and the model x role usage, and the accuracy per category (``Task.group``: a suite's
benchmark or category) beside the total; writes JSON, CSV and Markdown.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import io
import json
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.errors import Interrupted, InvalidInput
from workbench.core.learned import CategoryLearned, describe_learned, summarise_learned
from workbench.core.oracle import PlanPolicy, oracle_plans
from workbench.core.policies import FixedPolicy, Policy, RandomPolicy
from workbench.core.protocol import (
    EpisodeSettings,
    EpisodeTag,
    Prompts,
    episode_gate,
    run_episode,
)
from workbench.core.records import Episode
from workbench.core.routers import RECORDED_ORACLE
from workbench.core.stats import Paired, paired, wilson
from workbench.core.tasks.model import Task
from workbench.core.training.events import StopToken
from workbench.core.training.executors import derived_seed
from workbench.core.workers.base import Worker, pool_covers
from workbench.core.workers.simulated import PROFILES_BY_ID, oracle_worker


def best_single_index(accuracy: Sequence[float], dollars: Sequence[float]) -> int:
    """The best single worker, the one rule of the workbench (evaluation, headroom,
    frontier, cross-validation): the highest accuracy; a tie goes to the cheaper, then to
    the earlier in the pool."""
    order = sorted(range(len(accuracy)), key=lambda i: (-accuracy[i], dollars[i], i))
    return order[0]


def any_right_index(rewards: Sequence[float], dollars: Sequence[float]) -> int:
    """The one-turn oracle's pick among the single workers' answers to one task, the one
    rule of the workbench: the cheapest worker that was right (reward 1), else the one
    with the highest reward, the cheapest of those; ties go to the earlier in the pool."""
    return min(range(len(rewards)), key=lambda i: (-min(rewards[i], 1.0), dollars[i], i))


@dataclass(frozen=True, kw_only=True)
class SystemResult:
    """One system's test figures."""

    name: str
    kind: str  # coordinator, single, random, oracle
    accuracy: float
    ci_low: float
    ci_high: float
    n: int
    avg_turns: float
    avg_tokens: float
    avg_cost: float
    usage: dict[str, int] = field(default_factory=dict)  # "worker/role" -> turns
    # per suite or category (``Task.group``): the same figures on that group's tasks only
    by_group: dict[str, GroupResult] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupResult:
    """One system's accuracy on the tasks of one category (or suite, kind)."""

    accuracy: float
    ci_low: float
    ci_high: float
    n: int


def _system(data: Mapping[str, Any]) -> SystemResult:
    """A ``SystemResult`` from its stored JSON (``asdict``)."""
    fields = {k: v for k, v in data.items() if k != "by_group"}
    groups = {g: GroupResult(**r) for g, r in (data.get("by_group") or {}).items()}
    return SystemResult(**fields, by_group=groups)


@dataclass(frozen=True, kw_only=True)
class Report:
    suite: str
    split: str
    systems: tuple[SystemResult, ...]
    spend: str = ""  # "simulated" (a sandbox pool), "partly simulated" or "" (real dollars)
    # what the coordinator played per category, beside the oracle's plan (``learned``)
    learned: tuple[CategoryLearned, ...] = ()
    # every other system against the best single worker, task by task (``paired``)
    best_single: str = ""
    paired: tuple[Paired, ...] = ()
    # tasks left out of ``paired``: some worker of the pool has no recorded answer for them
    # (a single worker's miss would count as wrong while the coordinator is routed around
    # it, which favours the coordinator): the comparison is on the tasks every worker covers
    paired_left_out: int = 0

    @property
    def paired_words(self) -> str:
        """Which tasks the paired comparison is on, in words."""
        n = self.paired[0].n if self.paired else 0
        if not self.paired_left_out:
            return f"on all {n} tasks"
        return (
            f"on the {n} tasks every worker has an answer for ({self.paired_left_out} left "
            "out: a recorded worker has none)"
        )

    @property
    def groups(self) -> list[str]:
        """The categories (or suites, kinds) of the evaluated tasks, sorted."""
        return sorted({g for s in self.systems for g in s.by_group})

    def group_rows(self) -> list[tuple[str, str, float, float, float, int]]:
        """One row per system and category, then the system's total (category "all"):
        (system, category, accuracy, ci_low, ci_high, n). Empty for a single category."""
        if len(self.groups) < 2:
            return []
        rows = []
        for s in self.systems:
            for g in self.groups:
                r = s.by_group.get(g)
                if r is not None:
                    rows.append((s.name, g, r.accuracy, r.ci_low, r.ci_high, r.n))
            rows.append((s.name, "all", s.accuracy, s.ci_low, s.ci_high, s.n))
        return rows

    @property
    def cost_header(self) -> str:
        """The dollars-per-query column's title, labelled when the dollars are simulated."""
        return f"$ / query ({self.spend})" if self.spend else "$ / query"

    def to_json(self) -> str:
        return json.dumps(
            {
                "suite": self.suite,
                "split": self.split,
                "spend": self.spend or "real",
                "systems": [asdict(s) for s in self.systems],
                "learned": [c.to_json() for c in self.learned],
                "best_single": self.best_single,
                "paired": [asdict(p) for p in self.paired],
                "paired_left_out": self.paired_left_out,
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> Report:
        """A report as ``to_json`` wrote it (a stored evaluation's), read back typed."""
        data = json.loads(text)
        spend = str(data.get("spend") or "")
        return cls(
            suite=str(data["suite"]),
            split=str(data["split"]),
            systems=tuple(_system(s) for s in data["systems"]),
            spend="" if spend == "real" else spend,
            learned=tuple(CategoryLearned.from_json(c) for c in data.get("learned", ())),
            best_single=str(data.get("best_single") or ""),
            paired=tuple(Paired(**p) for p in data.get("paired", ())),
            paired_left_out=int(data.get("paired_left_out") or 0),
        )

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(
            [
                "system",
                "kind",
                "accuracy",
                "ci_low",
                "ci_high",
                "n",
                "avg_turns",
                "avg_tokens",
                "avg_cost",
                *(f"accuracy:{g}" for g in self.groups),
                *(f"n:{g}" for g in self.groups),
                "spend",
            ]
        )
        for s in self.systems:
            writer.writerow(
                [
                    s.name,
                    s.kind,
                    f"{s.accuracy:.4f}",
                    f"{s.ci_low:.4f}",
                    f"{s.ci_high:.4f}",
                    s.n,
                    f"{s.avg_turns:.2f}",
                    f"{s.avg_tokens:.1f}",
                    f"{s.avg_cost:.6f}",
                    *(
                        f"{s.by_group[g].accuracy:.4f}" if g in s.by_group else ""
                        for g in self.groups
                    ),
                    *(str(s.by_group[g].n) if g in s.by_group else "0" for g in self.groups),
                    self.spend or "real",
                ]
            )
        return out.getvalue()

    def to_markdown(self) -> str:
        lines = [
            f"Evaluation on `{self.suite}` ({self.split} split, {self.systems[0].n if self.systems else 0} tasks)",
            "",
            f"| system | accuracy | 95% CI | turns | tokens | {self.cost_header} |",
            "|---|---|---|---|---|---|",
        ]
        for s in self.systems:
            lines.append(
                f"| {s.name} | {s.accuracy:.3f} | [{s.ci_low:.3f}, {s.ci_high:.3f}] | {s.avg_turns:.2f} "
                f"| {s.avg_tokens:.0f} | {s.avg_cost:.6f} |"
            )
        if self.paired:
            lines += [
                "",
                f"Against the best single worker ({self.best_single}), task by task "
                f"{self.paired_words}:",
                "",
                "| system | difference | 95% CI (bootstrap) | won | lost | p (sign test) |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {p.system} | {p.difference:+.3f} | [{p.ci_low:+.3f}, {p.ci_high:+.3f}] "
                f"| {p.wins} | {p.losses} | {p.p_value:.3g} |"
                for p in self.paired
            ]
        if self.group_rows():
            lines += ["", "Per category:", "", "| system | category | accuracy | 95% CI | n |"]
            lines.append("|---|---|---|---|---|")
            for name, g, acc, low, high, n in self.group_rows():
                lines.append(f"| {name} | {g} | {acc:.3f} | [{low:.3f}, {high:.3f}] | {n} |")
        if self.learned:
            lines += ["", "What the coordinator played, by category:", "", "```"]
            lines += [*describe_learned(self.learned), "```"]
        return "\n".join(lines) + "\n"

    def table(self) -> str:
        rows = [("system", "accuracy", "95% CI", "turns", "tokens", self.cost_header)]
        for s in self.systems:
            rows.append(
                (
                    s.name,
                    f"{s.accuracy:.3f}",
                    f"[{s.ci_low:.3f}, {s.ci_high:.3f}]",
                    f"{s.avg_turns:.2f}",
                    f"{s.avg_tokens:.0f}",
                    f"{s.avg_cost:.6f}",
                )
            )
        text = _columns(rows)
        if self.paired:
            per_task = [("system", "difference", "95% CI (bootstrap)", "won", "lost", "p")]
            per_task += [
                (
                    p.system,
                    f"{p.difference:+.3f}",
                    f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]",
                    str(p.wins),
                    str(p.losses),
                    f"{p.p_value:.3g}",
                )
                for p in self.paired
            ]
            text += (
                f"\n\nagainst {self.best_single}, task by task {self.paired_words}:\n"
                + _columns(per_task)
            )
        if self.group_rows():
            per = [("system", "category", "accuracy", "95% CI", "n")]
            per += [
                (name, g, f"{acc:.3f}", f"[{low:.3f}, {high:.3f}]", str(n))
                for name, g, acc, low, high, n in self.group_rows()
            ]
            text += "\n\nper category:\n" + _columns(per)
        if self.learned:
            text += "\n\nwhat the coordinator played, by category:\n"
            text += "\n".join(describe_learned(self.learned))
        return text

    def write(self, folder: str | Path, stem: str = "evaluation") -> list[Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for ext, text in (
            ("json", self.to_json()),
            ("csv", self.to_csv()),
            ("md", self.to_markdown()),
        ):
            path = folder / f"{stem}.{ext}"
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        return paths


def _columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


@dataclass(frozen=True)
class EvaluationProgress:
    """Episodes done out of all the episodes an evaluation runs (every system x every task)."""

    done: int
    total: int
    system: str  # the system whose episode just ended


class EvaluationStopped(Interrupted):
    """An evaluation stopped by its ``StopToken`` before it ended; it has no report."""


MULTI_TURN_ORACLE = "multi-turn oracle"


def recorded_pool(worker_ids: Sequence[str]) -> bool:
    """Whether every worker of the pool answers from a recorded table (``recorded:...``)."""
    return bool(worker_ids) and all(w.startswith("recorded:") for w in worker_ids)


def baseline_names(worker_ids: Sequence[str], max_turns: int = 1) -> list[str]:
    """The baselines ``evaluate`` can run for a pool, in report order: each single worker
    (``single:<id>``), ``random`` and, on a simulated pool only, ``oracle`` and (when
    ``max_turns`` > 1) ``multi-turn oracle``; on a recorded pool, ``recorded oracle``
    (a task counts as solved when any single worker's recorded answer is right: read
    from the single workers' episodes, which it needs)."""
    names = [f"single:{wid}" for wid in worker_ids] + ["random"]
    if worker_ids and all(w in PROFILES_BY_ID for w in worker_ids):
        names.append("oracle")
        if max_turns > 1:
            names.append(MULTI_TURN_ORACLE)
    if recorded_pool(worker_ids):
        names.append(RECORDED_ORACLE)
    return names


def _chosen_baselines(
    worker_ids: Sequence[str], baselines: bool | Collection[str], max_turns: int
) -> list[str]:
    available = baseline_names(worker_ids, max_turns)
    if isinstance(baselines, bool):
        return available if baselines else []
    unknown = sorted(set(baselines) - set(available))
    if unknown:
        raise InvalidInput(
            f"unknown baseline(s) {', '.join(unknown)} for this pool: choose from {', '.join(available)}"
        )
    if RECORDED_ORACLE in baselines:  # read from every single worker's episodes
        baselines = {*baselines, *(f"single:{w}" for w in worker_ids)}
    return [b for b in available if b in baselines]


def summarise(
    name: str, kind: str, episodes: Sequence[Episode], groups: Mapping[str, str] | None = None
) -> SystemResult:
    """A system's figures over ``episodes``; ``groups`` (task id -> category) adds the
    accuracy per category."""
    n = len(episodes)
    rewards = sum(e.reward for e in episodes)
    low, high = wilson(rewards, n)
    usage = Counter(f"{t.worker}/{t.role}" for e in episodes for t in e.turns)
    by_group: dict[str, list[float]] = {}
    for e in episodes:
        if groups is not None and e.task_id in groups:
            by_group.setdefault(groups[e.task_id], []).append(e.reward)
    per = {
        g: GroupResult(sum(r) / len(r), *wilson(sum(r), len(r)), len(r))
        for g, r in sorted(by_group.items())
    }
    return SystemResult(
        name=name,
        kind=kind,
        accuracy=rewards / n if n else 0.0,
        ci_low=low,
        ci_high=high,
        n=n,
        avg_turns=float(np.mean([len(e.turns) for e in episodes])) if n else 0.0,
        avg_tokens=float(np.mean([e.tokens_in + e.tokens_out for e in episodes])) if n else 0.0,
        avg_cost=float(np.mean([e.cost for e in episodes])) if n else 0.0,
        usage=dict(usage),
        by_group=per,
    )


async def evaluate(
    coordinator: Policy,
    pool: Sequence[Worker],
    tasks: Sequence[Task],
    settings: EpisodeSettings,
    *,
    split: str = "test",
    seed: int = 0,
    concurrency: int = 0,
    baselines: bool | Collection[str] = True,
    run_id: str | None = None,
    name: str = "coordinator",
    progress: Callable[[EvaluationProgress], None] | None = None,
    stop: StopToken | None = None,
) -> tuple[Report, list[Episode]]:
    """Run every system on ``tasks``; returns the report and all episodes (candidate =
    the system's index in the report, so Replay can show the evaluation).

    ``baselines``: all of them (True), none (False), or the names to run, from
    ``baseline_names``. ``progress`` hears of every finished episode; once ``stop`` is
    stopped, no further episode starts and ``EvaluationStopped`` is raised.
    ``settings``: how every episode is played (``EpisodeSettings.of`` a run's protocol;
    its ``final_turn``: ``free``, the paper's protocol, or ``worker``, a turn that would
    end an episode without a Worker's answer played as a Worker, as the server does); a
    baseline of fewer turns plays them in the same settings.
    """
    max_turns = settings.max_turns
    settings = dataclasses.replace(settings, prompts=settings.prompts or Prompts.load())
    L = len(pool)
    ids = [w.id for w in pool]
    chosen = _chosen_baselines(ids, baselines, max_turns)
    systems: list[tuple[str, str, Any, int]] = []  # name, kind, policy (or per-task factory), turns
    if coordinator is not None:
        systems.append((name, "coordinator", coordinator, max_turns))
    systems += [
        (f"single:{wid}", "single", FixedPolicy(L, i), 1)
        for i, wid in enumerate(ids)
        if f"single:{wid}" in chosen
    ]
    if "random" in chosen:
        systems.append(("random", "random", RandomPolicy(L), max_turns))
    if "oracle" in chosen:
        systems.append(("oracle", "oracle", None, 1))
    plans = {}
    if MULTI_TURN_ORACLE in chosen:
        plans = oracle_plans(ids, tasks, max_turns)
        systems.append((MULTI_TURN_ORACLE, "oracle", plans, max_turns))
    total, done = len(systems) * len(tasks), 0
    gate = episode_gate(concurrency, total)

    async def one(index: int, policy: Any, turns: int, j: int, task: Task) -> Episode:
        nonlocal done
        if policy is None:  # the oracle: the known best worker for this task's category
            policy = FixedPolicy(L, ids.index(oracle_worker(task.category, task.kind, ids)))
        elif policy is plans:  # the multi-turn oracle: its category's plan, for this episode
            policy = PlanPolicy(ids, plans[(task.category, task.kind)].steps)
        async with gate:
            if stop is not None and stop.stopped:
                raise EvaluationStopped("the evaluation was stopped")
            episode = await run_episode(
                policy,
                pool,
                task,
                dataclasses.replace(settings, max_turns=turns),
                rng=np.random.default_rng(derived_seed(seed, "eval", index, j))
                if isinstance(policy, RandomPolicy)
                else None,
                seed=derived_seed(seed, "eval-w", j) % 2**31,
                tag=EpisodeTag(run_id=run_id, candidate=index),
            )
        done += 1
        if progress is not None:
            progress(EvaluationProgress(done, total, systems[index][0]))
        return episode

    results: list[SystemResult] = []
    episodes: list[Episode] = []
    learned: list[CategoryLearned] = []
    for index, (sys_name, kind, policy, turns) in enumerate(systems):
        running = [
            asyncio.ensure_future(one(index, policy, turns, j, t)) for j, t in enumerate(tasks)
        ]
        try:
            eps = await asyncio.gather(*running)
        except EvaluationStopped:
            # let the episodes in flight end (no call is abandoned mid-way), then report the stop
            await asyncio.gather(*running, return_exceptions=True)
            raise
        results.append(summarise(sys_name, kind, eps, {t.id: t.group for t in tasks}))
        if kind == "coordinator":
            learned = summarise_learned(eps, {t.id: t for t in tasks}, ids, max_turns)
        episodes += eps
    if RECORDED_ORACLE in chosen:
        eps = recorded_oracle(episodes, [s[0] for s in systems], len(systems), len(tasks))
        results.append(summarise(RECORDED_ORACLE, "oracle", eps, {t.id: t.group for t in tasks}))
        episodes += eps
    covered = [t.id for t in tasks if pool_covers(pool, t)]
    best, pairs = against_best_single(results, episodes, covered, seed)
    report = Report(
        suite=settings.suite,
        split=split,
        systems=tuple(results),
        learned=tuple(learned),
        best_single=best,
        paired=pairs,
        paired_left_out=len(tasks) - len(covered) if pairs else 0,
    )
    return report, episodes


def against_best_single(
    results: Sequence[SystemResult], episodes: Sequence[Episode], task_ids: Sequence[str], seed: int
) -> tuple[str, tuple[Paired, ...]]:
    """The best single worker (``best_single_index`` on ``task_ids``) and every other
    system against it, task by task on ``task_ids`` (``paired``: pass the tasks every
    worker covers); ("", ()) without a single worker or a task. ``episodes`` are the
    systems' in report order (``candidate``: the system's index)."""
    singles = [s for s in results if s.kind == "single"]
    if not singles or not task_ids or len(set(task_ids)) != len(task_ids):
        return "", ()
    rewards: dict[str, dict[str, float]] = {}
    costs: dict[str, dict[str, float]] = {}
    for episode in episodes:
        name = results[episode.candidate or 0].name
        rewards.setdefault(name, {})[episode.task_id] = episode.reward
        costs.setdefault(name, {})[episode.task_id] = episode.cost
    best = singles[
        best_single_index(
            [float(np.mean([rewards[s.name][t] for t in task_ids])) for s in singles],
            [float(np.mean([costs[s.name][t] for t in task_ids])) for s in singles],
        )
    ].name
    return best, tuple(
        paired(s.name, best, rewards[s.name], rewards[best], task_ids, seed)
        for s in results
        if s.name != best and s.name in rewards
    )


def recorded_oracle(
    episodes: Sequence[Episode], names: Sequence[str], index: int, n_tasks: int
) -> list[Episode]:
    """The recorded oracle's episodes: per task, a copy of the single worker's episode
    ``any_right_index`` picks (the cheapest right one: any worker right, right), recorded
    as system ``index``. ``names`` are the systems' names in the order of ``episodes`` (each system's
    ``n_tasks`` episodes in task order)."""
    import uuid

    singles = [i for i, n in enumerate(names) if n.startswith("single:")]
    out = []
    if not singles:
        return []
    for j in range(n_tasks):
        answers = [episodes[i * n_tasks + j] for i in singles]
        best = answers[any_right_index([e.reward for e in answers], [e.cost for e in answers])]
        out.append(replace(best, id=uuid.uuid4().hex, candidate=index))
    return out
