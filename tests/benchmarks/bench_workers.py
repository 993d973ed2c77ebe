"""Figures of the worker clients on this machine (issue: workers).

    python tests/benchmarks/bench_workers.py [--calls 500] [--rounds 4]
        [--out docs/results/data/workers.json]

Prints:
- client overhead per call against a loopback OpenAI-compatible server that answers at
  once (tests/support/fault_server.py, in a process of its own): the client's wall time
  per call minus the server's own handling time for it, median and p99, in ms;
- calls per second sustained by 32 concurrent episodes (the real ``run_episode`` turn
  loop, prompts and grading; a seeded random coordinator so that the backbone is not
  what is measured) against a server with a fixed 200 ms latency, over one shared
  client; the ceiling is 32 / 0.2 s = 160 calls/s;
- the response cache's hit rate on a second identical evaluation (the same episodes run
  twice with the read-write cache), and on the first (identical calls in flight shared).
``--out`` also writes the figures as a results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.coordinator import Action  # noqa: E402
from workbench.core.policies import AnyContext  # noqa: E402
from workbench.core.protocol import EpisodeSettings, run_episode  # noqa: E402
from workbench.core.store import Store  # noqa: E402
from workbench.core.tasks.model import Task  # noqa: E402
from workbench.core.workers.cache import cached_pool  # noqa: E402
from workbench.core.workers.openai import OpenAIWorker  # noqa: E402
from workbench.core.workers.spec import Timeouts, WorkerSpec  # noqa: E402
from workbench.core.workers.transport import open_client  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)


class Server:
    """tests/support/fault_server.py in a process of its own (so that it does not share
    this process's interpreter lock with the client being measured)."""

    def __init__(self, latency: float):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.fault_server", "--latency", str(latency)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline().split()
        if line[:1] != ["PORT"]:
            raise RuntimeError(f"the loopback server did not start: {line}")
        self.base_url = f"http://127.0.0.1:{line[1]}/v1"

    def handling_times(self) -> list[float]:
        return httpx.get(self.base_url.removesuffix("/v1") + "/_stats").json()["handling_s"]

    def stop(self) -> None:
        self.process.stdin.close()  # the server stops when its stdin closes
        self.process.wait(10)


def worker(base_url: str, wid: str, concurrency: int) -> OpenAIWorker:
    return OpenAIWorker(
        WorkerSpec(
            id=wid,
            provider="openai",
            model=f"{wid}-model",
            base_url=base_url,
            concurrency=concurrency,
            timeouts=Timeouts(5, 30, 60),
        ),
        key="sk-bench-0000000000",
    )


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def overhead(calls: int) -> dict[str, float]:
    server = Server(latency=0.0)
    try:

        async def go():
            async with open_client() as client:
                w = worker(server.base_url, "fast", 1)
                w._client = client
                messages = [{"role": "user", "content": "What is 6 * 7?"}]
                for _ in range(20):  # warm-up: connection, imports, JIT-free but cache-warm paths
                    await w.complete(messages, max_tokens=16, temperature=0.0)
                server.handling_times()  # reset the server's list
                walls = []
                for _ in range(calls):
                    start = time.perf_counter()
                    await w.complete(messages, max_tokens=16, temperature=0.0)
                    walls.append(time.perf_counter() - start)
                return walls

        walls = asyncio.run(go())
        handled = server.handling_times()[:calls]
    finally:
        server.stop()
    over = [(w - h) * 1000 for w, h in zip(walls, handled, strict=True)]
    print(
        f"client overhead per call ({calls} sequential calls, loopback server answering at once):"
    )
    print(
        f"  client wall time    median {statistics.median(walls) * 1000:.3f} ms   p99 {pct(walls, 99) * 1000:.3f} ms"
    )
    print(
        f"  server handling     median {statistics.median(handled) * 1000:.3f} ms   p99 {pct(handled, 99) * 1000:.3f} ms"
    )
    print(
        f"  overhead (wall - server)  median {statistics.median(over):.3f} ms   p99 {pct(over, 99):.3f} ms"
    )
    return {
        "overhead/calls": calls,
        "overhead/client_wall_median_ms": round(statistics.median(walls) * 1000, 3),
        "overhead/client_wall_p99_ms": round(pct(walls, 99) * 1000, 3),
        "overhead/server_median_ms": round(statistics.median(handled) * 1000, 3),
        "overhead/median_ms": round(statistics.median(over), 3),
        "overhead/p99_ms": round(pct(over, 99), 3),
    }


class RandomCoordinator(AnyContext):
    """Uniform (worker, role) choices from the episode's rng: the protocol and the clients
    are measured, not a backbone."""

    def __init__(self, n_workers: int):
        self.n_workers = n_workers

    async def adecide(self, transcript, rng=None):
        w, r = int(rng.integers(self.n_workers)), int(rng.integers(3))
        wp = tuple(1.0 / self.n_workers for _ in range(self.n_workers))
        return Action(w, r, wp, (1 / 3, 1 / 3, 1 / 3))


TASKS = [
    Task(id=f"b{i}", kind="math", prompt=f"What is {i} + {i}?", answer=str(2 * i), category="math")
    for i in range(128)
]


async def episodes(pool, tasks, concurrency: int, first_role_worker: bool = True):
    """``len(tasks)`` episodes, at most ``concurrency`` at a time; the number of calls."""
    coordinator = RandomCoordinator(len(pool))
    gate = asyncio.Semaphore(concurrency)

    async def one(i, task):
        async with gate:
            episode = await run_episode(
                coordinator,
                pool,
                task,
                EpisodeSettings(suite="bench", max_turns=5, max_tokens=32, temperature=0.0),
                rng=np.random.default_rng(i),
                seed=i,
            )
            return sum(1 for t in episode.turns if t.messages)

    return sum(await asyncio.gather(*(one(i, t) for i, t in enumerate(tasks))))


def throughput(rounds: int) -> dict[str, float]:
    server = Server(latency=0.2)
    try:

        async def go():
            async with open_client() as client:
                pool = [worker(server.base_url, "alpha", 32), worker(server.base_url, "beta", 32)]
                for w in pool:
                    w._client = client
                await episodes(pool, TASKS[:32], 32)  # warm-up: connections opened
                start = time.perf_counter()
                calls = await episodes(pool, TASKS[: 32 * rounds], 32)
                episode_figures = calls, time.perf_counter() - start

                async def chain(i):  # one episode's calls alone: 5 in a row, no protocol
                    for turn in range(5):
                        messages = [{"role": "user", "content": f"episode {i} turn {turn}"}]
                        await pool[turn % 2].complete(messages, max_tokens=32, temperature=0.0)

                start = time.perf_counter()
                for r in range(rounds):
                    await asyncio.gather(*(chain(32 * r + i) for i in range(32)))
                return episode_figures, (32 * 5 * rounds, time.perf_counter() - start)

        (calls, elapsed), (chain_calls, chain_elapsed) = asyncio.run(go())
    finally:
        server.stop()
    print(
        "throughput against a server with a fixed 200 ms latency, one shared client (ceiling 32 / 0.2 s = 160 "
        "calls/s):"
    )
    print(
        f"  32 concurrent episodes (run_episode, K=5, {32 * rounds} episodes, {calls} calls): "
        f"{calls / elapsed:.1f} calls/s in {elapsed:.2f} s"
    )
    print(
        f"  32 concurrent chains of 5 calls (the client alone, {chain_calls} calls): "
        f"{chain_calls / chain_elapsed:.1f} calls/s in {chain_elapsed:.2f} s"
    )
    return {
        "throughput/episodes": 32 * rounds,
        "throughput/calls": calls,
        "throughput/calls_per_s": round(calls / elapsed, 1),
        "throughput/seconds": round(elapsed, 2),
        "throughput/chain_calls": chain_calls,
        "throughput/chain_calls_per_s": round(chain_calls / chain_elapsed, 1),
    }


def cache_hit_rate() -> dict[str, float]:
    server = Server(latency=0.05)
    try:
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "workbench.sqlite3") as store:
            rates = []
            for _ in range(2):

                async def go():
                    async with open_client() as client:
                        pool = [
                            worker(server.base_url, "alpha", 32),
                            worker(server.base_url, "beta", 32),
                        ]
                        for w in pool:
                            w._client = client
                        wrapped, cache = cached_pool(pool, store, "read-write")
                        calls = await episodes(wrapped, TASKS[:64], 32)
                        return calls, cache

                before = len(server.handling_times())
                calls, cache = asyncio.run(go())
                sent = len(server.handling_times()) + before
                rates.append((calls, cache.hits, cache.misses, cache.hit_rate, sent))
    finally:
        server.stop()
    figures: dict[str, float] = {}
    for name, (calls, hits, misses, rate, _) in zip(("first", "second"), rates, strict=True):
        print(
            f"cache, {name} evaluation of 64 episodes: {calls} calls, {hits} hits, {misses} misses, "
            f"hit rate {rate:.1%}"
        )
        figures.update(
            {
                f"cache/{name}/calls": calls,
                f"cache/{name}/hits": hits,
                f"cache/{name}/misses": misses,
                f"cache/{name}/hit_rate": round(rate, 4),
            }
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument(
        "--rounds", type=int, default=4, help="batches of 32 episodes for the throughput figure"
    )
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"httpx {httpx.__version__}"
    )
    figures = {**overhead(args.calls), **throughput(args.rounds), **cache_hit_rate()}
    if args.out:
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
