"""The providers a registered worker may name are one table (``spec.PROVIDER_MODULES``):
each module registers exactly its row's class, and nothing registers a provider outside
the table."""

from __future__ import annotations

import importlib

import pytest

from workbench.core.workers.base import PROVIDER_CLASSES, Worker
from workbench.core.workers.pool import load_providers
from workbench.core.workers.spec import PROVIDER_MODULES, PROVIDERS, SpecError, WorkerSpec


def test_every_row_registers_its_class_and_nothing_else_registers():
    load_providers()
    assert PROVIDERS == ("openai", "anthropic", "gemini", "local")  # sandbox, recorded: built in
    assert set(PROVIDER_CLASSES) == set(PROVIDER_MODULES)
    for name, module in PROVIDER_MODULES.items():
        cls = PROVIDER_CLASSES[name]
        assert issubclass(cls, Worker) and cls.provider == name
        assert cls.__module__ == module
        assert importlib.import_module(module) is not None


def test_a_spec_names_only_a_provider_of_the_table():
    for name in PROVIDERS:
        base_url = None if name == "local" else "https://example.invalid/v1"
        WorkerSpec(id=f"w-{name}", provider=name, model="m", base_url=base_url)
    with pytest.raises(SpecError, match="use one of openai, anthropic, gemini, local"):
        WorkerSpec(id="w", provider="mistral", model="m")
