"""The run configuration: one TOML file, one frozen dataclass per section.

```toml
[run]        name, seed, executor, actors
[backbone]   model ("offline", a Hub id, a folder, a .gguf), device, precision, input
[pool]       workers (registered ids, "local:smollm2", "sandbox", "sandbox:<name>")
[tasks]      suite, train, validation, test (sizes; 0 = all of that split), split_seed
[optimizer]  name, popsize, sigma0, sigma0_scale, rollouts, svf, svf_layer,
             validate_every, cost_penalty, turn_penalty, learning_rate, search_basis,
             search_rank, concurrency, diversity_bonus, turn_bonus, restarts,
             exploring_starts
[budget]     generations, episodes, calls, dollars, minutes
[protocol]   max_turns, temperature, max_tokens, thinker_suggests_role
[cache]      policy
```

Unknown keys and wrong types are errors that name the key. Every default is the
paper's where it has one (docs/METHOD.md, "Relation to the paper"); our
improvements are named options. A run stored before a key existed is read with the value
it ran with (``STORED_BEFORE``), not today's default.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.config_schema import (
    MAX_INT,
    ConfigError,
    ConfigKey,
    bounds_problem,
    key,
    key_name,
    read_section,
    read_toml,
    shown,
)
from workbench.core.coordinator.backbone import INPUTS
from workbench.core.models import PRECISIONS, device_problem
from workbench.core.optimizers.registry import OPTIMIZER_REGISTRY, OPTIMIZERS, optimizers_where

# the optimizers that rank a population of different candidates by fitness can search
# SVF offsets; exploring starts apply to those whose entry says so (REINFORCE and
# imitation follow their own policy's gradient, which a widened choice would bias)
SVF_OPTIMIZERS = optimizers_where(lambda e: e.ranks_candidates)
EXPLORING_OPTIMIZERS = optimizers_where(lambda e: e.exploring_starts)
CACHE_POLICIES = ("auto", "off", "read-write", "replay-only")
SEARCH_BASES = ("identity", "balanced", "whitened", "projection")
SIGMA0_SCALES = ("literal", "width")
DEVICES = ("auto", "cpu", "cuda", "mps")
# where a generation's training episodes run: in this process, or on Ray actors
# (training.ray_executor; the cluster's address is the machine's, not the run's: --ray-address)
EXECUTORS = ("local", "ray")


MAX_TEMPERATURE = 2.0  # the largest temperature the OpenAI-compatible APIs accept
MAX_RUN_NAME = 200
MAX_TOKENS = 1_000_000


# keys added after runs were stored, with the behaviour those runs had (absent = this)
STORED_BEFORE: dict[tuple[str, str], Any] = {
    ("backbone", "input"): "chat",
    ("optimizer", "sigma0_scale"): "width",
}


@dataclass(frozen=True)
class RunSection:
    name: str = key("run", "Run name", "The name the run is listed under.")
    seed: int = key(
        0,
        "Seed",
        "The run's seed: the same seed and config give the same run, to the byte.",
        low=0,
        high=MAX_INT,
    )
    executor: str = key(
        "local",
        "Where episodes run",
        "local: every episode in this process; ray: a generation's training episodes on "
        "Ray actors, each with its own backbone and workers, with the same results "
        "(docs/guides/ray.md).",
        choices=EXECUTORS,
    )
    actors: int = key(
        0,
        "Parallel processes (Ray)",
        "With the ray executor: how many processes (Ray actors) play the episodes.",
        low=0,
        zero="one per GPU of the cluster, or one per node without GPUs",
    )


@dataclass(frozen=True)
class BackboneSection:
    model: str = key(
        "offline",
        "Coordinator model",
        'The frozen small language model the coordinator reads with: "offline" (the '
        "bundled SmolLM2-135M-Instruct), a Hugging Face id, a model folder or a .gguf file.",
    )
    device: str = key(
        "auto",
        "Device",
        "Where the backbone runs: auto (CUDA if present, else the CPU), cpu, cuda, cuda:N or mps.",
        choices=DEVICES,
        strict=False,
    )
    precision: str = key(
        "auto",
        "Number format",
        "The precision the coordinator's model computes in. auto: bf16-mixed on CUDA and on a CPU with native bf16, else fp32; fp32 is "
        "bit-faithful; bf16-mixed rechecks near ties in fp32; bf16 is the fastest.",
        choices=PRECISIONS,
    )
    input: str = key(
        "raw",
        "What the coordinator reads",
        "raw: the transcript's text, as the paper's released code; chat: the transcript as "
        "one user message in the backbone's chat template.",
        choices=INPUTS,
    )


@dataclass(frozen=True)
class PoolSection:
    workers: tuple[str, ...] = key(
        ("sandbox",),
        "Workers",
        'The worker ids in the head\'s row order: registered workers, "local:smollm2", '
        '"sandbox" (the whole simulated pool) or "sandbox:NAME".',
    )


@dataclass(frozen=True, kw_only=True)
class TasksSection:
    suite: str = key(
        "mixed", "Task suite", "A bundled or imported suite's name, or a .jsonl file's path."
    )
    train: int = key(
        0,
        "Training tasks",
        "How many tasks of the seeded training split to use.",
        low=0,
        zero="the whole split",
    )
    validation: int = key(
        0,
        "Validation tasks",
        "How many tasks of the validation split to use.",
        low=0,
        zero="the whole split",
    )
    test: int = key(
        0,
        "Test tasks",
        "How many tasks of the test split to use.",
        low=0,
        zero="the whole split",
    )
    split_seed: int = key(
        0,
        "Split seed",
        "The seed of the 60/20/20 split of the suite's tasks.",
        low=0,
        high=MAX_INT,
    )


@dataclass(frozen=True, kw_only=True)
class OptimizerSection:
    name: str = key(
        "sep-cma-es",
        "Optimizer",
        "sep-cma-es (the paper), or a baseline: random-search, reinforce, imitation.",
        choices=OPTIMIZERS,
    )
    popsize: int = key(
        0,
        "Candidates per generation",
        "How many candidate coordinators each generation proposes and scores.",
        low=0,
        zero="pycma's default, 4 + 3 ln n",
    )
    sigma0: float = key(
        0.03,
        "Initial step size",
        "The search's initial step size (the paper's 0.03).",
        low=0,
        low_open=True,
    )
    sigma0_scale: str = key(
        "literal",
        "Step size scale",
        "literal: head weights move at sigma0 (the paper); width: at sigma0 x sqrt(1024 / d), "
        "the paper's exploration in logit space on any backbone width.",
        choices=SIGMA0_SCALES,
        ours=True,
    )
    rollouts: int = key(
        16,
        "Tasks per candidate",
        "m: the tasks each candidate is scored on, shared by a generation's candidates.",
        low=0,
        zero="every training task, each generation (cheap on a routing table)",
    )
    svf: bool = key(
        False,
        "Also tune one model layer (SVF)",
        "Also evolve singular-value offsets of one backbone layer.",
    )
    svf_layer: int = key(
        -2, "Layer tuned (SVF)", "The backbone layer whose singular values SVF tunes."
    )
    validate_every: int = key(
        5,
        "Validate every",
        "Generations between validations of the search's mean.",
        low=1,
        unit="generations",
    )
    cost_penalty: float = key(
        0.0,
        "Cost penalty",
        "The training score (the method's fitness) minus this weight times each episode's dollars.",
        low=0,
        unit="per dollar",
    )
    turn_penalty: float = key(
        0.0,
        "Turn penalty",
        "The training score (the method's fitness) minus this weight times each episode's turns.",
        low=0,
        unit="per turn",
    )
    learning_rate: float = key(
        0.01,
        "Learning rate",
        "REINFORCE's and imitation's Adam step size.",
        low=0,
        low_open=True,
    )
    search_basis: str = key(
        "identity",
        "Search basis",
        "identity: the head's own weights (the paper); balanced: the backbone's shared "
        "feature direction scaled down; whitened: the calibration features' leading "
        "directions evened out; projection: the head reads only the training features' "
        "leading directions, a smaller search.",
        choices=SEARCH_BASES,
        ours=True,
    )
    search_rank: int = key(
        8,
        "Feature directions",
        "How many leading feature directions the whitened basis evens out, or the "
        "projection basis keeps.",
        low=2,
    )
    concurrency: int = key(
        0,
        "Episodes at once",
        "Episodes in flight at once; the workers' own limits still bound their calls.",
        low=0,
        zero="every episode of a generation, validation or evaluation at once",
    )
    diversity_bonus: float = key(
        0.0,
        "Diversity bonus",
        "The training score plus this when an episode called two or more distinct workers (the released "
        "run: 0.15).",
        low=0,
        high=1,
        zero="off",
    )
    turn_bonus: float = key(
        0.0,
        "Turn bonus",
        "The training score plus this times the turns (the released run: 0.10).",
        low=0,
        high=1,
        zero="off",
    )
    restarts: int = key(
        0,
        "Restarts",
        "Split the generations into restarts + 1 attempts, each a fresh optimizer; the run "
        "keeps the best coordinator on validation.",
        low=0,
        zero="one attempt (the paper)",
        ours=True,
    )
    exploring_starts: int = key(
        0,
        "Exploring starts",
        "Over an attempt's first N generations, a training episode's first decision is "
        "widened toward uniform (share 1 -> 0), so the search learns what pays after every "
        "opening.",
        low=0,
        zero="off (the paper)",
        unit="generations",
        ours=True,
    )
    recorded_defaults: bool = key(
        True,
        "Recorded-pool settings",
        "On a recorded pool routed in one Worker turn, score every candidate on every "
        "training task (measured best there); off: the paper's 16 tasks a candidate, or "
        "the rollouts set.",
        ours=True,
    )


@dataclass(frozen=True, kw_only=True)
class BudgetSection:
    generations: int = key(60, "Generations", "The most generations the run trains.", low=1)
    episodes: int = key(
        0, "Episode budget", "Stop before passing this many episodes.", low=0, zero="no limit"
    )
    calls: int = key(
        0,
        "Call budget",
        "Stop once the workers were called this often.",
        low=0,
        zero="no limit",
    )
    dollars: float = key(
        0.0,
        "Dollar budget",
        "Stop once this much was spent.",
        low=0,
        zero="no limit",
        unit="dollars",
    )
    minutes: float = key(
        0.0,
        "Time budget",
        "Stop after this many minutes of training, counting the work before the first "
        "generation (the questions' features, a routing table, the search basis).",
        low=0,
        zero="no limit",
        unit="minutes",
    )


@dataclass(frozen=True, kw_only=True)
class ProtocolSection:
    max_turns: int = key(5, "Turns", "K: the most turns an episode takes.", low=1, high=50)
    temperature: float = key(
        0.1,
        "Worker temperature",
        "The workers' sampling temperature.",
        low=0,
        high=MAX_TEMPERATURE,
    )
    max_tokens: int = key(
        4096,
        "Reply limit",
        "The most tokens a worker's reply may have.",
        low=1,
        high=MAX_TOKENS,
        unit="tokens",
    )
    thinker_suggests_role: bool = key(
        False,
        "Thinker names the next role",
        'A Thinker names the next role ("Next role: Worker") and that role replaces the '
        "coordinator's choice (the released code's option).",
    )
    roles: tuple[str, ...] = key(
        ("thinker", "worker", "verifier"),
        "Roles",
        "The roles the coordinator may give a turn: the paper's three, or e.g. "
        '["worker"] for a pool of recorded final answers (routing only); the head keeps a '
        "row per role and the others are masked.",
    )


@dataclass(frozen=True)
class CacheSection:
    policy: str = key(
        "auto",
        "Response cache",
        "auto: read-write at temperature 0, else off; off; read-write; replay-only (never "
        "call a worker: only cached answers).",
        choices=CACHE_POLICIES,
    )


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    run: RunSection = field(default_factory=RunSection)
    backbone: BackboneSection = field(default_factory=BackboneSection)
    pool: PoolSection = field(default_factory=PoolSection)
    tasks: TasksSection = field(default_factory=TasksSection)
    optimizer: OptimizerSection = field(default_factory=OptimizerSection)
    budget: BudgetSection = field(default_factory=BudgetSection)
    protocol: ProtocolSection = field(default_factory=ProtocolSection)
    cache: CacheSection = field(default_factory=CacheSection)

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> RunConfig:
        """The config in ``data`` (section -> key -> value); raises one ``ConfigError``
        listing every unknown section or key, wrong type and out-of-range value at once,
        each prefixed with ``source``."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a table of sections")
        problems: list[str] = []
        sections = {}
        hints = typing.get_type_hints(cls)
        for name, value in data.items():
            if name not in hints:
                problems.append(
                    f"{source}: unknown section [{key_name(name)}]; known sections: "
                    f"{', '.join(f'[{k}]' for k in hints)}"
                )
            elif not isinstance(value, dict):
                problems.append(f"{source}: [{name}] must be a table of keys, got {shown(value)}")
            else:
                sections[name] = read_section(hints[name], value, f"{source}: {name}", problems)
        try:  # the range checks too, on the keys that had the right type
            config = cls(**sections)
        except ConfigError as exc:
            problems.extend(f"{source}: {p}" for p in exc.problems)
        if problems:
            raise ConfigError(problems)
        return config

    @classmethod
    def load(cls, path: str | Path, defaults: dict[str, dict[str, Any]] | None = None) -> RunConfig:
        """The config in TOML file ``path``. ``defaults`` (section -> key -> value) fill
        what the file leaves out, before the built-in defaults (the user's settings).
        Every way the file can be unusable (missing, a folder, a device, unreadable, not
        UTF-8, not TOML, wrong keys or values) is a ``ConfigError`` naming it."""
        path = Path(path)
        data = read_toml(path)
        for section, values in (defaults or {}).items():
            given = data.get(section)
            if given is None or isinstance(given, dict):  # anything else: from_dict says why
                data[section] = {**values, **(given or {})}
        return cls.from_dict(data, str(path))

    @classmethod
    def from_stored(cls, data: dict[str, Any], source: str = "config") -> RunConfig:
        """A stored run's config: keys it predates read as the run ran (``STORED_BEFORE``)."""
        if isinstance(data, dict):
            data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
            for (section, name), value in STORED_BEFORE.items():
                if isinstance(data.get(section), dict):
                    data[section].setdefault(name, value)
        return cls.from_dict(data, source)

    def to_dict(self) -> dict[str, Any]:
        def plain(v):
            return list(v) if isinstance(v, tuple) else v

        return {
            f.name: {k: plain(v) for k, v in dataclasses.asdict(getattr(self, f.name)).items()}
            for f in dataclasses.fields(self)
        }

    def to_toml(self) -> str:
        import tomli_w

        return tomli_w.dumps(self.to_dict())

    def replace(self, **sections: dict[str, Any]) -> RunConfig:
        """A copy with some keys of some sections changed: ``cfg.replace(budget={"generations": 3})``."""
        data = self.to_dict()
        for name, values in sections.items():
            data[name].update(values)
        return RunConfig.from_dict(data)


def attempt_generations(budget: BudgetSection, optimizer: OptimizerSection) -> int:
    """Generations per attempt of ``optimizer.restarts`` (the last attempt also takes any
    remainder): the span the restarts and the exploring starts' schedule share."""
    return max(1, budget.generations // (optimizer.restarts + 1))


def config_keys() -> list[ConfigKey]:
    """Every key of the run config, in file order, with its documentation and bounds."""
    out = []
    for section in dataclasses.fields(RunConfig):
        cls = typing.get_type_hints(RunConfig)[section.name]
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if "key" not in f.metadata:
                raise TypeError(
                    f"config key {section.name}.{f.name} is not documented: define it with "
                    "key(default, label, help, ...) (config_schema.Key)"
                )
            out.append(
                ConfigKey(
                    section=section.name,
                    name=f.name,
                    type=hints[f.name],
                    default=f.default,
                    key=f.metadata["key"],
                )
            )
    return out


# the keys whose value is one of a known set (a form offers them as a list)
CHOICES: dict[str, tuple[str, ...]] = {
    k.dotted: k.key.choices for k in config_keys() if k.key.choices
}


def _check(cfg: RunConfig) -> None:
    """Every out-of-range value of ``cfg``, all at once (one ``ConfigError``): each key's
    own bounds and choices (its ``Key``), then the rules that join keys."""
    problems: list[str] = []

    def need(ok: bool, where: str, message: str) -> None:
        if not ok:
            problems.append(f"{where}: {message}")

    paper = _paper_option_problems(cfg)
    for k in config_keys():
        if k.dotted in paper:  # the rule's message says more than the key's bounds
            continue
        problem = bounds_problem(getattr(getattr(cfg, k.section), k.name), k)
        need(problem is None, k.dotted, problem or "")
    for where, message in paper.items():
        need(False, where, message)

    r, o, b, p, t = cfg.run, cfg.optimizer, cfg.budget, cfg.protocol, cfg.tasks
    need(
        bool(p.roles)
        and len(set(p.roles)) == len(p.roles)
        and set(p.roles) <= {"thinker", "worker", "verifier"},
        "protocol.roles",
        'name each of "thinker", "worker", "verifier" at most once, at least one '
        '(e.g. roles = ["worker"] for a pool of final answers)',
    )
    need(
        0 < len(r.name) <= MAX_RUN_NAME and r.name.isprintable(),
        "run.name",
        f"give a name of 1 to {MAX_RUN_NAME} printable characters",
    )
    least = OPTIMIZER_REGISTRY[o.name].min_population if o.name in OPTIMIZER_REGISTRY else 2
    need(
        o.popsize == 0 or o.popsize >= least,
        "optimizer.popsize",
        f"{o.popsize} is too small for {key_name(o.name)}: use 0 (the default, 4 + 3 ln n) "
        f"or at least {least}",
    )
    need(
        o.restarts < b.generations,
        "optimizer.restarts",
        f"{o.restarts}: use 0 (one attempt) up to budget.generations - 1",
    )
    attempt = attempt_generations(b, o) if 0 <= o.restarts < b.generations else 0
    need(
        o.exploring_starts <= 0 or o.exploring_starts < attempt,
        "optimizer.exploring_starts",
        f"{o.exploring_starts}: use 0 (off) or fewer generations than an attempt has "
        f"({attempt}: budget.generations / (restarts + 1)), leaving generations in which "
        "the opening is the head's own",
    )
    need(
        not o.exploring_starts or o.name in EXPLORING_OPTIMIZERS,
        "optimizer.exploring_starts",
        f"{key_name(o.name)} follows its own policy's gradient, which widened openings would "
        f"bias (only {' and '.join(EXPLORING_OPTIMIZERS)} use them): set exploring_starts = 0 "
        "or choose one of those",
    )
    need(
        not o.exploring_starts or p.max_turns >= 2,
        "optimizer.exploring_starts",
        "with protocol.max_turns = 1 the opening is the whole episode and nothing is "
        "learned after it: set exploring_starts = 0 or max_turns to 2 or more",
    )
    need(len(cfg.pool.workers) >= 1, "pool.workers", 'name at least one worker, e.g. ["sandbox"]')
    need(
        all(w.strip() for w in cfg.pool.workers),
        "pool.workers",
        "an empty worker id: remove it or name a worker",
    )
    need(bool(t.suite.strip()), "tasks.suite", "name a suite, e.g. mixed")
    need(bool(cfg.backbone.model.strip()), "backbone.model", "name a model, e.g. offline")
    device = device_problem(cfg.backbone.device)
    need(device is None, "backbone.device", device or "")
    if o.recorded_defaults and routing_table_reason(cfg) is None:
        for name, value in RECORDED_DEFAULTS.items():
            need(
                getattr(o, name) in (_DEFAULTS[name], value),
                f"optimizer.{name}",
                f"{getattr(o, name)!r} has no effect on a recorded pool routed in one Worker "
                f"turn with optimizer.recorded_defaults (which sets it to {value!r}): set "
                "recorded_defaults = false to use it",
            )
    if problems:
        raise ConfigError(problems)


# What optimizer.recorded_defaults sets on a routing table (a recorded pool, the Worker role
# alone, one turn): every training task scores every candidate, the setting with the best
# validation accuracy of MMLU-Pro's development runs (docs/results/mmlu-pro.md,
# tests/benchmarks/bench_mmlu_pro.py dev); the rest stays the paper's
RECORDED_DEFAULTS: dict[str, Any] = {"rollouts": 0}
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(OptimizerSection)}


def routing_table_reason(cfg: RunConfig) -> str | None:
    """Why ``cfg``'s runs cannot train on a routing table (training/table.py), or None
    when they can: every worker recorded, the Worker role alone, one turn, an optimizer
    that ranks candidates by fitness alone and no SVF offsets (they would make the feature
    depend on the candidate). (Exploring starts need two turns: the check refuses them.)"""
    p, o = cfg.protocol, cfg.optimizer
    if not all(w.startswith("recorded:") for w in cfg.pool.workers):
        return "the pool has live workers"
    if tuple(p.roles) != ("worker",):
        return "roles other than Worker are allowed"
    if p.max_turns != 1:
        return "an episode may take more than one turn"
    entry = OPTIMIZER_REGISTRY.get(o.name)
    if entry is None or not entry.ranks_candidates:
        return "the optimizer learns from episodes, not fitness alone"
    if o.svf:
        return "SVF offsets change the features per candidate"
    return None


def table_optimizer(cfg: RunConfig) -> OptimizerSection:
    """The ``[optimizer]`` settings a run of ``cfg`` on a routing table trains with: with
    ``optimizer.recorded_defaults``, ``RECORDED_DEFAULTS`` in place of the paper's
    minibatch; the config's own otherwise, and off the table."""
    o = cfg.optimizer
    if o.recorded_defaults and routing_table_reason(cfg) is None:
        return dataclasses.replace(o, **RECORDED_DEFAULTS, recorded_defaults=False)
    return o


def _paper_option_problems(cfg: RunConfig) -> dict[str, str]:
    """What is wrong with the keys of the paper-faithful baselines and the fitness shaping,
    by key (``_check`` lists them with every other problem)."""
    o = cfg.optimizer
    problems = {}
    if o.turn_penalty < 0:
        problems["optimizer.turn_penalty"] = (
            "must not be negative; to reward turns (the released run's shaping) set "
            "optimizer.turn_bonus instead"
        )
    if o.turn_bonus and o.turn_penalty:
        problems["optimizer.turn_bonus and optimizer.turn_penalty"] = "set at most one of them"
    if o.svf and o.name not in SVF_OPTIMIZERS:
        problems["optimizer.svf"] = (
            f"{key_name(o.name)} cannot search SVF offsets (only {' and '.join(SVF_OPTIMIZERS)} "
            "can): set svf = false or choose one of those"
        )
    return problems
