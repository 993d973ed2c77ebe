"""Coordinator throughput (issue 16): one multi-turn sandbox generation, old vs new code.

    python tests/benchmarks/bench_coordinator.py [--device cpu|cuda|auto] [--baseline a6b8df6]
        [--popsize 16] [--rollouts 8] [--turns 5] [--precision auto] [--compare fp32,bf16]
        [--latency 0.2] [--repeat 1] [--out docs/results/data/coordinator.json]

Each generation runs in a child process (same interpreter, same threads) against either
this tree or a checkout of the baseline commit (``git archive`` into a temporary folder),
so both are measured side by side in one run; ``--repeat N`` alternates them N times
(new, old, new, old, ...) and prints each pair's ratio, for a machine whose load changes
(each child's load average before and after is printed). Printed:

- the precision each side computed in (this tree: ``--precision``, default ``auto``, which
  is bf16-mixed on a CPU with native bf16; the baseline: its own default, fp32 on a CPU);
- generation wall time (sep-CMA-ES, sandbox pool, K turns, lambda x m episodes, offline
  backbone), coordinator (backbone) time, new tokens, forwards, and the ratio old / new;
  the argmax decisions (the generation's validation) rechecked in fp32 and their tokens;
- coordinator efficiency: new tokens per second of the coordinator during the generation,
  divided by the tokens per second of fresh transcripts (the generation's own final
  transcripts, no prefix cache) forwarded in the backbone's largest batches, in the SAME
  precision as the coordinator: the machine's practical limit;
- fidelity of the generation's own features and of each ``--compare`` precision (batched,
  turn by turn) vs fp32 one by one (no cache, one transcript per forward) on the
  generation's decision transcripts: max abs difference, min cosine, and argmax agreement
  of the generation's centre head and of 16 random heads (a trained head's agreement on
  held-out transcripts is tests/core/test_precision.py's check);
- with ``--latency`` (meant for ``--device cuda``): decisions per second and the
  coordinator's share of a generation's wall time with sandbox workers answering after a
  fixed latency.

``--out`` also writes the figures as a results file (``tests/benchmarks/results.py``): each
measured path's result as its child reported it (``paths``), the pairs' old / new ratios,
this tree's fidelity per precision and the latency section.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

ROOT = Path(__file__).resolve().parents[2]


def config_dict(args, seed: int = 0) -> dict:
    return {
        "run": {"name": "bench-coordinator", "seed": seed},
        "backbone": {"model": "offline", "device": args.device},
        "pool": {"workers": ["sandbox"]},
        "tasks": {"suite": "mixed", "validation": 30},
        "optimizer": {
            "popsize": args.popsize,
            "rollouts": args.rollouts,
            "validate_every": 1000,
        },
        "budget": {"generations": 1},
        "protocol": {"max_turns": args.turns, "temperature": 0.0},
        "cache": {"policy": "off"},
    }


# --------------------------------------------------------------------------- child


def child_generation(args) -> dict:
    """One generation on whatever ``workbench`` is importable (this tree or the baseline);
    uses only APIs both have. Prints one JSON line."""
    from workbench.core.config import RunConfig
    from workbench.core.coordinator import Backbone
    from workbench.core.jobs.train import train
    from workbench.core.tasks.suites import load_suite
    from workbench.core.transcript import render_transcript
    from workbench.core.workspace import Workspace

    try:  # this tree
        from workbench.core.records import GenerationStats
        from workbench.core.training.basis import CALIBRATION_TASKS
        from workbench.core.training.state import task_splits
    except ImportError:  # the baseline commit: one evolution module held all three
        from workbench.core.evolution import (  # type: ignore[no-redef]
            CALIBRATION_TASKS,
            GenerationStats,
            task_splits,
        )

    config = RunConfig.from_dict(config_dict(args))
    # the baseline knows only its own default (fp32 on a CPU): nothing is passed to it
    kwargs = {"precision": args.precision} if args.precision else {}
    backbone = Backbone("offline", device=args.device, **kwargs)
    with tempfile.TemporaryDirectory() as folder:
        ws = Workspace.open(folder)
        suite = load_suite("mixed", ws)
        splits = task_splits(config.tasks, suite)
        # the run's calibration forwards, done first so that the figures are the generation's
        backbone.features([render_transcript(t, ()) for t in splits["train"][:CALIBRATION_TASKS]])
        before = (backbone.stats.tokens_forwarded, backbone.stats.forwards)
        stats: list = []
        run_id = train(
            config,
            ws,
            backbone=backbone,
            listeners=[lambda e: isinstance(e, GenerationStats) and stats.append(e)],
        )
        (g,) = stats
        out = {
            "precision": getattr(backbone, "precision", "fp32"),
            "wall_s": g.wall_s,
            "coordinator_s": g.coordinator_s,
            "tokens": backbone.stats.tokens_forwarded - before[0],
            "transcripts": backbone.stats.forwards - before[1],
            "requests": g.features_requested,
            "batches": getattr(g, "batches", None),
            "mean_batch": getattr(g, "mean_batch", None),
            "rechecks": getattr(g, "rechecks", None),
            "recheck_tokens": getattr(g, "recheck_tokens", None),
        }
        if args.measure:
            out.update(measure(args, backbone, ws, run_id, suite, out["tokens"]))
    print("RESULT " + json.dumps(out), flush=True)
    return out


def measure(args, backbone, ws, run_id, suite, tokens: int) -> dict:
    """Reference throughput and fidelity on the generation's own transcripts."""
    import copy

    import numpy as np
    import torch

    from workbench.core.coordinator import Backbone, Head, HeadConfig, act, apply_heads
    from workbench.core.coordinator.head import near_tie
    from workbench.core.store import Store
    from workbench.core.training.checkpoint import best_vector
    from workbench.core.transcript import render_transcript

    tasks = {t.id: t for t in suite.tasks}
    with Store.open(ws) as store:
        episodes = [store.get_episode(e.id) for e in store.list_episodes(run_id)]
        vector, _ = best_vector(store, run_id)
    finals = [render_transcript(tasks[e.task_id], e.turns) for e in episodes]
    # decision transcripts, grouped by turn: what each decision of the generation read
    by_turn: dict[int, list[str]] = {}
    for e in episodes:
        for k in range(len(e.turns)):
            by_turn.setdefault(k, []).append(render_transcript(tasks[e.task_id], e.turns[:k]))
    model, tokenizer = backbone.model, backbone.tokenizer

    # the practical limit: fresh transcripts of the generation's length, largest batches
    fresh = Backbone(
        "fresh",
        model=model,
        tokenizer=tokenizer,
        prefix_cache_bytes=0,
        precision=backbone.precision,
    )
    chosen, total = [], 0
    for text in finals * 4:
        if total >= tokens:
            break
        chosen.append(text)
        total += len(fresh.encode(text))
    fresh.features(chosen)
    limit = fresh.stats.tokens_forwarded / fresh.stats.busy_s

    # fidelity vs fp32 one by one, on a sample of decision transcripts from every turn
    rng = np.random.default_rng(0)
    sample = {
        k: sorted(set(rng.choice(v, size=min(len(v), args.fidelity // len(by_turn) + 1))))
        for k, v in by_turn.items()
    }
    texts = [t for k in sorted(sample) for t in sample[k]]
    if model.dtype == torch.float32:  # fp32 or bf16-mixed: fp32 weights
        fp32 = model
    else:  # a bf16 backbone: the fp32 reference is a fresh load
        from workbench.core.models import load_causal_lm

        fp32 = load_causal_lm("offline", args.device, "fp32")[0]
    one = Backbone("one", model=fp32, tokenizer=tokenizer, prefix_cache_bytes=0, precision="fp32")
    reference = np.stack([one.feature(t) for t in texts])
    paths = {f"batched {backbone.precision} (the generation's own features)": backbone}
    for precision in [p for p in args.compare.split(",") if p and p != backbone.precision]:
        weights = copy.deepcopy(fp32).to(torch.bfloat16) if precision == "bf16" else fp32
        other = Backbone(precision, model=weights, tokenizer=tokenizer, precision=precision)
        for k in sorted(sample):  # turn by turn, as a generation asks
            other.features(sample[k])
        paths[f"batched {precision}"] = other
    n_workers = 3
    d = backbone.hidden_size
    heads = np.stack(
        [np.asarray(vector).reshape(n_workers + 3, d)]
        + [Head.random(HeadConfig(n_workers, d), s, 1.0).weights for s in range(16)]
    )

    def decide(features):
        return np.array(
            [
                [(a.worker, a.role) for a in (act(lg, n_workers) for lg in apply_heads(heads, f))]
                for f in features
            ]
        )

    want = decide(reference)
    fidelity = {}
    for name, bb in paths.items():
        got = bb.features(texts)  # feature-cache hits: the features the path computed
        cos = (
            np.sum(got * reference, 1)
            / np.linalg.norm(got, axis=1)
            / np.linalg.norm(reference, axis=1)
        )
        same = (decide(got) == want).all(axis=2)
        fidelity[name] = {
            "max_abs_diff": float(np.abs(got - reference).max()),
            "min_cosine": float(cos.min()),
            "centre_head_agreement": float(same[:, 0].mean()),
            "random_heads_agreement": float(same[:, 1:].mean()),
            "transcripts": len(texts),
        }
        if bb is not backbone:  # its rate on these transcripts, turn by turn, batched
            fidelity[name]["tokens_per_s"] = bb.stats.tokens_forwarded / bb.stats.busy_s
        error = getattr(bb, "feature_error", 0.0)
        if error:  # argmax decisions as the coordinator takes them: near ties in fp32
            exact = bb.features(texts, exact=True)
            near = np.array([[near_tie(h, f, n_workers, error) for h in heads] for f in got])
            # each head's decision: in fp32 where that head was near a tie
            per_head = np.where(near[:, :, None], decide(exact), decide(got))
            same = (per_head == want).all(axis=2)
            fidelity[name]["rechecked_share"] = float(near.mean())
            fidelity[name]["rechecked_centre_agreement"] = float(same[:, 0].mean())
            fidelity[name]["rechecked_random_agreement"] = float(same[:, 1:].mean())
    return {"limit_tokens_per_s": limit, "fidelity": fidelity}


def child_latency(args) -> None:
    """The same generation as ``child_generation`` (same ``train`` path, calibration done
    first), its sandbox workers answering after ``args.latency`` seconds."""
    import dataclasses

    from workbench.core.workers import simulated

    simulated.POOLS["sandbox"] = tuple(
        dataclasses.replace(p, latency_s=args.latency) for p in simulated.POOLS["sandbox"]
    )
    child_generation(args)


# --------------------------------------------------------------------------- parent


def run_child(args, mode: str, tree: Path, *extra: str) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", mode, *extra]
    command += ["--device", args.device, "--popsize", str(args.popsize)]
    command += ["--rollouts", str(args.rollouts), "--turns", str(args.turns)]
    command += ["--latency", str(args.latency), "--fidelity", str(args.fidelity)]
    command += ["--compare", args.compare]
    path = [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])]  # tree first
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode or not lines:
        sys.exit(f"{mode} on {tree} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result = json.loads(lines[-1][len("RESULT ") :])
    result["process_s"] = time.perf_counter() - started
    result["load"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    print(f"{mode} on {tree}: {json.dumps(result)}", flush=True)  # kept if a later step dies
    return result


def baseline_tree(commit: str, folder: Path) -> Path:
    """The old code: ``commit`` checked out into ``folder``, or ``commit`` itself when it
    names a folder holding such a checkout (a machine without this repository's history)."""
    if Path(commit).is_dir():
        return Path(commit).resolve()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def machine() -> str:
    import platform

    import torch

    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return (
        f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads{gpu}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument(
        "--baseline",
        default="a6b8df6",
        help="commit of the old path, or a folder holding its files ('' skips)",
    )
    parser.add_argument("--popsize", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument(
        "--precision",
        default="",
        help="this tree's precision: auto (default), fp32, bf16-mixed, bf16",
    )
    parser.add_argument(
        "--compare",
        default="fp32,bf16-mixed,bf16",
        help="other precisions whose fidelity is measured too (comma-separated)",
    )
    parser.add_argument("--latency", type=float, default=0.0, help="worker latency section, s")
    parser.add_argument("--fidelity", type=int, default=96, help="decision transcripts checked")
    parser.add_argument("--repeat", type=int, default=1, help="new / old pairs, alternated")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    if args.child == "generation":
        return child_generation(args) and None
    if args.child == "latency":
        return child_latency(args)

    print(f"machine: {machine()}; device {args.device}")
    print(
        f"one generation: sep-CMA-ES, sandbox pool, K = {args.turns}, "
        f"{args.popsize} x {args.rollouts} episodes, offline backbone (SmolLM2-135M)"
    )
    mine = ["--precision", args.precision or "auto"]  # the baseline's child gets none
    new = run_child(args, "generation", ROOT, "--measure", *mine)
    rows = [("new (this tree)", new)]
    pairs = []
    if args.baseline:
        with tempfile.TemporaryDirectory() as folder:
            old_tree = baseline_tree(args.baseline, Path(folder))
            for i in range(args.repeat):
                again = new if i == 0 else run_child(args, "generation", ROOT, *mine)
                old = run_child(args, "generation", old_tree)
                pairs.append((again, old))
                if i:
                    rows.append((f"new, pair {i + 1}", again))
                rows.append((f"old ({args.baseline})" + (f", pair {i + 1}" if i else ""), old))
    limit = new["limit_tokens_per_s"]
    print(
        f"\nfresh transcripts, largest batches (the limit), in {new['precision']} as this "
        f"tree's coordinator: {limit:.0f} tokens/s"
    )
    print(
        "path                  precision   wall s  coordinator s  new tokens  transcripts  "
        "forwards  mean batch  tokens/s  efficiency"
    )
    for name, r in rows:
        rate = r["tokens"] / r["coordinator_s"] if r["coordinator_s"] else float("nan")
        batches = "-" if r.get("batches") is None else str(r["batches"])
        mean = "-" if r.get("mean_batch") is None else f"{r['mean_batch']:.1f}"
        # against a limit of the same precision only (the baseline's fp32 is not measured)
        same = r.get("precision", "fp32") == new["precision"]
        efficiency = f"{rate / limit:.2f}" if same else "-"
        print(
            f"{name:20s}  {r.get('precision', '?'):10s}  {r['wall_s']:6.1f}  {r['coordinator_s']:13.1f}  {r['tokens']:10d}  "
            f"{r['transcripts']:11d}  {batches:>8s}  {mean:>10s}  {rate:8.0f}  {efficiency:>10s}"
        )
    for name, r in rows:
        if r.get("rechecks"):  # counted in the tokens and the coordinator time above
            print(
                f"{name}: {r['rechecks']} near-tie decisions rechecked in fp32 "
                f"({r['recheck_tokens']} of the new tokens)"
            )
    for i, (n, o) in enumerate(pairs):
        print(
            f"\npair {i + 1}: generation wall time, old / new: {o['wall_s'] / n['wall_s']:.2f}x "
            f"(coordinator {o['coordinator_s'] / n['coordinator_s']:.2f}x; load average "
            f"{n['load'][0]:.1f}-{n['load'][1]:.1f} new, {o['load'][0]:.1f}-{o['load'][1]:.1f} old)"
        )
    print("\nfidelity vs fp32 one by one (no cache), decision transcripts of the generation:")
    for name, f in new["fidelity"].items():
        speed = f" ({f['tokens_per_s']:.0f} tokens/s)" if "tokens_per_s" in f else ""
        if "rechecked_share" in f:
            speed += (
                f"; near ties rechecked in fp32 ({f['rechecked_share']:.1%} of head x "
                f"transcript decisions): centre head {f['rechecked_centre_agreement']:.1%}, "
                f"random heads {f['rechecked_random_agreement']:.1%}"
            )
        print(
            f"  {name}: max abs diff {f['max_abs_diff']:.2e}, min cosine {f['min_cosine']:.6f}, "
            f"argmax agreement: centre head {f['centre_head_agreement']:.1%}, 16 random heads "
            f"{f['random_heads_agreement']:.1%} ({f['transcripts']} transcripts){speed}"
        )
    latency = None
    if args.latency:
        r = latency = run_child(args, "latency", ROOT, *mine)
        print(
            f"\nworkers with {args.latency:.2f} s latency, {r['precision']}: "
            f"{r['requests'] / r['wall_s']:.0f} "
            f"decisions/s, coordinator {r['coordinator_s']:.1f} s of {r['wall_s']:.1f} s wall "
            f"({r['coordinator_s'] / r['wall_s']:.1%})"
        )
    if args.out:
        figures = {
            "device": args.device,
            "turns": args.turns,
            "popsize": args.popsize,
            "rollouts": args.rollouts,
            "precision": new["precision"],
            "limit_tokens_per_s": round(limit),
            "new/wall_s": round(new["wall_s"], 2),
            "new/coordinator_s": round(new["coordinator_s"], 2),
            "old_over_new/wall": [round(o["wall_s"] / n["wall_s"], 2) for n, o in pairs],
            "old_over_new/coordinator": [
                round(o["coordinator_s"] / n["coordinator_s"], 2) for n, o in pairs
            ],
            "fidelity": new["fidelity"],
            "latency": latency,
        }
        paths = {name: {k: v for k, v in r.items() if k != "fidelity"} for name, r in rows}
        write_results(args.out, figures, paths=paths)


if __name__ == "__main__":
    main()
