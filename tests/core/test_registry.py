"""The worker registry: specs validated at the edge and kept in workers.toml (atomically,
never with a key), keys in a real Secret Service keyring (gnome-keyring on a private
D-Bus session), the environment fallback, the no-backend and plain-text refusals, and
registered ids resolved wherever a pool is named."""

from __future__ import annotations

import pickle
import tomllib
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail
from keyrings.alt.file import PlaintextKeyring

from tests.support.keychain import stored_items
from workbench.core.keychain import SERVICE, KeychainUnavailable, KeyStore, Secret, mask
from workbench.core.workers.anthropic import AnthropicWorker
from workbench.core.workers.base import UnknownWorker
from workbench.core.workers.local import LocalWorker
from workbench.core.workers.openai import OpenAIWorker
from workbench.core.workers.pool import build_pool
from workbench.core.workers.registry import Registry, default_file
from workbench.core.workers.simulated import SimulatedWorker
from workbench.core.workers.spec import (
    RegistryError,
    SpecError,
    Timeouts,
    WorkerSpec,
    spec_from_options,
)

KEY = "sk-test-REGISTRY-0123456789abcdef"


def spec(wid="gpt", **kw):
    kw.setdefault("provider", "openai")
    kw.setdefault("model", "gpt-4o-mini")
    return WorkerSpec(id=wid, **kw)


# --------------------------------------------------------------------------- specs


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"wid": "a:b"}, "worker id 'a:b' is invalid"),
        ({"wid": "x,y"}, "worker id 'x,y' is invalid"),
        ({"wid": "sandbox"}, "names built-in workers"),
        ({"provider": "cohere"}, "field 'provider' is 'cohere'"),
        ({"model": " "}, "field 'model' is empty"),
        ({"temperature": 2.5}, "field 'temperature' must be a number from 0 to 2"),
        ({"max_tokens": 0}, "field 'max_tokens' must be a whole number"),
        ({"context_window": 1.5}, "field 'context_window' must be a whole number"),
        ({"price_in": -1.0}, "field 'price_in' must be dollars per million tokens"),
        ({"price_out": "cheap"}, "field 'price_out' must be dollars per million tokens"),
        ({"concurrency": 0}, "field 'concurrency' must be a whole number from 1 to 1024"),
        ({"rpm": 0}, "field 'rpm' must be a positive number"),
        ({"key_env": "my key"}, "field 'key_env' must name an environment variable"),
        ({"base_url": "ftp://host/v1"}, "field 'base_url' must be an http:// or https:// URL"),
        ({"base_url": "https://user:pw@host/v1"}, "field 'base_url' must not carry credentials"),
        ({"base_url": "https://host/v1?key=abc"}, "field 'base_url' must not have a query"),
        ({"extra": {"api_key": "sk-x"}}, "'extra.api_key' looks like a credential"),
        ({"extra": {"Authorization": "Bearer x"}}, "'extra.Authorization' looks like a credential"),
        ({"extra": {"messages": []}}, "'extra.messages' is set by the client itself"),
        (
            {"provider": "local", "model": "x", "base_url": "http://h/v1"},
            "'base_url' does not apply to provider 'local'",
        ),
    ],
)
def test_bad_specs_are_refused_with_the_field_named(kwargs, words):
    wid = kwargs.pop("wid", "gpt")
    with pytest.raises(SpecError) as info:
        spec(wid, **kwargs)
    assert words in str(info.value)


def test_timeouts_are_validated():
    with pytest.raises(SpecError, match="'timeouts.read' must be a positive number"):
        Timeouts(read=0)
    with pytest.raises(
        SpecError, match="'timeouts.total' .* must be at least the connect and read"
    ):
        Timeouts(connect=5, read=60, total=30)


def test_presets_fill_the_base_url_and_the_keys_environment_variable():
    router = spec_from_options("router", "openrouter", "meta-llama/llama-3.3-70b-instruct")
    assert (router.provider, router.base_url) == ("openai", "https://openrouter.ai/api/v1")
    assert router.effective_key_env == "OPENROUTER_API_KEY"
    assert (
        spec().base_url == "https://api.openai.com/v1"
        and spec().effective_key_env == "OPENAI_API_KEY"
    )
    claude = spec("claude", provider="anthropic", model="claude-sonnet-4-20250514")
    assert (
        claude.effective_key_env == "ANTHROPIC_API_KEY"
        and claude.base_url == "https://api.anthropic.com/v1"
    )
    assert (
        spec("g", provider="gemini", model="gemini-2.5-flash").effective_key_env == "GEMINI_API_KEY"
    )
    local = spec_from_options("serve", "transformers", "m")
    assert local.base_url == "http://127.0.0.1:8000/v1" and local.effective_key_env is None
    # An OpenAI key is never offered to another host, unless the spec names a variable.
    assert spec(base_url="https://llm.example.org/v1").effective_key_env is None
    assert (
        spec(base_url="https://llm.example.org/v1", key_env="EXAMPLE_KEY").effective_key_env
        == "EXAMPLE_KEY"
    )


def test_specs_are_frozen_including_their_extra_fields():
    s = spec(extra={"reasoning_effort": "low"})
    with pytest.raises(AttributeError):
        s.model = "other"
    with pytest.raises(TypeError):
        s.extra["reasoning_effort"] = "high"


# --------------------------------------------------------------------------- the file


def test_specs_round_trip_through_an_atomic_toml_file(tmp_path):
    registry = Registry(tmp_path / "cfg" / "workers.toml", keys=KeyStore(fail.Keyring()))
    full = spec(
        "gpt",
        base_url="https://api.openai.com/v1",
        temperature=0.3,
        max_tokens=2048,
        extra={"reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": False}},
        price_in=0.15,
        price_out=0.6,
        context_window=128000,
        concurrency=4,
        rpm=120.0,
        timeouts=Timeouts(5, 60, 120),
    )
    registry.add(full)
    registry.add(spec("claude", provider="anthropic", model="claude-sonnet-4-20250514"))
    assert registry.list() == [
        full,
        spec("claude", provider="anthropic", model="claude-sonnet-4-20250514"),
    ]
    text = registry.path.read_text()
    assert text.startswith("# Trinity Workbench workers. Keys are never stored here")
    doc = tomllib.loads(text)
    assert doc["version"] == 1 and doc["workers"]["gpt"]["extra"]["chat_template_kwargs"] == {
        "enable_thinking": False
    }
    assert sorted(p.name for p in registry.path.parent.iterdir()) == [
        "workers.toml"
    ]  # no temporary files left
    with pytest.raises(RegistryError, match="already registered"):
        registry.add(full)
    registry.add(spec("gpt", model="gpt-4.1"), replace=True)
    assert registry.get("gpt").model == "gpt-4.1"


def test_the_default_file_is_in_the_user_config_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_file() == tmp_path / "xdg" / "trinity-workbench" / "workers.toml"
    assert Registry().path == default_file()


def test_a_file_saved_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "workers.toml"
    path.write_bytes(b'\xef\xbb\xbf[workers.gpt]\nprovider = "openai"\nmodel = "m"\n')
    assert [w.id for w in Registry(path).list()] == ["gpt"]


@pytest.mark.parametrize(
    "text,words",
    [
        (
            'version = 1\n[workers.gpt]\nprovider = "openai"\nmodel = "m"\nprise_in = 1.0\n',
            "unknown field(s) 'prise_in'",
        ),
        ('version = 1\n[workers.gpt]\nprovider = "openai"\n', "field 'model' is missing"),
        ("version = 1\n[workers.gpt\n", "is not valid TOML"),
        ("version = 7\n", "has version 7"),
        ('colour = "blue"\n', "unknown top-level key(s) colour"),
        ('[workers."a b"]\nprovider = "openai"\nmodel = "m"\n', "worker id 'a b' is invalid"),
        ("x = " + "[" * 50_000 + "]" * 50_000 + "\n", "nests tables or arrays too deeply"),
        (
            '[workers.gpt]\nprovider = "openai"\nmodel = "m"\n[workers.gpt.extra]\n'
            'token = "sk-abcdefghijklmnop"\n',
            "field 'extra.token' looks like a credential",
        ),
    ],
)
def test_a_bad_file_is_reported_with_its_path_and_the_problem(tmp_path, text, words):
    path = tmp_path / "workers.toml"
    path.write_text(text)
    with pytest.raises(RegistryError) as info:
        Registry(path).list()
    assert words in str(info.value) and str(path) in str(info.value)


# --------------------------------------------------------------------------- keys


def test_keys_live_in_the_secret_service_and_follow_rename_and_remove(keychain, tmp_path):
    registry = Registry(tmp_path / "workers.toml")
    registry.add(spec("gpt"), key=KEY)
    assert stored_items(keychain.address, SERVICE) == {"gpt": KEY}  # read back over D-Bus
    assert KEY not in registry.path.read_text()
    assert registry.key_status(registry.get("gpt")).label == "in keychain"
    key, status = registry.resolve_key(registry.get("gpt"))
    assert key.reveal() == KEY and status.source == "keychain"

    registry.rename("gpt", "gpt-mini")
    assert stored_items(keychain.address, SERVICE) == {"gpt-mini": KEY}
    assert [s.id for s in registry.list()] == ["gpt-mini"]

    registry.set_key("gpt-mini", KEY + "-new")
    assert stored_items(keychain.address, SERVICE) == {"gpt-mini": KEY + "-new"}

    assert registry.remove("gpt-mini") is True
    assert stored_items(keychain.address, SERVICE) == {} and registry.list() == []


def test_keyrings_own_choice_is_used_but_never_its_plain_text_member(keychain, tmp_path):
    chosen = keyring.get_keyring()  # with keyrings.alt installed: a chain with a plain-text member
    members = [type(b).__name__ for b in getattr(chosen, "backends", [chosen])]
    backend = KeyStore().backend()
    assert type(backend).__module__ == "keyring.backends.SecretService"
    Registry(tmp_path / "workers.toml").add(spec("gpt"), key=KEY)
    assert "PlaintextKeyring" not in members or not Path(PlaintextKeyring().file_path).exists()


def test_the_environment_is_the_fallback_and_is_shown_as_such(keychain, tmp_path, monkeypatch):
    registry = Registry(tmp_path / "workers.toml")
    registry.add(spec("gpt"))
    assert registry.key_status(registry.get("gpt")).label == "missing"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    assert registry.key_status(registry.get("gpt")).label == "from environment (OPENAI_API_KEY)"
    key, status = registry.resolve_key(registry.get("gpt"))
    assert key.reveal() == "sk-from-env-0123456789" and status.env == "OPENAI_API_KEY"
    registry.set_key("gpt", KEY)  # the keychain wins over the environment
    assert registry.resolve_key(registry.get("gpt"))[0].reveal() == KEY


def test_no_keyring_backend_refuses_to_store_and_says_how_to_fix_it(tmp_path, monkeypatch):
    registry = Registry(tmp_path / "workers.toml", keys=KeyStore(fail.Keyring()))
    with pytest.raises(KeychainUnavailable) as info:
        registry.add(spec("gpt"), key=KEY)
    text = str(info.value)
    assert "no keyring backend is available" in text and "never stores a key in plain text" in text
    assert (
        "gnome-keyring" in text
        and "KWallet" in text
        and "set OPENAI_API_KEY in the environment" in text
    )
    assert KEY not in text and not registry.path.exists()  # nothing written
    registry.add(spec("gpt"))  # without a key it works, and says where a key could come from
    assert registry.key_status(registry.get("gpt")).label == "missing (no keyring backend)"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    assert registry.key_status(registry.get("gpt")).label == "from environment (OPENAI_API_KEY)"


def test_a_plain_text_keyring_is_refused(tmp_path):
    plain = PlaintextKeyring()
    registry = Registry(tmp_path / "workers.toml", keys=KeyStore(plain))
    with pytest.raises(
        KeychainUnavailable, match="keyring would store keys in plain text.*PlaintextKeyring"
    ):
        registry.add(spec("gpt"), key=KEY)
    assert not Path(plain.file_path).exists()


def test_secrets_do_not_print_or_pickle():
    secret = Secret(KEY)
    assert KEY not in repr(secret) and KEY not in str(secret) and KEY not in f"{secret}"
    assert secret.redact(f"bad key {KEY}!") == "bad key ****!"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert mask(KEY) == "****cdef" and mask("short") == "****"


# --------------------------------------------------------------------------- pools


def test_registered_ids_resolve_wherever_a_pool_is_named(tmp_path, monkeypatch):
    registry = Registry(
        keys=KeyStore(fail.Keyring())
    )  # the user's workers.toml (isolated per test)
    registry.add(spec("gpt", base_url="http://127.0.0.1:9/v1", key_env="LOOP_KEY"))
    registry.add(spec("claude", provider="anthropic", model="claude-sonnet-4-20250514"))
    registry.add(spec("tiny", provider="local", model=str(tmp_path / "model")))
    monkeypatch.setenv("LOOP_KEY", KEY)
    pool = build_pool(["gpt", "sandbox:coder", "claude", "tiny"], registry=registry)
    assert [type(w) for w in pool] == [OpenAIWorker, SimulatedWorker, AnthropicWorker, LocalWorker]
    assert pool[0].key_status.label == "from environment (LOOP_KEY)" and KEY not in repr(pool[0])
    assert [w.id for w in build_pool(["gpt"])] == ["gpt"]  # the default registry is the user's file
    with pytest.raises(UnknownWorker) as info:
        build_pool(["gtp"])
    assert "unknown worker 'gtp'" in str(
        info.value
    ) and "registered workers: gpt, claude, tiny" in str(info.value)
