"""Figures of the core engine on this machine (issue: core engine).

    python tests/benchmarks/bench_core.py [--backbone offline] [--repeats 5]
        [--out docs/results/data/core.json]

Prints, as medians over repeats:
- coordinator decision time for a ~500-token transcript: first turn (no reusable
  prefix) and a later turn (prefix KV cache reused, ~100 new tokens);
- the feature cache's speed-up when 32 candidates decide on one shared transcript
  (32 forwards without it, 1 forward + 31 lookups with it, heads applied as one product);
- local SmolLM2 worker generation speed in tokens per second.
``--out`` also writes them as a results file (``tests/benchmarks/results.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from workbench.core.coordinator import Backbone, Coordinator, Head, HeadConfig, act, apply_heads
from workbench.core.workers.pool import build_pool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

FILLER = (
    "Thinker/sandbox:mathlete: First factor the expression, then check each root against the "
    "original equation, and watch the sign of the discriminant. "
)


def transcript_of(backbone: Backbone, tokens: int, salt: str) -> str:
    text = f"Query:\nSolve problem {salt}: find all real x with x^2 - 5x + 6 = 0.\n\n"
    while len(backbone.encode(text)) < tokens:
        text += FILLER
    return text


def grow(text: str) -> str:
    return (
        text
        + "\n\nWorker/local:smollm2: "
        + "The roots are x = 2 and x = 3, since (x-2)(x-3)=0. " * 5
    )


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backbone", default="offline")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()

    backbone = Backbone(args.backbone, device="cpu")
    pool_size = 3
    head = Head.random(HeadConfig(pool_size, backbone.hidden_size), seed=0)
    coordinator = Coordinator(backbone, head)
    coordinator.decide("warm-up transcript")

    # 1. decision time, first turn and a later turn with prefix reuse
    counter = iter(range(10_000))
    first, later, new_tokens = [], [], []
    for _ in range(args.repeats):
        base = transcript_of(backbone, 500, str(next(counter)))
        start = time.perf_counter()
        coordinator.decide(base)
        first.append(time.perf_counter() - start)
        grown = grow(base)
        reused_before = backbone.stats.tokens_reused
        start = time.perf_counter()
        coordinator.decide(grown)
        later.append(time.perf_counter() - start)
        new_tokens.append(
            len(backbone.encode(grown)) - (backbone.stats.tokens_reused - reused_before)
        )
    n_tokens = len(backbone.encode(base))

    # the same later turn with prefix reuse switched off, for the ratio
    plain = Backbone(args.backbone, device="cpu", prefix_cache_bytes=0)
    no_reuse = median_time(
        lambda: plain.feature(grow(transcript_of(plain, 500, str(next(counter))))), args.repeats
    )

    # 2. feature cache with 32 candidates sharing one transcript
    heads = np.random.default_rng(1).normal(0, 0.03, size=(32, pool_size + 3, backbone.hidden_size))

    def without_cache():
        text = transcript_of(plain, 500, str(next(counter)))
        for k in range(32):
            # a forward per candidate, as with no cache (in the backbone's own precision)
            feature = plain._compute([text], plain.precision)[0]
            act(heads[k] @ feature, pool_size)

    def with_cache():
        text = transcript_of(backbone, 500, str(next(counter)))
        features = backbone.features([text] * 32)  # 1 forward, 31 cache hits
        logits = apply_heads(heads, features[0])
        for k in range(32):
            act(logits[k], pool_size)

    t_without = median_time(without_cache, max(2, args.repeats // 2))
    t_with = median_time(with_cache, args.repeats)

    # 3. local worker tokens per second
    (worker,) = build_pool(["local:smollm2"])
    messages = [{"role": "user", "content": "Explain in a few sentences why the sky is blue."}]
    asyncio.run(worker.complete(messages, max_tokens=8, temperature=0.0))  # load + warm up
    rates = []
    for seed in range(args.repeats):
        c = asyncio.run(
            worker.complete(messages, max_tokens=args.gen_tokens, temperature=0.7, seed=seed)
        )
        rates.append(c.tokens_out / c.latency_s)

    print(
        f"backbone {backbone.id}, d = {backbone.hidden_size}, CPU, torch threads = "
        f"{__import__('torch').get_num_threads()}"
    )
    print(
        f"decision, first turn ({n_tokens} tokens):             {statistics.median(first) * 1e3:8.1f} ms"
    )
    print(
        f"decision, later turn (prefix reused, ~{int(statistics.median(new_tokens))} new tokens): "
        f"{statistics.median(later) * 1e3:8.1f} ms"
    )
    print(
        f"  same later turn without prefix reuse:            {no_reuse * 1e3:8.1f} ms "
        f"(reuse is {no_reuse / statistics.median(later):.1f}x faster)"
    )
    print(f"32 candidates, one transcript, no feature cache:   {t_without * 1e3:8.1f} ms")
    print(
        f"32 candidates, one transcript, feature cache:      {t_with * 1e3:8.1f} ms "
        f"(speed-up {t_without / t_with:.1f}x)"
    )
    print(
        f"local:smollm2 generation:                          {statistics.median(rates):8.1f} tokens/s "
        f"(median of {args.repeats}, {args.gen_tokens} max new tokens)"
    )
    if args.out:
        write_results(
            args.out,
            {
                "backbone": backbone.id,
                "repeats": args.repeats,
                "decision_first_turn_tokens": n_tokens,
                "decision_first_turn_ms": round(statistics.median(first) * 1e3, 1),
                "decision_later_turn_new_tokens": int(statistics.median(new_tokens)),
                "decision_later_turn_ms": round(statistics.median(later) * 1e3, 1),
                "later_turn_without_prefix_reuse_ms": round(no_reuse * 1e3, 1),
                "candidates_32_without_feature_cache_ms": round(t_without * 1e3, 1),
                "candidates_32_with_feature_cache_ms": round(t_with * 1e3, 1),
                "local_worker_tokens_per_s": round(statistics.median(rates), 1),
            },
        )
    backbone.close()
    plain.close()


if __name__ == "__main__":
    main()
