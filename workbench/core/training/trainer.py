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
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from workbench.core.coordinator import Backbone, Coordinator, HeadConfig
from workbench.core.coordinator.feature_store import FeatureStore
from workbench.core.optimizers.base import Proposal
from workbench.core.optimizers.make import make_optimizer
from workbench.core.optimizers.registry import optimizer_entry
from workbench.core.optimizers.sep_cma_es import head_sigma_factor
from workbench.core.protocol import EpisodeTag, episode_gate, run_episode
from workbench.core.records import (
    Episode,
    RunResult,
    RunStopReason,
    Spend,
    worker_calls,
)
from workbench.core.store import Store
from workbench.core.store.lifecycle import RunLife, error_words
from workbench.core.tasks.model import Suite, Task
from workbench.core.training.basis import SearchBasis
from workbench.core.training.basis_fit import calibration_episodes, fit_basis
from workbench.core.training.checkpoint import (
    Checkpoint,
    CheckpointError,
    TableChoice,
    latest_checkpoint,
)
from workbench.core.training.events import (
    EpisodeDone,
    Event,
    GenerationStats,
    Listener,
    Preparing,
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
from workbench.core.training.plan import TrainPlan
from workbench.core.training.state import TrainState, budget_reason, lost_spend, task_splits
from workbench.core.training.table import RoutingTable
from workbench.core.training.table_scoring import TableScoring
from workbench.core.transcript import render_transcript
from workbench.core.workers.base import Worker

log = logging.getLogger(__name__)

# how often a running generation's spend so far is written into the run's record: a run
# killed mid-generation shows (and a resumed one counts) what it paid up to that moment
SPEND_RECORD_S = 1.0


class Trainer:
    """Runs one training run (new or resumed) to its end, reporting events.

    ``plan``: the run's settings (``TrainPlan``, built by the job from its config);
    ``backbone`` and ``pool`` are the job's, shared across runs where a job trains
    several (cross-validation's folds).
    """

    def __init__(
        self,
        plan: TrainPlan,
        store: Store,
        *,
        suite: Suite,
        pool: Sequence[Worker],
        backbone: Backbone,
        listeners: Sequence[Listener] = (),
        stop: StopToken | None = None,
        cache_stats: Callable[[], int] | None = None,
        executor: Executor | None = None,
        feature_store: FeatureStore | None = None,
        table: RoutingTable | None = None,
    ):
        self.plan = plan
        self.store = store
        self.suite = suite
        self.pool = list(pool)
        self.backbone = backbone
        self.listeners = list(listeners)
        self.stop = stop or StopToken()
        self.cache_hits = cache_stats or (lambda: 0)
        self.splits = task_splits(plan.tasks, suite)
        self.settings = plan.episode
        self.head_config = HeadConfig(len(self.pool), backbone.hidden_size)
        o = plan.optimizer
        self.n_svf = backbone.svf().n_params if o.svf else 0
        self.n_params = self.n_svf + (
            self.head_config.shape[0] * (o.search_rank + 1)
            if o.search_basis == "projection"
            else self.head_config.n_params
        )
        # optimizer.rollouts = 0: every training task scores every candidate; the optimizer
        # is built with that number (``self.optimizer.rollouts`` is its own minibatch)
        self.minibatch_size = o.rollouts or len(self.splits["train"])
        self.optimizer = self._make_optimizer(plan.seed)
        # a recorded pool routed in one Worker turn trains on its routing table (table.py):
        # the same decisions as its episodes, scored without playing them
        self.scoring = (
            TableScoring(
                self.pool,
                self.settings,
                backbone,
                feature_store,
                head_shape=self.head_config.shape,
                n_svf=self.n_svf,
                table=table,
            )
            if plan.table_reason is None
            else None
        )
        self.state = TrainState()
        self.run_id: str | None = None
        # where the training episodes run; validation and the basis's calibration always
        # run here, on this process's backbone and pool
        self.executor = executor or LocalExecutor(backbone, self.pool, self.stop, o.concurrency)
        # what the generation in flight has paid so far (``seconds``: when it started)
        self._in_flight = Spend(seconds=time.perf_counter())
        self._spend_recorded = time.monotonic()
        self._life: RunLife | None = None  # while ``run_async`` runs

    def _make_optimizer(self, seed: int) -> Any:
        """The plan's optimizer for this run's search, seeded with ``seed`` (its minibatch
        size resolved)."""
        return make_optimizer(
            replace(self.plan.optimizer, rollouts=self.minibatch_size),
            seed,
            self.n_params,
            self.head_config,
            self._features,
            {t.id: t for t in self.suite.tasks},
        )

    @property
    def current_run_id(self) -> str:
        """The id of the run being trained (after ``attach``)."""
        if self.run_id is None:
            raise RuntimeError("the trainer has no run yet: attach() it to its run first")
        return self.run_id

    def attach(self, run_id: str) -> None:
        """Train run ``run_id``, a record its job created with the config it stores
        (``Store.create_run``): from its last checkpoint when it has one (a resumed run),
        else from the start."""
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
        s = self.state.spend
        lost = lost_spend(result.spend, s)
        if lost.episodes or lost.calls or lost.dollars:
            log.info(
                "run %s: %d episodes, %d calls, $%.4f paid before it was killed and not "
                "stored count in its spend",
                self.run_id,
                lost.episodes,
                lost.calls,
                lost.dollars,
            )
        s.add(lost.episodes, lost.calls, lost.dollars, lost.seconds)

    def run(self) -> TrainState:
        """Train until a budget, the generation limit or a stop ends the run."""
        return asyncio.run(self.run_async())

    async def run_async(self) -> TrainState:
        """``run`` inside a running event loop (the caller owns the loop and the pool)."""
        run_id = self.current_run_id
        # whatever ends it, the run keeps what the generation in flight paid (a resume
        # counts it too)
        life = RunLife(
            self.store, run_id, spend=self._so_far, figures=lambda: self._result().to_dict()
        )
        life.start(self._result().to_dict())
        self._life = life
        with life:
            reason = await self._started_generations(life)
        self._emit(
            RunFinished(run_id, reason, self.state.generation + 1, self.state.best_validation)
        )
        return self.state

    async def _started_generations(self, life: RunLife) -> RunStopReason:
        """``RunStarted`` told, then the run's generations (``_generations``)."""
        run_id = life.run_id
        self._emit(
            RunStarted(
                run_id=run_id,
                name=self.store.get_run(run_id).name,  # as listed: unique, kept on resume
                n_params=self.n_params,
                popsize=self.optimizer.popsize,
                rollouts=self.optimizer.rollouts,
                start_generation=self.state.generation + 1,
                budget=asdict(self.plan.budget),
                executor=self.executor.info.executor,
                actors=self.executor.info.actors,
                nodes=self.executor.info.nodes,
            )
        )
        return await self._generations(life)

    async def _generations(self, life: RunLife) -> RunStopReason:
        """The run's generations until a budget, the limit or a stop ends it; the run
        ended in the store for that reason, or failed (and ``RunFailed`` told) on an
        error, which goes on to the caller."""
        run_id, reason = life.run_id, None
        # the work before the first generation (the routing table's features and answers,
        # the search basis) is training time too: it counts in the run's minutes
        self._in_flight = Spend(seconds=time.perf_counter())
        try:
            if self.scoring is not None and not self.scoring.built:
                tasks = [*self.splits["train"], *self.splits["validation"]]
                await self.scoring.build(
                    tasks,
                    lambda stage, done, total: self._emit(
                        Preparing(run_id=run_id, stage=stage, done=done, total=total)
                    ),
                    self.stop,
                )
                log.info(
                    "run %s: scoring on the routing table of %d tasks x %d workers",
                    self.run_id,
                    len(tasks),
                    len(self.pool),
                )
                self._settle()
            if self.state.basis is None:
                self.state.basis = await fit_basis(
                    self.plan.optimizer,
                    self.plan.seed,
                    self.splits["train"],
                    self.backbone,
                    self.stop,
                    max_turns=self.settings.max_turns,
                    calibration=self._calibration_transcripts,
                    kept=self.scoring.features if self.scoring is not None else None,
                )
                self._settle()
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
            life.fail(exc)
            self._emit(RunFailed(run_id, error_words(exc)))
            raise
        assert reason is not None  # the loop ends only with one
        life.end(reason)
        return reason

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

    def _settle(self) -> None:
        """What was paid outside a generation since the in-flight spend started (its
        episodes, calls, dollars and time) counted in the run's spend, and a new in-flight
        spend started."""
        f, now = self._in_flight, time.perf_counter()
        self.state.spend.add(f.episodes, f.calls, f.dollars, now - f.seconds)
        self._in_flight = Spend(seconds=now)

    def _so_far(self) -> Spend:
        """The run's spend: its completed generations' and what the one in flight paid."""
        s, f = self.state.spend, self._in_flight
        seconds = s.seconds + (time.perf_counter() - f.seconds)
        return Spend(s.episodes + f.episodes, s.calls + f.calls, s.dollars + f.dollars, seconds)

    def _record_spend(self, spend: Spend) -> None:
        """Write the run's spend so far into its record (with who runs it)."""
        if self._life is not None:
            self._life.heartbeat(replace(self._result(), spend=spend.as_totals()).to_dict())

    def _budget_reason(
        self, before_generation: bool, spend: Spend | None = None, done: int | None = None
    ) -> RunStopReason | None:
        """Why the run stops now, or None. ``before_generation``: also stop when the next
        generation's episodes would pass ``budget.episodes``. ``spend`` and ``done``
        (generations completed) default to the run's own; a projection passes others."""
        return budget_reason(
            self.plan.budget,
            spend or self.state.spend,
            self.state.generation + 1 if done is None else done,
            self.optimizer.popsize * self.optimizer.rollouts if before_generation else 0,
            stopped=self.stop.stopped and spend is None,
        )

    async def _generation(self, g: int) -> None:
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
        if self.scoring is not None:
            await self._table_generation(g, started, proposals, minibatch)
            return

        share = self.plan.opening_share(g)
        work = GenerationWork(
            run_id=self.current_run_id,
            generation=g,
            run_seed=self.plan.seed,
            common_random_numbers=optimizer_entry(self.plan.optimizer.name).ranks_candidates,
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
        fitness = [float(np.mean([self.plan.fitness(e) for e in eps])) for eps in per]
        self.optimizer.tell(proposals, fitness, per)
        episodes = list(flat)

        validation = None
        if (g + 1) % self.plan.optimizer.validate_every == 0 or self._last_generation(
            g, flat, started
        ):
            validation, val_episodes = await self._validate(g)
            episodes += val_episodes

        usage = Counter(f"{t.worker}/{t.role}" for e in flat for t in e.turns)
        await self._close_generation(
            g,
            started,
            fitness,
            episodes,
            validation,
            evaluations=len(flat),
            calls=worker_calls(episodes),
            dollars=sum(e.cost for e in episodes),
            tokens=sum(e.tokens_in + e.tokens_out for e in episodes),
            cache_hits=self.cache_hits() - hits0,
            coordinator_s=bs.busy_s - busy0,
            worker_s=sum(t.latency_s for e in episodes for t in e.turns),
            features_requested=bs.requests - req0,
            features_computed=bs.forwards - fwd0,
            usage=dict(usage),
            tokens_forwarded=bs.tokens_forwarded - tokens0,
            batches=bs.batches - batches0,
            mean_batch=(bs.forwards - fwd0) / max(1, bs.batches - batches0),
            rechecks=bs.exact - exact0,
            recheck_tokens=bs.exact_tokens - exact_tokens0,
            opening_share=share,
        )

    async def _close_generation(
        self,
        g: int,
        started: float,
        fitness: Sequence[float],
        episodes: list[Episode],
        validation: float | None,
        *,
        evaluations: int,
        calls: int,
        dollars: float,
        **measured: Any,
    ) -> None:
        """Generation ``g`` counted in the run's spend (``evaluations`` training episodes,
        ``calls`` and ``dollars`` with the validation's) and stored in one transaction with
        its ``episodes`` and a checkpoint; its statistics (``measured``: what the path
        that played it measured) told to the listeners."""
        s = self.state.spend
        wall = time.perf_counter() - started
        s.add(evaluations, calls, dollars, wall)
        self.state.generation = g
        self._in_flight = Spend(seconds=time.perf_counter())  # counted in the state now
        stats = GenerationStats(
            run_id=self.current_run_id,
            generation=g,
            best=max(fitness),
            mean=float(np.mean(fitness)),
            median=float(statistics.median(fitness)),
            worst=min(fitness),
            sigma=self.optimizer.sigma,
            evaluations=evaluations,
            calls=calls,
            dollars=dollars,
            wall_s=wall,
            validation=validation,
            best_validation=self.state.best_validation,
            totals=s.as_totals(),
            **measured,
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
        if not self.plan.optimizer.rollouts and m == len(train):
            return list(train)
        batch_rng = np.random.default_rng(derived_seed(self.plan.seed, "minibatch", g))
        picks = batch_rng.choice(len(train), size=m, replace=len(train) < m)
        return [train[int(i)] for i in picks]

    async def _table_generation(
        self, g: int, started: float, proposals: Sequence[Proposal], minibatch: list[Task]
    ) -> None:
        """Generation ``g`` on the routing table: every candidate's sampled decisions on
        the minibatch (those of its episodes: ``table.sampled_choices``), its fitness, the
        optimizer told, validation, and the generation stored without training episodes
        (a run scores thousands of them a generation; they are a function of the head,
        the table and the seeds)."""
        scoring = self.scoring
        assert scoring is not None
        heads = np.stack(
            [
                self._candidate(k, p).vector.reshape(self.head_config.shape)  # type: ignore[union-attr]
                for k, p in enumerate(proposals)
            ]
        )
        fitness, measured = scoring.generation(
            heads, minibatch, self.plan.seed, g, self.plan.optimizer
        )
        self.optimizer.tell(proposals, fitness, [[] for _ in proposals])
        validation = None
        if (g + 1) % self.plan.optimizer.validate_every == 0 or self._last_generation(
            g, [], started
        ):
            choices = scoring.decisions(
                self._head_space(self.optimizer.center()), self.splits["validation"]
            )
            validation = float(np.mean([c.reward for c in choices]))
            self._record_validation(g, validation, choices)
        await self._close_generation(g, started, fitness, [], validation, **measured)

    def _restart_if_due(self, g: int) -> None:
        """A fresh optimizer at the start of each attempt of ``optimizer.restarts``
        (``state.restart_attempt``), seeded by the run's seed and the attempt."""
        attempt = self.plan.restart_attempt(g)
        if attempt is None:
            return
        self.optimizer = self._make_optimizer(
            derived_seed(self.plan.seed, "restart", attempt) % 2**31
        )
        restarts = self.plan.optimizer.restarts
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

    def _candidate(self, k: int, proposal: Proposal) -> Candidate:
        """Proposal ``k`` as the executor plays it: a fixed worker for one turn, or its
        vector in head space for the run's turns."""
        if proposal.fixed_worker is not None:
            return Candidate(k, 1, fixed_worker=proposal.fixed_worker)
        assert proposal.vector is not None  # a proposal is a vector or a fixed worker
        return Candidate(k, self.settings.max_turns, vector=self._head_space(proposal.vector))

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

    async def _calibration_transcripts(self, tasks: list[Task]) -> list[str]:
        """The transcripts after one turn of each worker as Thinker and as Worker on each
        calibration task, for the whitened basis: what a Thinker's guidance or a first
        answer adds to a transcript is then among the directions it evens out. Their
        worker calls and dollars count in the run's spend as they end (``_paid``), with the
        basis's other work when it is done (``_settle``); the episodes are not stored (they
        train nothing)."""
        episodes = await calibration_episodes(
            self.pool,
            self.settings,
            tasks,
            self.stop,
            seed=self.plan.seed,
            concurrency=self.plan.optimizer.concurrency,
            run_id=self.run_id,
            paid=lambda episode: self._paid(episode, training=True),
        )
        by_id = {t.id: t for t in tasks}
        return [render_transcript(by_id[e.task_id], e.turns) for e in episodes if e.turns]

    async def _validate(self, g: int) -> tuple[float, list[Episode]]:
        """The distribution mean, argmax acting, on the validation split."""
        center = self.optimizer.center()
        coordinator = self.coordinator(center)
        gate = episode_gate(self.plan.optimizer.concurrency, len(self.splits["validation"]))

        async def one(j: int, task: Task) -> Episode:
            async with gate:
                await self.stop.checkpoint()
                episode = await run_episode(
                    coordinator,
                    self.pool,
                    task,
                    self.settings,
                    rng=None,
                    seed=derived_seed(self.plan.seed, "val", j) % 2**31,
                    tag=EpisodeTag(run_id=self.run_id, generation=g, candidate=None),
                )
            self._paid(episode, training=False)
            return episode

        plays = (one(j, t) for j, t in enumerate(self.splits["validation"]))
        episodes = await self.stop.race(asyncio.gather(*plays))
        value = float(np.mean([e.reward for e in episodes]))
        self._record_validation(g, value)
        return value, list(episodes)

    def _record_validation(
        self, g: int, value: float, choices: tuple[TableChoice, ...] | None = None
    ) -> None:
        """Keep generation ``g``'s validation score, and its mean as the best vector when
        it scores higher than any before, with its ``choices`` on a routing table."""
        self.state.last_validation = value
        if self.state.best_validation is None or value > self.state.best_validation:
            self.state.best_validation = value
            self.state.best_vector = self._head_space(self.optimizer.center())
            self.state.best_validation_generation = g
            self.state.best_choices = choices

    def _features(self, transcripts: list[str]) -> np.ndarray:
        """Features in the search basis: what the gradient baselines differentiate against."""
        return self.basis.features(self.backbone.features(transcripts))

    # -- checkpoints ---------------------------------------------------------

    def _checkpoint(self) -> bytes:
        center = self._head_space(self.optimizer.center())
        return self.state.checkpoint(self.optimizer.dumps(), center, self.n_params, self.n_svf)

    def _restore(self, checkpoint: Checkpoint) -> None:
        if checkpoint.n_params != self.n_params:
            raise CheckpointError(
                f"checkpoint has {checkpoint.n_params} parameters, this run's settings give "
                f"{self.n_params}: was the pool, the backbone or SVF changed since the run started?"
            )
        self.optimizer.loads(checkpoint.optimizer)
        self.state = TrainState.restored(checkpoint)

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
                self.plan.optimizer.sigma0_scale, self.head_config.hidden_size
            )
            if optimizer_entry(self.plan.optimizer.name).scales_head_sigma
            else None,
        )

    def _emit(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a broken listener must not end the run
                log.exception("listener failed on %s", type(event).__name__)
