"""The headroom check, before any training: is a coordinator worth training on this pool
and suite at all?

Every worker of the pool answers every task of a sample of the TRAINING split once, as a
one-turn Worker (the protocol's Worker prompt, the run's decoding settings). From those
answers:

- each worker's accuracy with a 95% Wilson interval, and its dollars per task;
- the one-turn oracle: a task counts as solved when ANY worker answered it right (what a
  perfect one-turn router would reach, as RouteLLM and LLMRouterBench report it), and its
  gap over the best single worker with a paired bootstrap interval over tasks;
- the pairwise table: the share of tasks worker A answered right and B wrong;
- the winner of each category (``Task.group``), and whether its lead over the runner-up
  is outside the interval;
- what the check itself cost: calls made, tokens and dollars. An answer read from the
  response cache or from a worker of recorded answers (``Worker.answers_at_no_cost``)
  costs nothing and counts as no call;
- one plain sentence (``HeadroomReport.sentence``).

The answers go into the workspace's response cache (read-write, unless the config says
replay-only), so a training run of the same pool reuses them wherever its call is the
same request (docs/guides/headroom-and-cost.md says where that holds).

On a simulated pool (sandbox, team) every figure also has its exact value, computed from
the simulation's declared skills on the same tasks (``exact_headroom``): a reader sees how
close the sample came, and the tests check the measured figures against it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.config import RunConfig
from workbench.core.errors import InvalidInput, WorkFailed
from workbench.core.evaluate import (
    BOOTSTRAP,
    SIGNIFICANCE,
    EvaluationStopped,
    best_single_index,
    bootstrap_mean,
    paired_values,
    wilson,
)
from workbench.core.jobs.shared import PoolSession, open_worker_pool
from workbench.core.policies import FixedPolicy
from workbench.core.protocol import (
    EpisodeSettings,
    EpisodeTag,
    Prompts,
    build_messages,
    episode_gate,
    run_episode,
    turn_seed,
)
from workbench.core.records import Episode, Role, RunStatus, RunStopReason
from workbench.core.spend import dollars, spend_kind
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.tasks.suites import load_suite
from workbench.core.training.events import StopToken
from workbench.core.training.trainer import derived_seed, task_splits
from workbench.core.workers.base import Completion, EpisodeContext, Message, Worker
from workbench.core.workers.simulated import PROFILES_BY_ID
from workbench.core.workspace import Workspace

# The default sample: 100 training tasks. With 100 tasks a worker's 95% interval is at
# most about +-10 points wide, and the oracle's gap (a paired difference, never negative)
# is usually measured to a few points; a pool that costs money pays for 100 calls per
# worker. ``sample=0`` takes the whole training split.
DEFAULT_SAMPLE = 100
RESAMPLES = BOOTSTRAP  # bootstrap resamples of the tasks (evaluate's one bootstrap)
ONE_POINT = 0.01


@dataclass(frozen=True, kw_only=True)
class Outcomes:
    """One-turn answers of every worker on every task: ``right[w, t]`` and ``cost[w, t]``
    (the answer's dollars, what the worker costs to run, recorded or cached or not)."""

    workers: tuple[str, ...]
    tasks: tuple[str, ...]  # task ids
    groups: tuple[str, ...]  # each task's category (``Task.group``)
    right: np.ndarray = field(repr=False)  # bool, workers x tasks
    cost: np.ndarray = field(repr=False)  # float, workers x tasks


@dataclass(frozen=True, kw_only=True)
class WorkerFigures:
    """One worker's figures on the check's tasks; ``exact``: the simulation's expected
    accuracy on them (simulated workers only)."""

    worker: str
    accuracy: float
    ci_low: float
    ci_high: float
    n: int
    dollars_per_task: float
    exact: float | None = None


@dataclass(frozen=True, kw_only=True)
class CategoryWinner:
    """The best worker of one category, the runner-up, and the winner's lead over it with
    a paired bootstrap interval, its tasks won and lost against the runner-up and the exact
    sign test's p-value on them: ``clear`` only when that test separates the two
    (p < 0.05, which takes at least 6 tasks won and none lost), whatever the interval."""

    category: str
    n: int
    winner: str
    accuracy: float
    ci_low: float
    ci_high: float
    runner_up: str | None
    lead: float
    lead_low: float
    lead_high: float
    wins: int = 0  # tasks the winner got right and the runner-up wrong
    losses: int = 0  # and the other way round
    p_value: float = 1.0  # the exact two-sided sign test on wins and losses

    @property
    def clear(self) -> bool:
        return self.runner_up is None or (self.p_value < SIGNIFICANCE and self.wins > self.losses)


@dataclass(frozen=True, kw_only=True)
class CheckCost:
    """What the check itself spent: ``calls`` made to a worker (neither read from the
    cache nor from recorded answers), their tokens and dollars; ``cached`` and
    ``recorded`` count the answers that cost nothing."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    dollars: float = 0.0
    cached: int = 0
    recorded: int = 0


@dataclass(frozen=True, kw_only=True)
class HeadroomReport:
    """The check's figures (see the module docstring)."""

    suite: str
    pool: tuple[str, ...]
    n: int
    sample: str  # how the tasks were chosen, in words
    workers: tuple[WorkerFigures, ...]
    best: str
    oracle: tuple[float, float, float]  # accuracy, 95% Wilson interval
    gap: tuple[float, float, float]  # oracle - best single, paired bootstrap interval
    pairwise: dict[str, dict[str, float]]  # A -> B -> share of tasks A right and B wrong
    categories: tuple[CategoryWinner, ...]
    cost: CheckCost
    spend: str = ""  # spend_kind: "simulated", "recorded", a mix of them, or "" (real dollars)
    wall_s: float = 0.0
    left_out: dict[str, int] = field(default_factory=dict)  # why -> tasks left out
    cache_policy: str = "read-write"
    run_id: str | None = None  # the stored run of the check's episodes (replayable)
    # on a simulated pool: the exact oracle and gap on the same tasks
    exact_oracle: float | None = None
    exact_gap: float | None = None
    # on a simulated pool: the exact accuracy of routing by category alone (the best
    # worker per category), below the any-right oracle, which also counts lucky draws
    exact_by_category: float | None = None

    @property
    def best_figures(self) -> WorkerFigures:
        return next(w for w in self.workers if w.worker == self.best)

    @property
    def sentence(self) -> str:
        """The check's conclusion in one plain sentence, claiming nothing the interval
        does not show."""
        gap, low, high = (100 * x for x in self.gap)
        if self.gap[0] == 0 and high < 100 * 2 * ONE_POINT:
            return (
                f"The best worker ({self.best}) is right whenever any worker is, on these "
                f"{self.n} tasks (a gap above {high:.1f} points is ruled out): training a "
                "coordinator cannot help here."
            )
        if self.gap[0] == 0:
            return (
                f"The best worker ({self.best}) is right whenever any worker is, on these "
                f"{self.n} tasks, but on so few a gap of up to {high:.0f} points is not ruled "
                "out (95%): check more tasks (--sample) before concluding a coordinator "
                "cannot help."
            )
        if high < 100 * 2 * ONE_POINT:
            return (
                f"Routing can gain at most {gap:.0f} points [{low:.0f}, {high:.0f}] over "
                f"{self.best} on this suite: too little for a coordinator to be worth training."
            )
        return (
            f"Routing can gain at most {gap:.0f} points [{low:.0f}, {high:.0f}] over "
            f"{self.best} on this suite; a coordinator needs to find most of that to be "
            "worth training."
        )

    def cost_line(self) -> str:
        c = self.cost
        free = []
        if c.cached:
            free.append(f"{c.cached} answers from the response cache")
        if c.recorded:
            free.append(f"{c.recorded} from recorded answers")
        return (
            f"this check cost {c.calls} calls, {c.tokens_in + c.tokens_out} tokens "
            f"({c.tokens_in} in, {c.tokens_out} out), {dollars(c.dollars, self.spend)}"
            + (f"; free: {', '.join(free)}" if free else "")
            + f"; {self.wall_s:.1f} s"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spend"] = self.spend or "real"
        data["sentence"] = self.sentence
        data["categories"] = [{**asdict(c), "clear": c.clear} for c in self.categories]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def write(self, folder: str | Path) -> list[Path]:
        """headroom.json and headroom.md (the table) in ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / "headroom.json", folder / "headroom.md"]
        paths[0].write_text(self.to_json(), encoding="utf-8")
        paths[1].write_text("```\n" + self.table() + "\n```\n", encoding="utf-8")
        return paths

    def table(self) -> str:
        """The report as text: the workers, the oracle and its gap, the pairwise table,
        the categories, the cost and the sentence."""
        exact = any(w.exact is not None for w in self.workers)
        spend = f" ({self.spend})" if self.spend else ""
        lines = [
            f"Headroom on `{self.suite}`: {self.n} training tasks ({self.sample})",
            "",
        ]
        rows = [
            ("worker", "accuracy", "95% CI", f"$ / task{spend}", *(("exact",) if exact else ()))
        ]
        for w in self.workers:
            rows.append(
                (
                    w.worker + (" (best)" if w.worker == self.best else ""),
                    f"{w.accuracy:.3f}",
                    f"[{w.ci_low:.3f}, {w.ci_high:.3f}]",
                    f"{w.dollars_per_task:.6f}",
                    *((f"{w.exact:.3f}" if w.exact is not None else "",) if exact else ()),
                )
            )
        o, g = self.oracle, self.gap
        rows.append(
            (
                "one-turn oracle (any right)",
                f"{o[0]:.3f}",
                f"[{o[1]:.3f}, {o[2]:.3f}]",
                "",
                *((_fmt(self.exact_oracle),) if exact else ()),
            )
        )
        rows.append(
            (
                f"gap over {self.best}",
                f"{g[0]:+.3f}",
                f"[{g[1]:+.3f}, {g[2]:+.3f}]",
                "",
                *((_fmt(self.exact_gap, "+.3f"),) if exact else ()),
            )
        )
        lines.append(columns(rows))
        lines += ["", "A right and B wrong (share of tasks; rows A, columns B):"]
        header = ("A \\ B", *self.pool)
        pair_rows = [header] + [
            (a, *("-" if a == b else f"{self.pairwise[a][b]:.3f}" for b in self.pool))
            for a in self.pool
        ]
        lines.append(columns(pair_rows))
        if len(self.categories) > 1:
            lines += ["", "per category:"]
            cat_rows = [("category", "n", "winner", "accuracy", "95% CI", "lead over next")]
            for c in self.categories:
                lead = (
                    f"{c.lead:+.3f} [{c.lead_low:+.3f}, {c.lead_high:+.3f}] over {c.runner_up}"
                    f", won {c.wins} lost {c.losses}, p={c.p_value:.2g}"
                    + ("" if c.clear else " (not separated)")
                    if c.runner_up
                    else ""
                )
                cat_rows.append(
                    (
                        c.category,
                        str(c.n),
                        c.winner,
                        f"{c.accuracy:.3f}",
                        f"[{c.ci_low:.3f}, {c.ci_high:.3f}]",
                        lead,
                    )
                )
            lines.append(columns(cat_rows))
        if self.left_out:
            lines += [""] + [f"left out: {n} tasks ({why})" for why, n in self.left_out.items()]
        if exact:
            lines += ["", "exact: the simulation's expected values on these tasks"]
        if self.exact_by_category is not None:
            lines.append(
                f"routing by category alone (the best worker per category) reaches "
                f"{self.exact_by_category:.3f} exactly: the simulation draws each answer "
                "afresh, so the any-right oracle also counts lucky draws no router can foresee"
            )
        lines += ["", self.cost_line()]
        if self.run_id:
            lines.append(f"answers stored as run {self.run_id[:8]} (cache: {self.cache_policy})")
        lines += ["", self.sentence]
        return "\n".join(lines)


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "" if value is None else format(value, spec)


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as left-aligned text columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


# --------------------------------------------------------------------------- analysis


def analyse(
    outcomes: Outcomes, *, seed: int = 0, resamples: int = RESAMPLES
) -> tuple[tuple[WorkerFigures, ...], str, Any, Any, dict, tuple[CategoryWinner, ...]]:
    """(workers, best, oracle, gap, pairwise, categories) of ``outcomes`` (see
    ``HeadroomReport``)."""
    right = np.asarray(outcomes.right, dtype=bool)
    n_workers, n = right.shape
    if n == 0:
        raise InvalidInput("the headroom check has no task to measure on")
    acc = right.mean(axis=1)
    per_task = np.asarray(outcomes.cost, dtype=float).mean(axis=1)
    figures = []
    for i, w in enumerate(outcomes.workers):
        ci_low, ci_high = wilson(int(right[i].sum()), n)
        figures.append(
            WorkerFigures(
                worker=w,
                accuracy=float(acc[i]),
                ci_low=ci_low,
                ci_high=ci_high,
                n=n,
                dollars_per_task=float(per_task[i]),
            )
        )
    workers = tuple(figures)
    b = best_single_index(list(acc), list(per_task))
    any_right = right.any(axis=0)
    oracle = (float(any_right.mean()), *wilson(int(any_right.sum()), n))
    gap = bootstrap_mean(
        any_right.astype(float) - right[b].astype(float), seed=seed, resamples=resamples
    )
    if gap[0] == 0:
        # no task where another worker was right and the best wrong: the bootstrap interval
        # is [0, 0], but with n tasks a gap up to 3/n is not ruled out (95%, rule of three)
        gap = (0.0, 0.0, min(1.0, 3 / n))
    pairwise = {
        a: {
            c: float((right[i] & ~right[j]).mean())
            for j, c in enumerate(outcomes.workers)
            if j != i
        }
        for i, a in enumerate(outcomes.workers)
    }
    groups = np.asarray(outcomes.groups)
    categories = []
    for g in sorted(set(outcomes.groups)):
        mask = groups == g
        sub = right[:, mask]
        cat_acc = sub.mean(axis=1)
        order = sorted(range(n_workers), key=lambda i: (-cat_acc[i], per_task[i], i))
        win = order[0]
        m = int(mask.sum())
        low, high = wilson(int(sub[win].sum()), m)
        if n_workers > 1:
            nxt = order[1]
            d = paired_values(
                outcomes.workers[win],
                outcomes.workers[nxt],
                sub[win].astype(float) - sub[nxt].astype(float),
                seed=seed,
                resamples=resamples,
            )
        else:
            nxt, d = None, paired_values(outcomes.workers[win], "", [])
        categories.append(
            CategoryWinner(
                category=g,
                n=m,
                winner=outcomes.workers[win],
                accuracy=float(cat_acc[win]),
                ci_low=low,
                ci_high=high,
                runner_up=None if nxt is None else outcomes.workers[nxt],
                lead=d.difference,
                lead_low=d.ci_low,
                lead_high=d.ci_high,
                wins=d.wins,
                losses=d.losses,
                p_value=d.p_value,
            )
        )
    return workers, outcomes.workers[b], oracle, gap, pairwise, tuple(categories)


def simulated_skills(pool: Sequence[str], tasks: Sequence[Task]) -> np.ndarray | None:
    """P(right) of each simulated worker's one-turn Worker answer on each task (workers x
    tasks), from the simulation's declared skills; None unless every worker is simulated.
    A task without a reference answer is never answered right."""
    if not pool or not all(w in PROFILES_BY_ID for w in pool):
        return None
    out = np.zeros((len(pool), len(tasks)))
    for j, task in enumerate(tasks):
        answerable = (task.solution if task.kind == "code" else task.answer) is not None
        for i, w in enumerate(pool):
            out[i, j] = PROFILES_BY_ID[w].skill_for(task.category, task.kind) if answerable else 0
    return out


def exact_headroom(pool: Sequence[str], tasks: Sequence[Task], best: str) -> dict[str, Any] | None:
    """The exact expected figures of a simulated pool on ``tasks``: each worker's accuracy,
    the one-turn oracle (any worker right: the simulation draws each worker's outcome on
    its own, so 1 - prod(1 - skill)), its gap over ``best`` and the pairwise shares; None
    for a pool with a worker that is not simulated."""
    p = simulated_skills(pool, tasks)
    if p is None:
        return None
    oracle = 1 - np.prod(1 - p, axis=0)
    b = list(pool).index(best)
    return {
        "by_category": float(p.max(axis=0).mean()),
        "workers": {w: float(p[i].mean()) for i, w in enumerate(pool)},
        "oracle": float(oracle.mean()),
        "gap": float((oracle - p[b]).mean()),
        "pairwise": {
            a: {c: float((p[i] * (1 - p[j])).mean()) for j, c in enumerate(pool) if j != i}
            for i, a in enumerate(pool)
        },
    }


# --------------------------------------------------------------------------- the check


@dataclass(frozen=True)
class HeadroomProgress:
    """Answers collected out of all the answers the check asks for."""

    done: int
    total: int


class _Meter(Worker):
    """A worker that counts what its calls cost the check: answers from the response
    cache or from recorded answers are free, every other answer is a call paid for."""

    def __init__(self, inner: Worker, cost: dict[str, float]):
        super().__init__(inner.id, inner.model)
        self.inner = inner
        self.provider = inner.provider  # type: ignore[misc]
        self.cost = cost

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        reply = await self.inner.complete(
            messages, max_tokens=max_tokens, temperature=temperature, seed=seed, context=context
        )
        if reply.cached:
            self.cost["cached"] += 1
        elif self.inner.answers_at_no_cost:
            self.cost["recorded"] += 1
        else:
            self.cost["calls"] += 1
            self.cost["tokens_in"] += reply.tokens_in
            self.cost["tokens_out"] += reply.tokens_out
            self.cost["dollars"] += reply.cost
        return reply

    def redact(self, text: str) -> str:
        return self.inner.redact(text)


def check_tasks(
    train: Sequence[Task],
    pool: Sequence[Worker],
    sample: int,
    seed: int,
    recorded: Callable[[Worker, Task], bool],
) -> tuple[list[Task], str, dict[str, int]]:
    """The tasks the check measures on, how they were chosen in words, and the tasks left
    out (why -> count): a seeded sample of ``sample`` training tasks (0: all of them), plus
    every training task whose answers are all already at hand (``recorded``: the response
    cache holds it, or the worker reads recorded answers). A task a worker of recorded
    answers has no recording for is left out (it would count as wrong)."""
    order = np.random.default_rng(derived_seed(seed, "headroom-sample")).permutation(len(train))
    chosen = set(order[: sample or len(train)].tolist())
    at_hand = [all(recorded(w, t) for w in pool) for t in train]
    uncovered = [not all(w.covers(t) for w in pool if w.answers_at_no_cost) for t in train]
    keep = [i for i in range(len(train)) if (i in chosen or at_hand[i]) and not uncovered[i]]
    left = sum(1 for i in range(len(train)) if (i in chosen or at_hand[i]) and uncovered[i])
    extra = sum(1 for i in keep if i not in chosen)
    if not sample or len(chosen) == len(train):
        words = f"all {len(train)} of the training split"
    else:
        words = f"a seeded sample of {len(chosen)} of {len(train)}"
    if extra:
        words += f", and {extra} more whose answers were already cached or recorded"
    left_out = {"no recorded answer from every worker": left} if left else {}
    return [train[i] for i in keep], words, left_out


def overridden_policy(policy: str, configured: str) -> str:
    """The cache policy a check or study used, in words, saying so when it is not the
    config's: an explicit ``off`` (or ``read-only``) is not honoured, since the answers
    are recorded for training runs of the same pool to reuse."""
    if policy == configured:
        return policy
    return (
        f"{policy}, not the config's {configured}: every answer is recorded in the "
        "response cache for training to reuse"
    )


def _task_seed(seed: int, task: Task) -> int:
    """The check's episode seed for ``task``: the same in every check of the same run
    seed, whatever the sample, so a repeated check finds its answers in the cache."""
    return derived_seed(seed, "headroom", task.id) % 2**31


def check_headroom(
    config: RunConfig,
    workspace: Workspace,
    *,
    sample: int = DEFAULT_SAMPLE,
    progress: Callable[[HeadroomProgress], None] | None = None,
    stop: StopToken | None = None,
    resamples: int = RESAMPLES,
) -> HeadroomReport:
    """Run the headroom check of ``config``'s pool on its suite's training split (see the
    module docstring); ``sample`` training tasks (0: all), plus those already cached or
    recorded. The answers are stored as a run of kind ``headroom`` (Replay shows them) and
    recorded in the response cache. ``stop``: no answer starts after it; raises
    ``EvaluationStopped``."""
    if sample < 0:
        raise InvalidInput(f"--sample must be 0 (all) or more, got {sample}")
    started = time.perf_counter()
    suite = load_suite(config.tasks.suite, workspace)
    train = task_splits(config, suite)["train"]
    p = config.protocol
    prompts = Prompts.load()
    policy = "replay-only" if config.cache.policy == "replay-only" else "read-write"
    shown_policy = overridden_policy(policy, config.cache.policy)
    with Store.open(workspace) as store:
        session = open_worker_pool(config.pool.workers, workspace)
        from workbench.core.workers.cache import cached_pool

        cached, cache = cached_pool(session.pool, store, policy)
        ids = tuple(w.id for w in cached)

        def recorded(worker: Worker, task: Task) -> bool:
            if worker.answers_at_no_cost:
                return worker.covers(task)
            key, _ = cache.key_for(
                worker,
                build_messages(prompts, Role.WORKER, task, (), None),
                max_tokens=p.max_tokens,
                temperature=p.temperature,
                seed=turn_seed(_task_seed(config.run.seed, task), 0),
                context=EpisodeContext(task, str(Role.WORKER), None, ()),
            )
            return store.get_response(key) is not None

        try:
            tasks, words, left_out = check_tasks(train, cached, sample, config.run.seed, recorded)
        except BaseException:
            session.run(asyncio.sleep(0))  # closes the workers and the client
            raise
        if not tasks:
            session.run(asyncio.sleep(0))
            raise InvalidInput(
                f"no training task of suite '{suite.name}' can be checked: the recorded "
                "workers cover none of them; use a suite the recordings cover"
            )
        spent: dict[str, float] = dict.fromkeys(
            ("calls", "tokens_in", "tokens_out", "dollars", "cached", "recorded"), 0
        )
        metered = [_Meter(w, spent) for w in cached]
        run_id = store.create_run(
            f"headroom of {', '.join(config.pool.workers)} on {suite.name}",
            "headroom",
            {**config.to_dict(), "headroom": {"sample": sample, "tasks": len(tasks)}},
        )
        try:
            episodes = _play(
                session,
                metered,
                tasks,
                EpisodeSettings(
                    suite=suite.name,
                    max_turns=1,
                    max_tokens=p.max_tokens,
                    temperature=p.temperature,
                    prompts=prompts,
                ),
                seed=config.run.seed,
                concurrency=config.optimizer.concurrency,
                run_id=run_id,
                progress=progress,
                stop=stop,
            )
        except EvaluationStopped:
            store.set_run_status(run_id, RunStatus.STOPPED, stop_reason=RunStopReason.STOPPED)
            raise
        except Exception as exc:
            store.set_run_status(
                run_id,
                RunStatus.FAILED,
                stop_reason=RunStopReason.ERROR,
                error=f"{type(exc).__name__}: {exc}",
            )
            raise
        store.add_episodes(episodes)
        outcomes, failed = outcomes_of(episodes, ids, tasks)
        if failed:
            left_out = {**left_out, f"a call failed: {failed[1]}": failed[0]}
        if not outcomes.tasks:
            first = failed[1] if failed else "no answer"
            store.set_run_status(
                run_id, RunStatus.FAILED, stop_reason=RunStopReason.ERROR, error=first
            )
            raise WorkFailed(
                f"every task of the headroom check had a failed call (first: {first}): "
                "test the workers (trinity-workbench workers test ID) and check again"
            )
        workers, best, oracle, gap, pairwise, categories = analyse(
            outcomes, seed=config.run.seed, resamples=resamples
        )
        kept = [t for t in tasks if t.id in set(outcomes.tasks)]
        exact = exact_headroom(ids, kept, best)
        if exact is not None:
            workers = tuple(
                WorkerFigures(**{**asdict(w), "exact": exact["workers"][w.worker]}) for w in workers
            )
        report = HeadroomReport(
            suite=suite.name,
            pool=ids,
            n=len(outcomes.tasks),
            sample=words,
            workers=workers,
            best=best,
            oracle=oracle,
            gap=gap,
            pairwise=pairwise,
            categories=categories,
            cost=CheckCost(
                calls=int(spent["calls"]),
                tokens_in=int(spent["tokens_in"]),
                tokens_out=int(spent["tokens_out"]),
                dollars=float(spent["dollars"]),
                cached=int(spent["cached"]),
                recorded=int(spent["recorded"]),
            ),
            spend=spend_kind(ids),
            wall_s=time.perf_counter() - started,
            left_out=left_out,
            cache_policy=shown_policy,
            run_id=run_id,
            exact_oracle=exact["oracle"] if exact else None,
            exact_gap=exact["gap"] if exact else None,
            exact_by_category=exact["by_category"] if exact else None,
        )
        store.set_run_status(
            run_id,
            RunStatus.FINISHED,
            stop_reason=RunStopReason.DONE,
            result={"headroom": report.to_dict()},
        )
    return report


def _play(
    session: PoolSession,
    pool: Sequence[Worker],
    tasks: Sequence[Task],
    settings: EpisodeSettings,
    *,
    seed: int,
    concurrency: int,
    run_id: str,
    progress: Callable[[HeadroomProgress], None] | None,
    stop: StopToken | None,
) -> list[Episode]:
    """Every worker's one-turn Worker episode on every task (candidate = the worker's
    index in the pool), closing the pool's workers and client after."""
    total = len(pool) * len(tasks)
    done = 0

    async def play() -> list[Episode]:
        gate = episode_gate(concurrency, total)

        async def one(i: int, task: Task) -> Episode:
            nonlocal done
            async with gate:
                if stop is not None and stop.stopped:
                    raise EvaluationStopped("the headroom check was stopped")
                episode = await run_episode(
                    FixedPolicy(len(pool), i),
                    pool,
                    task,
                    settings,
                    seed=_task_seed(seed, task),
                    tag=EpisodeTag(run_id=run_id, candidate=i),
                )
            done += 1
            if progress is not None:
                progress(HeadroomProgress(done, total))
            return episode

        running = [asyncio.ensure_future(one(i, t)) for t in tasks for i in range(len(pool))]
        try:
            return list(await asyncio.gather(*running))
        except EvaluationStopped:
            await asyncio.gather(*running, return_exceptions=True)
            raise

    return session.run(play())


def outcomes_of(
    episodes: Sequence[Episode], pool: Sequence[str], tasks: Sequence[Task]
) -> tuple[Outcomes, tuple[int, str] | None]:
    """The ``Outcomes`` of one-turn episodes (candidate = worker index), leaving out every
    task where a call failed: a failed call is not a wrong answer. Returns them and
    (tasks left out, the first error) when any was."""
    by = {(e.candidate, e.task_id): e for e in episodes}
    kept: list[Task] = []
    first_error = None
    dropped = 0
    for task in tasks:
        eps = [by.get((i, task.id)) for i in range(len(pool))]
        errors = [t.error for e in eps if e is not None for t in e.turns if t.error is not None]
        if any(e is None for e in eps) or errors:
            dropped += 1
            first_error = first_error or (errors[0] if errors else "no answer")
            continue
        kept.append(task)
    right = np.array(
        [[by[(i, t.id)].reward >= 1.0 for t in kept] for i in range(len(pool))], dtype=bool
    ).reshape(len(pool), len(kept))
    cost = np.array(
        [[by[(i, t.id)].cost for t in kept] for i in range(len(pool))], dtype=float
    ).reshape(len(pool), len(kept))
    outcomes = Outcomes(
        workers=tuple(pool),
        tasks=tuple(t.id for t in kept),
        groups=tuple(t.group for t in kept),
        right=right,
        cost=cost,
    )
    return outcomes, ((dropped, first_error or "") if dropped else None)
