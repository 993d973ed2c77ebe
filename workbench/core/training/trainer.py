"""The trainer: an explicit ask / evaluate / tell loop with budgets, validation,
checkpoints after every generation, events for listeners, and exact resume.

The default optimizer is separable CMA-ES; the baselines (random search, REINFORCE,
imitation) in ``workbench.core.optimizers`` share this loop, its budget, its events and
its checkpoints.

Each generation: the optimizer proposes candidates; every candidate is scored on the same
minibatch of ``m`` training tasks (sampling its choices); all episodes of the generation
are in flight together (all of them by default, else at most ``optimizer.concurrency``)
and their backbone forwards are batched; fitness is the mean reward minus the optional
penalties; the generation, its episodes and a checkpoint are written in one transaction.
A run killed at any moment resumes from its last checkpoint and never repeats or skips a
generation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from workbench.core.config import RunConfig, routing_table_reason, table_config
from workbench.core.coordinator import Action, Backbone, Coordinator, HeadConfig
from workbench.core.coordinator.feature_store import FeatureStore, stored_features
from workbench.core.errors import InvalidInput
from workbench.core.optimizers.base import Proposal
from workbench.core.optimizers.make import make_optimizer
from workbench.core.optimizers.registry import optimizer_entry
from workbench.core.optimizers.sep_cma_es import head_sigma_factor
from workbench.core.policies import FixedPolicy
from workbench.core.protocol import (
    EpisodeSettings,
    EpisodeTag,
    Prompts,
    episode_gate,
    render_transcript,
    run_episode,
)
from workbench.core.records import Episode, Role, RunResult, RunStatus, RunStopReason
from workbench.core.store import Store
from workbench.core.tasks.model import Suite, Task
from workbench.core.training.basis import CALIBRATION_ROLES, CALIBRATION_TASKS, SearchBasis
from workbench.core.training.checkpoint import Checkpoint, CheckpointError, Spend, latest_checkpoint
from workbench.core.training.events import (
    EpisodeDone,
    Event,
    GenerationStats,
    Listener,
    RunFailed,
    RunFinished,
    RunStarted,
    Stopped,
    StopToken,
)
from workbench.core.training.executors import (
    Candidate,
    Executor,
    GenerationWork,
    LocalExecutor,
    coordinator_from_vector,
    derived_seed,
)
from workbench.core.training.table import (
    RoutingTable,
    argmax_actions,
    build_routing_table,
    episode_uniforms,
    pool_reason,
    sampled_choices,
)
from workbench.core.workers.base import Worker

log = logging.getLogger(__name__)

# how often a running generation's spend so far is written into the run's record: a run
# killed mid-generation shows (and a resumed one counts) what it paid up to that moment
SPEND_RECORD_S = 1.0


@dataclass(kw_only=True)
class TrainState:
    generation: int = -1  # last completed generation
    spend: Spend = field(default_factory=Spend)
    best_validation: float | None = None
    best_vector: np.ndarray | None = None
    best_validation_generation: int | None = None
    last_validation: float | None = None
    basis: SearchBasis | None = None  # fitted when the run starts, kept in its checkpoints


def task_splits(config: RunConfig, suite: Suite) -> dict[str, tuple[Task, ...]]:
    """The run's train/validation/test tasks: the suite's seeded splits, cut to the sizes."""
    splits = suite.splits(seed=config.tasks.split_seed)
    out = {}
    for name in ("train", "validation", "test"):
        size = getattr(config.tasks, name)
        out[name] = splits[name][:size] if size else splits[name]
    if not out["train"]:
        raise InvalidInput(
            f"suite '{suite.name}' has no training tasks: give it a train split or more tasks"
        )
    if not out["validation"]:
        raise InvalidInput(
            f"suite '{suite.name}' has no validation tasks: give it a validation split or more tasks"
        )
    return out


class Trainer:
    """Runs one training run (new or resumed) to its end, reporting events.

    ``backbone`` and ``pool`` may be passed in to share them across runs (the study);
    otherwise they are built from the config.
    """

    def __init__(
        self,
        config: RunConfig,
        store: Store,
        *,
        suite: Suite,
        pool: Sequence[Worker],
        backbone: Backbone,
        listeners: Sequence[Listener] = (),
        stop: StopToken | None = None,
        prompts: Prompts | None = None,
        cache_stats: Callable[[], int] | None = None,
        executor: Executor | None = None,
        feature_store: FeatureStore | None = None,
        table: RoutingTable | None = None,
    ):
        # the config as given is what the run stores; on a routing table it trains with
        # the recorded-pool settings (config.table_config) when the config asks for them
        self.given_config = config
        table_reason = routing_table_reason(config) or pool_reason(pool)
        self.config = config = table_config(config) if table_reason is None else config
        self.store = store
        self.suite = suite
        self.pool = list(pool)
        self.backbone = backbone
        self.listeners = list(listeners)
        self.stop = stop or StopToken()
        self.prompts = prompts or Prompts.load()
        self.cache_hits = cache_stats or (lambda: 0)
        self.splits = task_splits(config, suite)
        self.settings = EpisodeSettings(
            suite=suite.name,
            max_turns=config.protocol.max_turns,
            max_tokens=config.protocol.max_tokens,
            temperature=config.protocol.temperature,
            prompts=self.prompts,
            thinker_suggests_role=config.protocol.thinker_suggests_role,
            roles=config.protocol.roles,
        )
        self.head_config = HeadConfig(len(self.pool), backbone.hidden_size)
        self.n_svf = backbone.svf().n_params if config.optimizer.svf else 0
        self.n_params = self.n_svf + (
            self.head_config.shape[0] * (config.optimizer.search_rank + 1)
            if config.optimizer.search_basis == "projection"
            else self.head_config.n_params
        )
        # optimizer.rollouts = 0: every training task scores every candidate; the optimizer
        # is built with that number (``self.optimizer.rollouts`` is its own minibatch)
        self.minibatch_size = config.optimizer.rollouts or len(self.splits["train"])
        self.optimizer = self._make_optimizer(config.run.seed)
        # a recorded pool routed in one Worker turn trains on its routing table (table.py):
        # the same decisions as its episodes, scored without playing them
        self.table_reason = table_reason
        self.feature_store = feature_store
        # a table built by the caller (cross-validation builds one for every fold)
        self.table: RoutingTable | None = table if self.uses_table else None
        self._table_features: dict[str, np.ndarray] = {}
        self.state = TrainState()
        self.run_id: str | None = None
        # where the training episodes run; validation and the basis's calibration always
        # run here, on this process's backbone and pool
        self.executor = executor or LocalExecutor(
            backbone, self.pool, self.stop, config.optimizer.concurrency
        )
        # what the generation in flight has paid so far (``seconds``: when it started)
        self._in_flight = Spend(seconds=time.perf_counter())
        self._spend_recorded = time.monotonic()

    def _make_optimizer(self, seed: int) -> Any:
        """The config's optimizer for this run's search, seeded with ``seed`` (its
        minibatch size resolved)."""
        return make_optimizer(
            replace(self.config.optimizer, rollouts=self.minibatch_size),
            seed,
            self.n_params,
            self.head_config,
            self._features,
            {t.id: t for t in self.suite.tasks},
        )

    @property
    def uses_table(self) -> bool:
        """Whether this run scores candidates on its routing table (``table.py``)."""
        return self.table_reason is None

    # -- public --------------------------------------------------------------

    @property
    def current_run_id(self) -> str:
        """The id of the run being trained (after ``start`` or ``resume``)."""
        if self.run_id is None:
            raise RuntimeError("the trainer has no run yet: call start() or resume() first")
        return self.run_id

    def start(self, name: str | None = None, *, unique: bool = False) -> str:
        """Create the run record, named ``name`` (else the config's ``run.name``; ``unique``:
        a counter follows a name the workspace has, ``Store.create_run``); returns its id."""
        config, named = self.given_config.to_dict(), name or self.config.run.name
        self.run_id = self.store.create_run(named, "train", config, unique=unique)
        return self.run_id

    def resume(self, run_id: str) -> None:
        """Continue ``run_id`` from its last checkpoint (or from the start if it has none)."""
        self.run_id = self.store.resolve_run_id(run_id)
        checkpoint = latest_checkpoint(self.store, self.run_id)
        if checkpoint is not None:
            self._restore(checkpoint)
        self._count_lost_spend()

    def _count_lost_spend(self) -> None:
        """Add to the run's spend what its last process paid past its last checkpoint (the
        episodes of a generation in flight when it was killed, which stored nothing), as
        that process recorded it while it ran (``_record_spend``): a budget then counts
        every call paid for, and a resumed run never reads lower than what was paid."""
        result = self.store.get_run(self.current_run_id).run_result()
        if result is None or not result.spend:
            return
        paid = result.spend
        s = self.state.spend
        lost = Spend(
            episodes=max(0, int(paid.get("episodes", 0)) - s.episodes),
            calls=max(0, int(paid.get("calls", 0)) - s.calls),
            dollars=max(0.0, float(paid.get("dollars", 0.0)) - s.dollars),
            seconds=max(0.0, float(paid.get("minutes", 0.0)) * 60 - s.seconds),
        )
        if lost.episodes or lost.calls or lost.dollars:
            log.info(
                "run %s: %d episodes, %d calls, $%.4f paid before it was killed and not "
                "stored count in its spend",
                self.run_id,
                lost.episodes,
                lost.calls,
                lost.dollars,
            )
        s.episodes += lost.episodes
        s.calls += lost.calls
        s.dollars += lost.dollars
        s.seconds += lost.seconds

    def run(self) -> TrainState:
        """Train until a budget, the generation limit or a stop ends the run."""
        return asyncio.run(self.run_async())

    async def run_async(self) -> TrainState:
        """``run`` inside a running event loop (the caller owns the loop and the pool)."""
        if self.run_id is None:
            self.start()
        cfg, run_id = self.config, self.current_run_id
        # who runs it: lets a listing tell a live run from one that was killed
        self.store.set_run_status(
            run_id,
            RunStatus.RUNNING,
            result=replace(self._result(), pid=os.getpid(), host=socket.gethostname()).to_dict(),
        )
        self._emit(
            RunStarted(
                run_id=run_id,
                name=self.store.get_run(run_id).name,  # as listed: unique, kept on resume
                n_params=self.n_params,
                popsize=self.optimizer.popsize,
                rollouts=self.optimizer.rollouts,
                start_generation=self.state.generation + 1,
                budget={k: v for k, v in asdict(cfg.budget).items()},
                executor=self.executor.info.executor,
                actors=self.executor.info.actors,
                nodes=self.executor.info.nodes,
            )
        )
        reason = None
        try:
            if self.uses_table and not self._table_features:
                await self._build_table()
            if self.state.basis is None:
                self.state.basis = await self._fit_basis()
            while reason is None:
                reason = self._budget_reason(before_generation=True)
                if reason:
                    break
                await self._generation(self.state.generation + 1)
                reason = self._budget_reason(before_generation=False)
        except Stopped:
            reason = RunStopReason.STOPPED
        except Exception as exc:
            # the sentence, not a traceback: the caller shows the error (the CLI its
            # traceback under -v); the details stay in the debug log
            log.info("run %s failed: %s: %s", run_id, type(exc).__name__, exc)
            log.debug("run %s failed", run_id, exc_info=True)
            self.store.set_run_status(
                run_id,
                RunStatus.FAILED,
                stop_reason=RunStopReason.ERROR,
                error=f"{type(exc).__name__}: {exc}",
            )
            self._emit(RunFailed(run_id, f"{type(exc).__name__}: {exc}"))
            raise
        status = RunStatus.STOPPED if reason is RunStopReason.STOPPED else RunStatus.FINISHED
        # a stop keeps what the generation it cut short paid (a resume counts it too)
        result = replace(self._result(), spend=self._so_far().as_totals())
        self.store.set_run_status(run_id, status, stop_reason=reason, result=result.to_dict())
        self._emit(
            RunFinished(run_id, reason, self.state.generation + 1, self.state.best_validation)
        )
        return self.state

    def _paid(self, episode: Episode, training: bool) -> None:
        """Count a finished episode's calls in the generation's in-flight spend, and record
        the run's spend so far in its record at most every ``SPEND_RECORD_S`` seconds: a
        run killed before its generation is stored then still shows what it paid."""
        f = self._in_flight
        f.episodes += 1 if training else 0
        f.calls += worker_calls([episode])
        f.dollars += episode.cost
        now = time.monotonic()
        if now - self._spend_recorded < SPEND_RECORD_S:
            return
        self._spend_recorded = now
        self._record_spend(self._so_far())

    def _so_far(self) -> Spend:
        """The run's spend: its completed generations' and what the one in flight paid."""
        s, f = self.state.spend, self._in_flight
        seconds = s.seconds + (time.perf_counter() - f.seconds)
        return Spend(s.episodes + f.episodes, s.calls + f.calls, s.dollars + f.dollars, seconds)

    def _record_spend(self, spend: Spend) -> None:
        """Write the run's spend so far into its record (with who runs it)."""
        result = replace(
            self._result(), spend=spend.as_totals(), pid=os.getpid(), host=socket.gethostname()
        )
        self.store.set_run_status(self.current_run_id, RunStatus.RUNNING, result=result.to_dict())

    def _budget_reason(
        self, before_generation: bool, spend: Spend | None = None, done: int | None = None
    ) -> RunStopReason | None:
        """Why the run stops now, or None. ``before_generation``: also stop when the next
        generation's episodes would pass ``budget.episodes``. ``spend`` and ``done``
        (generations completed) default to the run's own; a projection passes others."""
        b, s = self.config.budget, spend or self.state.spend
        done = self.state.generation + 1 if done is None else done
        if done >= b.generations:
            return RunStopReason.GENERATIONS
        per_generation = self.optimizer.popsize * self.optimizer.rollouts
        if b.episodes and s.episodes + (per_generation if before_generation else 0) > b.episodes:
            return RunStopReason.EPISODES
        if b.calls and s.calls >= b.calls:
            return RunStopReason.CALLS
        if b.dollars and s.dollars >= b.dollars:
            return RunStopReason.DOLLARS
        if b.minutes and s.seconds >= b.minutes * 60:
            return RunStopReason.MINUTES
        if self.stop.stopped and spend is None:
            return RunStopReason.STOPPED
        return None

    async def _generation(self, g: int) -> None:
        cfg = self.config
        started = time.perf_counter()
        bs = self.backbone.stats
        busy0, req0, fwd0 = bs.busy_s, bs.requests, bs.forwards
        tokens0, batches0 = bs.tokens_forwarded, bs.batches
        exact0, exact_tokens0 = bs.exact, bs.exact_tokens
        hits0 = self.cache_hits()
        self._in_flight = Spend(seconds=started)
        # every generation starts from empty feature caches: its features are then a
        # function of its own requests, which a resumed run repeats exactly
        self.backbone.forget()
        self._restart_if_due(g)
        proposals = self.optimizer.ask()
        minibatch = self._minibatch(g)
        if self.table is not None:
            await self._table_generation(g, started, proposals, minibatch)
            return

        share = self.opening_share(g)
        work = GenerationWork(
            run_id=self.current_run_id,
            generation=g,
            run_seed=cfg.run.seed,
            common_random_numbers=optimizer_entry(self.config.optimizer.name).ranks_candidates,
            opening_share=share,
            minibatch=tuple(minibatch),
            settings=self.settings,
            n_workers=len(self.pool),
            svf=bool(self.n_svf),
        )

        def done(k: int, episode: Episode) -> None:
            self._paid(episode, training=True)
            self._emit(
                EpisodeDone(
                    run_id=self.current_run_id,
                    generation=g,
                    candidate=k,
                    task_id=episode.task_id,
                    reward=episode.reward,
                    turns=len(episode.turns),
                    stop_reason=episode.stop_reason,
                    cost=episode.cost,
                )
            )

        candidates = [self._candidate(k, p) for k, p in enumerate(proposals)]
        per = await self.stop.race(self.executor.run_generation(work, candidates, done))
        flat = [e for eps in per for e in eps]
        fitness = [float(np.mean([self._score(e) for e in eps])) for eps in per]
        self.optimizer.tell(proposals, fitness, per)
        episodes = list(flat)

        validation = None
        if (g + 1) % cfg.optimizer.validate_every == 0 or self._last_generation(g, flat, started):
            validation, val_episodes = await self._validate(g)
            episodes += val_episodes

        s = self.state.spend
        calls = worker_calls(episodes)
        dollars = sum(e.cost for e in episodes)
        wall = time.perf_counter() - started
        s.episodes += len(flat)
        s.calls += calls
        s.dollars += dollars
        s.seconds += wall
        self.state.generation = g
        self._in_flight = Spend(seconds=time.perf_counter())  # counted in the state now
        usage = Counter(f"{t.worker}/{t.role}" for e in flat for t in e.turns)
        stats = GenerationStats(
            run_id=self.current_run_id,
            generation=g,
            best=max(fitness),
            mean=float(np.mean(fitness)),
            median=float(statistics.median(fitness)),
            worst=min(fitness),
            sigma=self.optimizer.sigma,
            evaluations=len(flat),
            calls=calls,
            tokens=sum(e.tokens_in + e.tokens_out for e in episodes),
            dollars=dollars,
            cache_hits=self.cache_hits() - hits0,
            wall_s=wall,
            coordinator_s=bs.busy_s - busy0,
            worker_s=sum(t.latency_s for e in episodes for t in e.turns),
            features_requested=bs.requests - req0,
            features_computed=bs.forwards - fwd0,
            usage=dict(usage),
            validation=validation,
            best_validation=self.state.best_validation,
            totals=s.as_totals(),
            tokens_forwarded=bs.tokens_forwarded - tokens0,
            batches=bs.batches - batches0,
            mean_batch=(bs.forwards - fwd0) / max(1, bs.batches - batches0),
            rechecks=bs.exact - exact0,
            recheck_tokens=bs.exact_tokens - exact_tokens0,
            opening_share=share,
        )
        await asyncio.to_thread(
            self.store.commit_generation,
            self.current_run_id,
            g,
            stats.to_stored(),
            self._checkpoint(),
            episodes,
        )
        self._emit(stats)

    def _minibatch(self, g: int) -> list[Task]:
        """Generation ``g``'s training tasks, shared by its candidates: every training task
        in order when the optimizer's minibatch is all of them (``optimizer.rollouts`` 0),
        else a seeded draw of its size."""
        train = self.splits["train"]
        m = self.optimizer.rollouts  # the optimizer's own (imitation spreads it over workers)
        if not self.config.optimizer.rollouts and m == len(train):
            return list(train)
        batch_rng = np.random.default_rng(derived_seed(self.config.run.seed, "minibatch", g))
        picks = batch_rng.choice(len(train), size=m, replace=len(train) < m)
        return [train[int(i)] for i in picks]

    async def _build_table(self) -> None:
        """The routing table and the query features of the training and validation tasks
        (read from the feature store where kept, else computed once and kept)."""
        tasks = [*self.splits["train"], *self.splits["validation"]]
        if self.table is None:
            self.table = await build_routing_table(self.pool, tasks, self.settings)
        texts = [render_transcript(t, ()) for t in tasks]
        rows = await asyncio.to_thread(stored_features, self.backbone, self.feature_store, texts)
        self._table_features = {t.id: r for t, r in zip(tasks, rows, strict=True)}
        log.info(
            "run %s: scoring on the routing table of %d tasks x %d workers",
            self.run_id,
            len(tasks),
            len(self.pool),
        )

    def _table_rows(self, tasks: Sequence[Task]) -> tuple[np.ndarray, np.ndarray]:
        """The table rows and query features of ``tasks``."""
        assert self.table is not None
        return self.table.rows(tasks), np.stack([self._table_features[t.id] for t in tasks])

    async def _table_generation(
        self, g: int, started: float, proposals: Sequence[Proposal], minibatch: list[Task]
    ) -> None:
        """Generation ``g`` on the routing table: every candidate's sampled decisions on
        the minibatch (those of its episodes: ``table.sampled_choices``), its fitness, the
        optimizer told, validation, and the generation stored without training episodes
        (a run scores thousands of them a generation; they are a function of the head,
        the table and the seeds)."""
        cfg, table = self.config, self.table
        assert table is not None
        rows, features = self._table_rows(minibatch)
        heads = np.stack(
            [
                self._candidate(k, p).vector.reshape(self.head_config.shape)  # type: ignore[union-attr]
                for k, p in enumerate(proposals)
            ]
        )
        uniforms = episode_uniforms(cfg.run.seed, g, len(minibatch))
        choices = sampled_choices(
            heads, features, table.answered[rows], uniforms, self.settings.roles
        )
        reward, cost = table.outcome(rows, choices)
        o = cfg.optimizer
        scores = reward - o.cost_penalty * cost - o.turn_penalty + o.turn_bonus
        fitness = [float(x) for x in scores.mean(axis=1)]
        self.optimizer.tell(proposals, fitness, [[] for _ in proposals])
        episodes: list[Episode] = []
        validation = None
        if (g + 1) % o.validate_every == 0 or self._last_generation(g, [], started):
            validation = self._table_validate(g)
        n = int(choices.size)
        dollars = float(cost.sum())
        s = self.state.spend
        wall = time.perf_counter() - started
        s.episodes += n
        s.calls += n
        s.dollars += dollars
        s.seconds += wall
        self.state.generation = g
        picked = Counter(int(w) for w in choices.reshape(-1))
        stats = GenerationStats(
            run_id=self.current_run_id,
            generation=g,
            best=max(fitness),
            mean=float(np.mean(fitness)),
            median=float(statistics.median(fitness)),
            worst=min(fitness),
            sigma=self.optimizer.sigma,
            evaluations=n,
            calls=n,
            tokens=int(table.tokens[rows, choices].sum()),
            dollars=dollars,
            cache_hits=0,
            wall_s=wall,
            coordinator_s=0.0,
            worker_s=float(table.latency[rows, choices].sum()),
            features_requested=n,
            features_computed=0,
            usage={f"{self.pool[w].id}/{Role.WORKER}": c for w, c in sorted(picked.items())},
            validation=validation,
            best_validation=self.state.best_validation,
            totals=s.as_totals(),
            opening_share=0.0,
        )
        await asyncio.to_thread(
            self.store.commit_generation,
            self.current_run_id,
            g,
            stats.to_stored(),
            self._checkpoint(),
            episodes,
        )
        self._emit(stats)

    def _table_validate(self, g: int) -> float:
        """``_validate`` on the routing table: the distribution mean acting by argmax on
        the validation split (near ties rechecked in fp32, as the coordinator does)."""
        tasks = self.splits["validation"]
        rows, features = self._table_rows(tasks)
        choices = self.table_choices(self._head_space(self.optimizer.center()), tasks)
        assert self.table is not None
        value = float(np.mean(self.table.outcome(rows, choices)[0]))
        self._record_validation(g, value)
        return value

    def table_actions(self, vector: np.ndarray, tasks: Sequence[Task]) -> list[Action]:
        """What a head-space ``vector`` (``[SVF offsets || head weights]``, as stored)
        decides for each task by argmax on the routing table (``table.argmax_actions``).
        The tasks' features are read from the feature store (or computed and kept) when
        the run has not read them yet."""
        assert self.table is not None
        missing = [t for t in tasks if t.id not in self._table_features]
        if missing:
            rows = stored_features(
                self.backbone, self.feature_store, [render_transcript(t, ()) for t in missing]
            )
            self._table_features.update(zip((t.id for t in missing), rows, strict=True))
        rows, features = self._table_rows(tasks)
        head = np.asarray(vector)[self.n_svf :].reshape(self.head_config.shape)
        return argmax_actions(head, features, self.table.answered[rows])

    def table_choices(self, vector: np.ndarray, tasks: Sequence[Task]) -> np.ndarray:
        """The worker each task goes to under ``table_actions``."""
        return np.array([a.worker for a in self.table_actions(vector, tasks)], dtype=np.int64)

    def opening_share(self, g: int) -> float:
        """The uniform share mixed into generation ``g``'s training openings: with
        ``optimizer.exploring_starts`` N, 1 at an attempt's first generation falling
        linearly to 0 at its N-th; 0 after, and without the option. A function of ``g``,
        so a resumed run explores as an uninterrupted one would."""
        n = self.config.optimizer.exploring_starts
        if not n:
            return 0.0
        length = self.config.attempt_generations
        attempt = min(g // length, self.config.optimizer.restarts)
        return max(0.0, 1.0 - (g - attempt * length) / n)

    def _restart_if_due(self, g: int) -> None:
        """With ``optimizer.restarts`` r > 0, start a fresh optimizer (seeded by the run's
        seed and the attempt) at generations L, 2L, ..., rL, L = ``budget.generations //
        (r + 1)``: a multi-start, as CMA-ES restarts are. Validation and the best vector
        span every attempt, so the run keeps the best coordinator of any of them. Why: on
        the team at two turns a run settles in the first ~100 generations either in the
        planner's plan or in the one-turn plan, which its logits then hold too firmly for
        its samples to leave (docs/results/multi-turn.md). The boundaries are a
        function of ``g``, so a resumed run restarts where an uninterrupted one would (the
        checkpoint holds the current attempt's optimizer)."""
        cfg = self.config
        restarts = cfg.optimizer.restarts
        length = cfg.attempt_generations
        if not restarts or g == 0 or g % length or g // length > restarts:
            return
        attempt = g // length
        self.optimizer = self._make_optimizer(
            derived_seed(cfg.run.seed, "restart", attempt) % 2**31
        )
        log.info(
            "run %s: attempt %d of %d from generation %d", self.run_id, attempt + 1, restarts + 1, g
        )

    def _last_generation(self, g: int, flat: Sequence[Episode], started: float) -> bool:
        """Whether any budget (generations, episodes, calls, dollars, minutes) ends the run
        after generation ``g``, judged on its training episodes: the last generation is
        always validated, whichever budget ends the run. (If only the validation's own
        spend would reach a budget, this generation is validated anyway.)"""
        s = self.state.spend
        projected = Spend(
            episodes=s.episodes + len(flat),
            calls=s.calls + worker_calls(flat),
            dollars=s.dollars + sum(e.cost for e in flat),
            seconds=s.seconds + time.perf_counter() - started,
        )
        return self._budget_reason(before_generation=True, spend=projected, done=g + 1) is not None

    def _score(self, episode: Episode) -> float:
        return fitness_score(self.config, episode)

    def _candidate(self, k: int, proposal: Proposal) -> Candidate:
        """Proposal ``k`` as the executor plays it: a fixed worker for one turn, or its
        vector in head space for the config's turns."""
        if proposal.fixed_worker is not None:
            return Candidate(k, 1, fixed_worker=proposal.fixed_worker)
        assert proposal.vector is not None  # a proposal is a vector or a fixed worker
        return Candidate(
            k, self.config.protocol.max_turns, vector=self._head_space(proposal.vector)
        )

    def coordinator(self, vector: np.ndarray) -> Coordinator:
        """The coordinator of a search vector."""
        return coordinator_from_vector(
            self.backbone, len(self.pool), self._head_space(vector), bool(self.n_svf)
        )

    def _head_space(self, vector: np.ndarray) -> np.ndarray:
        """A search vector as ``[SVF offsets || head weights]``: what is stored and exported."""
        vector = np.asarray(vector, dtype=np.float64)
        head = self.basis.head(vector[self.n_svf :], self.head_config.shape)
        return np.concatenate([vector[: self.n_svf], head])

    @property
    def basis(self) -> SearchBasis:
        return self.state.basis or SearchBasis()

    async def _fit_basis(self) -> SearchBasis:
        """The run's search basis (if ``SearchBasis.fitted``), from the opening transcripts of a
        seeded random sample of its training tasks (the whitened basis with two or more
        turns also from one turn of each worker on them: ``_calibration_transcripts``)."""
        o = self.config.optimizer
        if not SearchBasis.fitted(o.search_basis, o.name):
            return SearchBasis()
        train = self.splits["train"]
        if o.search_basis == "projection":
            return await self._fit_projection(train, o.search_rank)
        rng = np.random.default_rng(derived_seed(self.config.run.seed, "basis"))
        sample = rng.choice(len(train), size=min(CALIBRATION_TASKS, len(train)), replace=False)
        tasks = [train[int(i)] for i in sorted(sample)]
        texts = [render_transcript(task, ()) for task in tasks]
        if o.search_basis == "whitened" and self.config.protocol.max_turns > 1:
            texts += await self._calibration_transcripts(tasks)
        features = await self.stop.race(asyncio.to_thread(self.backbone.features, texts))
        if o.search_basis == "whitened":
            basis = SearchBasis.fit_whitened(features, o.search_rank)
        else:
            basis = SearchBasis.fit(features)
        log.info(
            "run %s: %s search basis, rank %d, alpha %.2f",
            self.run_id,
            basis.kind,
            0 if basis.components is None else len(basis.components),
            basis.alpha,
        )
        return basis

    async def _fit_projection(self, train: Sequence[Task], rank: int) -> SearchBasis:
        """The projection basis, fitted on every training task's query feature on a
        routing table (all are at hand), else on a seeded sample of them."""
        if self._table_features:
            features = np.stack([self._table_features[t.id] for t in train])
        else:
            rng = np.random.default_rng(derived_seed(self.config.run.seed, "basis"))
            size = min(len(train), max(CALIBRATION_TASKS, 4 * (rank + 1)))
            sample = sorted(rng.choice(len(train), size=size, replace=False))
            texts = [render_transcript(train[int(i)], ()) for i in sample]
            features = await asyncio.to_thread(self.backbone.features, texts)
        basis = SearchBasis.fit_projection(features, rank)
        log.info(
            "run %s: projection basis, rank %d, from %d tasks", self.run_id, rank, len(features)
        )
        return basis

    async def _calibration_transcripts(self, tasks: list[Task]) -> list[str]:
        """The transcripts after one turn of each worker as Thinker and as Worker on each
        calibration task, for the whitened basis: what a Thinker's guidance or a first
        answer adds to a transcript is then among the directions it evens out. Their
        worker calls, dollars and time count in the run's spend; the episodes are not
        stored (they train nothing)."""
        cfg = self.config
        started = time.perf_counter()
        gate = episode_gate(
            cfg.optimizer.concurrency, len(tasks) * len(self.pool) * len(CALIBRATION_ROLES)
        )
        one_turn = replace(self.settings, max_turns=1)

        async def one(j: int, w: int, role: Role, task: Task) -> Episode:
            async with gate:
                await self.stop.checkpoint()
                episode = await run_episode(
                    FixedPolicy(len(self.pool), w, role),
                    self.pool,
                    task,
                    one_turn,
                    seed=derived_seed(cfg.run.seed, "basis", j, w, str(role)) % 2**31,
                    tag=EpisodeTag(run_id=self.run_id, generation=-1, candidate=None),
                )
            self._paid(episode, training=True)  # a calibration episode counts as one
            return episode

        plays = (
            one(j, w, role, task)
            for j, task in enumerate(tasks)
            for w in range(len(self.pool))
            for role in CALIBRATION_ROLES
        )
        episodes = await self.stop.race(asyncio.gather(*plays))
        s = self.state.spend
        s.episodes += len(episodes)
        s.calls += worker_calls(episodes)
        s.dollars += sum(e.cost for e in episodes)
        s.seconds += time.perf_counter() - started
        self._in_flight = Spend(seconds=time.perf_counter())  # counted in the state now
        by_id = {t.id: t for t in tasks}
        return [render_transcript(by_id[e.task_id], e.turns) for e in episodes if e.turns]

    async def _validate(self, g: int) -> tuple[float, list[Episode]]:
        """The distribution mean, argmax acting, on the validation split."""
        cfg = self.config
        center = self.optimizer.center()
        coordinator = self.coordinator(center)
        gate = episode_gate(cfg.optimizer.concurrency, len(self.splits["validation"]))

        async def one(j: int, task: Task) -> Episode:
            async with gate:
                await self.stop.checkpoint()
                episode = await run_episode(
                    coordinator,
                    self.pool,
                    task,
                    self.settings,
                    rng=None,
                    seed=derived_seed(cfg.run.seed, "val", j) % 2**31,
                    tag=EpisodeTag(run_id=self.run_id, generation=g, candidate=None),
                )
            self._paid(episode, training=False)
            return episode

        plays = (one(j, t) for j, t in enumerate(self.splits["validation"]))
        episodes = await self.stop.race(asyncio.gather(*plays))
        value = float(np.mean([e.reward for e in episodes]))
        self._record_validation(g, value)
        return value, list(episodes)

    def _record_validation(self, g: int, value: float) -> None:
        """Keep generation ``g``'s validation score, and its mean as the best vector when
        it scores higher than any before."""
        self.state.last_validation = value
        if self.state.best_validation is None or value > self.state.best_validation:
            self.state.best_validation = value
            self.state.best_vector = self._head_space(self.optimizer.center())
            self.state.best_validation_generation = g

    def _features(self, transcripts: list[str]) -> np.ndarray:
        """Features in the search basis: what the gradient baselines differentiate against."""
        return self.basis.features(self.backbone.features(transcripts))

    # -- checkpoints ---------------------------------------------------------

    def _checkpoint(self) -> bytes:
        st = self.state
        return Checkpoint(
            generation=st.generation,
            optimizer=self.optimizer.dumps(),
            spend=st.spend,
            best_validation=st.best_validation,
            best_vector=st.best_vector,
            best_validation_generation=st.best_validation_generation,
            last_validation=st.last_validation,
            center=self._head_space(self.optimizer.center()),
            basis=self.basis,
            n_params=self.n_params,
            n_svf=self.n_svf,
        ).dumps()

    def _restore(self, checkpoint: Checkpoint) -> None:
        if checkpoint.n_params != self.n_params:
            raise CheckpointError(
                f"checkpoint has {checkpoint.n_params} parameters, this config gives "
                f"{self.n_params}: was the pool, the backbone or SVF changed since the run started?"
            )
        self.optimizer.loads(checkpoint.optimizer)
        self.state = TrainState(
            generation=checkpoint.generation,
            spend=Spend(**asdict(checkpoint.spend)),
            best_validation=checkpoint.best_validation,
            best_vector=checkpoint.best_vector,
            best_validation_generation=checkpoint.best_validation_generation,
            last_validation=checkpoint.last_validation,
            basis=checkpoint.basis,
        )

    def _result(self) -> RunResult:
        st = self.state
        return RunResult(
            generations=st.generation + 1,
            best_validation=st.best_validation,
            best_validation_generation=st.best_validation_generation,
            n_params=self.n_params,
            spend=st.spend.as_totals(),
            search_basis_alpha=None if st.basis is None else st.basis.alpha,
            backbone_device=self.backbone.device,
            backbone_precision=self.backbone.precision,
            executor=self.executor.info.executor,
            actors=self.executor.info.actors,
            nodes=list(self.executor.info.nodes) or None,
            sigma0_head_scale=head_sigma_factor(
                self.config.optimizer.sigma0_scale, self.head_config.hidden_size
            )
            if optimizer_entry(self.config.optimizer.name).scales_head_sigma
            else None,
        )

    def _emit(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a broken listener must not end the run
                log.exception("listener failed on %s", type(event).__name__)


def worker_calls(episodes: Sequence[Episode]) -> int:
    """The worker calls ``episodes`` made (a Verifier chosen before any answer makes none)."""
    return sum(len([t for t in e.turns if t.messages]) for e in episodes)


def fitness_score(config: RunConfig, episode: Episode) -> float:
    """One episode's contribution to a candidate's fitness: the reward, minus the cost and
    turn penalties, plus the released run's optional shaping (``diversity_bonus`` when the
    episode called two or more distinct workers, ``turn_bonus`` per turn)."""
    o = config.optimizer
    turns = len(episode.turns)
    score = episode.reward - o.cost_penalty * episode.cost - o.turn_penalty * turns
    if o.diversity_bonus and len({t.worker for t in episode.turns if t.messages}) >= 2:
        score += o.diversity_bonus
    return score + o.turn_bonus * turns
