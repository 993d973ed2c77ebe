"""The team behind the OpenAI API: a Starlette app (run it on uvicorn) serving one model,
the team, at ``/v1/models`` and ``/v1/chat/completions`` (plain JSON or server-sent events
in OpenAI's chunk format, ending ``data: [DONE]``).

Each request runs one episode (``Team.answer``) and is stored. What the OpenAI API does
not carry travels in an extension object ``trinity`` (episode id, cost, stop reason and,
when asked with ``"trace": true`` or the header ``X-Trinity-Trace: 1``, the turns) and in
the header ``X-Trinity-Episode-Id``. A stream that would stay silent for ``keepalive_s``
(a long episode) gets an SSE comment line, which clients skip. At most ``concurrency``
episodes run at once; up to ``queue`` more wait; beyond that a request gets 429 with
``Retry-After``. Errors have OpenAI's shape ``{"error": {"message", "type", "param",
"code"}}`` and never hold a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from workbench.core.records import ROLES, Episode, RunStopReason, StopReason, Turn
from workbench.core.serving.requests import (
    BadRequest,
    ChatRequest,
    SafeJSONResponse,
    parse_chat_request,
    read_json,
)
from workbench.core.serving.team import (
    PromptTooLong,
    Team,
    TurnDecided,
    TurnReplied,
    question_task,
)
from workbench.core.spend import spend_kind
from workbench.core.store.episode_file import counted_from_1, turns_from_1

log = logging.getLogger(__name__)

EPISODE_HEADER = "X-Trinity-Episode-Id"
TRACE_HEADER = "X-Trinity-Trace"
MAX_BODY_BYTES = 1 << 20  # 1 MiB: a chat request is text; anything larger is a mistake
STREAM_PIECE_CHARS = 64  # the final answer is sent in pieces of this size
KEEPALIVE_S = 15.0  # a stream silent this long gets an SSE comment, so proxies keep it open


@dataclass(frozen=True, kw_only=True)
class ServeSettings:
    """How the server admits requests and whom: ``api_key`` None lets anyone call."""

    concurrency: int = 4
    queue: int = 16
    api_key: str | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    keepalive_s: float = KEEPALIVE_S
    body_timeout_s: float = 30.0  # a request's body must arrive within this

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("--concurrency must be at least 1")
        if self.queue < 0:
            raise ValueError("--queue must be 0 or more")
        if not self.keepalive_s > 0:
            raise ValueError("keepalive_s must be more than 0 seconds")
        if not self.body_timeout_s > 0:
            raise ValueError("body_timeout_s must be more than 0 seconds")

    def __repr__(self) -> str:  # the key never prints
        key = "****" if self.api_key else None
        return f"ServeSettings(concurrency={self.concurrency}, queue={self.queue}, api_key={key})"


# --------------------------------------------------------------------------- admission


class Gate:
    """At most ``concurrency`` episodes at once and ``queue`` waiting; ``admit()`` says
    no (None) beyond that. ``retry_after()`` estimates when a slot frees up."""

    def __init__(self, concurrency: int, queue: int):
        self.concurrency = concurrency
        self.limit = concurrency + queue
        self.admitted = 0
        self._slots = asyncio.Semaphore(concurrency)
        self._mean_s = 1.0  # moving mean of episode durations

    def admit(self) -> Ticket | None:
        if self.admitted >= self.limit:
            return None
        self.admitted += 1
        return Ticket(self)

    def retry_after(self) -> int:
        waiting = max(self.admitted - self.concurrency, 0) + 1
        return max(1, math.ceil(self._mean_s * waiting / self.concurrency))

    def _record(self, seconds: float) -> None:
        self._mean_s = 0.8 * self._mean_s + 0.2 * seconds


class Ticket:
    """One admitted request: ``slot()`` waits for a free episode slot; ``release()``
    (idempotent) leaves the gate."""

    def __init__(self, gate: Gate):
        self._gate = gate
        self._released = False

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._gate._slots:
            started = time.perf_counter()
            try:
                yield
            finally:
                self._gate._record(time.perf_counter() - started)

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._gate.admitted -= 1


class _AdmittedStream(StreamingResponse):
    """A streaming response that leaves the gate when it ends, however it ends (a client
    that hangs up before the body starts included)."""

    def __init__(self, content: AsyncIterator[bytes], ticket: Ticket, **kwargs: Any):
        super().__init__(content, **kwargs)
        self._ticket = ticket

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._ticket.release()


# --------------------------------------------------------------------------- responses


def turn_trace(turn: Turn, pool: Sequence[str]) -> dict[str, Any]:
    """One turn as the trace shows it: who, in what role, with what probabilities, and
    what came of it."""
    return {
        "index": counted_from_1(turn.index),  # from 1, as every output counts turns
        "role": str(turn.role),
        "worker": turn.worker,
        "worker_probs": dict(zip(pool, turn.worker_probs, strict=True)),
        "role_probs": {str(r): p for r, p in zip(ROLES, turn.role_probs, strict=True)},
        "called": bool(turn.messages),
        "response": turn.response,
        "verdict": turn.verdict,
        "tokens_in": turn.tokens_in,
        "tokens_out": turn.tokens_out,
        "cost": turn.cost,
        "latency_s": turn.latency_s,
        "error": turn.error,
    }


def _event_trace(event: TurnDecided | TurnReplied, pool: Sequence[str]) -> dict[str, Any]:
    if isinstance(event, TurnDecided):
        return {
            "event": "turn_decided",
            "index": counted_from_1(event.index),
            "role": str(event.role),
            "worker": event.worker,
            "worker_probs": dict(zip(pool, event.worker_probs, strict=True)),
            "role_probs": {str(r): p for r, p in zip(ROLES, event.role_probs, strict=True)},
        }
    return {
        "event": "turn_replied",
        "index": counted_from_1(event.index),
        "role": str(event.role),
        "worker": event.worker,
        "response": event.text,
        "verdict": event.verdict,
        "tokens_in": event.tokens_in,
        "tokens_out": event.tokens_out,
        "cost": event.cost,
        "latency_s": event.latency_s,
        "error": event.error,
    }


def _usage(episode: Episode) -> dict[str, int]:
    return {
        "prompt_tokens": episode.tokens_in,
        "completion_tokens": episode.tokens_out,
        "total_tokens": episode.tokens_in + episode.tokens_out,
    }


def _extension(episode: Episode, trace: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "episode_id": episode.id,
        "cost": episode.cost,
        # sandbox dollars are a simulation's: say so wherever they show
        "cost_kind": spend_kind(t.worker for t in episode.turns) or "real",
        "stop_reason": str(episode.stop_reason),
        "turns_used": len(episode.turns),
        # the turns played in the Worker role because the episode would otherwise have
        # ended without an answer (``--final-turn worker``, docs/guides/serving.md)
        "worker_only_turns": turns_from_1(list(episode.grade_details.get("worker_only_turns", []))),
    }
    if trace:
        out["turns"] = [turn_trace(t, episode.pool) for t in episode.turns]
    return out


def episode_failure(episode: Episode) -> BadRequest | None:
    """The error a request gets when its episode produced no answer: 502 naming the
    failing workers when every call failed, else 502 saying why there is no answer."""
    if episode.answer is not None and episode.stop_reason is not StopReason.WORKER_ERRORS:
        return None
    failed = [t for t in episode.turns if t.error is not None]
    if episode.stop_reason is StopReason.WORKER_ERRORS or (failed and episode.answer is None):
        workers = sorted({t.worker for t in failed})
        detail = "; ".join(dict.fromkeys(t.error for t in failed if t.error))
        return BadRequest(
            502,
            f"the team's worker call(s) failed ({', '.join(workers)}): {detail}",
            type="worker_error",
            code="worker_failed",
            param=None,
        )
    why = {
        StopReason.VERIFIER_WITHOUT_ANSWER: "the coordinator asked for a Verifier before any "
        "Worker answer",
    }.get(episode.stop_reason, f"no Worker answered within {episode.max_turns} turns")
    return BadRequest(
        502,
        f"the team gave no answer: {why} (episode {episode.id}; raise --max-turns or train "
        "the coordinator longer)",
        type="team_error",
        code="no_answer",
    )


# --------------------------------------------------------------------------- the app


def create_app(team: Team, settings: ServeSettings | None = None) -> Starlette:
    """The OpenAI-compatible app for ``team``. Its lifespan starts the team (pool, store,
    ``serve`` run) and closes it after the server stopped taking requests."""
    api = _TeamAPI(team, settings or ServeSettings())
    app = Starlette(
        routes=[
            Route("/health", api.health),
            Route("/v1/models", api.models),
            Route("/v1/models/{model:path}", api.model),
            Route("/v1/chat/completions", api.chat, methods=["POST"]),
        ],
        lifespan=api.lifespan,
        exception_handlers={HTTPException: _http_error, Exception: _crash},
    )
    app.state.cancelled_on_stop = 0  # requests the server's stop cancelled (the exit code)
    return app


class _TeamAPI:
    """The endpoints of one served team: the key check, the model card, chat completions
    (whole or streamed) and the lifespan that starts and closes the team."""

    def __init__(self, team: Team, settings: ServeSettings):
        self.team = team
        self.settings = settings
        self.expected = settings.api_key.encode() if settings.api_key else None
        self.gate: Gate | None = None  # made by the lifespan
        self.created = time.time()

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        try:
            await self.team.start()
        except Exception as exc:  # the runner reports it (missing key, unknown worker ...)
            app.state.startup_error = exc
            raise
        self.gate = Gate(self.settings.concurrency, self.settings.queue)
        self.created = time.time()
        try:
            yield
        finally:
            await self.team.aclose(stop_reason=RunStopReason.SHUTDOWN)

    def authorise(self, request: Request) -> None:
        if self.expected is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), self.expected
        ):
            raise BadRequest(
                401,
                "missing or wrong API key: send 'Authorization: Bearer <key>' with the key "
                "stored by `trinity-workbench serve set-key`",
                code="invalid_api_key",
            )

    def model_card(self) -> dict[str, Any]:
        return {
            "id": self.team.model_id,
            "object": "model",
            "created": int(self.created),
            "owned_by": "trinity-workbench",
            "trinity": self.team.describe(),
        }

    async def models(self, request: Request) -> Response:
        try:
            self.authorise(request)
        except BadRequest as exc:
            return exc.response()
        return JSONResponse({"object": "list", "data": [self.model_card()]})

    async def model(self, request: Request) -> Response:
        try:
            self.authorise(request)
            if request.path_params["model"] != self.team.model_id:
                raise BadRequest(
                    404,
                    f"the model '{request.path_params['model']}' does not exist here: this "
                    f"server serves '{self.team.model_id}'",
                    code="model_not_found",
                )
        except BadRequest as exc:
            return exc.response()
        return JSONResponse(self.model_card())

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": self.team.model_id})

    async def chat(self, request: Request) -> Response:
        try:
            chat_request, ticket = await self._admit(request)
        except BadRequest as exc:
            return exc.response()
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        episode_id = uuid.uuid4().hex
        headers = {EPISODE_HEADER: episode_id}
        if chat_request.stream:
            return _AdmittedStream(
                self._stream(request.app, chat_request, ticket, completion_id, episode_id),
                ticket,
                media_type="text/event-stream",
                headers={**headers, "Cache-Control": "no-cache"},
            )
        try:
            async with ticket.slot():
                started = time.perf_counter()
                job = asyncio.create_task(
                    self.team.answer(
                        chat_request.messages,
                        kind=chat_request.kind,
                        seed=chat_request.seed,
                        episode_id=episode_id,
                    )
                )
                if not await _until_done_or_gone(job, request):
                    # the client left: the episode is cancelled (its turns stored) and
                    # nobody reads this; 499 is the status proxies log for it
                    return _client_closed()
                episode = job.result()
        except BadRequest as exc:
            return exc.response()
        except asyncio.CancelledError:
            if not self.team.stopping:
                raise
            request.app.state.cancelled_on_stop += 1
            # the server stopped past its grace: the episode's turns are stored, cancelled;
            # the client, if still there, hears why (uvicorn would log a traceback)
            return BadRequest(
                503,
                f"the server stopped before the episode ended (episode {episode_id}: the "
                "turns it played are stored, cancelled): retry when it is back",
                type="server_error",
                code="server_stopping",
            ).response()
        except Exception as exc:  # not a worker's failure (those end on the episode's turns)
            log.exception("episode %s failed", episode_id)
            return _server_error(exc).response()
        finally:
            ticket.release()
        # what the episode took (coordinator, workers, storing): the rest of a request's
        # time is the server's own overhead (tests/benchmarks/bench_serve.py measures it)
        headers["Server-Timing"] = f"episode;dur={(time.perf_counter() - started) * 1000:.3f}"
        failure = episode_failure(episode)
        if failure is not None:
            body = failure.body()
            body["trinity"] = _extension(episode, chat_request.trace)
            return SafeJSONResponse(body, status_code=failure.status, headers=headers)
        return SafeJSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.team.model_id,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": episode.answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(episode),
                "trinity": _extension(episode, chat_request.trace),
            },
            headers=headers,
        )

    async def _admit(self, request: Request) -> tuple[ChatRequest, Ticket]:
        """The checks before an episode runs: the key, the body, the prompt's budget, and a
        place at the gate (429 when the team is busy)."""
        self.authorise(request)
        settings = self.settings
        body = await read_json(request, settings.max_body_bytes, settings.body_timeout_s)
        trace_header = request.headers.get(TRACE_HEADER, "").lower() in ("1", "true", "yes")
        chat_request = parse_chat_request(body, self.team.model_id, trace_header)
        await self._check_prompt(chat_request)
        assert self.gate is not None, "a request before the lifespan started the team"
        ticket = self.gate.admit()
        if ticket is None:
            raise BadRequest(
                429,
                f"the team is busy ({settings.concurrency} episodes running, "
                f"{settings.queue} waiting): retry later",
                type="rate_limit_error",
                code="rate_limit_exceeded",
                headers={"Retry-After": str(self.gate.retry_after())},
            )
        return chat_request, ticket

    async def _check_prompt(self, chat_request: ChatRequest) -> None:
        """The prompt budget, before the request is admitted or any forward runs: 400
        ``context_length_exceeded`` (OpenAI's code; vLLM answers the same)."""
        try:
            await self.team.check_prompt(question_task(chat_request.messages, chat_request.kind))
        except PromptTooLong as exc:
            raise BadRequest(
                400, str(exc), param="messages", code="context_length_exceeded"
            ) from None

    async def _stream(
        self,
        app: Starlette,
        chat_request: ChatRequest,
        ticket: Ticket,
        completion_id: str,
        episode_id: str,
    ) -> AsyncIterator[bytes]:
        try:
            async for piece in self._stream_episode(
                chat_request, ticket, completion_id, episode_id
            ):
                yield piece
        except asyncio.CancelledError:
            if self.team.stopping:  # the server stopped past its grace (counted for the exit code)
                app.state.cancelled_on_stop += 1
            raise

    async def _stream_episode(
        self, chat_request: ChatRequest, ticket: Ticket, completion_id: str, episode_id: str
    ) -> AsyncIterator[bytes]:
        team = self.team
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            data = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": team.model_id,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return _sse(data)

        yield chunk({"role": "assistant", "content": ""}, trinity={"episode_id": episode_id})
        events: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        async with ticket.slot():
            job = asyncio.create_task(
                team.answer(
                    chat_request.messages,
                    kind=chat_request.kind,
                    seed=chat_request.seed,
                    episode_id=episode_id,
                    listener=events.put_nowait if chat_request.trace else None,
                )
            )
            job.add_done_callback(lambda _: events.put_nowait(done))
            try:
                while True:
                    try:
                        event = await asyncio.wait_for(events.get(), self.settings.keepalive_s)
                    except TimeoutError:  # a long episode: an SSE comment, which clients skip
                        yield b": keep-alive\n\n"
                        continue
                    if event is done:
                        break
                    yield chunk({}, trinity={"turn": _event_trace(event, team.source.pool)})
            finally:
                if not job.done():  # the client hung up: stop the episode (not stored)
                    job.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await job
        if job.cancelled():
            if team.stopping:
                raise asyncio.CancelledError  # the stop cancelled it: counted above
            return
        exc = job.exception()
        if exc is not None:
            log.error("episode %s failed", episode_id, exc_info=exc)
            yield _sse(_server_error(exc).body())
            yield b"data: [DONE]\n\n"
            return
        episode = job.result()
        failure = episode_failure(episode)
        if failure is not None:
            body = failure.body()
            body["trinity"] = _extension(episode, chat_request.trace)
            yield _sse(body)
            yield b"data: [DONE]\n\n"
            return
        answer = episode.answer or ""
        for start in range(0, len(answer), STREAM_PIECE_CHARS):
            yield chunk({"content": answer[start : start + STREAM_PIECE_CHARS]})
        yield chunk({}, "stop", trinity=_extension(episode, chat_request.trace))
        if chat_request.include_usage:
            yield _sse(
                {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": team.model_id,
                    "choices": [],
                    "usage": _usage(episode),
                }
            )
        yield b"data: [DONE]\n\n"


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 (no such path) and 405 (wrong method) in OpenAI's shape."""
    assert isinstance(exc, HTTPException)
    where = f"{request.method} {request.url.path}"
    if exc.status_code == 404:
        error = BadRequest(
            404,
            f"Invalid URL ({where}): this server serves /v1/models and /v1/chat/completions",
            code="unknown_url",
        )
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        error = BadRequest(
            405,
            f"Method {request.method} is not allowed on {request.url.path}: use {allowed}",
            headers={"Allow": allowed} if allowed else None,
        )
    else:
        error = BadRequest(exc.status_code, str(exc.detail))
    return error.response()


async def _crash(request: Request, exc: Exception) -> Response:
    """Anything unforeseen: a 500 in OpenAI's shape (the traceback goes to the log)."""
    return _server_error(exc).response()


async def _until_done_or_gone(job: asyncio.Task[Any], request: Request) -> bool:
    """Wait for ``job``; if the client disconnects first, cancel it (and wait for it to
    store what it played) and return False. A cancellation of this request (the server
    stopping past its grace) cancels the job too."""
    gone = asyncio.create_task(_disconnected(request))
    try:
        await asyncio.wait((job, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not job.done():
            job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(job)  # let it store its turns
        gone.cancel()
    return not job.cancelled()


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _client_closed() -> Response:
    return BadRequest(
        499, "the client closed the request: the episode was cancelled", code="client_closed"
    ).response()


def _server_error(exc: BaseException) -> BadRequest:
    return BadRequest(
        500,
        f"the episode failed inside the server ({type(exc).__name__}: {exc}); see the server log",
        type="server_error",
        code="episode_failed",
    )


def _sse(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
