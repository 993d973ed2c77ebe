"""The OpenAI-compatible client under faults, against a real HTTP server on loopback that
misbehaves on purpose (tests/support/fault_server.py): 429 with Retry-After, bursts of
500/503, a body that stalls past the read timeout, a body that trickles past the total
timeout, truncated JSON, dropped connections, 401/403/404/400. Each failure must be the
right WorkerError, name the worker, the status and the fix, and never show the key."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time

import pytest

from tests.support.fault_server import MODEL, Fault
from workbench.core.coordinator import Action
from workbench.core.policies import AnyContext
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.records import ROLES, StopReason
from workbench.core.tasks.model import Task
from workbench.core.workers.base import (
    AuthError,
    BadResponse,
    ProviderError,
    RateLimited,
    WorkerTimeout,
    WorkerUnreachable,
)
from workbench.core.workers.openai import OpenAIWorker
from workbench.core.workers.retry import RetryPolicy, parse_retry_after
from workbench.core.workers.spec import Timeouts, WorkerSpec
from workbench.core.workers.transport import open_client

KEY = "sk-test-FAULTS-0123456789abcdef"
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 6 * 7?"},
]
FAST_RETRY = RetryPolicy(attempts=4, backoff=0.01, jitter=0.01, max_wait=5.0)


def make_worker(server, *, key=KEY, retry=FAST_RETRY, client=None, **spec):
    spec.setdefault("timeouts", Timeouts(connect=2.0, read=1.0, total=5.0))
    return OpenAIWorker(
        WorkerSpec(id="loop", provider="openai", model=MODEL, base_url=server.base_url, **spec),
        key=key,
        retry=retry,
        client=client,
    )


def call(worker, messages=MESSAGES, **kw):
    async def go():
        try:
            return await worker.complete(
                messages,
                max_tokens=kw.get("max_tokens", 32),
                temperature=kw.get("temperature", 0.0),
                seed=kw.get("seed", 7),
            )
        finally:
            await worker.aclose()

    return asyncio.run(go())


def fails(worker, error_type):
    with pytest.raises(error_type) as info:
        call(worker)
    message = str(info.value)
    assert message.startswith("worker 'loop': ")
    assert KEY not in message and KEY not in repr(info.value.args)
    return info.value


def test_a_normal_reply_is_read_with_usage_cost_and_the_documented_request(fault_server):
    worker = make_worker(
        fault_server, price_in=2.0, price_out=10.0, extra={"reasoning_effort": "low"}
    )
    reply = call(worker, seed=11)
    (request,) = fault_server.chat_requests()
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {
        "model": MODEL,
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 32,
        "seed": 11,
        "reasoning_effort": "low",
    }
    assert "The answer is" in reply.text and reply.model == MODEL
    assert (reply.tokens_in, reply.tokens_out) == (
        7,
        len(reply.text.split()),
    )  # the server's word counts
    assert reply.cost == pytest.approx((7 * 2.0 + reply.tokens_out * 10.0) / 1e6)
    assert reply.usage_estimated is False and reply.attempts == 1 and reply.cached is False


def test_worker_settings_override_the_run_and_max_completion_tokens_replaces_max_tokens(
    fault_server,
):
    worker = make_worker(
        fault_server, temperature=0.7, max_tokens=99, extra={"max_completion_tokens": 500}
    )
    call(worker, temperature=0.0, max_tokens=32)
    body = fault_server.chat_requests()[0].json
    assert (
        body["temperature"] == 0.7
        and body["max_completion_tokens"] == 500
        and "max_tokens" not in body
    )


def test_a_reply_without_usage_is_estimated_and_marked(fault_server):
    fault_server.usage = False
    reply = call(make_worker(fault_server, price_in=1.0, price_out=1.0))
    assert reply.usage_estimated is True
    assert reply.tokens_in > 0 and reply.tokens_out > 0
    assert reply.cost == pytest.approx((reply.tokens_in + reply.tokens_out) / 1e6)


def test_429_with_retry_after_seconds_waits_that_long_then_succeeds(fault_server, caplog):
    fault_server.script(Fault.rate_limited("1"))
    with caplog.at_level(logging.WARNING, logger="workbench.core.workers.http"):
        reply = call(make_worker(fault_server))
    first, second = fault_server.chat_requests()
    assert second.at - first.at >= 0.95
    assert reply.attempts == 2
    assert any(
        "rate limited (429 Too Many Requests)" in r.getMessage()
        and "retry 1 of 3" in r.getMessage()
        for r in caplog.records
    )


def test_429_with_retry_after_as_an_http_date_is_honoured(fault_server):
    fault_server.script(Fault.rate_limited(email.utils.formatdate(time.time() + 2, usegmt=True)))
    reply = call(make_worker(fault_server))
    first, second = fault_server.chat_requests()
    assert second.at - first.at >= 0.9  # the date has whole seconds: between 1 and 2 s from now
    assert reply.attempts == 2


def test_retry_after_beyond_the_cap_fails_at_once_and_says_when(fault_server):
    fault_server.script(Fault.rate_limited("3600"))
    error = fails(make_worker(fault_server), RateLimited)
    assert error.retry_after == pytest.approx(3600) and error.attempts == 1 and error.status == 429
    assert "wait 3600 s" in str(error) and "rpm" in str(error)
    assert len(fault_server.chat_requests()) == 1


def test_parse_retry_after_reads_seconds_dates_and_rejects_junk():
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after("0.5") == 0.5
    now = time.time()
    assert parse_retry_after(
        email.utils.formatdate(now + 30, usegmt=True), now=now
    ) == pytest.approx(30, abs=1)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_a_burst_of_500_and_503_is_retried_with_backoff(fault_server):
    fault_server.script(Fault.status_code(500), Fault.status_code(503), Fault.status_code(503))
    reply = call(make_worker(fault_server))
    assert reply.attempts == 4 and len(fault_server.chat_requests()) == 4


def test_persistent_503_gives_up_after_the_cap_and_says_so(fault_server):
    fault_server.script(*[Fault.status_code(503, "overloaded")] * 4)
    error = fails(make_worker(fault_server), ProviderError)
    assert error.status == 503 and error.attempts == 4
    assert "503 Service Unavailable" in str(error) and "overloaded" in str(error)
    assert str(error).endswith("(gave up after 4 attempts)")
    assert len(fault_server.chat_requests()) == 4


def test_a_body_that_stalls_past_the_read_timeout_is_a_timeout(fault_server):
    fault_server.script(Fault.stall(2.0))
    error = fails(
        make_worker(
            fault_server,
            timeouts=Timeouts(connect=1.0, read=0.3, total=5.0),
            retry=RetryPolicy(attempts=1),
        ),
        WorkerTimeout,
    )
    assert "0.3 s (timeouts.read)" in str(error)


def test_a_stalled_body_is_retried_and_the_retry_succeeds(fault_server):
    fault_server.script(Fault.stall(2.0))
    reply = call(make_worker(fault_server, timeouts=Timeouts(connect=1.0, read=0.3, total=5.0)))
    assert reply.attempts == 2 and "The answer is" in reply.text


def test_a_body_that_trickles_past_the_total_timeout_is_a_timeout(fault_server):
    fault_server.script(Fault.trickle(0.25, pieces=8))  # ~2 s in all, never 0.5 s silent
    error = fails(
        make_worker(
            fault_server,
            timeouts=Timeouts(connect=0.5, read=0.5, total=0.8),
            retry=RetryPolicy(attempts=1),
        ),
        WorkerTimeout,
    )
    assert "longer than 0.8 s (timeouts.total)" in str(error)


def test_truncated_json_is_a_bad_response_showing_the_first_bytes_not_retried(fault_server):
    fault_server.script(
        Fault.raw(b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "The ans')
    )
    error = fails(make_worker(fault_server), BadResponse)
    assert "not valid JSON" in str(error) and '{"id": "chatcmpl-1", "choices"' in str(error)
    assert error.attempts == 1 and len(fault_server.chat_requests()) == 1


@pytest.mark.parametrize(
    "body,expected",
    [
        (b"<html><body>502 Bad Gateway</body></html>", "<html><body>502"),
        (b'{"id": "x", "object": "chat.completion"}', "no 'choices'"),
        (
            b'{"choices": [{"message": {"role": "assistant", "content": ""}, "finish_reason": "length"}]}',
            "empty content: the model used all its output tokens (finish_reason 'length')",
        ),
        (
            b'{"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "stop"}]}',
            "empty content (finish_reason 'stop')",
        ),
        (b"[1, 2, 3]", "not a JSON object"),
    ],
)
def test_malformed_bodies_are_bad_responses_with_a_reason(fault_server, body, expected):
    fault_server.script(Fault.raw(body))
    error = fails(make_worker(fault_server), BadResponse)
    assert expected in str(error)


def test_a_dropped_connection_is_retried(fault_server):
    fault_server.script(Fault.drop(), Fault.drop())
    reply = call(make_worker(fault_server))
    assert reply.attempts == 3 and len(fault_server.chat_requests()) == 3


def test_connections_that_always_drop_end_as_unreachable(fault_server):
    fault_server.script(*[Fault.drop()] * 4)
    error = fails(make_worker(fault_server), WorkerUnreachable)
    assert "dropped before a full reply" in str(error) and error.attempts == 4


def test_a_server_that_is_gone_is_unreachable_with_the_fix(fault_server):
    worker = make_worker(fault_server, retry=RetryPolicy(attempts=2, backoff=0.01, jitter=0.0))
    fault_server.stop()
    error = fails(worker, WorkerUnreachable)
    assert "cannot connect to http://127.0.0.1:" in str(
        error
    ) and "check that the server runs" in str(error)


def test_401_names_the_fix_is_not_retried_and_masks_a_key_the_server_echoes(fault_server):
    fault_server.script(Fault.status_code(401, f"Incorrect API key provided: {KEY}."))
    error = fails(make_worker(fault_server), AuthError)
    assert "the API key was rejected (401 Unauthorized)" in str(error)
    assert "trinity-workbench workers set-key loop --key-stdin" in str(error)
    assert "Incorrect API key provided: ****" in str(error)
    assert error.attempts == 1 and len(fault_server.chat_requests()) == 1


def test_401_without_a_key_says_none_is_set_and_names_the_environment_variable(fault_server):
    fault_server.script(Fault.status_code(401, "missing bearer token"))
    error = fails(make_worker(fault_server, key=None, key_env="LOOPBACK_API_KEY"), AuthError)
    assert "requires an API key (401 Unauthorized) and none is set" in str(error)
    assert "export LOOPBACK_API_KEY" in str(error)
    assert "authorization" not in fault_server.chat_requests()[0].headers


@pytest.mark.parametrize(
    "status,error_type,words",
    [
        (403, AuthError, "has no access (403 Forbidden)"),
        (404, ProviderError, "not found (404 Not Found)"),
        (400, ProviderError, "refused the request (400 Bad Request)"),
    ],
)
def test_client_errors_are_not_retried(fault_server, status, error_type, words):
    fault_server.script(Fault.status_code(status, "nope"))
    error = fails(make_worker(fault_server), error_type)
    assert words in str(error) and error.status == status and error.attempts == 1
    assert len(fault_server.chat_requests()) == 1


def test_concurrency_is_bounded_per_worker_and_rpm_spaces_requests(fault_server):
    fault_server.latency = 0.1
    worker = make_worker(fault_server, concurrency=2)

    async def burst(w, n):
        try:
            return await asyncio.gather(
                *(w.complete(MESSAGES, max_tokens=8, temperature=0.0) for _ in range(n))
            )
        finally:
            await w.aclose()

    assert len(asyncio.run(burst(worker, 6))) == 6
    assert fault_server.max_in_flight == 2

    fault_server.latency = 0.0
    fault_server.requests.clear()
    started = time.perf_counter()
    asyncio.run(burst(make_worker(fault_server, rpm=600), 4))  # one request per 0.1 s
    assert time.perf_counter() - started >= 0.3
    times = sorted(r.at for r in fault_server.chat_requests())
    assert times[3] - times[1] >= 0.18  # (the first one also opened the connection)


def test_workers_share_the_run_client_and_own_clients_are_closed(fault_server):
    async def go():
        async with open_client() as client:
            a, b = (
                make_worker(fault_server, client=client),
                make_worker(fault_server, client=client),
            )
            await asyncio.gather(
                a.complete(MESSAGES, max_tokens=8, temperature=0.0),
                b.complete(MESSAGES, max_tokens=8, temperature=0.0),
            )
            assert a._http(a._loop_state()) is client is b._http(b._loop_state())
            await a.aclose()
            assert not client.is_closed  # the run's client outlives its workers
        own = make_worker(fault_server)
        await own.complete(MESSAGES, max_tokens=8, temperature=0.0)
        mine = own._loop_state().own_client
        assert mine is not None and not mine.is_closed
        await own.aclose()
        assert mine.is_closed

    asyncio.run(go())


def test_a_worker_can_be_used_from_two_event_loops(fault_server):
    worker = make_worker(fault_server)
    assert "The answer is" in call(worker).text
    assert "The answer is" in call(worker).text  # a second asyncio.run: fresh semaphore and client


class FixedCoordinator(AnyContext):
    """Chooses from a fixed list of (worker index, role) actions: the faults, not the
    coordinator, are under test here."""

    def __init__(self, n_workers, script):
        self.n_workers, self.script, self.turn = n_workers, list(script), 0

    async def adecide(self, transcript, rng=None):
        w, role = self.script[self.turn]
        self.turn += 1
        r = [str(x) for x in ROLES].index(role)
        return Action(
            w,
            r,
            tuple(1.0 if i == w else 0.0 for i in range(self.n_workers)),
            tuple(1.0 if i == r else 0.0 for i in range(3)),
        )


def test_the_episode_record_shows_what_happened_under_faults(fault_server):
    fault_server.script(
        Fault.status_code(503),
        Fault.rate_limited("0"),
        Fault.ok(),  # turn 0: 2 retries
        Fault.status_code(401, f"bad key {KEY}"),  # turn 1: fails, recorded
        *[Fault.drop()] * 4,
    )  # turn 2: every attempt dropped
    worker = make_worker(fault_server)
    task = Task(id="t1", kind="math", prompt="What is 6 * 7?", answer="42")
    coordinator = FixedCoordinator(
        1, [(0, "worker"), (0, "verifier"), (0, "verifier"), (0, "thinker")]
    )

    async def go():
        try:
            return await run_episode(
                coordinator,
                [worker],
                task,
                EpisodeSettings(max_turns=4, temperature=0.0, max_tokens=16),
            )
        finally:
            await worker.aclose()

    episode = asyncio.run(go())
    t0, t1, t2, t3 = episode.turns
    assert t0.error is None and "The answer is" in t0.response and t0.tokens_out > 0
    assert len(fault_server.chat_requests()) == 3 + 1 + 4 + 1
    assert "the API key was rejected (401 Unauthorized)" in t1.error and "set-key loop" in t1.error
    assert "dropped before a full reply" in t2.error and "gave up after 4 attempts" in t2.error
    assert t3.error is None and t3.response
    assert episode.stop_reason is StopReason.MAX_TURNS
    assert KEY not in str(episode.to_dict())
