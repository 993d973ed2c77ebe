"""The optimizers on the sandbox's first decision, in seconds instead of hours.

    python tests/benchmarks/bench_optimizers.py [--generations 3,10,20] [--seeds 8]
        [--inputs raw,chat] [--sigma0-scales literal,width] [--bases identity,balanced]
        [--out docs/results/data/optimizers.json]

A one-turn routing problem on the REAL features of the offline backbone (SmolLM2-135M,
the `mixed` suite's opening transcripts, computed once and kept in the user cache): each
candidate picks (worker, role) for the generation's m tasks by sampling its head; reward
is 1 with the chosen sandbox worker's skill for the task's category when the role is
Worker, else 0 (one turn: a Thinker or Verifier leaves no answer). The optimizers are the
trainer's own (``make_optimizer``: sep-CMA-ES, random search, REINFORCE, imitation) with
the trainer's population, rollouts and search basis; after the budget, the vector each
one reports acts by argmax on 150 held-out tasks and its expected reward is printed
(mean over seeds with a 95% t-interval; the oracle routes each category to its best
worker). Every combination of the backbone's input (``[backbone] input``), the head's
sigma0 scale (``optimizer.sigma0_scale``) and the search basis is reported, so each of the
project's options is measured against the paper's setting (raw, literal, identity).
Isolating the first decision is what makes this fast: the trainer forwards the
backbone for every transcript, which in multi-turn runs takes hours on a CPU. ``--out``
also writes the figures as a results file (``tests/benchmarks/results.py``): the references
and, per ``GENERATIONS/INPUT/SCALE/BASIS/OPTIMIZER``, the mean, its interval and the seeds'
rewards.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import platformdirs

from workbench.core.config import RunConfig
from workbench.core.coordinator import Backbone, HeadConfig, softmax
from workbench.core.optimizers.make import make_optimizer
from workbench.core.records import ROLES, Episode, Role, StopReason, Turn
from workbench.core.stats import mean_ci
from workbench.core.tasks.suites import load_suite
from workbench.core.training.basis import CALIBRATION_TASKS, SearchBasis
from workbench.core.transcript import render_transcript
from workbench.core.workers.simulated import SANDBOX_PROFILES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

WORKER = ROLES.index(Role.WORKER)
POOL = tuple(f"sandbox:{p.name}" for p in SANDBOX_PROFILES)


def suite_features(suite_name: str, input: str) -> np.ndarray:
    """Unit-RMS opening-transcript features of every task of a suite, the backbone reading
    ``input`` ("raw" or "chat"; cached on disk)."""
    suite = load_suite(suite_name)
    cache = (
        Path(platformdirs.user_cache_dir("trinity-workbench"))
        / "bench"
        / f"features-{suite_name}-{input}.npy"
    )
    if cache.is_file():
        return np.load(cache)
    backbone = Backbone("offline", "cpu", input=input)
    features = backbone.features([render_transcript(t, ()) for t in suite.tasks])
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, features)
    return features


def train(
    optimizer: str,
    basis_name: str,
    features: np.ndarray,
    skill: np.ndarray,
    tasks: list,
    *,
    seed: int,
    generations: int,
    popsize: int,
    rollouts: int,
    sigma0: float,
    sigma0_scale: str,
) -> float:
    """One training run of ``optimizer``; the expected test reward of its result."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(features))
    train_ids, test_ids = order[:-150], order[-150:]
    basis = (
        SearchBasis.fit(features[rng.choice(train_ids, CALIBRATION_TASKS, replace=False)])
        if basis_name == "balanced" and optimizer != "random-search"  # as the trainer does
        else SearchBasis()
    )
    seen = basis.features(features)  # what search coordinates act on
    index = {render_transcript(t, ()): i for i, t in enumerate(tasks)}
    head = HeadConfig(len(POOL), features.shape[1])
    config = RunConfig.from_dict(
        {
            "run": {"seed": seed},
            "optimizer": {
                "name": optimizer,
                "popsize": popsize,
                "rollouts": rollouts,
                "sigma0": sigma0,
                "sigma0_scale": sigma0_scale,
                "search_basis": basis_name,
            },
        }
    )
    opt = make_optimizer(
        config.optimizer,
        config.run.seed,
        head.n_params,
        head,
        lambda texts: seen[[index[t] for t in texts]],
        {t.id: t for t in tasks},
    )
    for _ in range(generations):
        proposals = opt.ask()
        batch = rng.choice(train_ids, opt.rollouts)
        fitness, episodes = [], []
        for proposal in proposals:
            if proposal.fixed_worker is not None:  # imitation's label collection: one worker alone
                workers = np.full(len(batch), proposal.fixed_worker)
                roles = np.full(len(batch), WORKER)
                p_workers = np.eye(len(POOL))[workers]
                p_roles = np.eye(3)[roles]
            else:
                logits = seen[batch] @ proposal.vector.reshape(head.shape).T
                p_workers, p_roles = (
                    softmax(logits[:, : len(POOL)]),
                    softmax(logits[:, len(POOL) :]),
                )
                workers = np.array([rng.choice(len(POOL), p=p) for p in p_workers])
                roles = np.array([rng.choice(3, p=p) for p in p_roles])
            rewards = (roles == WORKER) * (rng.random(len(batch)) < skill[batch, workers])
            fitness.append(float(rewards.mean()))
            episodes.append(
                [
                    Episode(
                        id=f"{seed}-{t}",
                        suite="mixed",
                        task_id=tasks[t].id,
                        pool=POOL,
                        max_turns=1,
                        turns=(
                            Turn(
                                index=0,
                                worker=POOL[w],
                                role=ROLES[r],
                                worker_probs=tuple(pw),
                                role_probs=tuple(pr),
                                messages=(),
                            ),
                        ),
                        answer=None,
                        reward=float(y),
                        stop_reason=StopReason.MAX_TURNS,
                    )
                    for t, w, r, pw, pr, y in zip(
                        batch, workers, roles, p_workers, p_roles, rewards, strict=True
                    )
                ]
            )
        opt.tell(proposals, fitness, episodes)
    weights = basis.head(opt.center(), head.shape).reshape(
        head.shape
    )  # the stored head, on the raw feature
    logits = features[test_ids] @ weights.T
    chosen = logits[:, : len(POOL)].argmax(axis=1)
    works = logits[:, len(POOL) :].argmax(axis=1) == WORKER
    return float(np.mean(works * skill[test_ids, chosen]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="mixed")
    parser.add_argument(
        "--generations", default="3,10,20", help="budgets to report, comma-separated"
    )
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument(
        "--popsize", type=int, default=28, help="the example's (pycma's default for n = 3,456)"
    )
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--sigma0", type=float, default=0.03)
    parser.add_argument("--optimizers", default="sep-cma-es,random-search,reinforce,imitation")
    parser.add_argument("--bases", default="identity,balanced")
    parser.add_argument("--inputs", default="raw,chat")
    parser.add_argument("--sigma0-scales", default="literal,width")
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    tasks = list(load_suite(args.suite).tasks)
    features = {i: suite_features(args.suite, i) for i in args.inputs.split(",")}
    skill = np.array([[p.skill_for(t.category, t.kind) for p in SANDBOX_PROFILES] for t in tasks])
    print(
        f"{args.suite}: {len(tasks)} tasks; population {args.popsize} x {args.rollouts} rollouts; "
        f"sigma0 {args.sigma0}; {args.seeds} seeds; expected test reward of the result, mean [95% CI]\n"
        f"oracle {skill.max(axis=1).mean():.3f}, best single worker {skill.mean(axis=0).max():.3f}, "
        f"uniform random {skill.mean() / 3:.3f}"
    )
    figures: dict[str, object] = {
        "suite": args.suite,
        "tasks": len(tasks),
        "popsize": args.popsize,
        "rollouts": args.rollouts,
        "sigma0": args.sigma0,
        "seeds": args.seeds,
        "generations": [int(g) for g in args.generations.split(",")],
        "episodes_per_generation": args.popsize * args.rollouts,
        "oracle": round(float(skill.max(axis=1).mean()), 4),
        "best_single": round(float(skill.mean(axis=0).max()), 4),
        "uniform_random": round(float(skill.mean() / 3), 4),
    }
    for generations in (int(g) for g in args.generations.split(",")):
        print(
            f"\n{generations} generations ({generations * args.popsize * args.rollouts} episodes)"
        )
        settings = [
            (i, scale, basis)
            for i in args.inputs.split(",")
            for scale in args.sigma0_scales.split(",")
            for basis in args.bases.split(",")
        ]
        for input, scale, basis in settings:
            for optimizer in args.optimizers.split(","):
                rewards = [
                    train(
                        optimizer,
                        basis,
                        features[input],
                        skill,
                        tasks,
                        seed=s,
                        generations=generations,
                        popsize=args.popsize,
                        rollouts=args.rollouts,
                        sigma0=args.sigma0,
                        sigma0_scale=scale,
                    )
                    for s in range(args.seeds)
                ]
                mean, low, high = mean_ci(rewards)
                print(
                    f"  {input:4s} {scale:8s} {basis:9s} {optimizer:14s} "
                    f"{mean:.3f} [{low:.3f}, {high:.3f}]",
                    flush=True,
                )
                key = f"{generations}/{input}/{scale}/{basis}/{optimizer}"
                figures[f"{key}/mean"] = round(mean, 4)
                figures[f"{key}/ci"] = [round(low, 4), round(high, 4)]
                figures[f"{key}/seeds"] = [round(r, 4) for r in rewards]
    if args.out:
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
