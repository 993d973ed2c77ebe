"""A served team that cannot be knocked over, against the real server on loopback: the
prompt budget (refused before any forward), a client that leaves cancels its episode
(the turns already played stored, cancelled), request heads and bodies with deadlines,
a cap on open connections, and the ``serve`` command stopping within its grace on
SIGTERM with a long request in flight, its exit code saying how it ended."""

# ruff: noqa: F811 (the fixtures of test_serve.py, imported, are redefined as arguments)
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest

from tests.core.test_serve import (  # noqa: F401
    QUESTION,
    SANDBOX,
    register,
    sandbox_team,
    serve,
    steered_file,
    stored,
    ws,
)
from tests.support.fault_server import Fault
from tests.support.runs import ended_as
from workbench.core.serving.api import ServeSettings
from workbench.core.serving.server import Server
from workbench.core.serving.team import load_team
from workbench.core.store import Store
from workbench.core.workspace import Workspace


def serve_episodes(ws):
    """The episodes the workspace's ``serve`` run stored (none before the run exists)."""
    with Store.open(ws) as store:
        runs = store.list_runs(kind="serve")
        if not runs:
            return []
        return [store.get_episode(e.id) for e in store.list_episodes(runs[0].id)]


def wait_for(condition, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.02)


# --------------------------------------------------------------------------- prompt budget


def test_a_conversation_over_the_prompt_budget_is_refused_before_any_forward(
    serve, sandbox_team, ws
):
    """10,000 short messages (once 20 minutes and 9.7 GB): a 400 in OpenAI's shape, at
    once, without a forward or a stored episode."""
    served = serve(sandbox_team)
    budget = sandbox_team.max_prompt_tokens
    assert budget == 2048  # the tiny backbone's context, under the default of 4096
    forwards = sandbox_team.coordinator.backbone.stats.requests
    many = [{"role": "user", "content": f"message {i}"} for i in range(10_000)]
    started = time.perf_counter()
    with pytest.raises(openai.BadRequestError) as caught:
        served.chat(messages=many)
    assert time.perf_counter() - started < 30  # bounded by a tokenizer pass, not a forward
    error = caught.value.body
    assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
    assert f"maximum context length is {budget} tokens" in error["message"]
    assert "--max-prompt-tokens" in error["message"]
    assert sandbox_team.coordinator.backbone.stats.requests == forwards  # no forward ran
    # streaming is refused the same way, before its stream starts
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        served.chat(messages=many, stream=True)
    assert serve_episodes(ws) == []
    assert served.chat().choices[0].message.content  # a short request still runs


def test_the_prompt_budget_is_configurable_and_counts_the_backbones_tokens(
    serve, ws, tiny_chat_backbone, tmp_path
):
    path = steered_file(tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX)
    team = load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone, max_prompt_tokens=60)
    served = serve(team)
    long = [{"role": "user", "content": "What is 12 + 30? " * 20}]
    with pytest.raises(openai.BadRequestError) as caught:
        served.chat(messages=long)
    message = caught.value.body["message"]
    assert "maximum context length is 60 tokens" in message
    counted = int(message.split("resulted in ")[1].split()[0])
    assert counted > 60
    assert served.chat().choices[0].message.content  # a short one fits
    with pytest.raises(ValueError, match="--max-prompt-tokens must be from 1"):
        load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone, max_prompt_tokens=10**6)


# --------------------------------------------------------------------------- client gone


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_cancels_the_rest_of_its_episode(
    serve, ws, tiny_chat_backbone, tmp_path, fault_server, stream
):
    """The first turn answers, the second stalls; the client hangs up during it: the
    worker call is dropped, the episode stored with its first turn, cancelled."""
    register("slow", fault_server.base_url)
    path = steered_file(tmp_path / "s.safetensors", tiny_chat_backbone, ["slow"], max_turns=2)
    team = load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone)
    served = serve(team)
    fault_server.script(Fault.ok(), Fault.stall(60))
    body = json.dumps({"model": team.model_id, "messages": QUESTION, "stream": stream})
    client = socket.create_connection(("127.0.0.1", served.server.port), timeout=10)
    client.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    wait_for(lambda: fault_server.in_flight == 1 and len(fault_server.chat_requests()) == 2)
    if stream:
        assert client.recv(4096).startswith(b"HTTP/1.1 200")  # the stream had begun
    client.close()  # the client leaves during the second turn
    wait_for(lambda: len(serve_episodes(ws)) == 1)
    (episode,) = serve_episodes(ws)
    assert episode.stop_reason == "cancelled" and len(episode.turns) == 1
    assert episode.turns[0].error is None and episode.answer == episode.turns[0].response
    assert team.cancelled == 1 and served.server.cancelled_on_stop == 0
    assert served.chat().choices[0].message.content  # the slot is free again


# --------------------------------------------------------------------------- connections


@pytest.fixture()
def guarded(sandbox_team):
    server = Server(sandbox_team, host="127.0.0.1", port=0, header_timeout_s=0.5, max_connections=4)
    server.start()
    yield server
    server.stop(30)


def connect(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the peer closes ``sock`` within ``seconds`` (reading whatever it sends)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_a_request_head_that_never_completes_is_closed(guarded):
    silent = connect(guarded)
    partial = connect(guarded)
    partial.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-")
    started = time.monotonic()
    assert closed_within(silent, 5) and closed_within(partial, 5)
    assert time.monotonic() - started < 3
    # a connection kept alive and then sending half of its next head: closed as well
    with httpx.Client() as client:
        assert client.get(guarded.url.removesuffix("/v1") + "/health").status_code == 200
    kept = connect(guarded)
    kept.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /heal")
    assert closed_within(kept, 5)


def test_a_body_that_never_arrives_is_a_408(sandbox_team, serve):
    served = serve(sandbox_team, ServeSettings(body_timeout_s=0.5))
    sock = socket.create_connection(("127.0.0.1", served.server.port), timeout=10)
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"model": '
    )
    sock.settimeout(10)
    reply = b""
    while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
        piece = sock.recv(4096)
        if not piece:
            break
        reply += piece
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert json.loads(body)["error"]["code"] == "request_timeout"


def test_connections_beyond_the_cap_get_a_json_503(guarded):
    held = [connect(guarded) for _ in range(4)]
    wait_for(lambda: len(guarded._server.server_state.connections) == 4, 5)
    refused = connect(guarded)
    refused.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    refused.settimeout(5)
    reply = b""
    while piece := refused.recv(4096):
        reply += piece
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head
    assert json.loads(body)["error"]["code"] == "too_many_connections"
    for sock in held:
        sock.close()
    wait_for(lambda: len(guarded._server.server_state.connections) == 0, 5)
    with httpx.Client() as client:
        assert client.get(guarded.url.removesuffix("/v1") + "/health").status_code == 200


# --------------------------------------------------------------------------- stopping


@pytest.mark.parametrize("stream", [False, True])
def test_sigterm_with_a_long_request_in_flight_exits_within_the_grace(
    tmp_path, tiny_chat_backbone, tiny_model_dir, fault_server, stream
):
    """The second turn's call stalls for a minute; SIGTERM with a grace of 2 s: the
    process exits within the grace and a few seconds, with code 3 (requests cancelled),
    the episode stored with its first turn, cancelled, and the run closed."""
    register("slow", fault_server.base_url)
    path = steered_file(
        tmp_path / "team.safetensors",
        tiny_chat_backbone,
        ["slow"],
        max_turns=2,
        source=str(tiny_model_dir),
    )
    fault_server.script(Fault.ok(), Fault.stall(60))
    ws = tmp_path / "cli-ws"
    log = tmp_path / "serve.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "workbench", "serve", "--workspace", str(ws)]
        + ["--coordinator", str(path), "--port", "0", "--grace", "2"],
        stdout=subprocess.PIPE,
        stderr=log.open("w"),  # a file: a helper the child starts may hold a pipe open
        text=True,
    )
    outcome: list = []
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.stderr.read()
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)

        def ask() -> None:
            try:
                reply = client.chat.completions.create(
                    model="trinity-team", messages=QUESTION, stream=stream
                )
                outcome.append(list(reply) if stream else reply)
            except (openai.APIError, httpx.HTTPError) as exc:
                outcome.append(exc)

        asker = threading.Thread(target=ask)
        asker.start()
        wait_for(lambda: len(fault_server.chat_requests()) == 2)  # the second call stalls
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
    asker.join(30)
    stderr = log.read_text()
    assert process.returncode == 3, stderr
    assert took < 2 + 5, took
    assert "stopped after the 2 s grace: 1 request(s) in flight cancelled" in stderr
    (failed,) = outcome
    if isinstance(failed, list):  # a stream that ended without its answer
        assert not any(c.choices and c.choices[0].delta.content for c in failed)
    else:
        assert isinstance(failed, openai.APIError | httpx.HTTPError), failed
    with Store.open(Workspace.open(ws)) as store:
        (run,) = store.list_runs(kind="serve")
        assert run.status == "finished" and ended_as(run.result) == {"episodes": 1, "cancelled": 1}
        (summary,) = store.list_episodes(run.id)
        episode = store.get_episode(summary.id)
    assert episode.stop_reason == "cancelled" and len(episode.turns) == 1
