"""The optimizers' table (``workbench/core/optimizers/registry.py``): every row builds a
real optimizer through its class's ``from_config``, the class behaves as the row's traits
say, and the config's choices and checks and the trainer read the traits, never a name."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from workbench.core import config as config_module
from workbench.core.config import ConfigError, RunConfig
from workbench.core.coordinator import HeadConfig
from workbench.core.optimizers.make import make_optimizer
from workbench.core.optimizers.registry import (
    OPTIMIZER_REGISTRY,
    optimizer_entry,
    optimizers_where,
)

HEAD = HeadConfig(n_workers=3, hidden_size=8)
ROOT = Path(__file__).resolve().parents[2]


def _features(texts: list[str]) -> np.ndarray:
    return np.zeros((len(texts), HEAD.hidden_size))


@pytest.mark.parametrize("name", list(OPTIMIZER_REGISTRY))
def test_every_row_builds_its_class_and_the_class_agrees_with_the_traits(name: str) -> None:
    entry = OPTIMIZER_REGISTRY[name]
    config = RunConfig.from_dict({}).replace(optimizer={"name": name, "exploring_starts": 0})
    optimizer = make_optimizer(config.optimizer, 7, HEAD.n_params, HEAD, _features, {})
    assert type(optimizer) is entry.load()
    proposals = optimizer.ask()
    assert len(proposals) == optimizer.popsize >= entry.min_population
    assert optimizer.center().shape == (HEAD.n_params,)
    vectors = [p.vector for p in proposals if p.vector is not None]
    if entry.ranks_candidates:  # a population of different candidates to rank
        assert len(vectors) == len(proposals)
        assert len({v.tobytes() for v in vectors}) == len(vectors)
    # the seed given is the one it draws from: the same seed, the same first generation
    again = make_optimizer(config.optimizer, 7, HEAD.n_params, HEAD, _features, {})
    other = make_optimizer(config.optimizer, 8, HEAD.n_params, HEAD, _features, {})
    first = [p.vector.tobytes() for p in proposals if p.vector is not None]
    assert first == [p.vector.tobytes() for p in again.ask() if p.vector is not None]
    if entry.ranks_candidates:
        assert first != [p.vector.tobytes() for p in other.ask() if p.vector is not None]


def test_the_config_reads_its_choices_and_checks_from_the_table() -> None:
    assert config_module.CHOICES["optimizer.name"] == tuple(OPTIMIZER_REGISTRY)
    assert config_module.SVF_OPTIMIZERS == optimizers_where(lambda e: e.ranks_candidates)
    base = RunConfig.from_dict({})
    for name, entry in OPTIMIZER_REGISTRY.items():
        too_small = {"name": name, "popsize": entry.min_population - 1, "exploring_starts": 0}
        with pytest.raises(ConfigError, match="optimizer.popsize"):
            base.replace(optimizer=too_small)
        base.replace(optimizer={**too_small, "popsize": entry.min_population})
        exploring = {"name": name, "exploring_starts": 1}
        if entry.exploring_starts:
            base.replace(optimizer=exploring, budget={"generations": 4}, protocol={"max_turns": 2})
        else:
            with pytest.raises(ConfigError, match="optimizer.exploring_starts"):
                base.replace(optimizer=exploring, budget={"generations": 4})


def test_an_unknown_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown optimizer 'adam': choose one of sep-cma-es"):
        optimizer_entry("adam")
    with pytest.raises(ConfigError, match="unknown optimizer"):
        RunConfig.from_dict({}).replace(optimizer={"name": "adam"})


def test_the_engine_names_no_optimizer_outside_the_table() -> None:
    """What an optimizer needs is asked of its entry: no module of core but the table and
    the optimizers' own classes compares a string with an optimizer's name."""
    names = set(OPTIMIZER_REGISTRY)
    own = {ROOT / "workbench/core/optimizers" / f for f in ("registry.py", "settings.py")}
    found = []
    for path in sorted((ROOT / "workbench" / "core").rglob("*.py")):
        if path in own:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and side.value in names:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {side.value}")
    assert found == [], "ask the optimizer's entry (optimizers/registry.py) instead: " + str(found)
