"""Anthropic and Gemini clients against httpx.MockTransport handlers that follow the
providers' documented request and response shapes (paid APIs: the only mocks in these
tests). Each handler checks the outgoing request (path, headers, body) the way the real
API would, and answers with the documented reply or error."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from workbench.core.workers.anthropic import ANTHROPIC_VERSION, AnthropicWorker
from workbench.core.workers.base import AuthError, BadResponse, ProviderError, RateLimited
from workbench.core.workers.checks import test_connection
from workbench.core.workers.gemini import GeminiWorker
from workbench.core.workers.retry import RetryPolicy
from workbench.core.workers.spec import WorkerSpec
from workbench.core.workers.transport import open_client

ANTHROPIC_KEY = "sk-ant-api03-TESTKEY-abcdefghijklmnop"
GEMINI_KEY = "AIzaSy-TESTKEY-abcdefghijklmnopqrstu"
MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 6 * 7?"},
    {"role": "assistant", "content": "Thinking."},
    {"role": "user", "content": "Answer now."},
]
RETRY = RetryPolicy(attempts=3, backoff=0.01, jitter=0.0)


def run(worker_factory, handler, action):
    """Build the worker on a client with ``handler`` as transport and run ``action``."""
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    async def go():
        async with open_client(transport=httpx.MockTransport(record)) as client:
            return await action(worker_factory(client))

    return asyncio.run(go()), seen


def complete(**kw):
    return lambda w: w.complete(
        MESSAGES,
        max_tokens=kw.get("max_tokens", 64),
        temperature=kw.get("temperature", 0.2),
        seed=kw.get("seed", 5),
    )


# --------------------------------------------------------------------------- Anthropic


def anthropic(client, **spec):
    return AnthropicWorker(
        WorkerSpec(
            id="claude",
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            price_in=3.0,
            price_out=15.0,
            **spec,
        ),
        key=ANTHROPIC_KEY,
        client=client,
        retry=RETRY,
    )


def anthropic_message(text="42", **over):
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [
            {"type": "thinking", "thinking": "6 times 7", "signature": "sig"},
            {"type": "text", "text": text},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 25,
            "output_tokens": 3,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
        **over,
    }


def anthropic_error(status, kind, message, headers=None):
    return httpx.Response(
        status, json={"type": "error", "error": {"type": kind, "message": message}}, headers=headers
    )


def check_anthropic_request(request: httpx.Request) -> dict:
    assert request.method == "POST" and str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == ANTHROPIC_KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    return json.loads(request.content)


def test_anthropic_sends_the_documented_messages_request_and_reads_the_reply():
    def handler(request):
        body = check_anthropic_request(request)
        assert body == {
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 64,
            "temperature": 0.2,
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": "What is 6 * 7?"},
                {"role": "assistant", "content": "Thinking."},
                {"role": "user", "content": "Answer now."},
            ],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        }
        return httpx.Response(200, json=anthropic_message("The answer is 42."))

    reply, seen = run(
        lambda c: anthropic(c, extra={"thinking": {"type": "enabled", "budget_tokens": 1024}}),
        handler,
        complete(),
    )
    assert reply.text == "The answer is 42."  # the thinking block is not part of the answer
    assert (reply.tokens_in, reply.tokens_out, reply.usage_estimated) == (25, 3, False)
    assert reply.cost == pytest.approx((25 * 3.0 + 3 * 15.0) / 1e6)
    assert reply.model == "claude-sonnet-4-20250514" and len(seen) == 1


def test_anthropic_401_is_an_auth_error_naming_the_fix_without_the_key():
    def handler(r):
        return anthropic_error(401, "authentication_error", "invalid x-api-key")

    with pytest.raises(AuthError) as info:
        run(anthropic, handler, complete())
    text = str(info.value)
    assert "rejected (401 Unauthorized)" in text and "invalid x-api-key" in text
    assert "workers set-key claude" in text and ANTHROPIC_KEY not in text


def test_anthropic_overloaded_529_and_429_retry_after_are_retried():
    replies = iter(
        [
            anthropic_error(529, "overloaded_error", "Overloaded"),
            anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "0"}),
            httpx.Response(200, json=anthropic_message()),
        ]
    )
    reply, seen = run(anthropic, lambda r: next(replies), complete())
    assert reply.text == "42" and reply.attempts == 3 and len(seen) == 3


def test_anthropic_rate_limit_that_persists_is_rate_limited():
    def handler(r):
        return anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "0"})

    with pytest.raises(RateLimited) as info:
        run(anthropic, handler, complete())
    assert info.value.attempts == 3 and "slow down" in str(info.value)


def test_anthropic_max_tokens_stop_with_no_text_is_a_bad_response():
    message = anthropic_message(
        stop_reason="max_tokens",
        content=[{"type": "thinking", "thinking": "long", "signature": "s"}],
    )
    with pytest.raises(BadResponse, match="stop_reason 'max_tokens'.*raise max_tokens"):
        run(anthropic, lambda r: httpx.Response(200, json=message), complete())


def test_anthropic_refuses_a_temperature_above_its_range_before_any_call():
    seen_any = []
    with pytest.raises(Exception, match="above the Messages API's maximum of 1"):
        run(
            anthropic,
            lambda r: seen_any.append(r) or httpx.Response(200, json=anthropic_message()),
            complete(temperature=1.5),
        )
    assert not seen_any


def test_anthropic_models_are_listed_across_pages():
    def handler(request):
        assert request.method == "GET" and request.url.path == "/v1/models"
        assert request.headers["x-api-key"] == ANTHROPIC_KEY
        assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
        if request.url.params.get("after_id") is None:
            return httpx.Response(
                200,
                json={
                    "data": [
                        {
                            "type": "model",
                            "id": "claude-opus-4-1",
                            "display_name": "Claude Opus 4.1",
                        }
                    ],
                    "has_more": True,
                    "first_id": "claude-opus-4-1",
                    "last_id": "claude-opus-4-1",
                },
            )
        assert request.url.params["after_id"] == "claude-opus-4-1"
        return httpx.Response(
            200,
            json={
                "data": [
                    {
                        "type": "model",
                        "id": "claude-sonnet-4-20250514",
                        "display_name": "Claude Sonnet 4",
                    }
                ],
                "has_more": False,
                "first_id": "claude-sonnet-4-20250514",
                "last_id": "claude-sonnet-4-20250514",
            },
        )

    models, seen = run(anthropic, handler, lambda w: w.list_models())
    assert models == ["claude-opus-4-1", "claude-sonnet-4-20250514"] and len(seen) == 2


# --------------------------------------------------------------------------- Gemini


def gemini(client, **spec):
    return GeminiWorker(
        WorkerSpec(
            id="gem",
            provider="gemini",
            model="gemini-2.5-flash",
            price_in=0.3,
            price_out=2.5,
            **spec,
        ),
        key=GEMINI_KEY,
        client=client,
        retry=RETRY,
    )


def gemini_reply(text="42", **over):
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "let me think", "thought": True}, {"text": text}],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 20,
            "candidatesTokenCount": 4,
            "thoughtsTokenCount": 10,
            "totalTokenCount": 34,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "abc",
        **over,
    }


def gemini_error(status, code_name, message, reason=None):
    error = {"code": status, "message": message, "status": code_name}
    if reason:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
            }
        ]
    return httpx.Response(status, json={"error": error})


def test_gemini_sends_the_documented_generate_content_request_and_reads_the_reply():
    def handler(request):
        assert request.method == "POST"
        assert str(request.url) == (
            "https://generativelanguage.googleapis.com/v1beta/models/"
            "gemini-2.5-flash:generateContent"
        )
        assert request.headers["x-goog-api-key"] == GEMINI_KEY and "key=" not in str(request.url)
        body = json.loads(request.content)
        assert body == {
            "contents": [
                {"role": "user", "parts": [{"text": "What is 6 * 7?"}]},
                {"role": "model", "parts": [{"text": "Thinking."}]},
                {"role": "user", "parts": [{"text": "Answer now."}]},
            ],
            "systemInstruction": {"parts": [{"text": "You are terse."}]},
            "generationConfig": {
                "temperature": 0.2,
                "maxOutputTokens": 64,
                "seed": 5,
                "thinkingConfig": {"thinkingBudget": 128},
            },
        }
        return httpx.Response(200, json=gemini_reply("The answer is 42."))

    reply, _ = run(
        lambda c: gemini(
            c, extra={"generationConfig": {"thinkingConfig": {"thinkingBudget": 128}}}
        ),
        handler,
        complete(),
    )
    assert reply.text == "The answer is 42."  # the thought part is not the answer
    assert (reply.tokens_in, reply.tokens_out) == (20, 14)  # thoughts are billed as output
    assert reply.cost == pytest.approx((20 * 0.3 + 14 * 2.5) / 1e6)
    assert reply.model == "gemini-2.5-flash"


def test_gemini_invalid_key_400_is_an_auth_error():
    def handler(r):
        return gemini_error(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            "API_KEY_INVALID",
        )

    with pytest.raises(AuthError) as info:
        run(gemini, handler, complete())
    assert "rejected (400 Bad Request)" in str(info.value) and "workers set-key gem" in str(
        info.value
    )
    assert info.value.attempts == 1 and GEMINI_KEY not in str(info.value)


def test_gemini_other_400s_are_provider_errors_not_retried():
    def handler(r):
        return gemini_error(400, "INVALID_ARGUMENT", "Invalid value at 'generation_config.seed'")

    with pytest.raises(ProviderError, match="refused the request .*generation_config.seed") as info:
        run(gemini, handler, complete())
    assert info.value.attempts == 1


def test_gemini_503_then_success_is_retried():
    replies = iter(
        [
            gemini_error(503, "UNAVAILABLE", "The model is overloaded."),
            httpx.Response(200, json=gemini_reply()),
        ]
    )
    reply, seen = run(gemini, lambda r: next(replies), complete())
    assert reply.text == "42" and reply.attempts == 2 and len(seen) == 2


@pytest.mark.parametrize(
    "doc,expected",
    [
        (
            {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}},
            "the prompt was blocked (blockReason SAFETY)",
        ),
        (
            gemini_reply(
                candidates=[
                    {
                        "content": {"role": "model", "parts": [{"text": "hm", "thought": True}]},
                        "finishReason": "MAX_TOKENS",
                    }
                ]
            ),
            "finishReason 'MAX_TOKENS'",
        ),
        ({"usageMetadata": {}}, "no 'candidates'"),
    ],
)
def test_gemini_unusable_replies_are_bad_responses(doc, expected):
    with pytest.raises(BadResponse) as info:
        run(gemini, lambda r: httpx.Response(200, json=doc), complete())
    assert expected in str(info.value)


def test_gemini_models_are_listed_across_pages_and_only_generators_kept():
    def handler(request):
        assert (
            request.url.path == "/v1beta/models" and request.headers["x-goog-api-key"] == GEMINI_KEY
        )
        if "pageToken" not in request.url.params:
            return httpx.Response(
                200,
                json={
                    "models": [
                        {
                            "name": "models/gemini-2.5-flash",
                            "supportedGenerationMethods": ["generateContent", "countTokens"],
                        },
                        {
                            "name": "models/text-embedding-004",
                            "supportedGenerationMethods": ["embedContent"],
                        },
                    ],
                    "nextPageToken": "p2",
                },
            )
        assert request.url.params["pageToken"] == "p2"
        return httpx.Response(
            200,
            json={
                "models": [
                    {
                        "name": "models/gemini-2.5-pro",
                        "supportedGenerationMethods": ["generateContent"],
                    }
                ]
            },
        )

    models, seen = run(gemini, handler, lambda w: w.list_models())
    assert models == ["gemini-2.5-flash", "gemini-2.5-pro"] and len(seen) == 2


def test_connection_test_reports_latency_model_and_the_error_explained():
    report, _ = run(gemini, lambda r: httpx.Response(200, json=gemini_reply("OK")), test_connection)
    assert (
        report.ok
        and report.model == "gemini-2.5-flash"
        and report.reply == "OK"
        and report.latency_s > 0
    )
    report, seen = run(
        anthropic, lambda r: anthropic_error(529, "overloaded_error", "Overloaded"), test_connection
    )
    assert not report.ok and report.error_kind == "ProviderError" and report.status == 529
    assert "Overloaded" in report.error and len(seen) == 1  # a test makes one attempt, no retries
