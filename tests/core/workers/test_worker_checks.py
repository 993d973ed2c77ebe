"""Checking a worker outside a run, as ``workers test``, ``workers models`` and the GUI's
Workers page do: one tiny request and the endpoint's model list, against the real
fault-injecting server on loopback; a spec still being edited can list models with a key
entered but not stored; built-in workers are listed without loading anything."""

from __future__ import annotations

import asyncio

import pytest
from keyring.backends import fail

from tests.support.fault_server import MODEL, Fault
from workbench.core.keychain import InvalidKey, KeyStore, clean_key
from workbench.core.workers.base import UnknownWorker
from workbench.core.workers.checks import endpoint_models, test_worker, worker_models
from workbench.core.workers.pool import build_pool, builtin_workers, describe_pool
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import WorkerSpec

KEY = "sk-test-CHECKS-0123456789abcdef"


@pytest.fixture()
def registry(tmp_path):
    # no keychain needed: keys come from the environment variable named by key_env
    return Registry(tmp_path / "workers.toml", keys=KeyStore(fail.Keyring()))


def loop_spec(server, **kw):
    return WorkerSpec(
        id="loop",
        provider="openai",
        model=MODEL,
        base_url=server.base_url,
        key_env="LOOP_KEY",
        **kw,
    )


def test_a_registered_worker_answers_one_tiny_request_with_its_latency(
    fault_server, registry, monkeypatch
):
    monkeypatch.setenv("LOOP_KEY", KEY)
    registry.add(loop_spec(fault_server))
    report = asyncio.run(test_worker("loop", registry=registry))
    assert report.ok and report.worker == "loop" and report.model == MODEL and report.latency_s > 0
    assert report.error is None and report.reply.strip()
    assert fault_server.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_failed_test_is_a_report_that_explains_itself(fault_server, registry, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", KEY)
    registry.add(loop_spec(fault_server))
    fault_server.script(Fault.status_code(401, f"Incorrect API key provided: {KEY}"))
    report = asyncio.run(test_worker("loop", registry=registry))
    assert not report.ok and report.error_kind == "AuthError" and report.status == 401
    assert "rejected (401 Unauthorized)" in report.error and KEY not in report.error
    assert len(fault_server.chat_requests()) == 1  # one attempt only


def test_unknown_ids_and_whole_pools_are_refused_by_name(registry):
    with pytest.raises(UnknownWorker, match="unknown worker 'nope'"):
        asyncio.run(test_worker("nope", registry=registry))
    with pytest.raises(ValueError, match="'sandbox' names 3 workers"):
        asyncio.run(test_worker("sandbox", registry=registry))


def test_models_of_a_registered_worker_and_of_an_unsaved_spec_with_an_entered_key(
    fault_server, registry
):
    registry.add(loop_spec(fault_server))
    assert asyncio.run(worker_models("loop", registry=registry)) == [MODEL]
    draft = WorkerSpec(id="draft", provider="openai", model="?", base_url=fault_server.base_url)
    assert asyncio.run(endpoint_models(draft, key=f"  {KEY}\n", registry=registry)) == [MODEL]
    listed = [r for r in fault_server.requests if r.path.endswith("/models")]
    assert listed[-1].headers["authorization"] == f"Bearer {KEY}"  # the entered key, stripped
    assert registry.find("draft") is None  # listing registers nothing


def test_a_worker_without_an_api_has_no_model_list(registry):
    with pytest.raises(ValueError, match="'sandbox:coder' is not behind an API"):
        asyncio.run(worker_models("sandbox:coder", registry=registry))


def test_builtin_workers_are_the_offline_model_and_the_sandbox_profiles():
    listed = builtin_workers()
    assert [w.id for w in listed][0] == "local:smollm2" and listed[0].provider == "local"
    team = {f"team:{n}" for n in ("mathlete", "scholar", "coder", "planner", "checker")}
    sandbox = {"sandbox:mathlete", "sandbox:scholar", "sandbox:coder"}
    assert sandbox | team == {w.id for w in listed[1:]}
    assert all(w.provider == "sandbox" and "simulation" in w.model for w in listed[1:])


@pytest.mark.parametrize(
    "key,words",
    [
        ("", "is empty"),
        ("   \n", "is empty"),
        ("sk-a sk-b", "spaces or line breaks"),
        ("sk-a\nsk-b", "spaces or line breaks"),
    ],
)
def test_bad_keys_are_refused_before_they_reach_the_keychain(key, words):
    with pytest.raises(InvalidKey, match=words):
        clean_key("gpt", key)
    assert clean_key("gpt", f" {KEY}\n") == KEY


def test_describing_a_pool_builds_no_registered_worker_and_reads_no_key(tmp_path, monkeypatch):
    """Listing what a pool names (evaluation sources, coordinator files) must not touch
    the keychain; build_pool, which makes callable workers, does."""
    registry = Registry(tmp_path / "workers.toml")
    registry.add(WorkerSpec(id="gpt", provider="openai", model="gpt-4o-mini"))
    reads = []
    monkeypatch.setattr(
        Registry, "resolve_key", lambda self, spec: reads.append(spec.id) or (None, None)
    )
    assert describe_pool(["sandbox", "gpt"], registry=registry) == [
        ("sandbox:mathlete", "simulated/mathlete"),
        ("sandbox:scholar", "simulated/scholar"),
        ("sandbox:coder", "simulated/coder"),
        ("gpt", "gpt-4o-mini"),
    ]
    assert reads == []
    with pytest.raises(UnknownWorker, match="unknown worker 'nobody'.*registered workers: gpt"):
        describe_pool(["nobody"], registry=registry)
    with pytest.raises(ValueError, match="twice"):
        describe_pool(["sandbox", "sandbox:coder"], registry=registry)
    build_pool(["gpt"], registry=registry)
    assert reads == ["gpt"]
