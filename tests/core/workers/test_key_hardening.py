"""Keys stay out of every file and message (issue 18), however they come back or go in:

- a server that echoes the key in another form (upper-cased, base64, JSON-escaped, split,
  in halves, hex) gets none of those forms into a stored episode or the database file;
- a key put anywhere but the keychain (``extra`` fields at any depth, the id, the model,
  ``key_env``) is refused before workers.toml is written, and the refusal does not repeat it;
- a base URL with CR/LF is refused; ``--timeout-connect 0`` is an error;
- the spec validator and the masking are fuzzed in tests/core/workers/test_spec_fuzz.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from tests.support.fault_server import MODEL, FaultServer
from workbench.core.coordinator import Coordinator
from workbench.core.keychain import Secret
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.workers.openai import OpenAIWorker
from workbench.core.workers.spec import SpecError, WorkerSpec, spec_from_options
from workbench.core.workspace import Workspace

KEY = "sk-test-ECHO-0123456789abcdefXYZ"
FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# how a careless or hostile server may echo a key
ECHOES = {
    "exact": KEY,
    "upper": KEY.upper(),
    "lower": KEY.lower(),
    "base64": _b64(KEY),
    "base64 of the header": _b64(f"Bearer {KEY}"),
    "base64 of user:key": _b64(f"user:{KEY}"),
    "url-safe base64": base64.urlsafe_b64encode(f"xy{KEY}".encode()).decode(),
    "json-escaped": json.dumps(KEY, ensure_ascii=True).replace("-", "\\u002d"),
    "all \\u escapes": "".join(f"\\u{ord(c):04x}" for c in KEY),
    "spaced": " ".join(KEY),
    "zero-width": "\u200b".join(KEY),
    "line break": KEY[:12] + "\n" + KEY[12:],
    "dashed groups": "-".join(KEY[i : i + 4] for i in range(0, len(KEY), 4)),
    "halves apart": f"first {KEY[:16]} and later {KEY[16:]}",
    "url-encoded": "".join(f"%{ord(c):02x}" for c in KEY),
    "hex": KEY.encode().hex(),
}
# what must not survive (case-insensitive): the key, its halves, its base64 and hex forms
MARKERS = [KEY[:16], KEY[16:], KEY.encode().hex()[:20], _b64(KEY)[:20]]


def _leaks(text: str) -> list[str]:
    low = text.lower()
    leaked = [m for m in MARKERS if m.lower() in low]
    return leaked + [m for m in MARKERS[3:] if m in text]


@pytest.mark.parametrize("form", list(ECHOES))
def test_redact_masks_every_encoding_of_the_key(form):
    masked = Secret(KEY).redact(f"the server said: {ECHOES[form]} (done)")
    assert not _leaks(masked), masked
    assert masked.startswith("the server said: ") and masked.endswith(" (done)")
    assert "****" in masked


def test_redact_leaves_ordinary_text_alone():
    text = "The answer is \\boxed{42}. sk- is a prefix; Bearer tokens; 0123 abc XYZ."
    assert Secret(KEY).redact(text) == text


def test_echoes_of_the_key_never_reach_the_stored_episode(tmp_path, tiny_backbone):
    """A loopback server answers every call with the key in all of ECHOES' forms; the
    episodes are stored and exported, then the database file and exports are searched."""
    reply_text = "Echo: " + " | ".join(ECHOES.values()) + "\nThe answer is \\boxed{5}."
    tasks = [
        Task(id=f"e{i}", kind="math", prompt=f"{i} + 5?", answer="5", category="m")
        for i in range(3)
    ]
    ws = Workspace.open(tmp_path / "ws")
    with FaultServer(reply=lambda request: reply_text) as server:
        worker = OpenAIWorker(
            WorkerSpec(id="loop", provider="openai", model=MODEL, base_url=server.base_url),
            key=KEY,
        )
        coordinator = Coordinator.untrained(tiny_backbone, 1, seed=3)

        async def go():
            try:
                return [
                    await run_episode(
                        coordinator,
                        [worker],
                        task,
                        EpisodeSettings(suite="echo", max_turns=2, temperature=0.0),
                        rng=np.random.default_rng(i),
                        seed=i,
                    )
                    for i, task in enumerate(tasks)
                ]
            finally:
                await worker.aclose()

        episodes = asyncio.run(go())
        assert any(
            r.headers.get("authorization") == f"Bearer {KEY}" for r in server.chat_requests()
        )  # the key was really sent
    with Store.open(ws) as store:
        store.add_episodes(episodes)
        exported = [store.export_episode_json(e.id) for e in episodes]
    replies = [t.response for e in episodes for t in e.turns if t.response]
    assert replies and all("****" in r and "boxed{5}" in r for r in replies)
    assert not _leaks(" ".join(replies + exported))
    for path in ws.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("latin-1")
            assert not _leaks(data), path


# ---- keys where they do not belong


@pytest.mark.parametrize(
    "extra",
    [
        {"token": KEY},
        {"key": "abc123"},
        {"api_key": "x"},
        {"apiKey": "x"},
        {"X-Api-Key": "x"},
        {"access_token": "x"},
        {"accessToken": "x"},
        {"password": "x"},
        {"headers": {"Authorization": f"Bearer {KEY}"}},
        {"chat_template_kwargs": {"auth": {"token": "x"}}},
        {"stop": ["fine", f"Bearer {KEY}"]},
        {"metadata": {"note": KEY}},  # a key-shaped value under an innocent name
        {"metadata": {"note": "AIzaSyA1234567890abcdefghijklmnop"}},
    ],
)
def test_a_credential_in_extra_is_refused_without_repeating_it(extra):
    with pytest.raises(SpecError, match="looks like a credential") as caught:
        WorkerSpec(
            id="w", provider="openai", model="m", base_url="http://127.0.0.1:1/v1", extra=extra
        )
    assert KEY not in str(caught.value) and "workers set-key w --key-stdin" in str(caught.value)


@pytest.mark.parametrize(
    "extra",
    [
        {"max_tokens": 5},
        {"reasoning_effort": "low"},
        {"prompt_cache_key": "run-1"},
        {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        {"note": "Basic arithmetic only"},
        {
            "response_format": {
                "json_schema": {"schema": {"properties": {"key": {"type": "string"}}}}
            }
        },
    ],
)
def test_ordinary_extra_fields_are_kept(extra):
    spec = WorkerSpec(
        id="w", provider="openai", model="m", base_url="http://127.0.0.1:1/v1", extra=extra
    )
    assert json.loads(json.dumps(dict(spec.extra))) == extra


@pytest.mark.parametrize("field", ["model", "key_env", "base_url"])
def test_a_key_pasted_into_another_field_is_refused_without_repeating_it(field):
    fields = {"model": "m", "base_url": "http://127.0.0.1:1/v1", field: KEY}
    with pytest.raises(SpecError) as caught:
        WorkerSpec(id="w", provider="openai", **fields)
    assert KEY not in str(caught.value)
    with pytest.raises(SpecError) as caught:
        WorkerSpec(id=KEY, provider="openai", model="m", base_url="http://127.0.0.1:1/v1")
    assert KEY not in str(caught.value) and "looks like an API key" in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        f"https://api.example.com/v1/{KEY}/",
        f"https://api.example.com/{KEY}/v1",
        f"https://api.example.com/v1/key={KEY}",
        f"https://api.example.com/v1/{KEY.replace('-', '%2D')}",
        f"ftp://api.example.com/{KEY}",
        "https://api.example.com/v1/sk-abcdef0123456789",
        "https://api.example.com/v1?api_key=abc",
    ],
)
def test_a_key_in_the_base_url_is_refused_without_repeating_it(url):
    with pytest.raises(SpecError) as caught:
        spec_from_options("w", "openai", "m", base_url=url)
    message = str(caught.value)
    assert KEY not in message and "sk-abcdef" not in message and "'base_url'" in message


@pytest.mark.parametrize(
    "url",
    [
        "https://gateway.ai.cloudflare.com/v1/0123456789abcdef0123456789abcdef/gw/openai",
        "https://myres.openai.azure.com/openai/deployments/gpt-4o",
        "http://127.0.0.1:8000/v1",
    ],
)
def test_ordinary_base_urls_with_ids_in_their_path_are_kept(url):
    assert spec_from_options("w", "openai", "m", base_url=url).base_url == url


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1\r\nX-Evil: 1",
        "http://127.0.0.1:8000/v1\n",
        "http://127.0.0.1:8000/\tv1",
        "http://127.0.0.1:8000/v 1",
        "http://127.0.0.1:8000/v1\x00",
    ],
)
def test_a_base_url_with_line_breaks_or_control_characters_is_refused(url):
    with pytest.raises(SpecError, match="base_url' holds a line break"):
        spec_from_options("w", "openai", "m", base_url=url)


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_workers_add_refuses_keys_in_extra_crlf_urls_and_zero_timeouts(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    bad = [
        ("--extra", json.dumps({"token": KEY})),
        ("--extra", json.dumps({"key": KEY})),
        ("--extra", json.dumps({"headers": {"Authorization": f"Bearer {KEY}"}})),
        ("--base-url", "http://127.0.0.1:8000/v1\r\nX-Evil: 1"),
        ("--timeout-connect", "0"),
        ("--timeout-read", "0"),
        ("--timeout-total", "-1"),
    ]
    for option, value in bad:
        out = _cli(
            "workers", "add", "w", "--provider", "vllm", "--model", "m", option, value, env=env
        )
        assert out.returncode == 2, (option, out.stderr)
        assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
        assert KEY not in out.stdout + out.stderr
    assert (
        "timeouts.connect"
        in _cli(
            "workers",
            "add",
            "w",
            "--provider",
            "vllm",
            "--model",
            "m",
            "--timeout-connect",
            "0",
            env=env,
        ).stderr
    )
    listed = _cli("workers", "list", "--json", env=env)
    assert listed.returncode == 0 and KEY not in listed.stdout and '"w"' not in listed.stdout
    toml = list(Path(tmp_path / "config").rglob("workers.toml"))
    assert all(KEY not in p.read_text() for p in toml)


# ---- every key of the pool, not only the worker's own


OTHER_KEY = "sk-test-OTHER-9876543210fedcbaQRS"


def test_another_workers_key_echoed_by_a_server_never_reaches_the_store(
    tmp_path, keychain, tiny_backbone
):
    """Two workers registered with keys in a real Secret Service; worker b's server echoes
    worker a's key in every form (a proxy that reflects what it saw, two endpoints of one
    account). The pool is built as a run builds it; nothing of a's key is stored or
    exported, and b's own key is still masked."""
    from workbench.core.policies import FixedPolicy
    from workbench.core.workers.pool import build_pool
    from workbench.core.workers.registry import Registry

    forms = [
        OTHER_KEY,
        OTHER_KEY.upper(),
        _b64(OTHER_KEY),
        _b64(f"Bearer {OTHER_KEY}"),
        " ".join(OTHER_KEY),
        "".join(f"\\u{ord(c):04x}" for c in OTHER_KEY),
        OTHER_KEY.encode().hex(),
        f"first {OTHER_KEY[:17]} and later {OTHER_KEY[17:]}",
    ]
    reply_text = f"a's key: {' | '.join(forms)} b's: {KEY}\n\\boxed{{5}}"
    registry = Registry(tmp_path / "workers.toml")
    task = Task(id="o1", kind="math", prompt="0 + 5?", answer="5", category="m")
    ws = Workspace.open(tmp_path / "ws")
    with FaultServer() as quiet, FaultServer(reply=lambda request: reply_text) as echoing:
        registry.add(
            WorkerSpec(id="a", provider="openai", model=MODEL, base_url=quiet.base_url),
            key=OTHER_KEY,
        )
        registry.add(
            WorkerSpec(id="b", provider="openai", model=MODEL, base_url=echoing.base_url),
            key=KEY,
        )
        pool = build_pool(["a", "b"], registry=registry)

        async def go():
            try:
                return await run_episode(
                    FixedPolicy(2, 1),
                    pool,
                    task,
                    EpisodeSettings(suite="echo", max_turns=1, temperature=0.0),
                    rng=np.random.default_rng(0),
                    seed=0,
                )
            finally:
                for w in pool:
                    await w.aclose()

        episode = asyncio.run(go())
        assert echoing.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    (turn,) = episode.turns
    assert turn.worker == "b" and "boxed{5}" in turn.response
    markers = [OTHER_KEY[:16], OTHER_KEY[16:], _b64(OTHER_KEY)[:20], KEY[:16], KEY[16:]]
    with Store.open(ws) as store:
        store.add_episodes([episode])
        exported = store.export_episode_json(episode.id)
    for text in (turn.response, exported):
        assert not [m for m in markers if m.lower() in text.lower()], text
    for path in ws.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("latin-1").lower()
            assert not [m for m in markers if m.lower() in data], path


def test_a_cached_reply_recorded_before_masking_never_hands_out_a_key(tmp_path):
    """An old response-cache row in a real SQLite file holds a worker's key in plain text
    (recorded before masking existed); a cache hit returns it masked."""
    from workbench.core.workers.cache import ResponseCache

    worker = OpenAIWorker(
        WorkerSpec(id="w", provider="openai", model=MODEL, base_url="http://127.0.0.1:9/v1"),
        key=KEY,
    )
    messages = ({"role": "user", "content": "hi"},)
    with Store(tmp_path / "workbench.sqlite3") as store:
        cache = ResponseCache(store, "read-write")
        key, request = cache.key_for(worker, messages, max_tokens=8, temperature=0.0, seed=1)
        store.put_response(  # as an old version wrote it: no masking
            key,
            provider="openai",
            model=MODEL,
            request=request,
            response={
                "text": f"your key is {KEY} ({_b64(KEY)})",
                "tokens_in": 1,
                "tokens_out": 2,
                "cost": 0.0,
                "usage_estimated": False,
                "model": f"{MODEL}-{KEY}",
                "latency_s": 0.1,
            },
        )
        reply = asyncio.run(cache.complete(worker, messages, max_tokens=8, temperature=0.0, seed=1))
    assert reply.cached and reply.text.startswith("your key is ****")
    assert not _leaks(reply.text + (reply.model or ""))


# ---- base URLs urllib cannot take apart (held-back inputs of issue 18)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/v1",  # urlsplit: "Invalid IPv6 URL"
        "http://127.0.0.1:99999/v1",  # .port: "Port out of range 0-65535", at the first call
        "http://127.0.0.1:0/v1",
        "http://127.0.0.1:abc/v1",
    ],
)
def test_a_base_url_with_a_broken_host_or_port_is_refused_naming_the_field(url, tmp_path):
    with pytest.raises(SpecError, match="'base_url' must be an http:// or https:// URL"):
        spec_from_options("w", "openai", "m", base_url=url)
    # a hand-edited workers.toml gets the same sentence, not a ValueError at the first call
    from workbench.core.workers.registry import Registry, RegistryError

    path = tmp_path / "workers.toml"
    path.write_text(
        f'version = 1\n[workers.w]\nprovider = "openai"\nmodel = "m"\nbase_url = "{url}"\n'
    )
    with pytest.raises((SpecError, RegistryError), match="base_url"):
        Registry(path).list()


def test_a_bracketed_ipv6_base_url_with_a_port_is_kept():
    spec = spec_from_options("w", "openai", "m", base_url="http://[::1]:8000/v1/")
    assert spec.base_url == "http://[::1]:8000/v1"
