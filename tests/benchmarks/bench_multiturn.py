"""Can the method learn multi-turn coordination on the simulated team? A fast, faithful
harness with the trainer's own optimizers and search basis.

    python tests/benchmarks/bench_multiturn.py [--pool team] [--turns 5] [--generations 20]
        [--popsize 16] [--rollouts 8] [--sigma0 0.03] [--seeds 1] [--backbone offline]
        [--basis balanced|whitened|subspace|identity] [--fitness sampled|crn-path|crn-greedy|exact]
        [--explore 0.1] [--logit-norm 4] [--out docs/results/data/multi-turn-NAME.json]

Episodes follow the protocol (``workbench.core.protocol``: stop at the first ACCEPT, a
Verifier before any answer ends with reward 0, K turns) with the simulation's own
probabilities (``solve_probability``, ``revise_probability``) and its own texts
(``simulate_turn``): the coordinator reads ``render_transcript`` of real ``Turn``s through
the REAL frozen backbone (SmolLM2-135M offline). The one liberty: a wrong answer's
particular value is fixed per (task, worker), so a transcript is a function of (task,
roles, workers, outcomes) and its feature is computed once (kept on disk in the user
cache); a right answer is the task's. Candidates sample their (worker, role) like the
trainer; fitness is the mean reward over the generation's rollout tasks (the same tasks
for every candidate). The result (the optimizer's centre) acts by argmax, and its
EXPECTED test reward is computed exactly by enumerating every outcome branch on each of
the held-out test tasks (no sampling noise): mean over tasks with a 95% t-interval over
tasks, next to the references on the same tasks: best single worker, uniform random
routing over K turns (exact, by enumeration), one-turn oracle, multi-turn oracle.
``--out`` also writes the figures as a results file (``tests/benchmarks/results.py``): the
references, each seed's expected test reward with its interval, share of the oracle,
seconds and learned plan, and the mean over seeds.
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import time
from pathlib import Path

import numpy as np
import platformdirs

from workbench.core.config import RunConfig
from workbench.core.coordinator import Backbone, HeadConfig, softmax
from workbench.core.optimizers.make import make_optimizer
from workbench.core.oracle import best_plan, expected_reward, random_routing_value
from workbench.core.records import ROLES, Episode, Role, StopReason, Turn
from workbench.core.stats import mean_ci
from workbench.core.tasks.suites import load_suite
from workbench.core.training.basis import CALIBRATION_TASKS, SearchBasis
from workbench.core.transcript import render_transcript
from workbench.core.workers.simulated import (
    POOLS,
    PROFILES_BY_ID,
    TurnContext,
    revise_probability,
    simulate_turn,
    solve_probability,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

THINKER, WORKER, VERIFIER = (ROLES.index(r) for r in (Role.THINKER, Role.WORKER, Role.VERIFIER))


class _Forced(random.Random):
    """A generator whose ``random()`` is fixed (0: the likely branch, 1-: the other), so
    ``simulate_turn`` writes the text of a chosen outcome (its only draw; the text is a
    function of task, worker, role and outcome)."""

    def __init__(self, seed: str, value: float):
        super().__init__(seed)
        self._value = value

    def random(self) -> float:
        return self._value


class Sandbox:
    """The pool's simulation, a transcript per history and the backbone's features."""

    def __init__(
        self, pool: str, tasks: list, backbone: str, input: str = "raw", precision: str = "fp32"
    ):
        self.pool = tuple(p.id for p in POOLS[pool])
        self.tasks = tasks
        self.backbone_name = backbone
        self.input = input
        self.precision = precision
        self._backbone: Backbone | None = None
        cache_dir = Path(platformdirs.user_cache_dir("trinity-workbench")) / "bench"
        cache_dir.mkdir(parents=True, exist_ok=True)
        suffix = ("" if input == "raw" else f"-{input}") + (
            "" if precision == "fp32" else f"-{precision}"
        )
        self.cache_path = cache_dir / f"multiturn-features-{backbone}{suffix}.pkl"
        self.features: dict[str, np.ndarray] = (
            pickle.loads(self.cache_path.read_bytes()) if self.cache_path.is_file() else {}
        )
        self._texts: dict[tuple, str] = {}
        self.forwarded = 0

    def save(self) -> None:
        """Write the feature cache (atomically: a run stopped by a time limit keeps what
        it computed up to its last save)."""
        partial = self.cache_path.with_suffix(".tmp")
        partial.write_bytes(pickle.dumps(self.features))
        partial.replace(self.cache_path)

    def reply(self, task_index: int, worker: str, role: int, outcome: bool, thinkers) -> str:
        """The simulation's text for a Worker answer right (``outcome``) or wrong, a
        Verifier REVISE, or Thinker guidance."""
        task = self.tasks[task_index]
        # a Verifier's text only matters when it says REVISE (ACCEPT ends the episode): an
        # empty answer is wrong, and random() = 0 is below any catch rate
        answer = "" if role == VERIFIER else None
        value = 0.0 if outcome or role == VERIFIER else 1.0 - 1e-12
        ctx = TurnContext(task, str(ROLES[role]), answer, thinkers)
        return simulate_turn(PROFILES_BY_ID[worker], ctx, _Forced(f"{task.id}|{worker}", value))

    def transcript(self, task_index: int, history: tuple) -> str:
        """``history``: ((worker index, role index, outcome), ...) of the turns so far."""
        key = (task_index, history)
        text = self._texts.get(key)
        if text is None:
            turns, thinkers = [], ()
            for i, (w, r, outcome) in enumerate(history):
                worker = self.pool[w]
                body = self.reply(task_index, worker, r, outcome, thinkers)
                turns.append(
                    Turn(
                        index=i,
                        worker=worker,
                        role=ROLES[r],
                        worker_probs=(),
                        role_probs=(),
                        messages=(),
                        response=body,
                    )
                )
                thinkers = (*thinkers, worker) if r == THINKER else () if r == WORKER else thinkers
            text = self._texts[key] = render_transcript(self.tasks[task_index], turns)
        return text

    def feature_rows(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.features))
        if missing:
            if self._backbone is None:
                self._backbone = _backbone(self.backbone_name, self.input, self.precision)
            for start in range(0, len(missing), 64):
                chunk = missing[start : start + 64]
                for text, row in zip(chunk, self._backbone.features(chunk), strict=True):
                    self.features[text] = row
            self.forwarded += len(missing)
        return np.stack([self.features[t] for t in texts])

    # ----------------------------------------------------------------- the protocol

    def step(self, task_index: int, history: tuple, w: int, r: int, thinkers: tuple, correct):
        """The outcome branches of one action: [(probability, outcome, done, reward)]."""
        task, worker = self.tasks[task_index], self.pool[w]
        profile = PROFILES_BY_ID[worker]
        if r == THINKER:
            return [(1.0, True, False, 0.0)]
        if r == WORKER:
            p = solve_probability(profile, task.category, task.kind, thinkers)
            return [(p, True, False, 0.0), (1 - p, False, False, 0.0)]
        if correct is None:
            return [(1.0, True, True, 0.0)]
        revise = revise_probability(profile, task.category, task.kind, correct)
        return [(1 - revise, True, True, float(correct)), (revise, True, False, 0.0)]


def _backbone(name: str, input: str = "raw", precision: str = "fp32") -> Backbone:
    if name == "tiny":  # the test suite's tiny random LM: for checking the harness only
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from tests.conftest import build_tiny_lm

        model, tokenizer = build_tiny_lm()
        return Backbone("tiny", model=model, tokenizer=tokenizer, input=input)
    return Backbone(name, "cpu", precision, input=input)


def _state(history: tuple, pool: tuple) -> tuple[tuple, bool | None]:
    thinkers, correct = (), None
    for w, r, outcome in history:
        if r == THINKER:
            thinkers = (*thinkers, pool[w])
        elif r == WORKER:
            thinkers, correct = (), outcome
    return thinkers, correct


def rollouts(sim: Sandbox, heads: list, seen, task_ids, turns: int, rng) -> list[list[Episode]]:
    """Each head samples one episode per task of ``task_ids``; batched per turn."""
    L = len(sim.pool)
    live = [(h, j, t, ()) for h in range(len(heads)) for j, t in enumerate(task_ids)]
    done: dict[tuple[int, int], tuple[float, list]] = {}
    decisions: dict[tuple[int, int], list] = {}
    for _ in range(turns):
        if not live:
            break
        rows = seen(sim.feature_rows([sim.transcript(t, hist) for _, _, t, hist in live]))
        nxt = []
        for (h, j, t, hist), f in zip(live, rows, strict=True):
            logits = heads[h] @ f
            pw, pr = softmax(logits[:L]), softmax(logits[L:])
            w, r = int(rng.choice(L, p=pw)), int(rng.choice(3, p=pr))
            decisions.setdefault((h, j), []).append((w, r, pw, pr))
            thinkers, correct = _state(hist, sim.pool)
            branches = sim.step(t, hist, w, r, thinkers, correct)
            pick = rng.choice(len(branches), p=[b[0] for b in branches])
            _, outcome, ended, reward = branches[pick]
            hist = (*hist, (w, r, outcome))
            if ended:
                done[(h, j)] = (reward, hist)
            else:
                nxt.append((h, j, t, hist))
        live = nxt
    for h, j, _t, hist in live:
        done[(h, j)] = (float(bool(_state(hist, sim.pool)[1])), hist)
    out = []
    for h in range(len(heads)):
        eps = []
        for j, t in enumerate(task_ids):
            reward, hist = done[(h, j)]
            turns_ = tuple(
                Turn(
                    index=i,
                    worker=sim.pool[w],
                    role=ROLES[r],
                    worker_probs=tuple(pw),
                    role_probs=tuple(pr),
                    messages=(),
                )
                for i, (w, r, pw, pr) in enumerate(decisions[(h, j)])
            )
            eps.append(
                Episode(
                    id=f"{h}-{j}",
                    suite="bench",
                    task_id=sim.tasks[t].id,
                    pool=sim.pool,
                    max_turns=turns,
                    turns=turns_,
                    answer=None,
                    reward=reward,
                    stop_reason=StopReason.MAX_TURNS,
                )
            )
        out.append(eps)
    return out


def expected_fitness(sim: Sandbox, heads: list, seen, task_ids, turns: int) -> np.ndarray:
    """Exact expected reward of each SAMPLING head (``heads[h] @ seen(feature)``) on each
    task of ``task_ids``: every (worker, role) choice weighted by the head's softmaxes and
    every outcome branch by its probability. Shape (heads, tasks). The noise-free fitness:
    what a candidate's fitness estimates with infinitely many rollouts on these tasks."""
    L, H = len(sim.pool), len(heads)
    W = np.stack(heads)  # (H, L + 3, d)
    value = np.zeros((H, len(task_ids)))
    frontier = [(j, t, (), np.ones(H)) for j, t in enumerate(task_ids)]
    for _ in range(turns):
        if not frontier:
            break
        rows = seen(sim.feature_rows([sim.transcript(t, h) for _, t, h, _ in frontier]))
        logits = np.einsum("hkd,nd->nhk", W, rows)  # (N, H, L + 3)
        nxt = []
        for (j, t, hist, mass), lg in zip(frontier, logits, strict=True):
            pw = np.exp(lg[:, :L] - lg[:, :L].max(1, keepdims=True))
            pw /= pw.sum(1, keepdims=True)
            pr = np.exp(lg[:, L:] - lg[:, L:].max(1, keepdims=True))
            pr /= pr.sum(1, keepdims=True)
            thinkers, correct = _state(hist, sim.pool)
            for w in range(L):
                for r in range(3):
                    q = mass * pw[:, w] * pr[:, r]
                    for p, outcome, ended, reward in sim.step(t, hist, w, r, thinkers, correct):
                        if p == 0:
                            continue
                        if ended:
                            value[:, j] += q * p * reward
                        else:
                            nxt.append((j, t, (*hist, (w, r, outcome)), q * p))
        frontier = nxt
    for j, _t, hist, mass in frontier:
        value[:, j] += mass * float(bool(_state(hist, sim.pool)[1]))
    return value


def _bounded(logits: np.ndarray, norm: float) -> np.ndarray:
    """``logits`` centred and scaled to length ``norm``: the same argmax, a softmax never
    surer than that of ``norm`` times a unit vector."""
    z = logits - logits.mean()
    return norm * z / max(float(np.linalg.norm(z)), 1e-12)


def crn_rollouts(
    sim: Sandbox,
    heads: list,
    seen,
    task_ids,
    turns: int,
    rng,
    key: str,
    greedy: bool = False,
    explore: float = 0.0,
    logit_norm: float = 0.0,
    explore_opening: float = 0.0,
):
    """``rollouts`` with common random numbers: every head draws its (worker, role) by
    inverse CDF from the same uniforms per (task, turn), and an outcome from the same
    uniform per (task, turn, worker, role) (``key`` "turn") or per (task, history, worker,
    role) (``key`` "path": only identical transcripts share it, as a real pool's reply
    cache would). Each episode's distribution is unchanged; candidates differ by policy,
    not by luck. ``greedy``: every head acts by argmax (no action noise; the outcomes as
    above). Returns the rewards, shape (heads, tasks)."""
    L, H = len(sim.pool), len(heads)
    u_act = rng.random((len(task_ids), turns, 2))
    u_out: dict = {}

    def outcome_u(j, hist, w, r):
        k = (j, len(hist), w, r) if key == "turn" else (j, hist, w, r)
        if k not in u_out:
            u_out[k] = rng.random()
        return u_out[k]

    reward = np.zeros((H, len(task_ids)))
    live = [(h, j, t, ()) for h in range(H) for j, t in enumerate(task_ids)]
    for d in range(turns):
        if not live:
            break
        rows = seen(sim.feature_rows([sim.transcript(t, hist) for _, _, t, hist in live]))
        nxt = []
        for (h, j, t, hist), f in zip(live, rows, strict=True):
            logits = heads[h] @ f
            if logit_norm:  # a bounded head: centred logits scaled to norm logit_norm
                logits = np.concatenate(
                    [_bounded(logits[:L], logit_norm), _bounded(logits[L:], logit_norm)]
                )
            pw, pr = softmax(logits[:L]), softmax(logits[L:])
            if explore:
                pw, pr = (1 - explore) * pw + explore / L, (1 - explore) * pr + explore / 3
            if explore_opening and d == 0:
                e = explore_opening
                pw, pr = (1 - e) * pw + e / L, (1 - e) * pr + e / 3
            if greedy:
                w, r = int(np.argmax(pw)), int(np.argmax(pr))
            else:
                w = min(int(np.searchsorted(np.cumsum(pw), u_act[j, d, 0])), L - 1)
                r = min(int(np.searchsorted(np.cumsum(pr), u_act[j, d, 1])), 2)
            thinkers, correct = _state(hist, sim.pool)
            branches = sim.step(t, hist, w, r, thinkers, correct)
            # the branch whose share of [0, 1) holds the uniform
            cut = np.cumsum([b[0] for b in branches])
            pick = min(
                int(np.searchsorted(cut, outcome_u(j, hist, w, r), side="right")), len(cut) - 1
            )
            _, outcome, ended, rew = branches[pick]
            hist = (*hist, (w, r, outcome))
            if ended:
                reward[h, j] = rew
            else:
                nxt.append((h, j, t, hist))
        live = nxt
    for h, j, _t, hist in live:
        reward[h, j] = float(bool(_state(hist, sim.pool)[1]))
    return reward


def tree_transcripts(sim: Sandbox, task_ids, turns: int) -> list[str]:
    """Every transcript the coordinator can read on ``task_ids`` within ``turns`` turns
    (every worker, role and outcome)."""
    L, texts = len(sim.pool), []
    frontier = [(t, ()) for t in task_ids]
    for _ in range(turns):
        texts += [sim.transcript(t, h) for t, h in frontier]
        nxt = []
        for t, hist in frontier:
            thinkers, correct = _state(hist, sim.pool)
            for w in range(L):
                for r in range(3):
                    for p, outcome, ended, _ in sim.step(t, hist, w, r, thinkers, correct):
                        if p > 0 and not ended:
                            nxt.append((t, (*hist, (w, r, outcome))))
        frontier = list(dict.fromkeys(nxt))
    return texts


def uniform_transcripts(sim: Sandbox, task_ids, turns: int, per_task: int, rng) -> list[str]:
    """The transcripts the coordinator reads in ``per_task`` episodes per task of the
    uniform policy (the zero head): what the trainer's whitened basis calibrates on."""
    L, texts = len(sim.pool), []
    for t in task_ids:
        for _ in range(per_task):
            hist: tuple = ()
            for _ in range(turns):
                texts.append(sim.transcript(t, hist))
                w, r = int(rng.integers(L)), int(rng.integers(3))
                thinkers, correct = _state(hist, sim.pool)
                branches = sim.step(t, hist, w, r, thinkers, correct)
                _, outcome, ended, _ = branches[
                    rng.choice(len(branches), p=[b[0] for b in branches])
                ]
                if ended:
                    break
                hist = (*hist, (w, r, outcome))
    return texts


def one_turn_transcripts(sim: Sandbox, task_ids, rng) -> list[str]:
    """The opening of each task and its transcript after each worker's one Thinker turn
    and one Worker turn (its outcome drawn): what the trainer's whitened basis calibrates
    on (``Trainer._calibration_transcripts``)."""
    L, texts = len(sim.pool), []
    for t in task_ids:
        texts.append(sim.transcript(t, ()))
        for w in range(L):
            texts.append(sim.transcript(t, ((w, THINKER, True),)))
            p = sim.step(t, (), w, WORKER, (), None)[0][0]
            texts.append(sim.transcript(t, ((w, WORKER, bool(rng.random() < p)),)))
    return texts


def expected_test_reward(sim: Sandbox, weights: np.ndarray | None, task_ids, turns: int):
    """Exact expected reward per task of the argmax policy (``weights`` on the raw
    feature) or, with None, of uniform random (worker, role) choices."""
    L = len(sim.pool)
    value = np.zeros(len(task_ids))
    frontier = [(j, t, (), 1.0) for j, t in enumerate(task_ids)]
    for _ in range(turns):
        if not frontier:
            break
        if weights is not None:
            rows = sim.feature_rows([sim.transcript(t, h) for _, t, h, _ in frontier])
            logits = rows @ weights.T
            actions = [[(int(lg[:L].argmax()), int(lg[L:].argmax()), 1.0)] for lg in logits]
        else:
            uniform = [(w, r, 1.0 / (3 * L)) for w in range(L) for r in range(3)]
            actions = [uniform] * len(frontier)
        nxt = []
        for (j, t, hist, prob), choices in zip(frontier, actions, strict=True):
            thinkers, correct = _state(hist, sim.pool)
            for w, r, q in choices:
                for p, outcome, ended, reward in sim.step(t, hist, w, r, thinkers, correct):
                    if p == 0:
                        continue
                    if ended:
                        value[j] += prob * q * p * reward
                    else:
                        nxt.append((j, t, (*hist, (w, r, outcome)), prob * q * p))
        frontier = nxt
    for j, _t, hist, prob in frontier:
        value[j] += prob * float(bool(_state(hist, sim.pool)[1]))
    return value


def policy_summary(sim: Sandbox, weights: np.ndarray, task_ids, turns: int) -> dict:
    """The argmax policy's most likely path per category (every Verifier says REVISE)."""
    L, out = len(sim.pool), {}
    for t in task_ids:
        cat = sim.tasks[t].category
        if cat in out:
            continue
        hist, steps = (), []
        for _ in range(turns):
            lg = sim.feature_rows([sim.transcript(t, hist)])[0] @ weights.T
            w, r = int(lg[:L].argmax()), int(lg[L:].argmax())
            steps.append(f"{ROLES[r].value.capitalize()} {sim.pool[w]}")
            if r == VERIFIER and _state(hist, sim.pool)[1] is None:
                break
            hist = (*hist, (w, r, True))
        out[cat] = " -> ".join(steps)
    return out


def train(sim: Sandbox, args, seed: int, train_ids, test_ids, log) -> dict:
    rng = np.random.default_rng(seed)
    calibration_ids = train_ids[:CALIBRATION_TASKS]
    opening = sim.feature_rows([sim.transcript(t, ()) for t in calibration_ids])
    if args.calibrate == "tree":  # every transcript of the calibration tasks' K-turn tree
        calibration = sim.feature_rows(tree_transcripts(sim, calibration_ids, args.turns))
    elif args.calibrate == "one-turn":
        calibration = sim.feature_rows(one_turn_transcripts(sim, calibration_ids, rng))
    elif args.calibrate.startswith("uniform"):  # uniform-N: N uniform-policy episodes a task
        per_task = int(args.calibrate.split("-")[1]) if "-" in args.calibrate else 4
        texts = uniform_transcripts(sim, calibration_ids, args.turns, per_task, rng)
        calibration = sim.feature_rows(texts)
    else:
        calibration = opening
    if args.basis == "balanced":
        basis = SearchBasis.fit(calibration)
    elif args.basis in ("whitened", "subspace"):
        basis = SearchBasis.fit_whitened(calibration, args.rank, rest=args.basis == "whitened")
    else:
        basis = SearchBasis()
    head = HeadConfig(len(sim.pool), opening.shape[1])
    config = RunConfig.from_dict(
        {
            "run": {"seed": seed},
            "optimizer": {
                "name": args.optimizer,
                "popsize": args.popsize,
                "rollouts": args.rollouts,
                "sigma0": args.sigma0,
                "sigma0_scale": args.sigma0_scale,
                "search_basis": "identity" if args.basis == "identity" else "balanced",
            },
        }
    )
    tasks_by_id = {t.id: t for t in sim.tasks}
    opt = make_optimizer(
        config.optimizer,
        config.run.seed,
        head.n_params,
        head,
        lambda texts: basis.features(sim.feature_rows(list(texts))),
        tasks_by_id,
    )
    started = time.perf_counter()
    curve = []
    for g in range(args.generations):
        proposals = opt.ask()
        batch = rng.choice(train_ids, opt.rollouts)
        heads = [p.vector.reshape(head.shape) for p in proposals]
        if args.fitness == "exact":
            episodes = None  # the ES optimizers do not read episodes
            fitness = list(expected_fitness(sim, heads, basis.features, batch, args.turns).mean(1))
        elif args.fitness in ("crn-turn", "crn-path", "crn-greedy"):
            episodes = None
            key = "turn" if args.fitness == "crn-turn" else "path"
            greedy = args.fitness == "crn-greedy"
            rewards = crn_rollouts(
                sim,
                heads,
                basis.features,
                batch,
                args.turns,
                rng,
                key,
                greedy,
                args.explore,
                args.logit_norm,
                max(0.0, 1.0 - g / args.explore_opening_until)
                if args.explore_opening_until
                else 0.0,
            )
            fitness = list(rewards.mean(1))
        else:
            episodes = rollouts(sim, heads, basis.features, batch, args.turns, rng)
            fitness = [float(np.mean([e.reward for e in eps])) for eps in episodes]
        opt.tell(proposals, fitness, episodes)
        curve.append(float(np.mean(fitness)))
        if args.save_every and (g + 1) % args.save_every == 0:
            sim.save()
            log(
                f"  seed {seed} gen {g + 1}: fitness {curve[-1]:.3f} "
                f"({time.perf_counter() - started:.0f}s, {sim.forwarded} features computed)"
            )
        if (g + 1) % args.report_every == 0 or g + 1 == args.generations:
            weights = basis.head(opt.center(), head.shape).reshape(head.shape)
            test = expected_test_reward(sim, weights, test_ids, args.turns)
            log(
                f"  seed {seed} gen {g + 1}: train fitness {np.mean(curve[-args.report_every :]):.3f}, "
                f"expected test {test.mean():.3f}  ({time.perf_counter() - started:.0f}s, "
                f"{sim.forwarded} features computed)"
            )
            sim.save()
    weights = basis.head(opt.center(), head.shape).reshape(head.shape)
    test = expected_test_reward(sim, weights, test_ids, args.turns)
    return {
        "test": test,
        "seconds": time.perf_counter() - started,
        "policy": policy_summary(sim, weights, test_ids, args.turns),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pool", default="team")
    parser.add_argument("--suite", default="mixed")
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--popsize", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--sigma0", type=float, default=0.03)
    parser.add_argument("--sigma0-scale", default="width", help="literal | width")
    parser.add_argument("--input", default="raw", help="raw | chat: the backbone's input")
    parser.add_argument("--optimizer", default="sep-cma-es")
    parser.add_argument("--basis", default="balanced")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--seed0", type=int, default=0, help="the first seed")
    parser.add_argument(
        "--calibrate",
        default="opening",
        help="opening: the basis is fitted on the calibration tasks' opening transcripts (the "
        "trainer's at one turn and for the balanced basis) | tree: on every transcript of their K-turn trees | uniform-N: on the "
        "transcripts of N episodes a task of the uniform policy | one-turn: the openings "
        "and each worker's one Thinker and one Worker turn on them (the trainer's)",
    )
    parser.add_argument("--rank", type=int, default=32, help="the whitened basis's rank")
    parser.add_argument(
        "--fitness",
        default="sampled",
        help="sampled (the trainer's: independent draws per candidate) | crn-path | crn-turn "
        "(common random numbers, see crn_rollouts) | crn-greedy (crn-path with every "
        "candidate acting by argmax, as the exported coordinator does) | exact (expected reward of each sampling "
        "candidate on the minibatch: no outcome or action noise; K <= 3)",
    )
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument(
        "--train-tasks", type=int, default=0, help="train on the first N training tasks only"
    )
    parser.add_argument(
        "--test-on-train",
        action="store_true",
        help="report the expected reward on the training tasks (what the search found)",
    )
    parser.add_argument("--report-every", type=int, default=5)
    parser.add_argument(
        "--save-every", type=int, default=1, help="save the feature cache every N generations"
    )
    parser.add_argument("--backbone", default="offline", help="offline (SmolLM2) or tiny")
    parser.add_argument(
        "--precision",
        default="fp32",
        help="fp32 | bf16-mixed | bf16 | auto: the backbone's (each its own feature cache)",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="first compute the feature of every transcript of the training tasks' K-turn "
        "trees (timed), so the runs that follow only read the cache",
    )
    parser.add_argument(
        "--logit-norm",
        type=float,
        default=0.0,
        help="crn fitness: candidates sample from each softmax's centred logits scaled to "
        "this length (a bounded head; the argmax unchanged); 0: off",
    )
    parser.add_argument(
        "--explore",
        type=float,
        default=0.0,
        help="crn fitness: a share of uniform choice mixed into the candidates' sampling",
    )
    parser.add_argument(
        "--explore-opening-until",
        type=int,
        default=0,
        help="crn fitness: exploring starts: the opening's choice is uniform with a share "
        "falling linearly from 1 to 0 over this many generations; 0: off",
    )
    parser.add_argument("--out", help="also write the figures to this results file (JSON)")
    args = parser.parse_args()
    tasks = list(load_suite(args.suite).tasks)
    sim = Sandbox(args.pool, tasks, args.backbone, args.input, args.precision)
    order = np.random.default_rng(12345).permutation(len(tasks))
    test_ids, train_ids = order[: args.test], order[args.test :]
    if args.train_tasks:
        train_ids = train_ids[: args.train_tasks]
    if args.test_on_train:  # the optimizer's own problem: no generalisation in the figure
        test_ids = train_ids
    test_tasks = [tasks[t] for t in test_ids]
    pool = sim.pool
    single = max(
        np.mean([PROFILES_BY_ID[w].skill_for(t.category, t.kind) for t in test_tasks]) for w in pool
    )
    one_turn = expected_reward(pool, test_tasks, 1)
    oracle = expected_reward(pool, test_tasks, args.turns)
    rand = np.mean([random_routing_value(pool, t.category, t.kind, args.turns) for t in test_tasks])
    print(
        f"{args.pool} pool, {args.suite}: {len(train_ids)} train / {len(test_ids)} test tasks, "
        f"K = {args.turns}; {args.optimizer} ({args.basis} basis), population {args.popsize} x "
        f"{args.rollouts} rollouts, sigma0 {args.sigma0} ({args.sigma0_scale}), "
        f"{args.generations} generations, backbone {args.backbone} ({args.input} input)\nexpected test reward: best single worker {single:.3f}, "
        f"random routing {rand:.3f}, one-turn oracle {one_turn:.3f}, multi-turn oracle {oracle:.3f}"
    )
    for c in ("math", "choice", "code"):
        print("  oracle " + best_plan(pool, c, c, args.turns).describe())
    if args.warm:
        started = time.perf_counter()
        uniform = np.zeros(
            (len(pool) + len(ROLES), sim.feature_rows([sim.transcript(train_ids[0], ())]).shape[1])
        )
        for start in range(0, len(train_ids), 8):
            expected_fitness(sim, [uniform], lambda f: f, train_ids[start : start + 8], args.turns)
            sim.save()
        print(
            f"warm: {sim.forwarded} features computed in {time.perf_counter() - started:.0f}s "
            f"({args.precision})",
            flush=True,
        )
    figures: dict[str, object] = {
        "pool": args.pool,
        "suite": args.suite,
        "turns": args.turns,
        "optimizer": args.optimizer,
        "basis": args.basis,
        "popsize": args.popsize,
        "rollouts": args.rollouts,
        "generations": args.generations,
        "train_tasks": len(train_ids),
        "test_tasks": len(test_ids),
        "best_single": round(float(single), 4),
        "random_routing": round(float(rand), 4),
        "one_turn_oracle": round(float(one_turn), 4),
        "multi_turn_oracle": round(float(oracle), 4),
    }
    results = []
    for seed in range(args.seed0, args.seed0 + args.seeds):
        result = train(sim, args, seed, train_ids, test_ids, lambda s: print(s, flush=True))
        results.append(result)
        mean, low, high = mean_ci(list(result["test"]))
        print(
            f"seed {seed}: expected test reward {mean:.3f} [{low:.3f}, {high:.3f}] "
            f"({mean / oracle:.0%} of the oracle) in {result['seconds']:.0f}s"
        )
        for cat, path in result["policy"].items():
            print(f"  learned {cat}: {path}")
        figures[f"seed {seed}/expected_test_reward"] = round(mean, 4)
        figures[f"seed {seed}/ci"] = [round(low, 4), round(high, 4)]
        figures[f"seed {seed}/of_oracle"] = round(mean / oracle, 4)
        figures[f"seed {seed}/seconds"] = round(result["seconds"])
        figures[f"seed {seed}/learned"] = {c: str(p) for c, p in result["policy"].items()}
    sim.save()
    if len(results) > 1:
        mean, low, high = mean_ci([r["test"].mean() for r in results])
        print(f"over {len(results)} seeds: {mean:.3f} [{low:.3f}, {high:.3f}]")
        figures["over_seeds/mean"] = round(mean, 4)
        figures["over_seeds/ci"] = [round(low, 4), round(high, 4)]
    if args.out:
        write_results(args.out, figures)


if __name__ == "__main__":
    main()
