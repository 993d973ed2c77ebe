"""The ``workers`` commands as a user runs them: real subprocesses, a real Secret Service
keyring, a real OpenAI-compatible server (transformers serve) and the fault-injecting
loopback server; keys go in through standard input and never come out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.fault_server import MODEL, Fault
from tests.support.keychain import stored_items
from workbench.core.keychain import SERVICE
from workbench.core.workers.registry import default_file

KEY = "sk-test-CLI-5d8e1f0a9b7c6d5e4f3a"


def cli(*args, stdin=None, env=None, timeout=600):
    result = subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env or {**os.environ},
        timeout=timeout,
    )
    assert KEY not in result.stdout and KEY not in result.stderr  # never printed, whatever happens
    return result


def ok(*args, **kw):
    result = cli(*args, **kw)
    assert result.returncode == 0, result.stderr
    return result


def test_add_list_set_key_rename_remove_with_the_keychain(keychain):
    ok(
        "workers",
        "add",
        "gpt",
        "--provider",
        "openrouter",
        "--model",
        "openai/gpt-4o-mini",
        "--price-in",
        "0.15",
        "--price-out",
        "0.6",
        "--extra",
        '{"reasoning_effort": "low"}',
        "--key-stdin",
        stdin=KEY + "\n",
    )
    assert stored_items(keychain.address, SERVICE) == {"gpt": KEY}
    assert KEY not in default_file().read_text()

    listed = json.loads(ok("workers", "list", "--json").stdout)
    assert {"local:smollm2", "sandbox:mathlete", "sandbox:scholar", "sandbox:coder"} <= {
        w["id"] for w in listed
    }
    (gpt,) = [w for w in listed if w["id"] == "gpt"]
    assert gpt["key"] == "in keychain" and gpt["base_url"] == "https://openrouter.ai/api/v1"
    assert gpt["extra"] == {"reasoning_effort": "low"} and gpt["key_env"] == "OPENROUTER_API_KEY"
    table = ok("workers", "list").stdout
    assert "gpt" in table and "in keychain" in table and "sandbox:coder" in table

    ok("workers", "set-key", "gpt", "--key-stdin", stdin=KEY + "-2")
    assert stored_items(keychain.address, SERVICE) == {"gpt": KEY + "-2"}
    ok("workers", "rename", "gpt", "router")
    assert stored_items(keychain.address, SERVICE) == {"router": KEY + "-2"}
    removed = ok("workers", "remove", "router")
    assert "and its key" in removed.stdout and stored_items(keychain.address, SERVICE) == {}
    assert "router" not in {w["id"] for w in json.loads(ok("workers", "list", "--json").stdout)}


def test_the_environment_fallback_is_shown_as_such(keychain):
    ok("workers", "add", "claude", "--provider", "anthropic", "--model", "claude-sonnet-4-20250514")
    (row,) = [w for w in json.loads(ok("workers", "list", "--json").stdout) if w["id"] == "claude"]
    assert row["key"] == "missing"
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    (row,) = [
        w
        for w in json.loads(ok("workers", "list", "--json", env=env).stdout)
        if w["id"] == "claude"
    ]
    assert row["key"] == "from environment (ANTHROPIC_API_KEY)"


@pytest.mark.parametrize(
    "backend,words",
    [
        ("keyring.backends.fail.Keyring", "no keyring backend is available"),
        (None, "keyring would store keys in plain text"),  # keyring's own choice without D-Bus
    ],
)
def test_no_usable_keyring_refuses_the_key_and_gives_the_fix(backend, words):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND")
    }
    if backend:
        env["PYTHON_KEYRING_BACKEND"] = backend
    result = cli(
        "workers",
        "add",
        "gpt",
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--key-stdin",
        stdin=KEY,
        env=env,
    )
    assert result.returncode == 2
    assert (
        words in result.stderr
        and "gnome-keyring" in result.stderr
        and "OPENAI_API_KEY" in result.stderr
    )
    assert not default_file().exists()
    assert not any(
        KEY.encode() in p.read_bytes()
        for p in [*_files(os.environ["XDG_DATA_HOME"]), *_files(os.environ["XDG_CONFIG_HOME"])]
    )


def _files(root):
    return [p for p in __import__("pathlib").Path(root).rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    "args,words",
    [
        (["--provider", "openai", "--model", "m", "--extra", "{bad"], "--extra is not valid JSON"),
        (["--provider", "cohere", "--model", "m"], "field 'provider' is 'cohere'"),
        (["--provider", "openai", "--model", "m", "--price-in", "-1"], "field 'price_in'"),
        (
            [
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                "https://api.example.com/v1?key=abc",
            ],
            "must not have a query",
        ),
    ],
)
def test_bad_input_is_exit_2_with_the_field_named(args, words):
    result = cli("workers", "add", "w1", *args)
    assert result.returncode == 2 and words in result.stderr and not default_file().exists()


def test_unknown_worker_ids_are_named():
    for command in (
        ["workers", "test", "nope"],
        ["workers", "remove", "nope"],
        ["workers", "rename", "nope", "x"],
    ):
        result = cli(*command)
        assert result.returncode == 2 and "'nope'" in result.stderr, command


def test_test_and_models_against_transformers_serve(transformers_server):
    ok(
        "workers",
        "add",
        "smol",
        "--provider",
        "transformers",
        "--base-url",
        transformers_server.base_url,
        "--model",
        transformers_server.model,
        "--max-tokens",
        "8",
    )
    report = json.loads(ok("workers", "test", "smol", "--json").stdout)
    assert (
        report["ok"] is True
        and report["model"] == transformers_server.model
        and report["latency_s"] > 0
    )
    assert report["reply"].strip() and report["error"] is None
    assert transformers_server.model in json.loads(ok("workers", "models", "smol", "--json").stdout)


def test_a_failing_test_explains_itself_and_exits_1(keychain, fault_server):
    fault_server.script(Fault.status_code(401, f"Incorrect API key provided: {KEY}"))
    ok(
        "workers",
        "add",
        "loop",
        "--provider",
        "openai",
        "--base-url",
        fault_server.base_url,
        "--model",
        MODEL,
        "--key-stdin",
        stdin=KEY,
    )
    result = cli("workers", "test", "loop")
    assert result.returncode == 1
    assert (
        "rejected (401 Unauthorized)" in result.stderr
        and "workers set-key loop --key-stdin" in result.stderr
    )
    assert fault_server.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"


def test_run_episode_with_a_registered_worker_in_the_pool(
    keychain, fault_server, tiny_lm, tmp_path
):
    from workbench.core.coordinator import Backbone, Coordinator
    from workbench.core.tasks.suites import load_suite
    from workbench.core.transcript import render_transcript
    from workbench.core.workspace import Workspace

    model, tokenizer = tiny_lm
    folder = tmp_path / "tiny-backbone"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    ws = Workspace.open(tmp_path / "ws")
    task = next(t for t in load_suite("mixed", ws).tasks if t.kind == "math")
    # The CLI builds Coordinator.untrained(backbone, 2, seed=--seed) and, with --acting
    # argmax, takes the argmax: pick a seed whose first choice is the registered worker
    # as Worker, so that the episode surely calls it.
    backbone = Backbone(str(folder), device="cpu")
    try:
        seed = next(
            s
            for s in range(100)
            if (lambda a: (a.worker, a.role) == (0, 1))(
                Coordinator.untrained(backbone, 2, seed=s).decide(render_transcript(task, []))
            )
        )
    finally:
        backbone.close()
    ok(
        "workers",
        "add",
        "loop",
        "--provider",
        "openai",
        "--base-url",
        fault_server.base_url,
        "--model",
        MODEL,
        "--key-stdin",
        stdin=KEY,
    )
    result = ok(
        "-v",
        "run-episode",
        "--pool",
        "loop,sandbox:mathlete",
        "--suite",
        "mixed",
        "--task",
        task.id,
        "--backbone",
        str(folder),
        "--device",
        "cpu",
        "--acting",
        "argmax",
        "--seed",
        str(seed),
        "--max-turns",
        "2",
        "--max-tokens",
        "32",
        "--json",
        "--workspace",
        str(ws.root),
    )
    episode = json.loads(result.stdout)
    assert episode["pool"] == ["loop", "sandbox:mathlete"]
    first = episode["turns"][0]
    assert (first["worker"], first["role"], first["error"]) == ("loop", "worker", None)
    assert "The answer is" in first["response"]
    assert fault_server.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    leaks = [
        p
        for p in [*_files(ws.root), *_files(os.environ["XDG_CONFIG_HOME"])]
        if KEY.encode() in p.read_bytes()
    ]
    assert leaks == []
