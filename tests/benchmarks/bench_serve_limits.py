"""What a hostile or careless client does to the server (``trinity-workbench serve``), on
this machine, with SmolLM2-135M (``offline``) as the coordinator's backbone over a
fixed-latency loopback worker.

    python tests/benchmarks/bench_serve_limits.py [--root DIR] [--only huge,pressure,stop]
        [--huge-timeout 120] [--rss-cap-mb 3000] [--out docs/results/data/serve-limits.json]

- ``huge``: one request of 10,000 short messages (~340 KB, under the 1 MiB body cap):
  its time, the server's peak RSS while it ran, and what the client got.
- ``pressure``: a short request's latency alone, then while four clients keep sending
  such huge requests, then while four keep sending prompts just under the budget.
- ``stop``: time from SIGTERM to the process's exit (and its exit code) with a long
  request in flight: a worker call that stalls a minute (``--grace 2``), and a prompt at
  the budget whose coordinator forward is running (``--grace 1``).

``--root`` runs the server from another source tree (e.g. ``git archive`` of main, to
measure 'before'); a run past ``--huge-timeout`` or over ``--rss-cap-mb`` is killed and
reported as such, so that the old server cannot exhaust a shared machine. ``--out`` also
writes the figures as a results file (``tests/benchmarks/results.py``), keyed by part
(``huge/seconds``, ``pressure/10,000-message/p50_s``, ``stop/1/seconds``, ...).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_serve import MODEL_ID, QUESTION, Stack  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

HUGE = [{"role": "user", "content": f"message number {i}"} for i in range(10_000)]
_ids = itertools.count()


def next_id() -> str:
    return f"request {next(_ids)} of the benchmark"


def body(messages: list[dict[str, str]]) -> bytes:
    return json.dumps({"model": MODEL_ID, "messages": messages}).encode()


class PeakRSS:
    """Samples a process's RSS every 0.1 s in a thread; kills it over ``cap_mb``."""

    def __init__(self, pid: int, cap_mb: float):
        import psutil

        self.process = psutil.Process(pid)
        self.cap_mb = cap_mb
        self.peak_mb = 0.0
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            try:
                rss = self.process.memory_info().rss / 2**20
            except Exception:
                return
            self.peak_mb = max(self.peak_mb, rss)
            if rss > self.cap_mb:
                self.killed = True
                self.process.kill()
                return

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mb


def post(url: str, payload: bytes, timeout: float) -> tuple[float, str]:
    """Wall time and a one-line account of what the client got."""
    started = time.perf_counter()
    try:
        response = httpx.post(
            f"{url}/chat/completions",
            content=payload,
            headers={"content-type": "application/json"},
            timeout=timeout,
        )
        error = response.json().get("error") if response.status_code >= 400 else None
        what = f"{response.status_code} " + (
            f"{error['code']}: {error['message'][:110]}" if error else "an answer"
        )
    except Exception as exc:
        what = f"no response ({type(exc).__name__})"
    return time.perf_counter() - started, what


def huge(tmp: Path, root: Path, timeout: float, cap_mb: float, figures: dict[str, Any]) -> None:
    stack = Stack(tmp / "huge", latency=0.2, concurrency=4, root=root)
    try:
        post(stack.url, body(QUESTION), 120)  # warm
        rss0 = stack.rss_mb()
        watch = PeakRSS(stack.pid, cap_mb)
        took, what = post(stack.url, body(HUGE), timeout)
        peak = watch.stop()
        note = " (killed: over the RSS cap)" if watch.killed else ""
        print(
            f"huge: 10,000 messages ({len(body(HUGE)) / 1000:.0f} KB): {took:.2f} s; server "
            f"RSS {rss0:.0f} MiB before, peak {peak:.0f} MiB{note}; client got: {what}"
        )
        figures.update(
            {
                "huge/messages": len(HUGE),
                "huge/kb": round(len(body(HUGE)) / 1000),
                "huge/seconds": round(took, 2),
                "huge/rss_before_mib": round(rss0),
                "huge/rss_peak_mib": round(peak),
                "huge/killed_over_rss_cap": watch.killed,
                "huge/client_got": what,
            }
        )
    finally:
        stack.close()


def pressure(tmp: Path, root: Path, figures: dict[str, Any], budget_tokens: int = 4096) -> None:
    stack = Stack(tmp / "pressure", latency=0.2, concurrency=4, root=root)
    near = stack.prompt_of(int(budget_tokens * 0.93))  # just under the budget
    try:
        post(stack.url, body(QUESTION), 120)
        alone = [post(stack.url, body(QUESTION), 120)[0] for _ in range(10)]
        print(f"pressure: a short request alone: p50 {statistics.median(alone) * 1000:.0f} ms")
        figures["pressure/alone/p50_ms"] = round(statistics.median(alone) * 1000)
        for name, make, shorts in (
            ("10,000-message", lambda: body(HUGE), 10),
            # each one new (a repeated text would be answered from the feature cache)
            ("distinct near-budget", lambda: body([{"role": "user", "content": next_id()}, *near]), 3),
        ):  # fmt: skip
            stop = threading.Event()
            outcomes: list[str] = []

            def flood(make: Any, stop: threading.Event, outcomes: list[str]) -> None:
                while not stop.is_set():
                    outcomes.append(post(stack.url, make(), 600)[1].split(":")[0])

            floods = [threading.Thread(target=flood, args=(make, stop, outcomes)) for _ in range(4)]
            for thread in floods:
                thread.start()
            time.sleep(1.0)
            watch = PeakRSS(stack.pid, 1e9)
            short = [post(stack.url, body(QUESTION), 600) for _ in range(shorts)]
            peak = watch.stop()
            stop.set()
            for thread in floods:
                thread.join(900)
            times = [t for t, _ in short]
            got = {w.split(":")[0] for _, w in short}
            print(
                f"  while 4 clients send {name} requests: {shorts} short requests p50 "
                f"{statistics.median(times):.2f} s, max {max(times):.2f} s "
                f"({got}); their {len(outcomes)} requests got {sorted(set(outcomes))}; "
                f"server peak RSS {peak:.0f} MiB"
            )
            figures[f"pressure/{name}/short_requests"] = shorts
            figures[f"pressure/{name}/p50_s"] = round(statistics.median(times), 2)
            figures[f"pressure/{name}/max_s"] = round(max(times), 2)
            figures[f"pressure/{name}/short_got"] = sorted(got)
            figures[f"pressure/{name}/flood_requests"] = len(outcomes)
            figures[f"pressure/{name}/flood_got"] = sorted(set(outcomes))
            figures[f"pressure/{name}/rss_peak_mib"] = round(peak)
    finally:
        stack.close()


def stop(tmp: Path, root: Path, figures: dict[str, Any]) -> None:
    cases = [
        ("a worker call stalled for 60 s", 60.0, 0, ("--grace", "2")),
        ("a prompt at the budget in its coordinator forward", 0.2, 4000, ("--grace", "1")),
    ]
    for case, (name, latency, tokens, options) in enumerate(cases, 1):
        if root != ROOT:
            options = ()  # an older server has no --grace: its own default (30 s)
        stack = Stack(tmp / f"stop-{latency}", latency=latency, concurrency=4, root=root,
                      serve_options=options)  # fmt: skip
        try:
            if latency < 1:
                post(stack.url, body(QUESTION), 120)  # warm
            messages = stack.prompt_of(tokens) if tokens else QUESTION
            asker = threading.Thread(target=post, args=(stack.url, body(messages), 300))
            asker.start()
            time.sleep(1.0 if latency > 1 else 0.3)
            assert stack.server is not None
            sent = time.monotonic()
            stack.server.send_signal(signal.SIGTERM)
            try:
                code = stack.server.wait(120)
                seconds: float | None = time.monotonic() - sent
                took = f"{seconds:.2f} s"
            except Exception:
                stack.server.kill()
                code, took, seconds = None, "over 120 s (killed)", None
            print(f"stop: SIGTERM with {name} ({' '.join(options)}): exit after {took}, "
                  f"code {code}")  # fmt: skip
            figures[f"stop/{case}/case"] = f"{name} ({' '.join(options)})"
            figures[f"stop/{case}/seconds"] = None if seconds is None else round(seconds, 2)
            figures[f"stop/{case}/exit_code"] = code
            asker.join(60)
        finally:
            stack.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--only", default="huge,pressure,stop")
    parser.add_argument("--huge-timeout", type=float, default=120.0)
    parser.add_argument("--rss-cap-mb", type=float, default=3000.0)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"root": "this checkout" if args.root == ROOT else str(args.root)}
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-limits-"))
    print(f"server from {args.root}")
    try:
        parts = args.only.split(",")
        if "huge" in parts:
            huge(tmp, args.root, args.huge_timeout, args.rss_cap_mb, figures)
        if "pressure" in parts:
            pressure(tmp, args.root, figures)
        if "stop" in parts:
            stop(tmp, args.root, figures)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
