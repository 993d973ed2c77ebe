"""The headroom check, before any training: is a coordinator worth training on this pool
and suite at all?

Every worker of the pool answers every task of a sample of the TRAINING split once, as a
one-turn Worker (the protocol's Worker prompt, the run's decoding settings). From those
answers (``workbench.core.jobs.headroom_figures``):

- each worker's accuracy with a 95% Wilson interval, and its dollars per task;
- the one-turn oracle: a task counts as solved when ANY worker answered it right (what a
  perfect one-turn router would reach, as RouteLLM and LLMRouterBench report it), and its
  gap over the best single worker with a paired bootstrap interval over tasks: a ceiling
  that also counts lucky draws;
- the held-out gain: routing by category, chosen on half the tasks and measured on the
  other half, against the best single worker chosen the same way (what carries over to
  tasks the choice was not made on);
- the pairwise table: the share of tasks worker A answered right and B wrong;
- the winner of each category (``Task.group``), and whether its lead over the runner-up
  is outside the interval;
- what the check itself cost: calls made, tokens and dollars. An answer read from the
  response cache or from a worker of recorded answers (``Worker.answers_at_no_cost``)
  costs nothing and counts as no call;
- its conclusion in plain words (``HeadroomReport.sentence``).

The answers go into the workspace's response cache (read-write, unless the config says
replay-only), so a training run of the same pool reuses them wherever its call is the
same request (docs/guides/headroom-and-cost.md says where that holds).

On a simulated pool (sandbox, team) every figure also has its exact value, computed from
the simulation's declared skills on the same tasks (``with_exact``): a reader sees how
close the sample came, and the tests check the measured figures against it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.core.config import RunConfig
from workbench.core.errors import InvalidInput, WorkFailed
from workbench.core.evaluate import EvaluationStopped
from workbench.core.jobs.headroom_figures import (
    RESAMPLES,
    CheckCost,
    HeadroomReport,
    Outcomes,
    analyse,
    with_exact,
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
from workbench.core.records import Episode, Role, RunStopReason, Spend
from workbench.core.spend import spend_kind
from workbench.core.store import Store
from workbench.core.store.lifecycle import RunLife
from workbench.core.tasks.graders import grade
from workbench.core.tasks.model import Task
from workbench.core.tasks.suites import load_suite
from workbench.core.training.events import StopToken
from workbench.core.training.executors import derived_seed
from workbench.core.training.state import task_splits
from workbench.core.workers.base import Completion, EpisodeContext, Message, Worker, WorkerError
from workbench.core.workspace import Workspace

# The default sample: 100 training tasks. With 100 tasks a worker's 95% interval is at
# most about +-10 points wide, and the oracle's gap (a paired difference, never negative)
# is usually measured to a few points; a pool that costs money pays for 100 calls per
# worker. ``sample=0`` takes the whole training split.
DEFAULT_SAMPLE = 100


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
    recorded. The check is stored as a run of kind ``headroom`` with the episodes of its
    live workers (Replay shows them; recorded answers are read, not stored again), and
    live answers are recorded in the response cache. ``stop``: no answer starts after it; raises
    ``EvaluationStopped``."""
    if sample < 0:
        raise InvalidInput(f"--sample must be 0 (all) or more, got {sample}")
    started = time.perf_counter()
    suite = load_suite(config.tasks.suite, workspace)
    train = task_splits(config.tasks, suite)["train"]
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
        # workers of recorded answers are read directly (``_answers``); the rest metered
        read = [w.answers_at_no_cost for w in cached]
        metered = [w if r else _Meter(w, spent) for w, r in zip(cached, read, strict=True)]
        life = RunLife.create(
            store,
            f"headroom of {', '.join(config.pool.workers)} on {suite.name}",
            "headroom",
            {**config.to_dict(), "headroom": {"sample": sample, "tasks": len(tasks)}},
        )
        run_id = life.run_id
        life.start()
        with life:
            answers, episodes = _answers(
                session,
                metered,
                read,
                tasks,
                EpisodeSettings.of(config.protocol, suite.name, prompts=prompts, max_turns=1),
                seed=config.run.seed,
                concurrency=config.optimizer.concurrency,
                run_id=run_id,
                progress=progress,
                stop=stop,
            )
            store.add_episodes(episodes)
            spent["recorded"] += sum(1 for (i, _), a in answers.items() if read[i] and not a.error)
            outcomes, failed = outcomes_of(answers, ids, tasks)
            if failed:
                left_out = {**left_out, f"a call failed: {failed[1]}": failed[0]}
            if not outcomes.tasks:
                first = failed[1] if failed else "no answer"
                raise WorkFailed(
                    f"every task of the headroom check had a failed call (first: {first}): "
                    "test the workers (trinity-workbench workers test ID) and check again"
                )
            kept_ids = set(outcomes.tasks)
            figures, exact = with_exact(
                analyse(outcomes, seed=config.run.seed, resamples=resamples),
                ids,
                [t for t in tasks if t.id in kept_ids],
            )
            report = HeadroomReport(
                suite=suite.name,
                pool=ids,
                n=len(outcomes.tasks),
                sample=words,
                workers=figures.workers,
                best=figures.best,
                oracle=figures.oracle,
                gap=figures.gap,
                pairwise=figures.pairwise,
                categories=figures.categories,
                held_out=figures.held_out,
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
            paid = Spend(
                episodes=len(episodes),
                calls=report.cost.calls,
                dollars=report.cost.dollars,
                seconds=life.seconds,
            )
            life.end(RunStopReason.DONE, {"headroom": report.to_dict()}, spend=paid)
    return report


# Recorded answers are graded this many to a thread hop: the choice grader takes tens of
# microseconds an answer, less than the hop; a code answer's sandbox runs in its thread.
GRADE_CHUNK = 256


@dataclass(frozen=True)
class Answer:
    """One worker's one-turn answer to one task, as the figures need it: its reward, its
    dollars, and the error of a failed call (such a task is left out)."""

    reward: float
    cost: float
    error: str | None = None

    @classmethod
    def of(cls, episode: Episode) -> Answer:
        errors = [t.error for t in episode.turns if t.error is not None]
        return cls(episode.reward, episode.cost, errors[0] if errors else None)


def _answers(
    session: PoolSession,
    pool: Sequence[Worker],
    read: Sequence[bool],
    tasks: Sequence[Task],
    settings: EpisodeSettings,
    *,
    seed: int,
    concurrency: int,
    run_id: str,
    progress: Callable[[HeadroomProgress], None] | None,
    stop: StopToken | None,
) -> tuple[dict[tuple[int, str], Answer], list[Episode]]:
    """Every worker's one-turn Worker answer to every task, by (worker index, task id),
    and the episodes to store; closes the pool's workers and client after.

    A worker with ``read[i]`` (one of recorded answers: nothing is decided and nothing is
    spent) is asked for each task's answer with the Worker prompt and the answer graded,
    in chunks off the event loop: no episode is built or stored for it (its answers are
    in its pool already), which keeps a check of 12,000 tasks to seconds. Every other
    worker plays a one-turn Worker episode per task (candidate = its index in the pool),
    stored as the check's run."""
    total = len(pool) * len(tasks)
    done = 0
    answers: dict[tuple[int, str], Answer] = {}

    def tick(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            progress(HeadroomProgress(done, total))

    def check_stop() -> None:
        if stop is not None and stop.stopped:
            raise EvaluationStopped("the headroom check was stopped")

    async def episode(i: int, task: Task, gate: asyncio.Semaphore) -> Episode:
        async with gate:
            check_stop()
            played = await run_episode(
                FixedPolicy(len(pool), i),
                pool,
                task,
                settings,
                seed=_task_seed(seed, task),
                tag=EpisodeTag(run_id=run_id, candidate=i),
            )
        tick(1)
        return played

    async def reply(
        i: int, task: Task, messages: tuple[Message, ...], call_seed: int | None
    ) -> str | None:
        """Worker ``i``'s answer to ``task``, or None with its failure noted."""
        check_stop()
        worker = pool[i]
        try:
            got = await worker.complete(
                messages,
                max_tokens=settings.max_tokens,
                temperature=settings.temperature,
                seed=call_seed,
                context=EpisodeContext(task, str(Role.WORKER), None, ()),
            )
        except WorkerError as exc:
            answers[(i, task.id)] = Answer(0.0, 0.0, worker.redact(str(exc)))
            tick(1)
            return None
        answers[(i, task.id)] = Answer(0.0, got.cost)
        return worker.redact(got.text)

    def grade_all(part: list[tuple[int, Task, str]]) -> list[float]:
        rewards = []
        for _, task, text in part:
            check_stop()  # the chunks wait in the executor's queue: check at each answer
            rewards.append(grade(task, text).reward)
        return rewards

    async def grade_chunk(part: list[tuple[int, Task, str]]) -> None:
        rewards = await asyncio.to_thread(grade_all, part)
        for (i, task, _), reward in zip(part, rewards, strict=True):
            answers[(i, task.id)] = Answer(reward, answers[(i, task.id)].cost)
        tick(len(part))

    async def run() -> list[Episode]:
        live = [i for i in range(len(pool)) if not read[i]]
        gate = episode_gate(concurrency, len(live) * len(tasks))
        running = [asyncio.ensure_future(episode(i, t, gate)) for t in tasks for i in live]
        try:
            to_grade: list[tuple[int, Task, str]] = []
            readers = [i for i in range(len(pool)) if read[i]]
            prompts = settings.prompts or Prompts.load()
            for task in tasks if readers else ():
                messages = build_messages(prompts, Role.WORKER, task, (), None)
                call_seed = turn_seed(_task_seed(seed, task), 0)  # as the episode's first turn
                for i in readers:
                    text = await reply(i, task, messages, call_seed)
                    if text is not None:
                        to_grade.append((i, task, text))
            chunks = range(0, len(to_grade), GRADE_CHUNK)
            await asyncio.gather(*(grade_chunk(to_grade[k : k + GRADE_CHUNK]) for k in chunks))
            return list(await asyncio.gather(*running))
        except EvaluationStopped:
            await asyncio.gather(*running, return_exceptions=True)
            raise

    episodes = session.run(run())
    answers.update({(e.candidate, e.task_id): Answer.of(e) for e in episodes})
    return answers, episodes


def outcomes_of(
    answers: dict[tuple[int, str], Answer], pool: Sequence[str], tasks: Sequence[Task]
) -> tuple[Outcomes, tuple[int, str] | None]:
    """The ``Outcomes`` of every worker's answers (by worker index and task id), leaving
    out every task where a call failed: a failed call is not a wrong answer. Returns them
    and (tasks left out, the first error) when any was."""
    kept: list[Task] = []
    first_error = None
    dropped = 0
    for task in tasks:
        got = [answers.get((i, task.id)) for i in range(len(pool))]
        errors = [a.error for a in got if a is not None and a.error is not None]
        if any(a is None for a in got) or errors:
            dropped += 1
            first_error = first_error or (errors[0] if errors else "no answer")
            continue
        kept.append(task)
    right = np.array(
        [[answers[(i, t.id)].reward >= 1.0 for t in kept] for i in range(len(pool))], dtype=bool
    ).reshape(len(pool), len(kept))
    cost = np.array(
        [[answers[(i, t.id)].cost for t in kept] for i in range(len(pool))], dtype=float
    ).reshape(len(pool), len(kept))
    outcomes = Outcomes(
        workers=tuple(pool),
        tasks=tuple(t.id for t in kept),
        groups=tuple(t.group for t in kept),
        right=right,
        cost=cost,
    )
    return outcomes, ((dropped, first_error or "") if dropped else None)
