"""The run configuration: one TOML file, one frozen dataclass per section.

```toml
[run]        name, seed
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
paper's where it has one (README, "Relation to the paper"); our
improvements are named options. A run stored before a key existed is read with the value
it ran with (``STORED_BEFORE``), not today's default.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.models import PRECISIONS, device_problem
from workbench.core.optimizer_registry import OPTIMIZER_REGISTRY

# read from the optimizers' table (optimizer_registry.py): the optimizers that rank a
# population of different candidates by fitness can search SVF offsets; exploring starts
# apply to those whose entry says so (REINFORCE and imitation follow their own policy's
# gradient, which a widened choice would bias)
OPTIMIZERS = tuple(OPTIMIZER_REGISTRY)
RANKING_OPTIMIZERS = tuple(n for n, e in OPTIMIZER_REGISTRY.items() if e.ranks_candidates)
EXPLORING_OPTIMIZERS = tuple(n for n, e in OPTIMIZER_REGISTRY.items() if e.exploring_starts)
SVF_OPTIMIZERS = RANKING_OPTIMIZERS
CACHE_POLICIES = ("auto", "off", "read-write", "replay-only")
SEARCH_BASES = ("identity", "balanced", "whitened")
SIGMA0_SCALES = ("literal", "width")
INPUTS = ("raw", "chat")
DEVICES = ("auto", "cpu", "cuda", "mps")
# the keys whose value is one of a known set (a form offers them as a list)
CHOICES: dict[str, tuple[str, ...]] = {
    "optimizer.name": OPTIMIZERS,
    "cache.policy": CACHE_POLICIES,
    "optimizer.search_basis": SEARCH_BASES,
    "backbone.device": DEVICES,
    "backbone.precision": PRECISIONS,
    "backbone.input": INPUTS,
    "optimizer.sigma0_scale": SIGMA0_SCALES,
}
# keys added after runs were stored, with the behaviour those runs had (absent = this)
STORED_BEFORE: dict[tuple[str, str], Any] = {
    ("backbone", "input"): "chat",
    ("optimizer", "sigma0_scale"): "width",
}


class ConfigError(ValueError):
    """A config that cannot be used. ``problems`` lists every problem found, each naming
    its key (``section.key``) and the fix; the message is all of them, one a line."""

    def __init__(self, message: str | Sequence[str]):
        self.problems: tuple[str, ...] = (message,) if isinstance(message, str) else tuple(message)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class RunSection:
    name: str = "run"
    seed: int = 0


@dataclass(frozen=True)
class BackboneSection:
    model: str = "offline"
    device: str = "auto"
    precision: str = "auto"
    # what the coordinator reads: "raw" (the transcript's text, as the paper's released
    # code) or "chat" (the transcript as one user message in the backbone's chat template)
    input: str = "raw"


@dataclass(frozen=True)
class PoolSection:
    workers: tuple[str, ...] = ("sandbox",)


@dataclass(frozen=True)
class TasksSection:
    suite: str = "mixed"
    train: int = 0  # 0: the whole train split
    validation: int = 0
    test: int = 0
    split_seed: int = 0


@dataclass(frozen=True)
class OptimizerSection:
    name: str = "sep-cma-es"
    popsize: int = 0  # 0: pycma's default 4 + floor(3 ln n)
    sigma0: float = 0.03
    # "literal": head weights move at sigma0 (the paper); "width": at sigma0 x
    # sqrt(1024 / d), the paper's exploration in logit space on any backbone width
    sigma0_scale: str = "literal"
    rollouts: int = 16  # m: tasks per candidate, shared by all candidates of a generation
    svf: bool = False
    svf_layer: int = -2
    validate_every: int = 5  # generations between validations of the distribution mean
    cost_penalty: float = 0.0  # fitness -= weight x dollars per episode
    turn_penalty: float = 0.0  # fitness -= weight x turns per episode
    learning_rate: float = 0.01  # REINFORCE and imitation (Adam)
    # the coordinates the optimizer searches in: "identity" (the head's weights themselves,
    # as in the paper), "balanced" (the backbone's shared feature direction scaled down
    # to the weight of the rest) or "whitened" (the calibration features' top
    # search_rank directions evened out), fitted on a seeded random sample of training
    # tasks, see training.basis.SearchBasis
    search_basis: str = "identity"
    search_rank: int = 8  # the whitened basis's rank
    # episodes in flight at once; 0: every episode of a generation (or a validation, an
    # evaluation) at once, so their coordinator decisions share few, large forwards (the
    # workers' own concurrency and rate limits still bound their calls)
    concurrency: int = 0
    # fitness shaping of the released run (off by default; issue 15): fitness += bonus if
    # an episode called two or more distinct workers, and += turn_bonus x turns
    diversity_bonus: float = 0.0  # released run: 0.15
    turn_bonus: float = 0.0  # released run: 0.10; the only way to reward turns
    # (ours) multi-start: budget.generations split into restarts + 1 equal attempts, each
    # a fresh optimizer with its own seed; the run keeps the best validation over all of
    # them (training.trainer.Trainer._restart_if_due). 0: one attempt (the paper)
    restarts: int = 0
    # (ours) exploring starts: over the first N generations (of each attempt) a training
    # episode's first decision is drawn from the head's distributions mixed with uniform
    # ones, the uniform share falling from 1 to 0; validation and evaluation act by argmax
    # as always (training.trainer.Trainer.opening_share, policies.ExploringStart).
    # 0: off (the paper). With two or more turns it lets the search learn what pays after
    # each opening before the opening settles (README, "Exploring starts")
    exploring_starts: int = 0


@dataclass(frozen=True)
class BudgetSection:
    generations: int = 60
    episodes: int = 0  # 0: no limit
    calls: int = 0
    dollars: float = 0.0
    minutes: float = 0.0


@dataclass(frozen=True)
class ProtocolSection:
    max_turns: int = 5
    temperature: float = 0.1
    max_tokens: int = 4096
    thinker_suggests_role: bool = False  # a Thinker's "Next role: X" replaces the next role


@dataclass(frozen=True)
class CacheSection:
    policy: str = "auto"  # auto: read-write at temperature 0, else off


@dataclass(frozen=True)
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
        _check_paper_options(self)  # first: a negative turn penalty is pointed to turn_bonus
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
        for key, value in data.items():
            if key not in hints:
                problems.append(
                    f"{source}: unknown section [{_key(key)}]; known sections: "
                    f"{', '.join(f'[{k}]' for k in hints)}"
                )
            elif not isinstance(value, dict):
                problems.append(f"{source}: [{key}] must be a table of keys, got {_shown(value)}")
            else:
                sections[key] = _section(hints[key], value, f"{source}: {key}", problems)
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
        data = _read_toml(path)
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
            for (section, key), value in STORED_BEFORE.items():
                if isinstance(data.get(section), dict):
                    data[section].setdefault(key, value)
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

    @property
    def attempt_generations(self) -> int:
        """Generations per attempt of ``optimizer.restarts`` (the last attempt also takes
        any remainder): the span the restarts and the exploring starts' schedule share."""
        return max(1, self.budget.generations // (self.optimizer.restarts + 1))

    def replace(self, **sections: dict[str, Any]) -> RunConfig:
        """A copy with some keys of some sections changed: ``cfg.replace(budget={"generations": 3})``."""
        data = self.to_dict()
        for name, values in sections.items():
            data[name].update(values)
        return RunConfig.from_dict(data)


# a config file is a few hundred bytes; anything far larger is not one
MAX_CONFIG_BYTES = 1_000_000


def _read_toml(path: Path) -> dict[str, Any]:
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found: check the path") from None
    except OSError as exc:
        raise ConfigError(
            f"config file {path} cannot be read ({exc.strerror}): check the path"
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            f"config path {path} is a folder: give the .toml file inside it "
            "(e.g. workbench/resources/examples/sandbox.toml)"
        )
    if not stat.S_ISREG(st.st_mode):  # a pipe or a device would block or never end
        raise ConfigError(f"config path {path} is not a regular file: give a .toml file")
    if st.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {path} is {st.st_size:,} bytes, too large for a run config "
            f"(at most {MAX_CONFIG_BYTES:,}): check that it is the right file"
        )
    try:
        text = path.read_bytes().decode("utf-8-sig")  # a BOM (Windows Notepad) is no error
    except PermissionError:
        raise ConfigError(
            f"config file {path} is not readable by you: check its permissions"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(f"{path} nests arrays or tables too deeply to be a run config") from None


def _shown(value: Any, limit: int = 60) -> str:
    """``value`` as a short repr for a message (a huge value does not flood the terminal)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long for repr
        return "a number too long to show"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _key(key: str) -> str:
    """A key as written in a message: plain if it is a short printable word."""
    return key if len(key) <= 60 and key.isprintable() and "'" not in key else _shown(key)


def _section(cls: type, values: dict[str, Any], where: str, problems: list[str]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        if key not in hints:
            problems.append(f"{where}.{_key(key)}: unknown key; known keys: {', '.join(hints)}")
            continue
        try:
            kwargs[key] = _coerce(value, hints[key], f"{where}.{key}")
        except ConfigError as exc:
            problems.extend(exc.problems)
    return cls(**kwargs)  # the keys in error keep their defaults


# an integer key beyond this is a typo (and would overflow numpy or pycma later)
MAX_INT = 2**31 - 1


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {_shown(value)}")
        return tuple(value)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {_shown(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {_shown(value)}")
        if abs(value) > MAX_INT:
            raise ConfigError(f"{where}: {_shown(value)} is out of range (at most {MAX_INT})")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {_shown(value)}")
        if isinstance(value, int) and abs(value) > MAX_INT:
            raise ConfigError(f"{where}: {_shown(value)} is out of range")
        if not math.isfinite(value):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {_shown(value)}")
        return value
    raise ConfigError(f"{where}: unsupported type {hint}")


MAX_TEMPERATURE = 2.0  # the largest temperature the OpenAI-compatible APIs accept
MAX_RUN_NAME = 200
MAX_TOKENS = 1_000_000


def _check(cfg: RunConfig) -> None:
    """Every out-of-range value of ``cfg``, all at once (one ``ConfigError``)."""
    problems: list[str] = []

    def need(ok: bool, where: str, message: str) -> None:
        if not ok:
            problems.append(f"{where}: {message}")

    def finite(x: float) -> bool:
        return isinstance(x, int | float) and math.isfinite(x)

    r, o, b, p, t = cfg.run, cfg.optimizer, cfg.budget, cfg.protocol, cfg.tasks
    need(
        0 < len(r.name) <= MAX_RUN_NAME and r.name.isprintable(),
        "run.name",
        f"give a name of 1 to {MAX_RUN_NAME} printable characters",
    )
    need(  # pycma takes seed + 1: 0 there means "seed from the clock", below 0 a ValueError
        r.seed >= 0,
        "run.seed",
        f"{r.seed} is negative: use a whole number from 0 to {MAX_INT}",
    )
    need(
        o.name in OPTIMIZERS,
        "optimizer.name",
        f"unknown optimizer '{_key(o.name)}'; choose one of {', '.join(OPTIMIZERS)}",
    )
    least = OPTIMIZER_REGISTRY[o.name].min_population if o.name in OPTIMIZER_REGISTRY else 2
    need(
        o.popsize == 0 or o.popsize >= least,
        "optimizer.popsize",
        f"{o.popsize} is too small for {_key(o.name)}: use 0 (the default, 4 + 3 ln n) "
        f"or at least {least}",
    )
    need(
        finite(o.sigma0) and o.sigma0 > 0,
        "optimizer.sigma0",
        f"{o.sigma0} is not a positive finite number: use e.g. 0.03",
    )
    need(o.rollouts >= 1, "optimizer.rollouts", "must be at least 1")
    need(o.validate_every >= 1, "optimizer.validate_every", "must be at least 1")
    need(
        o.search_basis in SEARCH_BASES,
        "optimizer.search_basis",
        f"choose one of {', '.join(SEARCH_BASES)}",
    )
    need(o.search_rank >= 2, "optimizer.search_rank", "must be at least 2")
    need(
        o.concurrency >= 0,
        "optimizer.concurrency",
        "must be 0 (every episode at once) or a positive number of episodes",
    )
    need(
        finite(o.learning_rate) and o.learning_rate > 0,
        "optimizer.learning_rate",
        f"{o.learning_rate} is not a positive finite number: use e.g. 0.01",
    )
    for key in ("cost_penalty", "turn_penalty"):
        value = getattr(o, key)
        need(
            finite(value) and value >= 0,
            f"optimizer.{key}",
            "must be a finite number, 0 or more",
        )
    need(b.generations >= 1, "budget.generations", "must be at least 1")
    need(
        0 <= o.restarts < b.generations,
        "optimizer.restarts",
        f"{o.restarts}: use 0 (one attempt) up to budget.generations - 1",
    )
    attempt = cfg.attempt_generations if 0 <= o.restarts < b.generations else 0
    need(
        o.exploring_starts == 0 or 0 < o.exploring_starts < attempt,
        "optimizer.exploring_starts",
        f"{o.exploring_starts}: use 0 (off) or fewer generations than an attempt has "
        f"({attempt}: budget.generations / (restarts + 1)), leaving generations in which "
        "the opening is the head's own",
    )
    need(
        not o.exploring_starts or o.name in EXPLORING_OPTIMIZERS,
        "optimizer.exploring_starts",
        f"{_key(o.name)} follows its own policy's gradient, which widened openings would "
        f"bias (only {' and '.join(EXPLORING_OPTIMIZERS)} use them): set exploring_starts = 0 "
        "or choose one of those",
    )
    need(
        not o.exploring_starts or p.max_turns >= 2,
        "optimizer.exploring_starts",
        "with protocol.max_turns = 1 the opening is the whole episode and nothing is "
        "learned after it: set exploring_starts = 0 or max_turns to 2 or more",
    )
    for key in ("episodes", "calls", "dollars", "minutes"):
        value = getattr(b, key)
        need(
            finite(value) and value >= 0,
            f"budget.{key}",
            "must be a finite number, 0 or more (0 means no limit)",
        )
    need(1 <= p.max_turns <= 50, "protocol.max_turns", "must be between 1 and 50")
    need(
        finite(p.temperature) and 0 <= p.temperature <= MAX_TEMPERATURE,
        "protocol.temperature",
        f"{p.temperature} is out of range: use a number from 0 to {MAX_TEMPERATURE:g}",
    )
    need(
        1 <= p.max_tokens <= MAX_TOKENS,
        "protocol.max_tokens",
        f"must be between 1 and {MAX_TOKENS:,} (a reply longer than any model's context)",
    )
    need(len(cfg.pool.workers) >= 1, "pool.workers", 'name at least one worker, e.g. ["sandbox"]')
    need(
        all(w.strip() for w in cfg.pool.workers),
        "pool.workers",
        "an empty worker id: remove it or name a worker",
    )
    for key in ("train", "validation", "test"):
        need(getattr(t, key) >= 0, f"tasks.{key}", "must not be negative (0 means the whole split)")
    need(bool(t.suite.strip()), "tasks.suite", "name a suite, e.g. mixed")
    need(bool(cfg.backbone.model.strip()), "backbone.model", "name a model, e.g. offline")
    device = device_problem(cfg.backbone.device)
    need(device is None, "backbone.device", device or "")
    need(
        cfg.backbone.precision in PRECISIONS,
        "backbone.precision",
        f"unknown precision '{_key(cfg.backbone.precision)}'; "
        f"choose one of {', '.join(PRECISIONS)}",
    )
    need(
        cfg.backbone.input in INPUTS,
        "backbone.input",
        f"unknown input '{cfg.backbone.input}'; choose one of {', '.join(INPUTS)}",
    )
    need(
        o.sigma0_scale in SIGMA0_SCALES,
        "optimizer.sigma0_scale",
        f"unknown scale '{o.sigma0_scale}'; choose one of {', '.join(SIGMA0_SCALES)}",
    )
    need(
        cfg.cache.policy in CACHE_POLICIES,
        "cache.policy",
        f"choose one of {', '.join(CACHE_POLICIES)}",
    )
    if problems:
        raise ConfigError(problems)


def _check_paper_options(cfg: RunConfig) -> None:
    """The keys of the paper-faithful baselines and fitness shaping (issue 15)."""
    o = cfg.optimizer
    if o.turn_penalty < 0:
        raise ConfigError(
            "optimizer.turn_penalty: must not be negative; to reward turns (the released "
            "run's shaping) set optimizer.turn_bonus instead"
        )
    for key in ("diversity_bonus", "turn_bonus"):
        if not 0 <= getattr(o, key) <= 1:
            raise ConfigError(f"optimizer.{key}: must be between 0 and 1 (0 = off)")
    if o.turn_bonus and o.turn_penalty:
        raise ConfigError(
            "optimizer.turn_bonus and optimizer.turn_penalty: set at most one of them"
        )
    if o.svf and o.name not in SVF_OPTIMIZERS:
        raise ConfigError(
            f"optimizer.svf: {o.name} cannot search SVF offsets (only "
            f"{' and '.join(SVF_OPTIMIZERS)} can): set svf = false or choose one of those"
        )
