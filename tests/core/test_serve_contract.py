"""The server's OpenAI error contract, against the real server on loopback: every 4xx and
5xx is JSON in OpenAI's error shape (``{"error": {message, type, param, code}}``),
unknown paths and methods included; sampling parameters are checked against OpenAI's
documented ranges; what would once crash the server (huge integers, lone surrogates,
absurd nesting, NaN) is a 400. A Hypothesis fuzz test over request bodies holds it to
that: no 500, and a JSON error for every body it rejects."""

# ruff: noqa: F811 (the fixtures of test_serve.py, imported, are redefined as arguments)
from __future__ import annotations

import json

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_serve import QUESTION, sandbox_team, serve, stored, ws  # noqa: F401
from workbench.core.store import Store

ERROR_KEYS = {"message", "type", "param", "code"}


def openai_error(response: httpx.Response) -> dict:
    """The response's error object, checked to be OpenAI's shape with a type and code."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    error = response.json()["error"]
    assert set(error) == ERROR_KEYS, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str) and isinstance(error["code"], str)
    return error


def test_unknown_paths_and_methods_are_openai_errors(serve, sandbox_team):
    served = serve(sandbox_team)
    root = served.url.removesuffix("/v1")
    for method, path in [("GET", "/v1/completions"), ("POST", "/v1/embeddings"), ("GET", "/")]:
        response = httpx.request(method, root + path)
        error = openai_error(response)
        assert response.status_code == 404 and error["code"] == "unknown_url"
        assert f"Invalid URL ({method} {path})" in error["message"]
    response = httpx.get(f"{served.url}/chat/completions")
    error = openai_error(response)
    assert response.status_code == 405 and error["code"] == "method_not_allowed"
    assert "use POST" in error["message"] and response.headers["allow"] == "POST"
    with pytest.raises(openai.NotFoundError):  # the official client reads it as such
        served.client.embeddings.create(model=sandbox_team.model_id, input="x")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("max_tokens", -5, "max_tokens must be from 1"),
        ("max_completion_tokens", 0, "max_completion_tokens must be from 1"),
        ("temperature", -3, "temperature must be from 0 to 2"),
        ("temperature", "hot", "temperature must be a number"),
        ("temperature", True, "temperature must be a number"),
        ("top_p", 1.5, "top_p must be from 0 to 1"),
        ("presence_penalty", 2.5, "presence_penalty must be from -2 to 2"),
        ("frequency_penalty", -9, "frequency_penalty must be from -2 to 2"),
        ("n", True, "n must be an integer"),
        ("n", 2, "n must be 1"),
        ("seed", 2**64, "seed must be from"),
        ("seed", "1", "seed must be an integer"),
        ("top_logprobs", 21, "top_logprobs must be from 0 to 20"),
        ("stop", ["a", "b", "c", "d", "e"], "at most 4"),
        ("stop", 7, "stop must be a string or a list"),
        ("logit_bias", {"50256": 101}, "from -100 to 100"),
        ("logit_bias", {"the": 1}, "maps token ids"),
        ("user", 3, "user must be a string"),
        ("logprobs", True, "logprobs is not available"),
        ("tools", [{"type": "function"}], "tools are not available"),
        ("response_format", {"type": "json_object"}, "json_object is not available"),
        ("response_format", "json", "response_format must be an object"),
    ],
)
def test_sampling_parameters_out_of_range_are_400s_naming_the_field(
    serve, sandbox_team, field, value, expected
):
    served = serve(sandbox_team)
    with pytest.raises(openai.BadRequestError) as caught:
        served.chat(extra_body={field: value})
    error = caught.value.body
    assert expected in error["message"] and error["param"] == field
    assert set(error) == ERROR_KEYS and error["code"]


def test_sampling_parameters_in_range_are_accepted(serve, sandbox_team):
    served = serve(sandbox_team)
    completion = served.chat(
        temperature=2,
        top_p=0,
        max_tokens=1,
        presence_penalty=-2,
        frequency_penalty=2,
        seed=2**63 - 1,
        stop=["\n\n"],
        user="someone",
        logit_bias={"50256": -100},
        response_format={"type": "text"},
    )
    assert completion.choices[0].message.content


def test_what_once_crashed_the_server_is_a_400(serve, sandbox_team, ws):
    """``seed`` 2**64 (OverflowError in SQLite), a lone surrogate (UnicodeEncodeError),
    JSON nested 100,000 deep (RecursionError), NaN: each a 400, and the server goes on."""
    served = serve(sandbox_team)
    model = sandbox_team.model_id
    cases = {
        "seed 2**64": (json.dumps({"model": model, "messages": QUESTION, "seed": 2**64}), "seed"),
        "a 5,000-digit integer": (
            f'{{"model": "{model}", "messages": [], "seed": {"9" * 5000}}}',
            "not valid JSON",
        ),
        "a lone surrogate": (
            json.dumps({"model": model, "messages": [{"role": "user", "content": "\ud800"}]}),
            "not valid Unicode",
        ),
        "a lone surrogate in a key": (
            json.dumps({"model": model, "messages": QUESTION, "\udfff": 1}),
            "not valid Unicode",
        ),
        "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        "nested 100 deep": (
            json.dumps(
                {"model": model, "messages": QUESTION, "metadata": [[[[[[[[[[]]]]]]]]]] * 1}
            ).replace("[[[[[[[[[[]]]]]]]]]]", "[" * 100 + "]" * 100),
            "nested too deeply",
        ),
        "NaN": (
            f'{{"model": "{model}", "messages": {json.dumps(QUESTION)}, "temperature": NaN}}',
            "NaN is not a JSON number",
        ),
        "invalid UTF-8": (b'{"model": "\xff"}', "not valid JSON"),
        "a surrogate in UTF-8": (b'{"model": "\xed\xa0\x80"}', "not valid Unicode"),
    }
    for name, (body, expected) in cases.items():
        response = served.post(body.encode() if isinstance(body, str) else body)
        assert response.status_code == 400, (name, response.status_code, response.text[:200])
        assert expected in openai_error(response)["message"], name
    assert served.chat().choices[0].message.content  # still serving
    with Store.open(ws) as store:  # only the last request ran an episode
        (run,) = store.list_runs(kind="serve")
        assert len(store.list_episodes(run.id)) == 1


# ---------------------------------------------------------------------------- fuzz

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
ANY_JSON = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "model", "messages", "stream", "stream_options", "n", "seed", "temperature", "top_p",
    "max_tokens", "max_completion_tokens", "stop", "logit_bias", "logprobs", "top_logprobs",
    "user", "tools", "response_format", "task_kind", "trace", "presence_penalty",
]  # fmt: skip


@st.composite
def request_bodies(draw) -> bytes:
    """A valid chat request with some fields replaced by arbitrary JSON, a random JSON
    document, a message list of odd shapes, or raw bytes."""
    kind = draw(st.sampled_from(["mutated", "messages", "json", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "json":
        return json.dumps(draw(ANY_JSON)).encode()
    body = {"model": "trinity-team", "messages": list(QUESTION)}
    if kind == "messages":
        message = draw(
            st.dictionaries(st.sampled_from(["role", "content", "name"]), ANY_JSON, max_size=3)
            | st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "system", "assistant", "robot"]),
                    "content": st.text(max_size=30) | ANY_JSON,
                }
            )
        )
        body["messages"] = draw(st.lists(st.just(message), min_size=0, max_size=3))
    else:
        for field in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3)):
            body[field] = draw(ANY_JSON)
    return json.dumps(body).encode()


def test_fuzzed_request_bodies_never_get_a_500_and_every_rejection_is_json(serve, sandbox_team):
    served = serve(sandbox_team)
    seen: dict[int, int] = {}

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(body=request_bodies())
    def check(body: bytes) -> None:
        response = served.post(body, headers={"content-type": "application/json"})
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        assert response.status_code < 500, (body[:200], response.text[:300])
        if response.status_code >= 400:
            openai_error(response)
        elif not json.loads(body).get("stream"):
            assert response.json()["choices"][0]["message"]["content"]
        else:
            assert response.text.rstrip().endswith("data: [DONE]")

    check()
    assert seen.get(400, 0) > 50 and seen.get(200, 0) > 0, seen  # both sides were reached
