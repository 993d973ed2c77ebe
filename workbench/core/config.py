"""The run configuration: one TOML file, one frozen dataclass per section.

```toml
[run]        name, seed
[backbone]   model ("offline", a Hub id, a folder, a .gguf), device, precision
[pool]       workers (registered ids, "local:smollm2", "sandbox", "sandbox:<name>")
[tasks]      suite, train, validation, test (sizes; 0 = all of that split), split_seed
[optimizer]  name, popsize, sigma0, rollouts, svf, svf_layer, validate_every,
             cost_penalty, turn_penalty, learning_rate, search_basis, concurrency,
             diversity_bonus, turn_bonus
[budget]     generations, episodes, calls, dollars, minutes
[protocol]   max_turns, temperature, max_tokens, thinker_suggests_role
[cache]      policy
```

Unknown keys and wrong types are errors that name the key. Every default is the
paper's where it has one (docs/METHOD.md).
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.models import PRECISIONS

OPTIMIZERS = ("sep-cma-es", "random-search", "reinforce", "imitation")
SVF_OPTIMIZERS = ("sep-cma-es", "random-search")  # the optimizers that can search SVF offsets
CACHE_POLICIES = ("auto", "off", "read-write", "replay-only")
SEARCH_BASES = ("balanced", "identity")
DEVICES = ("auto", "cpu", "cuda", "mps")
# the keys whose value is one of a known set (a form offers them as a list)
CHOICES: dict[str, tuple[str, ...]] = {
    "optimizer.name": OPTIMIZERS,
    "cache.policy": CACHE_POLICIES,
    "optimizer.search_basis": SEARCH_BASES,
    "backbone.device": DEVICES,
    "backbone.precision": PRECISIONS,
}


class ConfigError(ValueError):
    """A config that cannot be used; the message names the key and the fix."""


@dataclass(frozen=True)
class RunSection:
    name: str = "run"
    seed: int = 0


@dataclass(frozen=True)
class BackboneSection:
    model: str = "offline"
    device: str = "auto"
    precision: str = "auto"


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
    rollouts: int = 16  # m: tasks per candidate, shared by all candidates of a generation
    svf: bool = False
    svf_layer: int = -2
    validate_every: int = 5  # generations between validations of the distribution mean
    cost_penalty: float = 0.0  # fitness -= weight x dollars per episode
    turn_penalty: float = 0.0  # fitness -= weight x turns per episode
    learning_rate: float = 0.01  # REINFORCE and imitation (Adam)
    # the coordinates the optimizer searches in: "balanced" (the backbone's shared feature
    # direction scaled down to the weight of the rest, see training.basis.SearchBasis) or
    # "identity" (the head's weights themselves, as in the paper)
    search_basis: str = "balanced"
    concurrency: int = 64  # episodes in flight at once
    # fitness shaping of the released run (off by default; issue 15): fitness += bonus if
    # an episode called two or more distinct workers, and += turn_bonus x turns
    diversity_bonus: float = 0.0  # released run: 0.15
    turn_bonus: float = 0.0  # released run: 0.10; the only way to reward turns


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
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a table of sections")
        sections = {}
        hints = typing.get_type_hints(cls)
        for key, value in data.items():
            if key not in hints:
                raise ConfigError(
                    f"{source}: unknown section [{key}]; known sections: "
                    f"{', '.join(f'[{k}]' for k in hints)}"
                )
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: [{key}] must be a table")
            sections[key] = _section(hints[key], value, f"{source}: {key}")
        return cls(**sections)

    @classmethod
    def load(cls, path: str | Path, defaults: dict[str, dict[str, Any]] | None = None) -> RunConfig:
        """The config in TOML file ``path``. ``defaults`` (section -> key -> value) fill
        what the file leaves out, before the built-in defaults (the user's settings)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {path} not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
        for section, values in (defaults or {}).items():
            given = data.get(section)
            if given is None or isinstance(given, dict):  # anything else: from_dict says why
                data[section] = {**values, **(given or {})}
        return cls.from_dict(data, str(path))

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


def _section(cls: type, values: dict[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        if key not in hints:
            raise ConfigError(f"{where}.{key}: unknown key; known keys: {', '.join(hints)}")
        kwargs[key] = _coerce(value, hints[key], f"{where}.{key}")
    return cls(**kwargs)


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
        return tuple(value)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {hint}")


def _check(cfg: RunConfig) -> None:
    def need(ok: bool, where: str, message: str) -> None:
        if not ok:
            raise ConfigError(f"{where}: {message}")

    o, b, p, t = cfg.optimizer, cfg.budget, cfg.protocol, cfg.tasks
    need(
        o.name in OPTIMIZERS,
        "optimizer.name",
        f"unknown optimizer '{o.name}'; choose one of {', '.join(OPTIMIZERS)}",
    )
    need(
        o.popsize == 0 or o.popsize >= 2,
        "optimizer.popsize",
        "must be 0 (pycma's default) or at least 2",
    )
    need(o.sigma0 > 0, "optimizer.sigma0", "must be positive")
    need(o.rollouts >= 1, "optimizer.rollouts", "must be at least 1")
    need(o.validate_every >= 1, "optimizer.validate_every", "must be at least 1")
    need(
        o.search_basis in SEARCH_BASES,
        "optimizer.search_basis",
        f"choose one of {', '.join(SEARCH_BASES)}",
    )
    need(o.concurrency >= 1, "optimizer.concurrency", "must be at least 1")
    need(o.learning_rate > 0, "optimizer.learning_rate", "must be positive")
    need(o.cost_penalty >= 0 and o.turn_penalty >= 0, "optimizer", "penalties must not be negative")
    need(b.generations >= 1, "budget.generations", "must be at least 1")
    for key in ("episodes", "calls", "dollars", "minutes"):
        need(getattr(b, key) >= 0, f"budget.{key}", "must not be negative (0 means no limit)")
    need(1 <= p.max_turns <= 50, "protocol.max_turns", "must be between 1 and 50")
    need(p.temperature >= 0, "protocol.temperature", "must not be negative")
    need(p.max_tokens >= 1, "protocol.max_tokens", "must be at least 1")
    need(len(cfg.pool.workers) >= 1, "pool.workers", 'name at least one worker, e.g. ["sandbox"]')
    for key in ("train", "validation", "test"):
        need(getattr(t, key) >= 0, f"tasks.{key}", "must not be negative (0 means the whole split)")
    need(
        cfg.backbone.precision in PRECISIONS,
        "backbone.precision",
        f"unknown precision '{cfg.backbone.precision}'; choose one of {', '.join(PRECISIONS)}",
    )
    need(
        cfg.cache.policy in CACHE_POLICIES,
        "cache.policy",
        f"choose one of {', '.join(CACHE_POLICIES)}",
    )


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
