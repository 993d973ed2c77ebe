"""What the server accepts: an OpenAI chat request's body read (within a size and a
time limit), parsed as JSON and checked field by field against OpenAI's documented
shapes and ranges, or refused with a ``BadRequest`` in OpenAI's error shape that names
the field and the fix. The routes that answer (``api.py``) take a ``ChatRequest``.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from workbench.core.errors import BadInput
from workbench.core.serving.team import CHAT_ROLES


class BadRequest(BadInput):
    """A request the server refuses; ``response()`` is its OpenAI-shaped error."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.type = status, message, type
        self.code = code or DEFAULT_CODES.get(status, "invalid_request")
        self.param, self.headers = param, headers

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def response(self) -> JSONResponse:
        return SafeJSONResponse(self.body(), status_code=self.status, headers=self.headers)


# the error code a status gets when the raise names none (OpenAI's error object always
# carries a type and, from this server, a code a client can branch on)
DEFAULT_CODES = {
    400: "invalid_value",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    429: "rate_limit_exceeded",
    408: "request_timeout",
    500: "server_error",
    502: "bad_gateway",
    503: "service_unavailable",
}


class SafeJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: an error message that quotes a client's text (a lone
    surrogate included) always encodes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


@dataclass(frozen=True, kw_only=True)
class ChatRequest:
    """The parts of an OpenAI chat request the team uses, validated."""

    messages: tuple[dict[str, str], ...]
    stream: bool = False
    include_usage: bool = False
    trace: bool = False
    kind: str = "text"
    seed: int | None = None


def _content_text(content: Any, where: str) -> str:
    """A message's content as text: a string, or a list of ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text":
                raise BadRequest(
                    400,
                    f"{where}.content[{i}] is not a text part: the team reads text only "
                    '(use {"type": "text", "text": "..."})',
                    param=f"{where}.content",
                )
            if not isinstance(part.get("text"), str):
                raise BadRequest(
                    400, f"{where}.content[{i}].text must be a string", param=f"{where}.content"
                )
            texts.append(part["text"])
        return "\n".join(texts)
    raise BadRequest(
        400, f"{where}.content must be a string or a list of text parts", param=f"{where}.content"
    )


def parse_chat_request(body: Any, model_id: str, trace_header: bool = False) -> ChatRequest:
    """Validate an OpenAI chat request; raises ``BadRequest`` (400, or 404 for another
    model) naming the field and the fix."""
    if not isinstance(body, dict):
        raise BadRequest(400, "the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest(400, f"model is required: this server serves '{model_id}'", param="model")
    if model != model_id:
        raise BadRequest(
            404,
            f"the model '{model}' does not exist here: this server serves '{model_id}'",
            code="model_not_found",
            param="model",
        )
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest(
            400, "messages is required: a non-empty list of chat messages", param="messages"
        )
    messages = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BadRequest(400, f"{where} must be an object with role and content", param=where)
        if m.get("role") not in CHAT_ROLES:
            raise BadRequest(
                400,
                f"{where}.role must be one of {', '.join(CHAT_ROLES)} (got {m.get('role')!r})",
                param=f"{where}.role",
            )
        messages.append({"role": m["role"], "content": _content_text(m.get("content"), where)})
    if messages[-1]["role"] != "user":
        raise BadRequest(
            400, "the last message must come from the user (role 'user')", param="messages"
        )
    if not messages[-1]["content"].strip():
        raise BadRequest(400, "the last user message is empty: ask a question", param="messages")
    stream = _flag(body, "stream")
    trace = _flag(body, "trace") or trace_header
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadRequest(400, "stream_options must be an object", param="stream_options")
    include_usage = _flag(options or {}, "include_usage")
    check_sampling(body)
    seed = body.get("seed")
    kind = body.get("task_kind", "text")
    if kind not in ("math", "choice", "code", "text"):
        raise BadRequest(
            400, "task_kind must be one of math, choice, code, text", param="task_kind"
        )
    return ChatRequest(
        messages=tuple(messages),
        stream=stream,
        include_usage=include_usage,
        trace=trace,
        kind=kind,
        seed=seed,
    )


INT64 = (-(2**63), 2**63 - 1)  # SQLite's integers (and vLLM's range for seed)
INT32_MAX = 2**31 - 1
# OpenAI's documented ranges for the sampling parameters (API reference, chat
# completions). The team's episodes use the run's own protocol settings, so most of
# these do not change what it does (docs/guides/serving.md); a bad value is still a 400
# naming the field, as OpenAI and vLLM answer it.
NUMBER_RANGES = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "frequency_penalty": (-2.0, 2.0),
    "presence_penalty": (-2.0, 2.0),
}
INTEGER_RANGES = {
    "max_tokens": (1, INT32_MAX),
    "max_completion_tokens": (1, INT32_MAX),
    "n": (1, 1),  # the team gives one answer per request
    "seed": INT64,
    "top_logprobs": (0, 20),
}
MAX_STOP_SEQUENCES = 4


def _number(body: dict[str, Any], name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRequest(
            400,
            f"{name} must be a number from {low:g} to {high:g}",
            param=name,
            code="invalid_type",
        )
    if not math.isfinite(value) or not low <= value <= high:
        raise BadRequest(400, f"{name} must be from {low:g} to {high:g} (got {value})", param=name)


def _integer(body: dict[str, Any], name: str, low: int, high: int) -> None:
    value = body.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(400, f"{name} must be an integer", param=name, code="invalid_type")
    if name == "n" and value != 1:
        raise BadRequest(400, "n must be 1: the team gives one answer per request", param="n")
    if not low <= value <= high:
        shown = str(value) if abs(value) < 10**30 else f"an integer of {len(str(value))} digits"
        raise BadRequest(400, f"{name} must be from {low} to {high} (got {shown})", param=name)


def check_sampling(body: dict[str, Any]) -> None:
    """The sampling parameters within OpenAI's documented ranges and types; what the team
    cannot honour (log probabilities, tools, a JSON response format) is refused."""
    for name, (low, high) in NUMBER_RANGES.items():
        _number(body, name, low, high)
    for name, (low, high) in INTEGER_RANGES.items():
        _integer(body, name, low, high)
    stop = body.get("stop")
    if stop is not None:
        sequences = [stop] if isinstance(stop, str) else stop
        if not isinstance(sequences, list) or not all(isinstance(x, str) for x in sequences):
            raise BadRequest(
                400, "stop must be a string or a list of strings", param="stop", code="invalid_type"
            )
        if len(sequences) > MAX_STOP_SEQUENCES:
            raise BadRequest(
                400, f"stop holds at most {MAX_STOP_SEQUENCES} sequences", param="stop"
            )
    bias = body.get("logit_bias")
    if bias is not None:
        if not isinstance(bias, dict):
            raise BadRequest(400, "logit_bias must be an object", param="logit_bias")
        for token, value in bias.items():
            if not token.isdigit() or isinstance(value, bool) or not isinstance(value, int | float):
                raise BadRequest(
                    400,
                    "logit_bias maps token ids to numbers from -100 to 100",
                    param="logit_bias",
                )
            if not -100 <= value <= 100:
                raise BadRequest(
                    400, "logit_bias values must be from -100 to 100", param="logit_bias"
                )
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise BadRequest(400, "user must be a string", param="user", code="invalid_type")
    if _flag(body, "logprobs"):
        raise BadRequest(
            400,
            "logprobs is not available: the team's answer is a worker's text, without "
            "log probabilities (leave logprobs out or false)",
            param="logprobs",
            code="unsupported_value",
        )
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise BadRequest(400, "tools must be a list", param="tools", code="invalid_type")
    if tools:
        raise BadRequest(
            400,
            "tools are not available: the team answers in text and calls no functions "
            "(leave tools out)",
            param="tools",
            code="unsupported_value",
        )
    response_format = body.get("response_format")
    if response_format is not None:
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in ("text", "json_object", "json_schema"):
            raise BadRequest(
                400,
                "response_format must be an object whose type is text, json_object or json_schema",
                param="response_format",
            )
        if kind != "text":
            raise BadRequest(
                400,
                f"response_format {kind} is not available: the team answers in text "
                "(ask for JSON in the message instead)",
                param="response_format",
                code="unsupported_value",
            )


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(400, f"{name} must be true or false", param=name)
    return value


async def read_json(request: Request, limit: int, timeout_s: float) -> Any:
    """The request's body as JSON, read within ``timeout_s`` (408 after) and ``limit``
    bytes, parsed and checked (``check_json_text``); every failure a ``BadRequest``."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _read_body_json(request, limit)
    except TimeoutError:
        raise BadRequest(
            408,
            f"the request body did not arrive within {timeout_s:g} s: send it whole",
            code="request_timeout",
        ) from None


async def _read_body_json(request: Request, limit: int) -> Any:
    too_big = BadRequest(
        400,
        f"the request body is larger than {limit} bytes: send a shorter conversation",
        code="body_too_large",
    )
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise too_big
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_big
    return _parse_json(bytes(body))


def _parse_json(body: bytes) -> Any:
    try:
        parsed = json.loads(body, parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(
            400, f"the request body is not valid JSON ({exc})", code="invalid_json"
        ) from None
    except RecursionError:
        raise BadRequest(
            400,
            f"the request body is nested too deeply: at most {MAX_DEPTH} levels",
            code="invalid_json",
        ) from None
    except ValueError as exc:  # an integer of more digits than Python converts, NaN
        raise BadRequest(
            400, f"the request body is not valid JSON ({exc})", code="invalid_json"
        ) from None
    check_json_text(parsed)
    return parsed


MAX_DEPTH = 64  # far beyond any chat request; the JSON decoder's own limit is ~1,000


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_json_text(value: Any) -> None:
    """Refuse a parsed body nested deeper than ``MAX_DEPTH`` or holding a string that is
    not valid Unicode (a lone surrogate escape such as \\ud800, which JSON's grammar
    allows): 400 naming where. Iterative, so no body can exhaust the stack."""
    stack: list[tuple[Any, str, int]] = [(value, "body", 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadRequest(
                400,
                f"the request body is nested too deeply: at most {MAX_DEPTH} levels",
                code="invalid_json",
            )
        if isinstance(item, str):
            _check_unicode(item, where)
        elif isinstance(item, dict):
            for key, inner in item.items():
                _check_unicode(key, where)
                stack.append((inner, f"{where}.{key}" if where != "body" else key, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, f"{where}[{i}]", depth + 1) for i, inner in enumerate(item))


def _check_unicode(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(
            400,
            f"{where} holds a character that is not valid Unicode at position {exc.start} "
            "(a lone surrogate): send UTF-8 text",
            param=None if where == "body" else where,
            code="invalid_unicode",
        ) from None
