"""The optimizers' table (``workbench/core/optimizer_registry.py``): every row builds a
real optimizer through its class's ``from_config``, the class agrees with the row's
traits, and the config's choices and checks read the table."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core import config as config_module
from workbench.core.config import ConfigError, RunConfig
from workbench.core.coordinator import HeadConfig
from workbench.core.optimizer_registry import OPTIMIZER_REGISTRY, optimizer_entry
from workbench.core.optimizers.make import make_optimizer

HEAD = HeadConfig(n_workers=3, hidden_size=8)


def _features(texts: list[str]) -> np.ndarray:
    return np.zeros((len(texts), HEAD.hidden_size))


@pytest.mark.parametrize("name", list(OPTIMIZER_REGISTRY))
def test_every_row_builds_its_class_and_the_class_agrees_with_the_traits(name: str) -> None:
    entry = OPTIMIZER_REGISTRY[name]
    config = RunConfig.from_dict({}).replace(optimizer={"name": name, "exploring_starts": 0})
    optimizer = make_optimizer(config, HEAD.n_params, HEAD, _features, {})
    assert type(optimizer) is entry.load()
    # an optimizer that ranks candidates wants the same random numbers for all of them
    assert optimizer.common_random_numbers is entry.ranks_candidates
    proposals = optimizer.ask()
    assert len(proposals) == optimizer.popsize >= entry.min_population
    assert optimizer.center().shape == (HEAD.n_params,)


def test_the_config_reads_its_choices_and_checks_from_the_table() -> None:
    assert config_module.CHOICES["optimizer.name"] == tuple(OPTIMIZER_REGISTRY)
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
