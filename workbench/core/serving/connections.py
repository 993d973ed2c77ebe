"""The server's connections kept in bounds: uvicorn's HTTP/1.1 protocol (h11) with a
deadline for each request's head and a cap on open connections.

uvicorn closes a keep-alive connection idle for ``timeout_keep_alive``, but a connection
that sends part of a request line or headers and then nothing stays open for ever, and
its own ``limit_concurrency`` answers in plain text. Here a connection whose request head
is not whole ``header_timeout_s`` after it opened (or after its previous response) is
closed, and a connection beyond ``max_connections`` gets a 503 in OpenAI's error shape and
is closed before anything of it is read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

BUSY_BODY = json.dumps(
    {
        "error": {
            "message": "the server has too many open connections: retry shortly",
            "type": "server_error",
            "param": None,
            "code": "too_many_connections",
        }
    }
).encode()


def busy_response() -> bytes:
    """A whole HTTP/1.1 503 response (JSON, ``Connection: close``, ``Retry-After: 1``)."""
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(BUSY_BODY)}\r\n"
        "retry-after: 1\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + BUSY_BODY


def guarded_protocol(header_timeout_s: float, max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with a request-head deadline and a connection cap
    (pass it as ``uvicorn.Config(http=...)``)."""
    if not header_timeout_s > 0:
        raise ValueError("the header timeout must be more than 0 seconds")
    if max_connections < 1:
        raise ValueError("max_connections must be at least 1")
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _waiting_for: Any = None  # the cycle that was current when the timer was armed
        _refused = False
        _answered = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                # answered when its request arrives (a reply before it, then a close, can
                # reach the client as a reset), closed after the head's deadline anyway
                self._refused = True
                self._head_timer = self.loop.call_later(header_timeout_s, transport.close)
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                self._refuse()
                return
            if self._head_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the next request on a kept-alive connection begins
            super().data_received(data)
            if self.cycle is not None and self.cycle is not self._waiting_for:
                self._disarm()  # its head arrived whole: the app has the request

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # the next request begins now: its head has the deadline too, even when part
            # of it came in with the previous request (no data_received will follow)
            if not self.transport.is_closing() and (
                self.cycle is None or self.cycle.response_complete
            ):
                self._arm()

        def _refuse(self) -> None:
            """The 503, once; then a lingering close: stop writing, read and drop what
            else comes for a moment, so that the reply is not lost to a reset."""
            if self._answered or self.transport.is_closing():
                return
            self._answered = True
            self.transport.write(busy_response())
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._disarm()
            self._head_timer = self.loop.call_later(1.0, self.transport.close)

        def _arm(self) -> None:
            self._disarm()
            self._waiting_for = self.cycle
            self._head_timer = self.loop.call_later(header_timeout_s, self._head_too_slow)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self.cycle is not None and self.cycle is not self._waiting_for:
                return
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
