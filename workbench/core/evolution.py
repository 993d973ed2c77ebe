"""The trainer: an explicit ask / evaluate / tell loop with budgets, validation,
checkpoints after every generation, events for listeners, and exact resume.

The default optimizer is separable CMA-ES (pycma, ``CMA_diagonal=True``); the baselines
(random search, REINFORCE, imitation) in ``baselines.py`` share this loop, its budget,
its events and its checkpoints.

Each generation: the optimizer proposes candidates; every candidate is scored on the same
minibatch of ``m`` training tasks (sampling its choices); all episodes of the generation
are in flight together (bounded by ``optimizer.concurrency``) and their backbone
forwards are batched; fitness is the mean reward minus the optional penalties; the
generation, its episodes and a checkpoint are written in one transaction. A run killed
at any moment resumes from its last checkpoint and never repeats or skips a generation.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import pickle
import socket
import statistics
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from workbench.core.config import RunConfig
from workbench.core.coordinator import Action, Backbone, Coordinator, Head, HeadConfig
from workbench.core.protocol import Prompts, render_transcript, run_episode
from workbench.core.records import ROLES, Episode, Role
from workbench.core.store import RunStatus, Store
from workbench.core.tasks.model import Suite, Task
from workbench.core.workers.base import Worker

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = 1


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    name: str
    n_params: int
    popsize: int
    rollouts: int
    start_generation: int  # > 0 when resumed
    budget: dict[str, float]


@dataclass(frozen=True)
class GenerationStats:
    """One generation's figures: what the CLI prints, the store keeps and the GUI plots."""

    run_id: str
    generation: int
    best: float
    mean: float
    median: float
    worst: float
    sigma: float
    evaluations: int  # training episodes this generation
    calls: int
    tokens: int
    dollars: float
    cache_hits: int
    wall_s: float
    coordinator_s: float  # backbone busy time
    worker_s: float  # summed worker call latency
    features_requested: int
    features_computed: int
    usage: dict[str, int]  # "worker/role" -> turns
    validation: float | None  # reward of the distribution mean on validation, when evaluated
    best_validation: float | None
    totals: dict[str, float]  # spend so far: episodes, calls, dollars, minutes
    # where the coordinator's time went (defaults: generations recorded before these)
    tokens_forwarded: int = 0  # new tokens through the backbone
    batches: int = 0  # backbone forwards
    mean_batch: float = 0.0  # transcripts per backbone forward


@dataclass(frozen=True)
class EpisodeDone:
    run_id: str
    generation: int
    candidate: int | None
    task_id: str
    reward: float
    turns: int
    stop_reason: str
    cost: float


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    stop_reason: str
    generations: int
    best_validation: float | None


@dataclass(frozen=True)
class RunFailed:
    run_id: str
    error: str


Event = RunStarted | GenerationStats | EpisodeDone | RunFinished | RunFailed
Listener = Callable[[Event], None]
EVENT_TYPES: dict[str, type] = {
    t.__name__: t for t in (RunStarted, GenerationStats, EpisodeDone, RunFinished, RunFailed)
}


def event_to_json(event: Event) -> str:
    """One event as one line of JSON (``train --events`` writes these to stdout)."""
    return json.dumps({"event": type(event).__name__, **asdict(event)})


def event_from_json(line: str) -> Event:
    """The event a line written by ``event_to_json`` stands for."""
    data = json.loads(line)
    kind = data.pop("event", None)
    if kind not in EVENT_TYPES:
        raise ValueError(f"not a training event: {line[:80]!r}")
    return EVENT_TYPES[kind](**data)


class StopToken:
    """Thread-safe stop and pause, checked by the trainer between episodes."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def follow(self, stream: Any) -> threading.Thread:
        """Obey ``pause``, ``resume`` and ``stop`` lines read from ``stream`` in a daemon
        thread; the end of the stream (the controlling process went away) means stop."""

        def read() -> None:
            for line in stream:
                command = line.strip()
                if command == "pause":
                    self.pause()
                elif command == "resume":
                    self.resume()
                elif command == "stop":
                    self.stop()
                elif command:
                    log.warning("unknown run command %r (pause, resume or stop)", command)
            self.stop()

        thread = threading.Thread(target=read, name="run-commands", daemon=True)
        thread.start()
        return thread

    async def checkpoint(self) -> None:
        """Wait here while paused (without blocking the loop); raise if stopped."""
        while not self._running.is_set():
            await asyncio.sleep(0.05)
        if self._stop.is_set():
            raise _Stopped


class _Stopped(Exception):
    pass


# --------------------------------------------------------------------------- optimizers


@dataclass(frozen=True)
class Proposal:
    """One candidate of a generation: a parameter vector, or a fixed single-worker
    policy (worker index, one Worker turn) for optimizers that collect labels."""

    vector: np.ndarray | None = None
    fixed_worker: int | None = None


class Optimizer(Protocol):
    """What the training loop needs from an optimizer."""

    popsize: int  # proposals per generation
    rollouts: int  # tasks per proposal (the shared minibatch)

    def ask(self) -> list[Proposal]: ...

    def tell(
        self,
        proposals: Sequence[Proposal],
        fitness: Sequence[float],
        episodes: Sequence[Sequence[Episode]],
    ) -> None: ...

    def center(self) -> np.ndarray:
        """The vector that represents the optimizer's current belief (validated)."""

    @property
    def sigma(self) -> float: ...

    def dumps(self) -> bytes: ...

    def loads(self, state: bytes) -> None: ...


REFERENCE_WIDTH = 1024  # the paper's backbone width (Qwen3-0.6B), for which sigma0 is given


def head_step_scale(hidden_size: int) -> float:
    """The factor on sigma0 for head weights of a ``hidden_size``-wide unit-RMS feature.

    A head perturbation of per-weight scale s changes a logit by about ``s * ||f||`` =
    ``s * sqrt(d)`` on a unit-RMS feature, so one sigma0 would explore less on a narrower
    backbone (0.72 logits on SmolLM2's d = 576 vs 0.96 at the paper's d = 1024). Scaling by
    ``sqrt(1024 / d)`` gives every width the paper's exploration in logit space.
    """
    return float(np.sqrt(REFERENCE_WIDTH / hidden_size))


class SepCMAES:
    """Separable CMA-ES (pycma with a diagonal covariance). ``stds`` (optional, one per
    coordinate) multiplies sigma0 coordinate-wise: the head's width scale, 1 for SVF."""

    def __init__(
        self,
        n: int,
        *,
        sigma0: float,
        popsize: int,
        rollouts: int,
        seed: int,
        stds: np.ndarray | None = None,
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pycma warns when matplotlib is absent
            import cma
        options = {
            "CMA_diagonal": True,
            "seed": seed + 1,
            "verbose": -9,
            "verb_log": 0,
            "verb_disp": 0,
        }
        if popsize:
            options["popsize"] = popsize
        if stds is not None:
            options["CMA_stds"] = np.asarray(stds, dtype=np.float64)
        self._es = cma.CMAEvolutionStrategy(np.zeros(n), sigma0, options)
        self.popsize = int(self._es.popsize)
        self.rollouts = rollouts

    def ask(self) -> list[Proposal]:
        return [Proposal(np.asarray(x)) for x in self._es.ask()]

    def tell(self, proposals, fitness, episodes) -> None:
        # pycma minimises: the cost of a candidate is its negated fitness
        self._es.tell([p.vector for p in proposals], [-f for f in fitness])

    def center(self) -> np.ndarray:
        return np.asarray(self._es.mean).copy()

    @property
    def sigma(self) -> float:
        return float(self._es.sigma)

    def dumps(self) -> bytes:
        # pycma samples from numpy's global generator: keep its state with the optimizer
        return pickle.dumps({"es": self._es.pickle_dumps(), "np_random": np.random.get_state()})

    def loads(self, state: bytes) -> None:
        data = pickle.loads(state)
        self._es = pickle.loads(data["es"])
        np.random.set_state(data["np_random"])


def make_optimizer(
    config: RunConfig,
    n: int,
    head: HeadConfig,
    features: Callable[[list[str]], np.ndarray],
    tasks: dict[str, Task],
) -> Any:
    """The optimizer a config names, for ``n`` parameters (``features`` and ``tasks`` let
    the gradient baselines recompute the features of recorded turns)."""
    o = config.optimizer
    if o.name == "sep-cma-es":
        stds = np.ones(n)
        stds[n - head.n_params :] = head_step_scale(head.hidden_size)  # [SVF offsets || head]
        return SepCMAES(
            n,
            sigma0=o.sigma0,
            popsize=o.popsize,
            rollouts=o.rollouts,
            seed=config.run.seed,
            stds=stds,
        )
    from workbench.core import baselines

    return baselines.make(config, n, head, features, tasks)


@dataclass(frozen=True)
class SearchBasis:
    """The coordinates the optimizer searches in, mapped to head weights by ``W = V M``.

    A backbone's features are strongly anisotropic: on SmolLM2-135M 98% of a unit-RMS
    feature's norm lies along one direction ``u`` shared by every input, so a head drawn
    around zero changes its choice between inputs ~4x less than its input-independent
    preference, and separable CMA-ES, which adapts axis-aligned scales only, cannot learn
    that rotation. ``M = (u u^T + alpha (I - u u^T)) / scale`` scales the rest up to the
    weight of ``u`` (``alpha`` = mean |f . u| / mean |f - (f . u) u| over calibration
    features) and ``scale`` brings the transformed feature back to unit RMS. ``u`` is
    kept, not removed: it acts as the bias-free head's implicit bias (the turn-0 role
    prior). Every vector maps to an ordinary head on the unit-RMS feature, so stored
    results, exports and evaluation never see the basis. ``identity`` is the paper's
    parametrisation.
    """

    direction: np.ndarray | None = None  # u, unit norm; None: the identity
    alpha: float = 1.0
    scale: float = 1.0

    @classmethod
    def fit(cls, features: np.ndarray) -> SearchBasis:
        """The balanced basis of calibration ``features`` (rows: unit-RMS features)."""
        mean = features.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if len(features) < 2 or norm == 0:
            return cls()
        u = mean / norm
        along = features @ u
        rest = features - np.outer(along, u)
        alpha = float(
            np.clip(
                np.abs(along).mean() / max(np.linalg.norm(rest, axis=1).mean(), 1e-12), 1.0, 100.0
            )
        )
        mapped = np.outer(along, u) + alpha * rest
        scale = float(np.sqrt((mapped**2).mean(axis=1)).mean())
        return cls(u, alpha, scale)

    def features(self, features: np.ndarray) -> np.ndarray:
        """Features as the search coordinates see them: ``f M`` (M is symmetric)."""
        if self.direction is None:
            return features
        along = features @ self.direction
        return (
            self.alpha * features + (1 - self.alpha) * np.multiply.outer(along, self.direction)
        ) / self.scale

    def head(self, vector: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        """Head weights (flat) of a search vector's head part (flat): ``V M``."""
        if self.direction is None:
            return vector
        return self.features(np.asarray(vector).reshape(shape)).reshape(-1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": None if self.direction is None else self.direction.tolist(),
            "alpha": self.alpha,
            "scale": self.scale,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchBasis:
        direction = data.get("direction")
        return cls(
            None if direction is None else np.asarray(direction, dtype=np.float64),
            float(data["alpha"]),
            float(data["scale"]),
        )


CALIBRATION_TASKS = 32  # training tasks whose opening transcripts fit the balanced basis


def default_popsize(n: int) -> int:
    """pycma's default population for ``n`` parameters: 4 + floor(3 ln n)."""
    return 4 + int(3 * np.log(n))


# --------------------------------------------------------------------------- the run


@dataclass
class Spend:
    """What a run has used so far (restored on resume)."""

    episodes: int = 0
    calls: int = 0
    dollars: float = 0.0
    seconds: float = 0.0

    def as_totals(self) -> dict[str, float]:
        return {
            "episodes": self.episodes,
            "calls": self.calls,
            "dollars": self.dollars,
            "minutes": self.seconds / 60,
        }


@dataclass
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
        raise ValueError(
            f"suite '{suite.name}' has no training tasks: give it a train split or more tasks"
        )
    if not out["validation"]:
        raise ValueError(
            f"suite '{suite.name}' has no validation tasks: give it a validation split or more tasks"
        )
    return out


def derived_seed(*parts: object) -> int:
    """A 64-bit seed derived from a run's seed and what it is for (stable across runs)."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big")


class FixedPolicy:
    """A coordinator stand-in that always gives one worker one role (single-worker
    baselines, imitation labels, the sandbox oracle)."""

    def __init__(self, n_workers: int, worker: int, role: Role = Role.WORKER):
        self.n_workers = n_workers
        probs = tuple(1.0 if i == worker else 0.0 for i in range(n_workers))
        r = ROLES.index(role)
        self._action = Action(worker, r, probs, tuple(1.0 if i == r else 0.0 for i in range(3)))

    async def adecide(self, transcript: str, rng: np.random.Generator | None = None) -> Action:
        return self._action


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
    ):
        self.config = config
        self.store = store
        self.suite = suite
        self.pool = list(pool)
        self.backbone = backbone
        self.listeners = list(listeners)
        self.stop = stop or StopToken()
        self.prompts = prompts or Prompts.load()
        self.cache_hits = cache_stats or (lambda: 0)
        self.splits = task_splits(config, suite)
        self.head_config = HeadConfig(len(self.pool), backbone.hidden_size)
        self.n_svf = backbone.svf().n_params if config.optimizer.svf else 0
        self.n_params = self.n_svf + self.head_config.n_params
        self.optimizer = make_optimizer(
            config, self.n_params, self.head_config, self._features, {t.id: t for t in suite.tasks}
        )
        self.state = TrainState()
        self.run_id: str | None = None

    # -- public --------------------------------------------------------------

    def start(self) -> str:
        """Create the run record; returns its id."""
        self.run_id = self.store.create_run(self.config.run.name, "train", self.config.to_dict())
        return self.run_id

    def resume(self, run_id: str) -> None:
        """Continue ``run_id`` from its last checkpoint (or from the start if it has none)."""
        self.run_id = self.store.resolve_run_id(run_id)
        latest = self.store.latest_checkpoint(self.run_id)
        if latest is not None:
            generation, blob = latest
            self._restore(blob)
            if self.state.generation != generation:
                raise RuntimeError(
                    f"checkpoint of run {self.run_id} is inconsistent "
                    f"(generation {self.state.generation} vs {generation})"
                )

    def run(self) -> TrainState:
        """Train until a budget, the generation limit or a stop ends the run."""
        return asyncio.run(self.run_async())

    async def run_async(self) -> TrainState:
        """``run`` inside a running event loop (the caller owns the loop and the pool)."""
        if self.run_id is None:
            self.start()
        cfg, run_id = self.config, self.run_id
        # who runs it: lets a listing tell a live run from one that was killed
        self.store.set_run_status(
            run_id,
            RunStatus.RUNNING,
            result={**self._result(), "pid": os.getpid(), "host": socket.gethostname()},
        )
        self._emit(
            RunStarted(
                run_id,
                cfg.run.name,
                self.n_params,
                self.optimizer.popsize,
                self.optimizer.rollouts,
                self.state.generation + 1,
                {k: v for k, v in asdict(cfg.budget).items()},
            )
        )
        reason = None
        try:
            if self.state.basis is None:
                self.state.basis = await self._fit_basis()
            while reason is None:
                reason = self._budget_reason(before_generation=True)
                if reason:
                    break
                await self._generation(self.state.generation + 1)
                reason = self._budget_reason(before_generation=False)
        except _Stopped:
            reason = "stopped"
        except Exception as exc:
            log.exception("run %s failed", run_id)
            self.store.set_run_status(
                run_id, RunStatus.FAILED, stop_reason="error", error=f"{type(exc).__name__}: {exc}"
            )
            self._emit(RunFailed(run_id, f"{type(exc).__name__}: {exc}"))
            raise
        status = RunStatus.STOPPED if reason == "stopped" else RunStatus.FINISHED
        self.store.set_run_status(run_id, status, stop_reason=reason, result=self._result())
        self._emit(
            RunFinished(run_id, reason, self.state.generation + 1, self.state.best_validation)
        )
        return self.state

    def _budget_reason(self, before_generation: bool) -> str | None:
        b, s = self.config.budget, self.state.spend
        if self.state.generation + 1 >= b.generations:
            return "budget.generations"
        per_generation = self.optimizer.popsize * self.optimizer.rollouts
        if b.episodes and s.episodes + (per_generation if before_generation else 0) > b.episodes:
            return "budget.episodes"
        if b.calls and s.calls >= b.calls:
            return "budget.calls"
        if b.dollars and s.dollars >= b.dollars:
            return "budget.dollars"
        if b.minutes and s.seconds >= b.minutes * 60:
            return "budget.minutes"
        if self.stop.stopped:
            return "stopped"
        return None

    async def _generation(self, g: int) -> None:
        cfg = self.config
        started = time.perf_counter()
        bs = self.backbone.stats
        busy0, req0, fwd0 = bs.busy_s, bs.requests, bs.forwards
        tokens0, batches0 = bs.tokens_forwarded, bs.batches
        hits0 = self.cache_hits()
        proposals = self.optimizer.ask()
        batch_rng = np.random.default_rng(derived_seed(cfg.run.seed, "minibatch", g))
        train = self.splits["train"]
        m = self.optimizer.rollouts
        picks = batch_rng.choice(len(train), size=m, replace=len(train) < m)
        minibatch = [train[int(i)] for i in picks]

        gate = asyncio.Semaphore(cfg.optimizer.concurrency)

        async def one(k: int, j: int, task: Task) -> Episode:
            async with gate:
                await self.stop.checkpoint()
                coordinator, turns = self._policy(proposals[k])
                episode = await run_episode(
                    coordinator,
                    self.pool,
                    task,
                    suite=self.suite.name,
                    max_turns=turns,
                    rng=np.random.default_rng(derived_seed(cfg.run.seed, g, k, j)),
                    seed=derived_seed(cfg.run.seed, "w", g, k, j) % 2**31,
                    max_tokens=cfg.protocol.max_tokens,
                    temperature=cfg.protocol.temperature,
                    prompts=self.prompts,
                    run_id=self.run_id,
                    generation=g,
                    candidate=k,
                )
            self._emit(
                EpisodeDone(
                    self.run_id,
                    g,
                    k,
                    task.id,
                    episode.reward,
                    len(episode.turns),
                    str(episode.stop_reason),
                    episode.cost,
                )
            )
            return episode

        jobs = [one(k, j, task) for k in range(len(proposals)) for j, task in enumerate(minibatch)]
        flat = await asyncio.gather(*jobs)
        per = [flat[k * m : (k + 1) * m] for k in range(len(proposals))]
        fitness = [float(np.mean([self._score(e) for e in eps])) for eps in per]
        self.optimizer.tell(proposals, fitness, per)
        episodes = list(flat)

        validation = None
        if (g + 1) % cfg.optimizer.validate_every == 0 or self._budget_ends_after(g):
            validation, val_episodes = await self._validate(g)
            episodes += val_episodes

        s = self.state.spend
        calls = sum(len([t for t in e.turns if t.messages]) for e in episodes)
        dollars = sum(e.cost for e in episodes)
        wall = time.perf_counter() - started
        s.episodes += len(flat)
        s.calls += calls
        s.dollars += dollars
        s.seconds += wall
        self.state.generation = g
        usage = Counter(f"{t.worker}/{t.role}" for e in flat for t in e.turns)
        stats = GenerationStats(
            run_id=self.run_id,
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
        )
        record = asdict(stats)
        record.pop("run_id")
        record.pop("generation")
        await asyncio.to_thread(
            self.store.commit_generation, self.run_id, g, record, self._checkpoint(), episodes
        )
        self._emit(stats)

    def _budget_ends_after(self, g: int) -> bool:
        return g + 1 >= self.config.budget.generations

    def _score(self, episode: Episode) -> float:
        o = self.config.optimizer
        return episode.reward - o.cost_penalty * episode.cost - o.turn_penalty * len(episode.turns)

    def _policy(self, proposal: Proposal) -> tuple[Any, int]:
        if proposal.fixed_worker is not None:
            return FixedPolicy(len(self.pool), proposal.fixed_worker), 1
        return self.coordinator(proposal.vector), self.config.protocol.max_turns

    def coordinator(self, vector: np.ndarray) -> Coordinator:
        """The coordinator of a search vector."""
        return coordinator_from_vector(
            self.backbone, len(self.pool), self._head_space(vector), bool(self.n_svf)
        )

    def _head_space(self, vector: np.ndarray) -> np.ndarray:
        """A search vector as ``[SVF offsets || head weights]``: what is stored and exported."""
        out = np.array(vector, dtype=np.float64)
        out[self.n_svf :] = self.basis.head(out[self.n_svf :], self.head_config.shape)
        return out

    @property
    def basis(self) -> SearchBasis:
        return self.state.basis or SearchBasis()

    async def _fit_basis(self) -> SearchBasis:
        """The run's search basis, from the opening transcripts of its first training tasks."""
        if self.config.optimizer.search_basis == "identity":
            return SearchBasis()
        texts = [render_transcript(t, ()) for t in self.splits["train"][:CALIBRATION_TASKS]]
        basis = SearchBasis.fit(await asyncio.to_thread(self.backbone.features, texts))
        log.info("run %s: balanced search basis, alpha %.2f", self.run_id, basis.alpha)
        return basis

    async def _validate(self, g: int) -> tuple[float, list[Episode]]:
        """The distribution mean, argmax acting, on the validation split."""
        cfg = self.config
        center = self.optimizer.center()
        coordinator = self.coordinator(center)
        gate = asyncio.Semaphore(cfg.optimizer.concurrency)

        async def one(j: int, task: Task) -> Episode:
            async with gate:
                await self.stop.checkpoint()
                return await run_episode(
                    coordinator,
                    self.pool,
                    task,
                    suite=self.suite.name,
                    max_turns=cfg.protocol.max_turns,
                    rng=None,
                    seed=derived_seed(cfg.run.seed, "val", j) % 2**31,
                    max_tokens=cfg.protocol.max_tokens,
                    temperature=cfg.protocol.temperature,
                    prompts=self.prompts,
                    run_id=self.run_id,
                    generation=g,
                    candidate=None,
                )

        episodes = await asyncio.gather(
            *(one(j, t) for j, t in enumerate(self.splits["validation"]))
        )
        value = float(np.mean([e.reward for e in episodes]))
        self.state.last_validation = value
        if self.state.best_validation is None or value > self.state.best_validation:
            self.state.best_validation = value
            self.state.best_vector = self._head_space(center)
            self.state.best_validation_generation = g
        return value, list(episodes)

    def _features(self, transcripts: list[str]) -> np.ndarray:
        """Features in the search basis: what the gradient baselines differentiate against."""
        return self.basis.features(self.backbone.features(transcripts))

    # -- checkpoints ---------------------------------------------------------

    def _checkpoint(self) -> bytes:
        st = self.state
        return pickle.dumps(
            {
                "format": CHECKPOINT_FORMAT,
                "generation": st.generation,
                "optimizer": self.optimizer.dumps(),
                "spend": asdict(st.spend),
                "best_validation": st.best_validation,
                "best_vector": st.best_vector,
                "best_validation_generation": st.best_validation_generation,
                "last_validation": st.last_validation,
                "center": self._head_space(self.optimizer.center()),
                "basis": self.basis.to_dict(),
                "n_params": self.n_params,
                "n_svf": self.n_svf,
            }
        )

    def _restore(self, blob: bytes) -> None:
        data = pickle.loads(blob)
        if data.get("format") != CHECKPOINT_FORMAT:
            raise RuntimeError(
                f"checkpoint format {data.get('format')} is not supported by this version"
            )
        if data["n_params"] != self.n_params:
            raise RuntimeError(
                f"checkpoint has {data['n_params']} parameters, this config gives {self.n_params}: "
                "was the pool, the backbone or SVF changed since the run started?"
            )
        self.optimizer.loads(data["optimizer"])
        self.state = TrainState(
            generation=data["generation"],
            spend=Spend(**data["spend"]),
            best_validation=data["best_validation"],
            best_vector=data["best_vector"],
            best_validation_generation=data["best_validation_generation"],
            last_validation=data["last_validation"],
            basis=SearchBasis.from_dict(data["basis"]) if "basis" in data else SearchBasis(),
        )

    def _result(self) -> dict[str, Any]:
        st = self.state
        return {
            "generations": st.generation + 1,
            "best_validation": st.best_validation,
            "best_validation_generation": st.best_validation_generation,
            "n_params": self.n_params,
            "spend": st.spend.as_totals(),
            "search_basis_alpha": None if st.basis is None else st.basis.alpha,
            # what the coordinator's features were computed on and in
            "backbone_device": self.backbone.device,
            "backbone_precision": self.backbone.precision,
            "sigma0_head_scale": head_step_scale(self.head_config.hidden_size)
            if self.config.optimizer.name == "sep-cma-es"
            else None,
        }

    def _emit(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a broken listener must not end the run
                log.exception("listener failed on %s", type(event).__name__)


def coordinator_from_vector(
    backbone: Backbone, n_workers: int, vector: np.ndarray, svf: bool
) -> Coordinator:
    """The coordinator of a parameter vector ``[SVF offsets || head weights]`` (METHOD.md)."""
    n_svf = backbone.svf().n_params if svf else 0
    head = Head(HeadConfig(n_workers, backbone.hidden_size), np.asarray(vector)[n_svf:])
    return Coordinator(backbone, head, np.asarray(vector)[:n_svf] if n_svf else None)


def best_vector(store: Store, run_id: str) -> tuple[np.ndarray, dict[str, Any]]:
    """A run's result: the best-on-validation vector (the distribution mean if it was never
    validated), with the checkpoint's figures."""
    latest = store.latest_checkpoint(run_id)
    if latest is None:
        raise ValueError(f"run {run_id} has no completed generation yet: train or resume it first")
    data = pickle.loads(latest[1])
    vector = data["best_vector"] if data["best_vector"] is not None else data["center"]
    return np.asarray(vector), data
