"""A generation's training episodes on Ray actors (``[run] executor = "ray"``).

The driver (the process that runs ``train``) keeps everything a run is: the ask / tell
loop, validation, the store, checkpoints, events, budgets, stop and pause. Only the
candidates' training episodes move: each actor holds its own backbone replica (on its
node's GPU when the cluster has GPUs) and its own worker clients, and plays its share of
the candidates with ``executors.LocalExecutor``, the code a local run uses. An episode is
a function of its candidate, its task and seeds derived from the run's seed, so a run on
Ray gives the history a local run gives (tests/core/test_ray_executor.py) up to the
backbone's rounding: a feature's last bits depend on which transcripts share a forward,
and a sampled training choice whose uniform falls within that rounding of a boundary can
go the other way (docs/guides/ray.md, "Same seed, same results").

- Parameters travel once per generation: the generation's work (minibatch, settings) and
  its candidates' vectors are put in Ray's object store once; each actor gets one call
  naming its share of the candidates (candidate k goes to actor k mod N) and plays them
  as the local executor plays a generation, all at once.
- Faults: an actor that dies mid-generation is replaced and its candidates are played
  again on the new one; their seeds make the replay the same episodes.
- Keys: actors build their workers from the registry's specs, which hold no key; each
  actor reads its keys where the driver would, from its node's keychain or the provider's
  environment variable (``OPENAI_API_KEY`` ...). Set them in the environment of the
  cluster's nodes (before ``ray start``); a key is never a task argument, an object-store
  value or a log line.
- The response cache is the driver's workspace file: actors' workers call live and do not
  write it, so ``cache.policy = "replay-only"`` is refused with this executor.
- Imported recorded pools (``recorded:NAME``) are files of the driver's workspace, which
  actors do not have: the driver reads the pools the run names (the train job's
  ``recorded_pools``) and puts them in Ray's object store once; every actor, a replacement too, builds its
  recorded workers from that one copy.

Ray is imported only here, and only when a run asks for it (``pip install -e ".[ray]"``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import WorkFailed
from workbench.core.records import Episode
from workbench.core.training.events import Stopped, StopToken
from workbench.core.training.executors import (
    Candidate,
    ExecutorInfo,
    GenerationWork,
    LocalExecutor,
)
from workbench.core.workers.recorded import RecordedPool
from workbench.core.workers.spec import WorkerSpec

log = logging.getLogger(__name__)

# how often a call lost to a dead actor is played again on a replacement before the run
# fails: one death is a fault to survive, three in a row for one candidate is a cluster
# that cannot run this work
MAX_REPLAYS = 3
REACH_TIMEOUT_S = 5.0  # the driver's probe of the cluster's address, before ray.init
POLL_S = 0.05  # how often the driver forwards stop and pause to the actors


class ExecutorError(WorkFailed, RuntimeError):
    """The Ray executor cannot run: Ray missing, the cluster unreachable, actors that
    cannot start or keep dying. The message names the cause and the fix."""


@dataclass(frozen=True, kw_only=True)
class ActorRecipe:
    """What an actor builds its backbone and workers from (no key among it)."""

    model: str
    device: str
    precision: str
    input: str
    svf_layer: int
    worker_ids: tuple[str, ...]
    # the registered workers' specs as workers.toml holds them (plain tables, no key)
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    concurrency: int = 0

    def worker_specs(self) -> dict[str, WorkerSpec]:
        return {wid: WorkerSpec.from_toml(wid, table) for wid, table in self.specs.items()}


class EpisodeActor:
    """One actor: a backbone replica and a pool, playing candidates on its event loop
    (an async actor, so the episodes of the candidates it holds at once batch their
    forwards together)."""

    def __init__(self, recipe: ActorRecipe, recorded: dict[str, RecordedPool] | None = None):
        from workbench.core.coordinator import Backbone
        from workbench.core.workers.pool import build_pool
        from workbench.core.workers.registry import FixedRegistry

        self.backbone = Backbone(
            recipe.model,
            device=recipe.device,
            precision=recipe.precision,
            input=recipe.input,
            svf_layer=recipe.svf_layer,
        )
        self.pool = build_pool(
            recipe.worker_ids, registry=FixedRegistry(recipe.worker_specs()), recorded=recorded
        )
        for worker in self.pool:
            worker.prepare()
        self.stop = StopToken()
        # the actor plays its share of a generation as the local executor plays a whole
        # one: the same code, the same batching of the same episodes in the same order
        self.local = LocalExecutor(self.backbone, self.pool, self.stop, recipe.concurrency)

    async def where(self) -> tuple[str, int]:
        """This actor's node (host name) and process id."""
        return socket.gethostname(), os.getpid()

    async def control(self, paused: bool, stopped: bool) -> None:
        """Follow the driver's stop and pause (episodes wait or stop at their next turn)."""
        if stopped:
            self.stop.stop()
        elif paused:
            self.stop.pause()
        else:
            self.stop.resume()

    async def play(
        self, work: GenerationWork, candidates: Sequence[Candidate], share: Sequence[int]
    ) -> tuple[list[list[Episode]], float]:
        """The episodes of candidates ``share`` (indices into ``candidates``), each in
        minibatch order, and the seconds this actor spent on them."""
        started = time.perf_counter()
        # as the trainer does at a generation's start: features that depend on this
        # generation's requests only (a replayed share, on a new actor, computes the same)
        self.backbone.forget()
        per = await self.local.run_generation(
            work, [candidates[k] for k in share], lambda k, e: None
        )
        return per, time.perf_counter() - started


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            'run.executor = "ray" needs Ray, which is not installed: pip install -e ".[ray]" '
            '(or set run.executor = "local")'
        ) from None
    return ray


def cluster_address(given: str | None) -> str | None:
    """The cluster to join: ``given`` (``--ray-address``), else ``RAY_ADDRESS``, else None
    (start a Ray instance on this machine)."""
    address = (given or os.environ.get("RAY_ADDRESS") or "").strip()
    return address or None


def check_reachable(address: str) -> None:
    """Raise ``ExecutorError`` unless something listens at ``address`` (``host:port`` of
    the cluster's head; ``auto`` is left to Ray). Ray itself waits minutes on an address
    where nothing answers; this says so in seconds, before the run stores anything."""
    if address == "auto" or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ExecutorError(
            f"Ray cluster address {address!r} is not host:port: give the head node's address "
            "as `ray start --head` printed it (e.g. 10.0.0.5:6379), or 'auto'"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ExecutorError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}): start it with "
            "`ray start --head` on its head node, or correct --ray-address / RAY_ADDRESS "
            '(leave both unset to run Ray on this machine, or set run.executor = "local")'
        ) from None


class RayExecutor:
    """Candidates spread over Ray actors; see the module docstring. Construct it before
    the run stores anything: an unreachable cluster or actors that cannot start are an
    ``ExecutorError`` here."""

    def __init__(
        self,
        recipe: ActorRecipe,
        *,
        actors: int = 0,
        address: str | None = None,
        stop: StopToken | None = None,
        start_timeout_s: float = 600.0,
        recorded: dict[str, RecordedPool] | None = None,
    ):
        ray = self.ray = _ray()
        self.recipe = recipe
        self.stop = stop or StopToken()
        address = cluster_address(address)
        self._own_instance = False
        if not ray.is_initialized():
            if address is not None:
                check_reachable(address)
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    log_to_driver=False,
                    # Ray logs through its own handler at INFO unless told: at the level
                    # the program set (the CLI: WARNING, INFO with -v)
                    logging_level=logging.getLogger().getEffectiveLevel(),
                )
            except Exception as exc:  # Ray's own: ConnectionError, RuntimeError, auth errors
                raise ExecutorError(
                    f"cannot join the Ray cluster at {address or 'this machine'}: {exc}"
                ) from None
            self._own_instance = address is None
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        count = actors or gpus or len(nodes) or 1
        # each actor its share of the cluster (one GPU, one CPU, or less when asked for
        # more actors than there are), so that every actor is placed and none waits
        if gpus:
            self.options = {"num_gpus": min(1.0, gpus / count), "num_cpus": 0}
        else:
            self.options = {"num_cpus": min(1.0, float(resources.get("CPU", 1)) / count)}
        self._actor_class = ray.remote(EpisodeActor)
        # the recorded pools once in the object store: every actor reads this one copy
        self._recorded = ray.put(recorded) if recorded else None
        self.start_timeout_s = start_timeout_s
        self.actors: list[Any] = [self._new_actor() for _ in range(count)]
        self.places: list[tuple[str, int]] = [("", 0)] * count
        try:
            for i, actor in enumerate(self.actors):
                self.places[i] = self._placed(actor)
        except BaseException:
            self.close()
            raise
        # per candidate: a call's round trip minus the actor's own time, over its candidates
        self.overheads: list[float] = []
        self._locks = [asyncio.Lock() for _ in range(count)]
        log.info("ray executor: %d actors on %s", count, ", ".join(self.info.nodes))

    @property
    def info(self) -> ExecutorInfo:
        return ExecutorInfo("ray", len(self.actors), tuple(sorted({h for h, _ in self.places})))

    def _new_actor(self) -> Any:
        return self._actor_class.options(**self.options).remote(self.recipe, self._recorded)

    def _placed(self, actor: Any) -> tuple[str, int]:
        """Wait until ``actor`` has built its backbone and pool; its node and pid."""
        ray = self.ray
        try:
            return tuple(ray.get(actor.where.remote(), timeout=self.start_timeout_s))
        except ray.exceptions.GetTimeoutError:
            raise ExecutorError(
                f"a Ray actor did not start within {self.start_timeout_s:.0f} s: the cluster "
                f"may lack the resources asked ({self.options}); check `ray status`, or set "
                "run.actors lower"
            ) from None
        except ray.exceptions.RayError as exc:
            raise ExecutorError(
                f"a Ray actor could not load the backbone or the pool: {_cause(exc)}"
            ) from None

    async def run_generation(
        self,
        work: GenerationWork,
        candidates: Sequence[Candidate],
        on_episode: Callable[[int, Episode], None],
    ) -> list[list[Episode]]:
        ray = self.ray
        await self.stop.checkpoint()
        work_ref, candidates_ref = ray.put(work), ray.put(list(candidates))
        n = len(self.actors)
        shares = [[c.index for c in candidates][i::n] for i in range(n)]
        calls = [
            asyncio.ensure_future(self._play(i, share, work_ref, candidates_ref, on_episode))
            for i, share in enumerate(shares)
            if share
        ]
        follow = asyncio.ensure_future(self._follow_stop(calls))
        try:
            played = await asyncio.gather(*calls)
        except BaseException:
            for call in calls:
                call.cancel()
            if self.stop.stopped:
                raise Stopped from None
            raise
        finally:
            follow.cancel()
        by_index = {k: episodes for part in played for k, episodes in part.items()}
        return [by_index[c.index] for c in candidates]

    async def _follow_stop(self, calls: Sequence[asyncio.Future[Any]]) -> None:
        """Forward the driver's pause, resume and stop to every actor while ``calls`` run."""
        state = (False, False)
        while not all(call.done() for call in calls):
            now = (self.stop.paused, self.stop.stopped)
            if now != state:
                state = now
                await asyncio.gather(
                    *(a.control.remote(*now) for a in self.actors), return_exceptions=True
                )
            await asyncio.sleep(POLL_S)

    async def _play(
        self,
        i: int,
        share: list[int],
        work_ref: Any,
        candidates_ref: Any,
        on_episode: Callable[[int, Episode], None],
    ) -> dict[int, list[Episode]]:
        """Actor ``i``'s share of the candidates: their episodes by candidate index."""
        ray = self.ray
        for _ in range(MAX_REPLAYS + 1):
            actor = self.actors[i]
            started = time.perf_counter()
            try:
                per, actor_s = await actor.play.remote(work_ref, candidates_ref, share)
            except ray.exceptions.RayActorError as exc:
                if self.stop.stopped:
                    raise Stopped from None
                log.warning("ray actor %d died (%s): replacing it", i, _cause(exc))
                await self._replace(i, actor)
                continue
            except ray.exceptions.RayTaskError as exc:
                if self.stop.stopped:
                    raise Stopped from None
                raise ExecutorError(f"actor {i}'s episodes failed: {_cause(exc)}") from None
            self.overheads.append((time.perf_counter() - started - actor_s) / len(share))
            for k, episodes in zip(share, per, strict=True):
                for episode in episodes:
                    on_episode(k, episode)
            return dict(zip(share, per, strict=True))
        raise ExecutorError(
            f"the episodes of candidates {share} were lost with {MAX_REPLAYS + 1} actors in a "
            "row: the cluster cannot keep an actor alive (out of memory? see `ray status` "
            "and the actors' logs under /tmp/ray/session_latest/logs)"
        )

    async def _replace(self, i: int, dead: Any) -> None:
        """A new actor in place ``i`` (once, however many calls saw ``dead`` die)."""
        async with self._locks[i]:
            if self.actors[i] is not dead:
                return
            actor = self._new_actor()
            self.places[i] = await asyncio.to_thread(self._placed, actor)
            self.actors[i] = actor

    def close(self) -> None:
        """Stop the actors (and the Ray instance this executor started on this machine)."""
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # already gone
                pass
        self.actors = []
        if self._own_instance:
            self.ray.shutdown()


def _cause(exc: BaseException) -> str:
    """A Ray error's cause in one line (its first line: Ray appends tracebacks)."""
    text = str(getattr(exc, "cause", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
