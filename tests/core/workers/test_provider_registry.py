"""The providers a worker may name and the built-in worker ids are one table each
(``spec.PROVIDER_CLASSES``, ``spec.BUILTIN_RESOLVERS``): every row names a class or a
resolver that exists and agrees with it, and no provider is found any other way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from workbench.core.workers.base import Worker
from workbench.core.workers.pool import build_pool, builtin_prefixes, provider_class
from workbench.core.workers.spec import (
    BUILTIN_PREFIXES,
    BUILTIN_RESOLVERS,
    PROVIDER_CLASSES,
    PROVIDERS,
    SpecError,
    WorkerSpec,
)

WORKERS = Path(__file__).resolve().parents[3] / "workbench" / "core" / "workers"


def test_every_row_names_its_class():
    assert PROVIDERS == ("openai", "anthropic", "gemini", "local")  # sandbox, recorded: built in
    for name, path in PROVIDER_CLASSES.items():
        cls = provider_class(name)
        assert issubclass(cls, Worker) and cls.provider == name
        assert f"{cls.__module__}:{cls.__name__}" == path


def test_every_provider_class_is_in_the_table():
    """A Worker subclass with a provider name of its own is one of the table's rows."""
    named = {}
    for path in sorted(WORKERS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    if (
                        isinstance(statement, ast.Assign)
                        and [ast.unparse(t) for t in statement.targets] == ["provider"]
                        and isinstance(statement.value, ast.Constant)
                    ):
                        named[statement.value.value] = f"{path.stem}:{node.name}"
    named.pop("cached", None)  # the response cache's wrapper takes its worker's name
    assert named.keys() == PROVIDER_CLASSES.keys()


def test_every_builtin_prefix_resolves_to_its_workers():
    assert tuple(builtin_prefixes()) == tuple(sorted(BUILTIN_PREFIXES))
    ids = {"local": "local:smollm2", "sandbox": "sandbox", "team": "team", "recorded": "recorded"}
    assert ids.keys() == BUILTIN_RESOLVERS.keys()
    for prefix, worker_id in ids.items():
        pool = build_pool([worker_id])
        assert pool and all(isinstance(w, Worker) for w in pool)
        assert all(w.id == worker_id or w.id.startswith(f"{prefix}:") for w in pool), pool


def test_a_spec_names_only_a_provider_of_the_table_and_no_builtin_id():
    for name in PROVIDERS:
        base_url = None if name == "local" else "https://example.invalid/v1"
        WorkerSpec(id=f"w-{name}", provider=name, model="m", base_url=base_url)
    with pytest.raises(SpecError, match="use one of openai, anthropic, gemini, local"):
        WorkerSpec(id="w", provider="mistral", model="m")
    for prefix in BUILTIN_PREFIXES:  # "team" as well: it names the built-in team
        with pytest.raises(SpecError, match="names built-in workers"):
            WorkerSpec(id=prefix, provider="openai", model="m", base_url="https://x.invalid/v1")
