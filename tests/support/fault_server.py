"""A loopback HTTP/1.1 server that speaks the OpenAI Chat Completions API and injects
faults on request: 429 with Retry-After, 500/503, a body that stalls past the client's
read timeout, truncated JSON, a dropped connection, a 401, and other malformed replies.

It is written on raw asyncio streams (not a web framework) so that it can misbehave at
the byte level: close a socket before answering, or send half a body and stall.

In tests it runs on a thread of its own::

    with FaultServer() as server:
        server.script(Fault.status(503), Fault.status(503))   # the next two requests
        ... OpenAI worker with base_url=server.base_url ...
        server.requests  # what arrived: method, path, headers, JSON body

For the benchmark it runs as a process of its own (``python -m tests.support.fault_server
--latency 0.2``), printing ``PORT <n>``; ``GET /_stats`` returns the server-side handling
time of every request so far (and resets the list).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODEL = "loopback-model"


@dataclass(frozen=True)
class Fault:
    """What the server does with one request instead of answering normally."""

    kind: str  # ok, status, drop, stall, trickle, raw
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0

    @classmethod
    def status_code(
        cls,
        status: int,
        message: str = "injected fault",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> Fault:
        payload = (
            body
            if body is not None
            else json.dumps(
                {"error": {"message": message, "type": "injected", "code": status}}
            ).encode()
        )
        return cls("status", status, dict(headers or {}), payload)

    @classmethod
    def rate_limited(cls, retry_after: str) -> Fault:
        return cls.status_code(429, "rate limit reached", {"Retry-After": retry_after})

    @classmethod
    def ok(cls) -> Fault:
        """No fault: answer this request normally (to place faults after it)."""
        return cls("ok")

    @classmethod
    def drop(cls) -> Fault:
        """Read the request, then close the connection without a byte of reply."""
        return cls("drop")

    @classmethod
    def stall(cls, delay: float) -> Fault:
        """Send the headers and half a body, then wait ``delay`` seconds before the rest."""
        return cls("stall", delay=delay)

    @classmethod
    def trickle(cls, interval: float, pieces: int = 8) -> Fault:
        """Send the reply in ``pieces`` parts, ``interval`` seconds apart (under a read
        timeout, over a total one)."""
        return cls("trickle", delay=interval, status=pieces)

    @classmethod
    def raw(cls, body: bytes, status: int = 200, content_type: str = "application/json") -> Fault:
        """A complete reply with exactly this body (truncated JSON, HTML, ...)."""
        return cls("raw", status, {"Content-Type": content_type}, body)


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def default_reply(request: dict[str, Any]) -> str:
    """A deterministic reply that depends on the messages: a Verifier prompt gets a
    verdict, any other prompt an answer; both vary with the prompt's digest."""
    text = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    digest = hashlib.sha256(text.encode()).digest()
    if "Start your reply with exactly one word: ACCEPT" in text:
        return (
            "ACCEPT\nThe answer holds up." if digest[0] % 2 == 0 else "REVISE\nStep two is wrong."
        )
    return f"Working through it step by step.\nThe answer is \\boxed{{{digest[1] % 50}}}."


class FaultServer:
    """The server. ``latency`` delays every normal reply (seconds); ``reply`` makes the
    text of normal replies from the request's JSON."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        reply: Callable[[dict[str, Any]], str] = default_reply,
        usage: bool = True,
    ):
        self.latency = latency
        self.reply = reply
        self.usage = usage
        self.requests: list[Received] = []
        self.handling_s: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests handled at once
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[asyncio.Task] = set()
        self.port: int | None = None

    # ------------------------------------------------------------- control

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *faults: Fault) -> None:
        """The next ``len(faults)`` requests get these faults, in order."""
        with self._lock:
            self._faults.extend(faults)

    def chat_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> FaultServer:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fault-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fault server did not start within 10 s")
        return self

    def stop(self) -> None:
        """Close the listening socket and every connection; the port then refuses."""
        if self._loop is None:
            return

        async def shutdown() -> None:
            self._server.close()
            for task in list(self._conns):
                task.cancel()
            await asyncio.gather(*self._conns, return_exceptions=True)
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------- serving

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._conns.add(task)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                started = time.perf_counter()
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    keep = await self._respond(request, writer)
                finally:
                    self.in_flight -= 1
                self.handling_s.append(time.perf_counter() - started)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._conns.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> Received | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        received = Received(method, path, headers, body, time.time())
        self.requests.append(received)
        return received

    async def _respond(self, request: Received, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/_stats":
            times, self.handling_s = self.handling_s, []
            return await self._send(writer, 200, json.dumps({"handling_s": times}).encode())
        with self._lock:
            fault = self._faults.popleft() if self._faults and request.path != "/_stats" else None
        if fault is not None and fault.kind != "ok":
            if fault.kind == "drop":
                writer.transport.abort()
                return False
            if fault.kind in ("status", "raw"):
                return await self._send(writer, fault.status, fault.body, fault.headers)
            if fault.kind == "trickle":
                body = self._completion(request)
                writer.write(self._head(200, len(body), {}))
                step = max(1, len(body) // fault.status + 1)
                for i in range(0, len(body), step):
                    writer.write(body[i : i + step])
                    await writer.drain()
                    await asyncio.sleep(fault.delay)
                return True
            if fault.kind == "stall":
                body = self._completion(request)
                half = len(body) // 2
                writer.write(self._head(200, len(body), {}) + body[:half])
                await writer.drain()
                await asyncio.sleep(fault.delay)
                writer.write(body[half:])
                await writer.drain()
                return True
        if self.latency:
            await asyncio.sleep(self.latency)
        if request.method == "GET" and request.path.rstrip("/").endswith("/models"):
            body = json.dumps(
                {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}
            )
            return await self._send(writer, 200, body.encode())
        if request.method == "POST" and request.path.endswith("/chat/completions"):
            return await self._send(writer, 200, self._completion(request))
        return await self._send(
            writer, 404, json.dumps({"error": {"message": f"no route {request.path}"}}).encode()
        )

    def _completion(self, request: Received) -> bytes:
        data = request.json or {}
        text = self.reply(data)
        doc: dict[str, Any] = {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": 0,
            "model": data.get("model", MODEL),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
        if self.usage:
            prompt = sum(len(str(m.get("content", "")).split()) for m in data.get("messages", []))
            doc["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": len(text.split()),
                "total_tokens": prompt + len(text.split()),
            }
        return json.dumps(doc).encode()

    @staticmethod
    def _head(status: int, length: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", f"Content-Length: {length}"]
        if not any(k.lower() == "content-type" for k in headers):
            lines.append("Content-Type: application/json")
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> bool:
        writer.write(self._head(status, len(body), headers or {}) + body)
        await writer.drain()
        return True


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds before every normal reply"
    )
    args = parser.parse_args()
    server = FaultServer(latency=args.latency).start()
    print(f"PORT {server.port}", flush=True)
    try:
        sys.stdin.read()  # serve until the parent closes our stdin (or kills us)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
