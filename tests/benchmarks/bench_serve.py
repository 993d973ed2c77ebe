"""Load on the OpenAI-compatible server (``trinity-workbench serve``), with the official
``openai`` client.

    python tests/benchmarks/bench_serve.py [--requests 400] [--clients 16] [--latency 0.2]
        [--backbone offline|tiny] [--stream-share 0.5] [--out docs/results/data/serve-load.json]

Set-up, each part in a process of its own: a fixed-latency loopback worker
(tests/support/fault_server.py answering every call after ``--latency`` seconds), the
``serve`` command with a coordinator file over that one worker (steered to one Worker
turn per episode, so a request is one coordinator forward plus one worker call; the
backbone is SmolLM2-135M, ``offline``, or the tiny test model), and this script as the
client: ``openai.AsyncOpenAI``, ``--clients`` at once, each request streaming with
probability ``--stream-share``. Every request asks a question not asked before, so that
the coordinator's feature cache cannot answer it: each costs a real forward.

Prints, on this machine:
- throughput; latency p50/p95/p99 for streaming and plain requests (a stream's time to
  its first content chunk as well); errors by kind (exception class and status);
- the server's resident memory (RSS) before and after the load;
- where a request's time goes, one at a time: the worker's own latency (the loopback
  worker's handling time), the episode as the server times it (``Server-Timing:
  episode``: coordinator forward, worker call, storing), and the client's wall time. The
  episode less the worker is the coordinator's own overhead per request; the wall time
  less the episode is the HTTP server's.
``--out`` also writes the figures as a results file (``tests/benchmarks/results.py``):
latencies as p50/p95/p99 in ms, RSS in MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

QUESTION = [{"role": "user", "content": "What is 12 + 30?"}]
_asked = iter(range(10**9))


def question() -> list[dict[str, str]]:
    """A question not asked before in this process: the coordinator's feature cache
    cannot answer it, so every request costs a real forward."""
    return [{"role": "user", "content": f"What is {next(_asked)} + 30?"}]


MODEL_ID = "trinity-team"
FILLER = "the number 12 and "


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def spread(values: list[float], scale: float = 1000.0) -> str:
    """p50/p95/p99 of ``values`` (seconds) in ms."""
    return "p50 {:.1f}, p95 {:.1f}, p99 {:.1f} ms".format(
        *(quantile(values, q) * scale for q in (0.5, 0.95, 0.99))
    )


def start(
    command: list[str], env: dict[str, str], prefix: str, cwd: Path = ROOT
) -> tuple[subprocess.Popen, str]:
    """A child process and the first line it prints (which must start with ``prefix``)."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
    )
    line = process.stdout.readline().strip()
    if not line.startswith(prefix):
        process.kill()
        raise RuntimeError(f"{command[2:4]} did not start: {line!r}")
    return process, line


class Stack:
    """A loopback worker of fixed latency and a ``serve`` process over it, in ``tmp``.
    ``root``: the source tree the server runs from (another checkout measures 'before')."""

    def __init__(
        self,
        tmp: Path,
        *,
        latency: float,
        backbone: str = "offline",
        concurrency: int = 16,
        root: Path = ROOT,
        serve_options: tuple[str, ...] = (),
    ):
        self.tmp = tmp
        self.env = {
            **os.environ,
            "XDG_DATA_HOME": str(tmp / "data"),
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(root),
        }
        os.environ.update({k: self.env[k] for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME")})
        self.worker, line = start(
            [sys.executable, "-m", "tests.support.fault_server", "--latency", str(latency)],
            {**self.env, "PYTHONPATH": str(ROOT)},
            "PORT",
        )
        self.worker_url = f"http://127.0.0.1:{int(line.split()[1])}"
        self.server: subprocess.Popen | None = None
        try:
            path = self._team(backbone, concurrency)
            self.server, self.url = start(
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
                    str(concurrency),
                    *serve_options,
                ],
                self.env,
                "http://",
                cwd=root,
            )
        except BaseException:
            self.close()
            raise

    def _team(self, backbone_name: str, concurrency: int) -> Path:
        from tests.conftest import build_tiny_lm
        from tests.core.test_serve import steered_file
        from tests.support.fault_server import MODEL
        from workbench.core.coordinator import Backbone
        from workbench.core.workers.registry import Registry
        from workbench.core.workers.spec import spec_from_options

        # as many calls in flight as episodes (a worker's default is 8): the figures are
        # the server's, not the worker's concurrency bound
        Registry().add(
            spec_from_options(
                "loop",
                "transformers",
                MODEL,
                base_url=f"{self.worker_url}/v1",
                concurrency=concurrency,
            )
        )
        if backbone_name == "tiny":
            model, tokenizer = build_tiny_lm()
            model.save_pretrained(self.tmp / "tiny")
            tokenizer.save_pretrained(self.tmp / "tiny")
            backbone = Backbone("tiny", model=model, tokenizer=tokenizer, input="chat")
            source = str(self.tmp / "tiny")
        else:
            backbone = Backbone("offline", input="chat")
            source = "offline"
        path = steered_file(
            self.tmp / "team.safetensors", backbone, ["loop"], max_turns=1, source=source
        )
        # tokens the coordinator reads per repetition of FILLER: a prompt of a chosen length
        self.filler_tokens = (
            len(backbone.encode(FILLER * 201)) - len(backbone.encode(FILLER))
        ) / 200
        backbone.close()
        return path

    @property
    def pid(self) -> int:
        assert self.server is not None
        return self.server.pid

    def rss_mb(self) -> float:
        import psutil

        return psutil.Process(self.pid).memory_info().rss / 2**20

    def prompt_of(self, tokens: int) -> list[dict[str, str]]:
        """A one-message conversation of about ``tokens`` backbone tokens."""
        return [{"role": "user", "content": FILLER * int(tokens / self.filler_tokens)}]

    def worker_handling_s(self) -> list[float]:
        """The loopback worker's handling time of every call since the last asking."""
        with urllib.request.urlopen(f"{self.worker_url}/_stats", timeout=30) as response:
            return list(json.loads(response.read())["handling_s"])

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(2)
            try:
                self.server.wait(60)
            except subprocess.TimeoutExpired:
                self.server.kill()
        if self.worker.poll() is None:
            self.worker.stdin.close()
            self.worker.wait(60)


async def load(
    url: str, requests: int, clients: int, stream_share: float, seed: int = 0
) -> dict[str, object]:
    """``requests`` chat requests from ``clients`` concurrent clients of one AsyncOpenAI,
    each streaming with probability ``stream_share``: latencies by mode, a stream's time
    to its first content, errors by kind, wall time."""
    import httpx
    import openai

    rng = random.Random(seed)
    modes = ["stream" if rng.random() < stream_share else "plain" for _ in range(requests)]
    latency: dict[str, list[float]] = {"stream": [], "plain": []}
    first_content: list[float] = []
    errors: Counter[str] = Counter()
    pending = iter(modes)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with openai.AsyncOpenAI(
        base_url=url,
        api_key="unused",
        max_retries=0,
        timeout=120,
        http_client=httpx.AsyncClient(limits=limits, timeout=120),
    ) as client:

        async def one_client() -> None:
            for mode in pending:
                started = time.perf_counter()
                try:
                    if mode == "plain":
                        completion = await client.chat.completions.create(
                            model=MODEL_ID, messages=question()
                        )
                        assert completion.choices[0].message.content
                    else:
                        stream = await client.chat.completions.create(
                            model=MODEL_ID, messages=question(), stream=True
                        )
                        text = ""
                        async for chunk in stream:
                            if chunk.choices and chunk.choices[0].delta.content:
                                if not text:
                                    first_content.append(time.perf_counter() - started)
                                text += chunk.choices[0].delta.content
                        assert text
                except openai.APIStatusError as exc:
                    errors[f"{type(exc).__name__} {exc.status_code}"] += 1
                    continue
                except Exception as exc:  # connection errors, timeouts, empty answers
                    errors[type(exc).__name__] += 1
                    continue
                latency[mode].append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        wall = time.perf_counter() - started
    return {"latency": latency, "first": first_content, "errors": errors, "wall": wall}


def breakdown(stack: Stack, requests: int) -> tuple[list[float], list[float], list[float]]:
    """One request at a time: the worker's handling (s), the episode (s) and the client's
    wall time (s), each a list over ``requests`` plain requests."""
    import openai

    client = openai.OpenAI(base_url=stack.url, api_key="unused", max_retries=0, timeout=120)
    stack.worker_handling_s()  # reset its list
    episode, wall = [], []
    for _ in range(requests):
        started = time.perf_counter()
        raw = client.chat.completions.with_raw_response.create(model=MODEL_ID, messages=question())
        raw.parse()
        wall.append(time.perf_counter() - started)
        episode.append(float(raw.headers["server-timing"].split("dur=")[1]) / 1000)
    # the list opens with the resetting /_stats call itself (recorded after its reply)
    worker = stack.worker_handling_s()[-requests:]
    if len(worker) != requests:
        raise RuntimeError(f"the worker handled {len(worker)} calls for {requests} requests")
    return worker, episode, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--stream-share", type=float, default=0.5)
    parser.add_argument("--backbone", choices=("offline", "tiny"), default="offline")
    parser.add_argument("--one-at-a-time", type=int, default=100)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    stack = None
    try:
        stack = Stack(tmp, latency=args.latency, backbone=args.backbone, concurrency=args.clients)
        asyncio.run(load(stack.url, args.clients, args.clients, args.stream_share))  # warm-up
        rss_before = stack.rss_mb()
        result = asyncio.run(load(stack.url, args.requests, args.clients, args.stream_share))
        rss_after = stack.rss_mb()
        worker, episode, wall = breakdown(stack, args.one_at_a_time)
    finally:
        if stack is not None:
            stack.close()
        shutil.rmtree(tmp, ignore_errors=True)

    latency = result["latency"]
    assert isinstance(latency, dict)
    done = sum(len(v) for v in latency.values())
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; backbone {args.backbone}"
    )
    print(
        f"{args.clients} concurrent clients (openai.AsyncOpenAI), {args.requests} requests, "
        f"{args.stream_share:.0%} streaming, worker latency {args.latency * 1000:.0f} ms:"
    )
    print(f"  throughput     {done / float(result['wall']):.1f} answered req/s")
    print(f"  plain          {len(latency['plain'])} answered, {spread(latency['plain'])}")
    print(f"  streaming      {len(latency['stream'])} answered, {spread(latency['stream'])}")
    print(f"    first content {spread(result['first'])}")  # type: ignore[arg-type]
    errors = result["errors"]
    print(f"  errors         {dict(errors) if errors else 'none'}")  # type: ignore[arg-type]
    print(
        f"  server RSS     {rss_before:.0f} MiB before, {rss_after:.0f} MiB after "
        f"({rss_after - rss_before:+.0f} MiB)"
    )
    coordinator = [e - w for e, w in zip(episode, worker, strict=False)]
    http = [w - e for w, e in zip(wall, episode, strict=True)]
    print(f"one request at a time ({args.one_at_a_time} plain requests):")
    print(f"  worker's own latency        {spread(worker)}")
    print(f"  episode (server-timed)      {spread(episode)}")
    print(f"  coordinator's own overhead  {spread(coordinator)} (episode less the worker)")
    print(f"  HTTP server and client      {spread(http)} (wall less the episode)")
    print(
        f"  the coordinator adds {statistics.median(coordinator) * 1000:.1f} ms to a "
        f"{statistics.median(worker) * 1000:.0f} ms worker call "
        f"({statistics.median(coordinator) / statistics.median(worker):.0%})"
    )
    if args.out:

        def ms(values: list[float]) -> list[float]:
            return [round(quantile(values, q) * 1000, 1) for q in (0.5, 0.95, 0.99)]

        write_results(
            args.out,
            {
                "backbone": args.backbone,
                "clients": args.clients,
                "requests": args.requests,
                "stream_share": args.stream_share,
                "worker_latency_ms": round(args.latency * 1000),
                "load/requests_per_s": round(done / float(result["wall"]), 1),  # type: ignore[arg-type]
                "load/plain/answered": len(latency["plain"]),
                "load/plain/p50_p95_p99_ms": ms(latency["plain"]),
                "load/stream/answered": len(latency["stream"]),
                "load/stream/p50_p95_p99_ms": ms(latency["stream"]),
                "load/stream/first_content_p50_p95_p99_ms": ms(result["first"]),  # type: ignore[arg-type]
                "load/errors": {str(k): v for k, v in dict(errors).items()} if errors else {},  # type: ignore[call-overload]
                "rss_mib/before": round(rss_before),
                "rss_mib/after": round(rss_after),
                "one_at_a_time/requests": args.one_at_a_time,
                "one_at_a_time/worker_p50_p95_p99_ms": ms(worker),
                "one_at_a_time/episode_p50_p95_p99_ms": ms(episode),
                "one_at_a_time/coordinator_p50_p95_p99_ms": ms(coordinator),
                "one_at_a_time/http_p50_p95_p99_ms": ms(http),
                "coordinator_overhead_p50_ms": round(statistics.median(coordinator) * 1000, 1),
            },
        )


if __name__ == "__main__":
    main()
