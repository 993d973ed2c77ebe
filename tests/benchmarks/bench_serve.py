"""Figures of the OpenAI-compatible server (``trinity-workbench serve``) on this machine.

    python tests/benchmarks/bench_serve.py [--requests 320] [--clients 16] [--latency 0.2]

Set-up, each part in a process of its own: a fixed-latency loopback worker
(tests/support/fault_server.py answering every call after ``--latency`` seconds), the
``serve`` command with a coordinator file over that one worker (the tiny test backbone,
steered to one Worker turn per episode, so a request is one coordinator forward plus one
worker call), and this script as the client (httpx, ``--clients`` at once).

Prints:
- requests per second and p50/p99 latency at ``--clients`` concurrent clients (the
  ceiling is clients / latency; the worker admits as many calls at once as there are
  clients), and the episode's share of that latency;
- the server's own overhead per request, measured one request at a time: the client's
  wall time minus the episode's time as the server reports it (``Server-Timing:
  episode``: coordinator, worker call and storing the episode), p50 and p99 in ms; the
  goal is under 5 ms p50. It includes the HTTP round trip and the client's own cost,
  shown for scale by a bare ``GET /health``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import build_tiny_lm  # noqa: E402
from tests.core.test_serve import steered_file  # noqa: E402
from tests.support.fault_server import MODEL  # noqa: E402
from workbench.core.coordinator import Backbone  # noqa: E402

QUESTION = [{"role": "user", "content": "What is 12 + 30?"}]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start(command: list[str], env: dict[str, str], prefix: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
    )
    line = process.stdout.readline().strip()
    if not line.startswith(prefix):
        process.kill()
        raise RuntimeError(f"{command[2:4]} did not start: {line!r}")
    return process, line


def episode_ms(response: httpx.Response) -> float:
    """The episode's own time as the server reports it (``Server-Timing: episode;dur=``)."""
    return float(response.headers["server-timing"].split("dur=")[1])


async def load(
    url: str, model: str, requests: int, clients: int
) -> tuple[list[float], list[float], float]:
    """Latencies (s) and the server's episode times (ms) of ``requests`` sent by ``clients``
    at once, and the wall time of it all."""
    latencies: list[float] = []
    episodes: list[float] = []
    pending = iter(range(requests))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def one_client() -> None:
            for _ in pending:
                started = time.perf_counter()
                response = await client.post(
                    "/chat/completions", json={"model": model, "messages": QUESTION}
                )
                response.raise_for_status()
                latencies.append(time.perf_counter() - started)
                episodes.append(episode_ms(response))

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        return latencies, episodes, time.perf_counter() - started


def overhead(url: str, model: str, requests: int) -> tuple[list[float], list[float]]:
    """Per request: wall time minus the episode's time (ms); and, for scale, the round trip
    of the bare ``/health`` route with the same client (HTTP and the client's own cost)."""
    out, bare = [], []
    with httpx.Client(base_url=url, timeout=120) as client:
        for _ in range(requests):
            started = time.perf_counter()
            client.get(url.removesuffix("/v1") + "/health").raise_for_status()
            bare.append((time.perf_counter() - started) * 1000)
        for _ in range(requests):
            started = time.perf_counter()
            response = client.post("/chat/completions", json={"model": model, "messages": QUESTION})
            wall = time.perf_counter() - started
            response.raise_for_status()
            out.append(wall * 1000 - episode_ms(response))
    return out, bare


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        measure(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(tmp: Path) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=320)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--overhead-requests", type=int, default=200)
    args = parser.parse_args()

    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "HF_HUB_OFFLINE": "1",
    }
    os.environ.update({k: env[k] for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME")})
    model, tokenizer = build_tiny_lm()
    model.save_pretrained(tmp / "tiny")
    tokenizer.save_pretrained(tmp / "tiny")
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer, input="chat")

    worker, line = start(
        [sys.executable, "-m", "tests.support.fault_server", "--latency", str(args.latency)],
        env,
        "PORT",
    )
    server = None
    try:
        port = int(line.split()[1])
        from workbench.core.workers.registry import Registry
        from workbench.core.workers.spec import spec_from_options

        # as many calls in flight as clients (a worker's default is 8): the figure is the
        # server's, not the worker's concurrency bound
        Registry().add(
            spec_from_options(
                "loop",
                "transformers",
                MODEL,
                base_url=f"http://127.0.0.1:{port}/v1",
                concurrency=args.clients,
            )
        )
        path = steered_file(
            tmp / "team.safetensors", backbone, ["loop"], max_turns=1, source=str(tmp / "tiny")
        )
        server, url = start(
            [
                sys.executable,
                "-m",
                "workbench",
                "serve",
                "--workspace",
                str(tmp / "ws"),
                "--coordinator",
                str(path),
                "--port",
                "0",
                "--concurrency",
                str(args.clients),
            ],
            env,
            "http://",
        )
        team = "trinity-team"
        asyncio.run(load(url, team, args.clients, args.clients))  # warm-up
        latencies, episodes, wall = asyncio.run(load(url, team, args.requests, args.clients))
        extra, bare = overhead(url, team, args.overhead_requests)
    finally:
        for process in (server, worker):
            if process is not None:
                process.send_signal(2) if process is server else process.stdin.close()
                process.wait(60)

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}")
    ceiling = f" (ceiling {args.clients / args.latency:.0f} req/s)" if args.latency > 0 else ""
    print(
        f"{args.clients} clients, {args.requests} requests, worker latency "
        f"{args.latency * 1000:.0f} ms{ceiling}:"
    )
    print(f"  throughput      {args.requests / wall:.1f} req/s")
    print(
        f"  latency         p50 {quantile(latencies, 0.5) * 1000:.1f} ms, "
        f"p99 {quantile(latencies, 0.99) * 1000:.1f} ms"
    )
    print(
        f"  of which the episode (coordinator, worker, storing): p50 "
        f"{statistics.median(episodes):.1f} ms, p99 {quantile(episodes, 0.99):.1f} ms"
    )
    print(
        f"server overhead per request (one at a time, {args.overhead_requests} requests): "
        f"p50 {statistics.median(extra):.2f} ms, p99 {quantile(extra, 0.99):.2f} ms "
        "(goal: < 5 ms p50)"
    )
    print(
        f"  for scale: a bare GET /health round trip with the same client: p50 "
        f"{statistics.median(bare):.2f} ms"
    )


if __name__ == "__main__":
    main()
