"""The worker behind an HTTP API: ``HTTPWorker`` turns a chat request into one exchange
over the shared transport (``workbench.core.workers.transport``), maps HTTP statuses to
``WorkerError`` subclasses with the fix for each (keys, rate limits, model names), and
accounts tokens and cost. Retries and pacing are ``workbench.core.workers.retry``; the
connection test and model listing by worker id are ``workbench.core.workers.checks``.

A worker built without a client opens its own on first use and closes it in
``aclose()``. A provider module subclasses ``HTTPWorker`` and implements the request
and the parsing of its API; nothing here knows a provider's shapes.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
from tenacity import RetryCallState

from workbench.core.keychain import KeyStatus, Secret
from workbench.core.workers.base import (
    AuthError,
    BadResponse,
    Completion,
    EpisodeContext,
    Message,
    ProviderError,
    RateLimited,
    Worker,
    WorkerError,
    WorkerTimeout,
)
from workbench.core.workers.retry import RateLimiter, RetryPolicy, parse_retry_after, retrying
from workbench.core.workers.spec import Timeouts, WorkerSpec
from workbench.core.workers.transport import (
    LoopState,
    httpx_timeout,
    open_client,
    preview,
    transport_error,
)

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- cost


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters per token) for replies without usage."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``data[key]`` when it is a JSON object, else an empty one (a reply missing a part)."""
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def array(data: Mapping[str, Any], key: str) -> list[Any]:
    """``data[key]`` when it is a JSON array, else an empty one (a reply missing a part)."""
    value = data.get(key)
    return value if isinstance(value, list) else []


def cost_of(tokens_in: int, tokens_out: int, price_in: float, price_out: float) -> float:
    """Dollars for a call at prices in dollars per million tokens."""
    return (tokens_in * price_in + tokens_out * price_out) / 1e6


@dataclass(frozen=True)
class Parsed:
    """What a provider's parser takes from a reply."""

    text: str
    tokens_in: int | None
    tokens_out: int | None
    model: str | None


# --------------------------------------------------------------------------- the worker


class HTTPWorker(Worker):
    """A worker behind an HTTP API, configured by a ``WorkerSpec``.

    Subclasses implement ``_headers``, ``_chat_request``, ``_parse``, and for model
    listing ``_models_request`` and ``_parse_models``; they may refine ``_error_detail``
    and ``_is_auth_failure``.
    """

    sends_seed: ClassVar[bool] = True  # whether the API takes a seed (else it is not sent)
    default_base_url: ClassVar[str]
    base_url: str  # always set: the spec's, or the provider's default

    def __init__(
        self,
        spec: WorkerSpec,
        *,
        key: Secret | str | None = None,
        key_status: KeyStatus | None = None,
        client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
    ):
        super().__init__(spec.id, spec.model)
        self.spec = spec
        self.base_url = (spec.base_url or self.default_base_url).rstrip("/")
        self._key = key if isinstance(key, Secret) or key is None else Secret(key)
        self.secrets = (self._key,) if self._key is not None else ()
        self.key_status = key_status or KeyStatus(
            "keychain" if key else "missing", spec.effective_key_env
        )
        self._client = client
        self.retry = retry or RetryPolicy()
        self._state: LoopState | None = None
        self._stale_clients: list[httpx.AsyncClient] = []

    def prepare(self) -> None:
        """A cloud API (a host whose preset names a key variable) needs a key: without one
        every call would be refused, so a job is refused before it stores anything."""
        env = self.spec.effective_key_env
        if self._key is None and env is not None:
            note = f" ({self.key_status.note})" if self.key_status.note else ""
            raise AuthError(
                self.id,
                f"no API key is set for {self.base_url}{note}: store one with "
                f"{self._set_key_hint()}, or export {env}",
            )

    # ------------------------------------------------------------- settings

    @property
    def timeouts(self) -> Timeouts:
        return self.spec.timeouts

    def settings(self, max_tokens: int, temperature: float) -> tuple[int, float]:
        """The max tokens and temperature actually sent: the worker's own when set."""
        return (
            self.spec.max_tokens or max_tokens,
            self.spec.temperature if self.spec.temperature is not None else temperature,
        )

    def request_identity(
        self, *, max_tokens: int, temperature: float, seed: int | None
    ) -> dict[str, Any]:
        mt, temp = self.settings(max_tokens, temperature)
        return {
            "provider": self.provider,
            "base_url": self.base_url,
            "model": self.model,
            "temperature": temp,
            "max_tokens": mt,
            "seed": seed if self.sends_seed else None,
            "extra": dict(self.spec.extra),
        }

    # ------------------------------------------------------------- provider hooks

    @abc.abstractmethod
    def _headers(self) -> dict[str, str]:
        """Authentication and version headers."""

    @abc.abstractmethod
    def _chat_request(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, seed: int | None
    ) -> tuple[str, dict[str, Any]]:
        """(path under the base URL, JSON body) of one completion request."""

    @abc.abstractmethod
    def _parse(self, data: Any) -> Parsed:
        """The reply's text and usage; raise ``ValueError(reason)`` if the shape is wrong."""

    @abc.abstractmethod
    def _models_request(self, page: str | None) -> tuple[str, dict[str, str]]:
        """(path, query parameters) of one page of the model list."""

    @abc.abstractmethod
    def _parse_models(self, data: Any) -> tuple[list[str], str | None]:
        """(model ids, the next page's token or None)."""

    def _error_detail(self, data: Any) -> str | None:
        """The provider's own error message from an error body, if it has one."""
        if isinstance(data, Mapping):
            err = data.get("error")
            if isinstance(err, Mapping) and isinstance(err.get("message"), str):
                return err["message"]
            if isinstance(err, str):
                return err
            if isinstance(data.get("detail"), str):
                return data["detail"]
            if isinstance(data.get("message"), str):
                return data["message"]
        return None

    def _is_auth_failure(self, status: int, data: Any) -> bool:
        return status in (401, 403)

    # ------------------------------------------------------------- plumbing

    def _loop_state(self) -> LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            if self._state is not None and self._state.own_client is not None:
                # Its connections belong to a finished loop; keep it to close later.
                self._stale_clients.append(self._state.own_client)
            self._state = LoopState(
                loop,
                asyncio.Semaphore(self.spec.concurrency),
                RateLimiter(self.spec.rpm) if self.spec.rpm else None,
            )
        return self._state

    def _http(self, state: LoopState) -> httpx.AsyncClient:
        if self._client is not None:
            if self._client.is_closed:
                raise WorkerError(
                    self.id,
                    "the run's HTTP client is already closed: build the pool inside "
                    "`async with open_client() as client:`",
                )
            return self._client
        if state.own_client is None:
            state.own_client = open_client(
                max_connections=max(8, self.spec.concurrency),
                max_keepalive=max(8, self.spec.concurrency),
            )
        return state.own_client

    async def aclose(self) -> None:
        """Close the worker's own client (a shared client belongs to the run)."""
        state, self._state = self._state, None
        clients = self._stale_clients + ([state.own_client] if state and state.own_client else [])
        self._stale_clients = []
        for client in clients:
            try:
                await client.aclose()
            except RuntimeError:  # opened on an event loop that is gone
                pass

    def _httpx_timeout(self) -> httpx.Timeout:
        return httpx_timeout(self.timeouts)

    def _preview(self, raw: bytes) -> str:
        return preview(raw, self.redact)

    def _set_key_hint(self) -> str:
        return f"trinity-workbench workers set-key {self.id} --key-stdin"

    def _status_error(self, response: httpx.Response, raw: bytes) -> WorkerError:
        status = response.status_code
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = None
        detail = self._error_detail(data)
        detail = (
            self.redact(detail)[:300] if detail else self._preview(raw) if raw else "empty body"
        )
        reason = f"{status} {response.reason_phrase}".strip()
        if self._is_auth_failure(status, data):
            if self._key is None:
                env = self.spec.effective_key_env
                alt = f", or export {env}" if env else ""
                return AuthError(
                    self.id,
                    f"the server requires an API key ({reason}) and none is set: store one "
                    f"with {self._set_key_hint()}{alt} [{detail}]",
                    status=status,
                )
            if status == 403:
                return AuthError(
                    self.id,
                    f"the API key has no access ({reason}) to model '{self.model}' at "
                    f"{self.base_url}: check the key's permissions and the model name, or "
                    f"replace the key with {self._set_key_hint()} [{detail}]",
                    status=status,
                )
            where = (
                f"the key comes from {self.key_status.env}: update that variable or store a key with "
                f"{self._set_key_hint()}"
                if self.key_status.source == "environment"
                else f"update it with {self._set_key_hint()}"
            )
            return AuthError(
                self.id, f"the API key was rejected ({reason}): {where} [{detail}]", status=status
            )
        if status == 429:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            if retry_after is None and response.headers.get("retry-after-ms"):
                retry_after = (parse_retry_after(response.headers["retry-after-ms"]) or 0) / 1000
            when = (
                f"; the provider asks to wait {retry_after:g} s" if retry_after is not None else ""
            )
            return RateLimited(
                self.id,
                f"rate limited ({reason}){when}: lower the worker's concurrency or set "
                f"its rpm in workers.toml, or wait [{detail}]",
                retry_after=retry_after,
            )
        if status == 408:
            return WorkerTimeout(
                self.id, f"the server timed out ({reason}) [{detail}]", status=status
            )
        if status >= 500:
            return ProviderError(
                self.id,
                f"the server failed ({reason}) at {self.base_url}: a provider outage or "
                f"overload; try again later [{detail}]",
                status=status,
                retryable=True,
            )
        if status == 404:
            return ProviderError(
                self.id,
                f"not found ({reason}) at {self.base_url}: check the base URL and the "
                f"model name '{self.model}' (list models with trinity-workbench workers "
                f"models {self.id}) [{detail}]",
                status=status,
            )
        return ProviderError(
            self.id,
            f"the provider refused the request ({reason}): check the model name and the "
            f"extra request fields in workers.toml [{detail}]",
            status=status,
        )

    def _transport_error(self, exc: Exception) -> WorkerError:
        return transport_error(self.id, self.base_url, self.timeouts, exc, self.redact)

    async def _attempt(
        self,
        state: LoopState,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        params: Mapping[str, str] | None,
    ) -> tuple[Any, bytes]:
        """One HTTP exchange: returns (JSON, raw body) or raises a WorkerError."""
        if state.limiter is not None:
            await state.limiter.acquire()
        client = self._http(state)
        url = self.base_url + path
        try:
            async with asyncio.timeout(self.timeouts.total):
                response = await client.request(
                    method,
                    url,
                    json=body,
                    params=params,
                    headers=self._headers(),
                    timeout=self._httpx_timeout(),
                )
        except TimeoutError:
            raise WorkerTimeout(
                self.id,
                f"the reply from {self.base_url} took longer than {self.timeouts.total:g} s "
                "(timeouts.total): raise it in workers.toml if the model is just slow",
            ) from None
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        raw = response.content
        if response.status_code >= 400:
            raise self._status_error(response, raw)
        try:
            return json.loads(raw), raw
        except ValueError as exc:
            raise BadResponse(
                self.id,
                f"the reply is not valid JSON ({type(exc).__name__}: "
                f"{getattr(exc, 'msg', exc)}); it starts with {self._preview(raw)}",
                status=response.status_code,
            ) from None

    async def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        *,
        attempts: int | None = None,
    ) -> tuple[Any, bytes, int]:
        """The exchange with retries and the concurrency limit: (JSON, raw, attempts)."""
        state = self._loop_state()
        policy = (
            self.retry
            if attempts is None
            else RetryPolicy(attempts, self.retry.backoff, self.retry.jitter, self.retry.max_wait)
        )
        attempts_loop = retrying(policy, self._log_retry)
        tries = 0
        async with state.semaphore:  # held through retry waits: backing off must not free a slot
            try:
                async for attempt in attempts_loop:
                    with attempt:
                        tries = attempt.retry_state.attempt_number
                        data, raw = await self._attempt(state, method, path, body, params)
            except WorkerError as exc:
                exc.attempts = tries
                raise
        return data, raw, tries

    def _log_retry(self, retry_state: RetryCallState) -> None:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
        log.warning(
            "%s; retry %d of %d in %.2f s",
            exc,
            retry_state.attempt_number,
            self.retry.attempts - 1,
            wait,
        )

    # ------------------------------------------------------------- the API

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        return await self._complete(
            messages, max_tokens=max_tokens, temperature=temperature, seed=seed
        )

    async def _complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        attempts: int | None = None,
        override: bool = True,
    ) -> Completion:
        mt, temp = self.settings(max_tokens, temperature) if override else (max_tokens, temperature)
        path, body = self._chat_request(list(messages), mt, temp, seed if self.sends_seed else None)
        started = time.perf_counter()
        data, raw, tries = await self._request("POST", path, body, attempts=attempts)
        try:
            parsed = self._parse(data)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            err = BadResponse(
                self.id, f"unusable reply ({exc}); it starts with {self._preview(raw)}"
            )
            err.attempts = tries
            raise err from None
        latency = time.perf_counter() - started
        # a server that echoes the key (in any encoding) must not get it into an episode,
        # the response cache or the terminal
        text, model = self.redact(parsed.text), self.redact(parsed.model or self.model)
        estimated = parsed.tokens_in is None or parsed.tokens_out is None
        tokens_in = (
            parsed.tokens_in
            if parsed.tokens_in is not None
            else sum(estimate_tokens(m["content"]) + 4 for m in messages)
        )
        tokens_out = parsed.tokens_out if parsed.tokens_out is not None else estimate_tokens(text)
        cost = cost_of(tokens_in, tokens_out, self.spec.price_in, self.spec.price_out)
        return Completion(
            text=text,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_s=latency,
            cost=cost,
            usage_estimated=estimated,
            model=model,
            attempts=tries,
        )

    async def list_models(self) -> list[str]:
        """The model ids the endpoint offers (all pages)."""
        models: list[str] = []
        page: str | None = None
        for _ in range(100):  # a bound on pages, against a server that never stops paging
            path, params = self._models_request(page)
            data, raw, _ = await self._request("GET", path, params=params)
            try:
                ids, page = self._parse_models(data)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise BadResponse(
                    self.id, f"unusable model list ({exc}); it starts with {self._preview(raw)}"
                ) from None
            models.extend(ids)
            if not page:
                break
        return sorted(set(models))

    async def probe(self, max_tokens: int = 16) -> Completion:
        """One tiny request, one attempt, the run's settings ignored (the connection test,
        ``workbench.core.workers.checks``); raises ``WorkerError`` as a call would."""
        return await self._complete(
            [{"role": "user", "content": "Reply with the single word: OK"}],
            max_tokens=self.spec.max_tokens or max_tokens,
            temperature=0.0,
            seed=None,
            attempts=1,
            override=False,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.id!r}, model={self.model!r}, base_url={self.base_url!r})"
        )
