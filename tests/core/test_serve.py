"""The OpenAI-compatible server, tested with the official ``openai`` client (and raw HTTP
where the byte format matters) against the server on loopback: a trained sandbox run,
coordinator files over a fixed-latency loopback worker and over ``transformers serve``.

"Steered" coordinator files have hand-set head weights that make the argmax choose one
worker in one role on every transcript (the tiny backbone's features of different
transcripts are nearly parallel), so an episode's course is known in advance.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import httpx
import numpy as np
import openai
import pytest

from tests.core.test_training import config
from tests.support.fault_server import MODEL, Fault
from tests.support.runs import ended_as
from workbench.core.coordinator import Coordinator, Head, HeadConfig
from workbench.core.export import save_coordinator
from workbench.core.jobs.train import train
from workbench.core.records import ROLES, Role
from workbench.core.serving.api import EPISODE_HEADER, ServeSettings
from workbench.core.serving.server import Server, server_key, set_server_key
from workbench.core.serving.team import NOT_GRADED, load_team
from workbench.core.store import Store
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import spec_from_options
from workbench.core.workspace import Workspace

SANDBOX = ["sandbox:mathlete", "sandbox:scholar", "sandbox:coder"]
QUESTION = [{"role": "user", "content": "What is 12 + 30?"}]


@pytest.fixture()
def ws(tmp_path):
    return Workspace.open(tmp_path / "ws")


def steered_file(
    path,
    backbone,
    pool,
    *,
    worker=0,
    role=Role.WORKER,
    max_turns=2,
    source="tiny",
    optimizer=None,
    **protocol,
):
    """A coordinator file whose argmax picks ``pool[worker]`` as ``role`` every turn (on a
    chat-input backbone, whose transcripts all end in the template's tokens); ``optimizer``
    overrides the test config's section (a recorded pool's keys)."""
    probe = backbone.feature("Query:\nWhat is 2 + 2?")
    n, d = len(pool), backbone.hidden_size
    weights = np.zeros((n + 3, d))
    weights[worker] = 50 * probe
    weights[n + ROLES.index(role)] = 50 * probe
    cfg = config(
        backbone={"model": source, "device": "cpu", "input": backbone.input},
        pool={"workers": pool},
        protocol={"max_turns": max_turns, "temperature": 0.0, "max_tokens": 64, **protocol},
        **({"optimizer": optimizer} if optimizer else {}),
    )
    return save_coordinator(
        path,
        Coordinator(backbone, Head(HeadConfig(n, d), weights)),
        pool=[{"id": w, "model": ""} for w in pool],
        backbone_source=source,
        max_turns=max_turns,
        training={"config": cfg.to_dict()},
    )


class Served:
    """A server started on a free loopback port, its team and an ``openai`` client."""

    def __init__(self, team, settings=None, host="127.0.0.1"):
        self.team = team
        self.server = Server(team, settings, host=host, port=0, graceful_s=10)
        self.url = self.server.start()
        key = settings.api_key if settings and settings.api_key else "unused"
        self.client = openai.OpenAI(base_url=self.url, api_key=key, max_retries=0, timeout=60)

    def chat(self, **kwargs):
        return self.client.chat.completions.create(
            model=self.team.model_id, messages=kwargs.pop("messages", QUESTION), **kwargs
        )

    def post(self, body, **kwargs):
        return httpx.post(f"{self.url}/chat/completions", timeout=60, **kwargs, content=body)

    def stop(self):
        self.server.stop(30)


@pytest.fixture()
def serve():
    started = []

    def start(team, settings=None, **kwargs):
        served = Served(team, settings, **kwargs)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture()
def sandbox_team(ws, tiny_chat_backbone, tmp_path):
    path = steered_file(tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, worker=0)
    return load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone)


def trinity(chunk):
    """A chunk's ``trinity`` extension object ({} when it has none)."""
    return (chunk.model_extra or {}).get("trinity") or {}


def stored(ws, episode_id):
    with Store.open(ws) as store:
        return store.get_episode(episode_id)


def register(worker_id, base_url, model=MODEL, **options):
    Registry().add(
        spec_from_options(worker_id, "transformers", model, base_url=base_url, **options)
    )


# --------------------------------------------------------------------------- keys
# First in the file: the test Secret Service (a session fixture) could not create its
# collection when first started after the concurrent-request tests below in one process.


def test_a_failing_worker_is_an_openai_error_naming_it_never_its_key(
    serve, ws, tiny_chat_backbone, tmp_path, fault_server, keychain
):
    key = "sk-test-serve-0123456789abcdef"
    Registry().add(
        spec_from_options("loop", "openai", MODEL, base_url=fault_server.base_url), key=key
    )
    path = steered_file(tmp_path / "loop.safetensors", tiny_chat_backbone, ["loop"], max_turns=1)
    served = serve(load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone))
    fault_server.script(Fault.status_code(401, f"Incorrect API key provided: {key}"))
    with pytest.raises(openai.APIStatusError) as caught:
        served.chat(extra_body={"trace": True})
    assert caught.value.status_code == 502
    error = caught.value.body
    assert error["type"] == "worker_error" and "'loop'" in error["message"]
    assert key not in caught.value.response.text
    # streaming: the same error arrives as an error event
    fault_server.script(Fault.status_code(401, f"Incorrect API key provided: {key}"))
    with pytest.raises(openai.APIError, match="'loop'") as caught:
        list(served.chat(stream=True))
    assert key not in str(caught.value)
    assert fault_server.chat_requests()[0].headers["authorization"] == f"Bearer {key}"


def test_off_loopback_needs_a_server_key_checked_in_constant_time(serve, sandbox_team, keychain):
    with pytest.raises(ValueError, match="needs an API key for the server"):
        Server(sandbox_team, ServeSettings(), host="0.0.0.0", port=0)
    assert server_key() is None
    set_server_key("  team-key-42  ")
    assert server_key() == "team-key-42"
    Server(sandbox_team, ServeSettings(api_key=server_key()), host="0.0.0.0", port=0)  # accepted
    served = serve(sandbox_team, ServeSettings(api_key=server_key()))
    assert served.chat().choices[0].message.content
    for wrong in ("team-key-43", ""):
        client = openai.OpenAI(base_url=served.url, api_key=wrong or "x", max_retries=0)
        with pytest.raises(openai.AuthenticationError, match="serve set-key"):
            client.models.list()
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model=sandbox_team.model_id, messages=QUESTION)
    assert httpx.get(f"{served.url}/models").status_code == 401
    assert "team-key-42" not in repr(served.server.settings)


# --------------------------------------------------------------------------- the API


def test_models_lists_the_team_with_its_pool(serve, sandbox_team):
    served = serve(sandbox_team)
    (card,) = served.client.models.list().data
    assert card.id == sandbox_team.model_id == "trinity-team" and card.owned_by
    assert card.trinity["pool"] == SANDBOX and card.trinity["max_turns"] == 2
    assert served.client.models.retrieve(card.id).id == card.id
    with pytest.raises(openai.NotFoundError):
        served.client.models.retrieve("gpt-4o")


def test_a_completion_is_one_stored_episode_with_summed_usage_and_cost(serve, sandbox_team, ws):
    served = serve(sandbox_team)
    raw = served.client.chat.completions.with_raw_response.create(
        model=sandbox_team.model_id, messages=QUESTION
    )
    completion = raw.parse()
    episode_id = raw.headers[EPISODE_HEADER]
    assert completion.trinity["episode_id"] == episode_id and "turns" not in completion.trinity
    episode = stored(ws, episode_id)
    # two Worker turns by the mathlete (steered), the answer is the last one
    assert [(t.role, t.worker) for t in episode.turns] == [(Role.WORKER, "sandbox:mathlete")] * 2
    assert completion.choices[0].message.content == episode.answer != ""
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens == sum(t.tokens_in for t in episode.turns) > 0
    assert completion.usage.completion_tokens == sum(t.tokens_out for t in episode.turns) > 0
    assert completion.trinity["cost"] == pytest.approx(episode.cost) and episode.cost > 0
    assert completion.trinity["cost_kind"] == "simulated"  # sandbox dollars say so
    # stored as an episode of the server's `serve` run: Replay lists it there
    with Store.open(ws) as store:
        (run,) = store.list_runs(kind="serve")
        assert [e.id for e in store.list_episodes(run.id)] == [episode_id]
    assert episode.run_id == run.id and episode.suite == "serve"
    assert episode.grade_details == {"reason": NOT_GRADED}
    assert "What is 12 + 30?" in episode.turns[0].messages[0]["content"]


def test_the_trace_shows_each_turn_by_field_or_header(serve, sandbox_team, ws):
    served = serve(sandbox_team)
    by_field = served.chat(extra_body={"trace": True})
    by_header = served.chat(extra_headers={"X-Trinity-Trace": "1"})
    for completion in (by_field, by_header):
        turns = completion.trinity["turns"]
        episode = stored(ws, completion.trinity["episode_id"])
        assert len(turns) == len(episode.turns) == 2
        for shown, turn in zip(turns, episode.turns, strict=True):
            assert shown["role"] == turn.role and shown["worker"] == turn.worker
            assert shown["index"] == turn.index + 1  # counted from 1; the store from 0
            assert list(shown["worker_probs"]) == SANDBOX
            assert list(shown["worker_probs"].values()) == pytest.approx(turn.worker_probs)
            assert list(shown["role_probs"]) == ["thinker", "worker", "verifier"]
            assert shown["role_probs"]["worker"] > 0.99 and shown["response"] == turn.response
            assert shown["verdict"] is None and shown["error"] is None


def test_with_final_turn_free_no_answer_is_a_502_that_says_why(
    serve, ws, tiny_chat_backbone, tmp_path
):
    # one steered Verifier with no answer to check: the paper's protocol ends the episode
    path = steered_file(tmp_path / "v.safetensors", tiny_chat_backbone, SANDBOX, role=Role.VERIFIER)
    team = load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone, final_turn="free")
    served = serve(team)
    with pytest.raises(openai.InternalServerError) as caught:
        served.chat(extra_body={"trace": True})
    body = caught.value.response.json()
    assert caught.value.status_code == 502 and body["error"]["code"] == "no_answer"
    assert "Verifier before any Worker answer" in body["error"]["message"]
    (turn,) = body["trinity"]["turns"]
    assert turn["role"] == "verifier" and turn["called"] is False
    assert stored(ws, body["trinity"]["episode_id"]).stop_reason == "verifier_without_answer"


def test_a_served_teams_coordinator_reads_each_transcript_within_its_context(
    serve, ws, tiny_chat_backbone, tmp_path, monkeypatch
):
    """As in training, the served team's coordinator is asked whether each transcript fits
    its backbone's context, and reads it with the oldest turns dropped when it does not:
    here no earlier turn fits, so the second turn is decided without the first."""
    path = steered_file(tmp_path / "w.safetensors", tiny_chat_backbone, SANDBOX)
    asked: list[str] = []
    read: list[str] = []
    afeature = tiny_chat_backbone.afeature

    def fits(text: str) -> bool:
        asked.append(text)
        return False

    async def feature(text: str, *args, **kwargs):
        read.append(text)
        return await afeature(text, *args, **kwargs)

    monkeypatch.setattr(tiny_chat_backbone, "fits", fits)
    monkeypatch.setattr(tiny_chat_backbone, "afeature", feature)
    served = serve(load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone))
    completion = served.chat()
    assert len(stored(ws, completion.trinity["episode_id"]).turns) == 2
    assert len(asked) == 1 and "Worker/sandbox" in asked[0]  # the opening is never asked
    assert "[1 earlier turns omitted]" in read[-1] and "Worker/sandbox" not in read[-1]


@pytest.mark.parametrize(
    ("role", "forced", "roles"),
    [
        # a Thinker every turn: the last of K = 2 is played as a Worker
        (Role.THINKER, [1], ["thinker", "worker"]),
        # a Verifier before any answer would end the episode: played as a Worker, and
        # the Verifier the coordinator asks for next judges that answer
        (Role.VERIFIER, [0], ["worker", "verifier"]),
    ],
)
def test_by_default_a_turn_that_would_leave_no_answer_is_played_as_a_worker(
    serve, ws, tiny_chat_backbone, tmp_path, role, forced, roles
):
    path = steered_file(
        tmp_path / "t.safetensors", tiny_chat_backbone, SANDBOX, worker=1, role=role
    )
    served = serve(load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone))
    completion = served.chat(extra_body={"trace": True})
    assert completion.choices[0].message.content  # an answer, through the official client
    # the trace counts turns from 1, as every output does; the store keeps them from 0
    assert completion.trinity["worker_only_turns"] == [i + 1 for i in forced]
    turns = completion.trinity["turns"]
    assert [t["role"] for t in turns] == roles
    assert [t["index"] for t in turns] == [1, 2]
    # the coordinator still chose the worker (steered to the scholar); its role
    # probabilities are recorded as it gave them, favouring the role it wanted
    assert {t["worker"] for t in turns} == {"sandbox:scholar"}
    assert all(t["role_probs"][str(role)] > 0.99 for t in turns)
    episode = stored(ws, completion.trinity["episode_id"])
    assert episode.answer == completion.choices[0].message.content
    assert episode.grade_details["worker_only_turns"] == forced
    assert served.team.describe()["final_turn"] == "worker"


def test_streaming_sends_the_answer_in_openai_chunks_then_done(serve, sandbox_team, ws):
    served = serve(sandbox_team)
    chunks = list(served.chat(stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    episode_id = chunks[0].trinity["episode_id"]
    episode = stored(ws, episode_id)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == episode.answer
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == "stop" and set(finish[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == (
        episode.tokens_in + episode.tokens_out
    )
    assert {c.id for c in chunks} == {chunks[0].id}
    # the bytes: `data: {json}` events separated by blank lines, ending with [DONE]
    with httpx.stream(
        "POST",
        f"{served.url}/chat/completions",
        json={"model": sandbox_team.model_id, "messages": QUESTION, "stream": True},
        timeout=60,
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers[EPISODE_HEADER]
        body = response.read().decode()
    events = body.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    for event in events[:-2]:
        assert event.startswith("data: ")
        assert json.loads(event[6:])["object"] == "chat.completion.chunk"


def test_a_long_streamed_episode_keeps_the_connection_alive(
    serve, ws, tiny_chat_backbone, tmp_path, fault_server
):
    """While a slow worker answers, the silent stream gets SSE comments, which the
    official client skips."""
    fault_server.latency = 1.0
    register("slow", fault_server.base_url)
    path = steered_file(tmp_path / "slow.safetensors", tiny_chat_backbone, ["slow"], max_turns=1)
    team = load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone)
    served = serve(team, ServeSettings(keepalive_s=0.1))
    body = {"model": team.model_id, "messages": QUESTION, "stream": True}
    with httpx.stream("POST", f"{served.url}/chat/completions", json=body, timeout=60) as response:
        events = response.read().decode().split("\n\n")
    pings = [i for i, e in enumerate(events) if e == ": keep-alive"]
    content = [i for i, e in enumerate(events) if '"content":"' in e and '"content":""' not in e]
    assert pings and content and max(pings) < min(content)  # the pings came while it ran
    chunks = list(served.chat(stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == stored(ws, chunks[0].trinity["episode_id"]).answer != ""
    with pytest.raises(ValueError, match="keepalive_s"):
        ServeSettings(keepalive_s=0)


def test_a_streamed_trace_shows_each_turn_as_it_happens(serve, sandbox_team):
    served = serve(sandbox_team)
    chunks = list(served.chat(stream=True, extra_body={"trace": True}))
    live = [trinity(c)["turn"] for c in chunks if "turn" in trinity(c)]
    assert [(e["event"], e["index"]) for e in live] == [
        ("turn_decided", 1),  # counted from 1, as the non-streamed trace and the GUI
        ("turn_replied", 1),
        ("turn_decided", 2),
        ("turn_replied", 2),
    ]
    assert live[1]["worker"] == "sandbox:mathlete" and live[1]["tokens_out"] > 0
    # the turns come before the answer
    first_text = next(i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content)
    assert max(i for i, c in enumerate(chunks) if "turn" in trinity(c)) < first_text


def test_bad_requests_get_400_in_openais_error_shape(serve, sandbox_team, ws):
    served = serve(sandbox_team)
    with pytest.raises(openai.BadRequestError) as caught:
        served.chat(messages=[])
    assert caught.value.body["param"] == "messages" and "non-empty" in caught.value.message
    with pytest.raises(openai.NotFoundError, match="serves 'trinity-team'"):
        served.client.chat.completions.create(model="gpt-4o", messages=QUESTION)
    model = sandbox_team.model_id
    cases = {
        b"{not json": "not valid JSON",
        b"[1, 2]": "JSON object",
        json.dumps({"messages": QUESTION}).encode(): "model is required",
        json.dumps({"model": model, "messages": "hi"}).encode(): "non-empty list",
        json.dumps({"model": model, "messages": [{"role": "robot", "content": "x"}]}).encode(): (
            "role must be one of"
        ),
        json.dumps({"model": model, "messages": [{"role": "user", "content": 3}]}).encode(): (
            "content must be a string"
        ),
        json.dumps(
            {"model": model, "messages": [{"role": "assistant", "content": "x"}]}
        ).encode(): ("last message must come from the user"),
        json.dumps({"model": model, "messages": QUESTION, "stream": "yes"}).encode(): (
            "stream must be true or false"
        ),
        json.dumps({"model": model, "messages": QUESTION, "n": 2}).encode(): "n must be 1",
        json.dumps(
            {"model": model, "messages": [{"role": "user", "content": "x" * (1 << 20)}]}
        ).encode(): "larger than 1048576 bytes",
    }
    for body, expected in cases.items():
        response = served.post(body, headers={"content-type": "application/json"})
        error = response.json()["error"]
        assert response.status_code == 400, (body[:60], response.text)
        assert expected in error["message"] and error["type"] == "invalid_request_error"
        assert set(error) == {"message", "type", "param", "code"}
    # text parts are read; other parts are refused
    parts = [{"role": "user", "content": [{"type": "text", "text": "What is 12 + 30?"}]}]
    assert served.chat(messages=parts).choices[0].message.content
    with Store.open(ws) as store:  # no bad request ran an episode
        (run,) = store.list_runs(kind="serve")
        assert len(store.list_episodes(run.id)) == 1


def test_a_trained_run_serves_its_pool_and_stores_what_it_did(serve, ws, tiny_chat_backbone):
    cfg = config(budget={"generations": 1}, backbone={"input": "chat"})
    run_id = train(cfg, ws, backbone=tiny_chat_backbone)
    team = load_team(ws, run=run_id[:8], backbone=tiny_chat_backbone, max_turns=3)
    served = serve(team)
    with Store.open(ws) as store:
        name = store.get_run(run_id).name
    assert served.client.models.list().data[0].trinity["source"] == {
        "run": run_id,
        "run_name": name,
    }
    raw = served.post(
        json.dumps({"model": team.model_id, "messages": QUESTION, "trace": True}).encode()
    )
    episode = stored(ws, raw.headers[EPISODE_HEADER])
    assert episode.pool == tuple(SANDBOX) and len(episode.turns) <= 3
    body = raw.json()
    assert [t["role"] for t in body["trinity"]["turns"]] == [t.role for t in episode.turns]
    # whatever the barely trained coordinator did: an answer is a 200 carrying it, no
    # answer is a 502 that says why
    if episode.answer is not None:
        assert raw.status_code == 200 and body["choices"][0]["message"]["content"] == episode.answer
    else:
        assert raw.status_code == 502 and body["error"]["code"] == "no_answer"


# --------------------------------------------------------------------------- workers behind it


def test_beyond_the_queue_requests_get_429_with_retry_after(
    serve, ws, tiny_chat_backbone, tmp_path, fault_server
):
    fault_server.latency = 0.6
    register("slow", fault_server.base_url)
    path = steered_file(tmp_path / "slow.safetensors", tiny_chat_backbone, ["slow"], max_turns=1)
    team = load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone)
    served = serve(team, ServeSettings(concurrency=1, queue=1))
    outcomes: list = []

    def ask():
        try:
            outcomes.append(served.chat().choices[0].message.content)
        except openai.RateLimitError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    refused = [o for o in outcomes if isinstance(o, openai.RateLimitError)]
    answered = [o for o in outcomes if isinstance(o, str)]
    assert len(refused) == 2 and len(answered) == 2  # one ran, one waited, two refused
    assert int(refused[0].response.headers["Retry-After"]) >= 1
    assert refused[0].body["code"] == "rate_limit_exceeded"
    assert fault_server.max_in_flight == 1  # one episode at a time
    # the queue drained: the next request runs
    assert served.chat().choices[0].message.content


def test_stopping_lets_in_flight_episodes_finish_and_closes_the_run(
    serve, ws, tiny_chat_backbone, tmp_path, fault_server
):
    fault_server.latency = 0.8
    register("slow", fault_server.base_url)
    path = steered_file(tmp_path / "slow.safetensors", tiny_chat_backbone, ["slow"], max_turns=1)
    served = serve(load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone))
    answers = []
    asker = threading.Thread(target=lambda: answers.append(served.chat()))
    asker.start()
    deadline = time.monotonic() + 30
    while fault_server.in_flight == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    served.stop()  # while the worker call is in flight
    asker.join(30)
    (completion,) = answers
    episode = stored(ws, completion.trinity["episode_id"])
    assert episode.answer == completion.choices[0].message.content and len(episode.turns) == 1
    with Store.open(ws) as store:
        (run,) = store.list_runs(kind="serve")
    assert run.status == "finished" and run.stop_reason == "shutdown"
    assert ended_as(run.result) == {"episodes": 1, "cancelled": 0}
    with pytest.raises(openai.APIConnectionError):
        served.chat()


def test_a_transformers_serve_worker_behind_the_server(
    serve, ws, tiny_chat_backbone, tmp_path, transformers_server
):
    register("smol", transformers_server.base_url, transformers_server.model)
    path = steered_file(
        tmp_path / "smol.safetensors", tiny_chat_backbone, ["smol"], max_turns=1, max_tokens=12
    )
    served = serve(load_team(ws, coordinator_file=path, backbone=tiny_chat_backbone))
    completion = served.chat()
    episode = stored(ws, completion.trinity["episode_id"])
    assert completion.choices[0].message.content == episode.answer
    assert episode.answer.strip() and episode.turns[0].error is None
    assert completion.usage.completion_tokens == episode.turns[0].tokens_out
    assert 0 < episode.turns[0].tokens_out <= 12  # the server's own count, capped by the run
    assert completion.trinity["cost_kind"] == "real"
    chunks = list(served.chat(stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == stored(ws, chunks[0].trinity["episode_id"]).answer


# --------------------------------------------------------------------------- the command


def test_the_serve_command_serves_until_interrupted(tmp_path, tiny_chat_backbone, tiny_model_dir):
    path = steered_file(
        tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, source=str(tiny_model_dir)
    )
    ws = tmp_path / "cli-ws"
    command = [sys.executable, "-m", "workbench", "serve", "--workspace", str(ws)]
    refused = subprocess.run(
        [*command, "--coordinator", str(path), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "serve set-key" in refused.stderr
    process = subprocess.Popen(
        [*command, "--coordinator", str(path), "--port", "0", "--concurrency", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), process.stderr.read()
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
        completion = client.chat.completions.create(model="trinity-team", messages=QUESTION)
        assert completion.choices[0].message.content
    finally:
        process.send_signal(signal.SIGINT)
        stderr = process.communicate(timeout=60)[1]
    assert process.returncode == 0, stderr
    assert "serving 'trinity-team' (pool: sandbox:mathlete" in stderr
    assert "stopped; 1 episode(s) stored in run" in stderr
    with Store.open(Workspace.open(ws)) as store:
        (run,) = store.list_runs(kind="serve")
        assert run.status == "finished" and ended_as(run.result) == {"episodes": 1, "cancelled": 0}
        (episode,) = store.list_episodes(run.id)
    assert episode.id == completion.trinity["episode_id"]


def test_the_serve_command_names_a_bad_port_busy_port_or_turn_count(
    tmp_path, tiny_chat_backbone, tiny_model_dir
):
    """Refused before the model loads, in a sentence: uvicorn's own bind failure ended in
    a traceback ("Task exception was never retrieved", exit 3)."""
    import socket

    path = steered_file(
        tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, source=str(tiny_model_dir)
    )

    def serve(*options: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "workbench", "serve", "--workspace", str(tmp_path / "ws")]
        return subprocess.run(
            [*command, "--coordinator", str(path), *options],
            capture_output=True,
            text=True,
            timeout=120,
        )

    bad = serve("--port", "70000")
    assert bad.returncode == 2 and "'70000' is not a port: give 0-65535" in bad.stderr
    no_turns = serve("--port", "0", "--max-turns", "0")  # 0 once fell back to the run's K
    assert no_turns.returncode == 2 and "--max-turns must be at least 1" in no_turns.stderr
    for option, value, said in [
        ("--grace", "0", "--grace must be at least 1 second"),
        ("--max-connections", "0", "--max-connections must be at least 1"),
        ("--max-prompt-tokens", "0", "--max-prompt-tokens must be at least 1"),
        ("--final-turn", "last", "invalid choice: 'last'"),
    ]:
        refused = serve("--port", "0", option, value)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert "loading the coordinator" not in refused.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = serve("--port", str(port))
    assert busy.returncode == 2, busy.stderr
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in busy.stderr
    assert "another --port" in busy.stderr
    assert "Traceback" not in busy.stderr and "loading the coordinator" not in busy.stderr


def test_a_team_of_recorded_workers_is_refused_in_a_sentence(tmp_path, tiny_chat_backbone):
    """A team trained on a recorded pool answers no request (a recorded worker looks its
    answer up by question id): `serve` says so and what to do (exit 2) instead of
    serving a team whose every reply is an error, and says it before loading the
    backbone (the file names a backbone folder that is not there: loading it would fail
    with another message)."""
    recorded = ["recorded:champ/gpt-4-turbo", "recorded:champ/gpt-3.5"]
    path = steered_file(
        tmp_path / "team.safetensors",
        tiny_chat_backbone,
        recorded,
        source=str(tmp_path / "no-such-backbone"),
        max_turns=1,
        roles=["worker"],
        optimizer={"rollouts": 0},
    )
    command = [sys.executable, "-m", "workbench", "serve", "--workspace", str(tmp_path / "ws")]
    refused = subprocess.run(
        [*command, "--coordinator", str(path), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2, refused.stderr
    assert "the team's workers are all recorded (recorded:champ/gpt-4-turbo" in refused.stderr
    assert "Playground" in refused.stderr and "Traceback" not in refused.stderr
