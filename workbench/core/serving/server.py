"""Running the OpenAI-compatible app on uvicorn, in the foreground (the ``serve`` command)
or in a background thread (the Playground, tests), and the server's own API key.

The key lives in the OS keychain next to the worker keys (entry ``server:api-key``; a
worker id cannot hold ``:``, so the two never collide). Binding to anything but loopback
requires it; on loopback it is used when one is stored.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from workbench.core.errors import BadInput
from workbench.core.serving.api import ServeSettings, create_app
from workbench.core.serving.team import Team, refuse_unservable

KEY_ENTRY = "server:api-key"
GRACEFUL_S = 30.0  # how long a stopping server lets in-flight episodes finish
HEADER_TIMEOUT_S = 10.0  # a request's head (line and headers) must arrive within this
IDLE_TIMEOUT_S = 5.0  # an idle keep-alive connection is closed after this (uvicorn's)
MAX_CONNECTIONS = 256  # open connections; more are answered 503 and closed at once


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def server_key(keystore: Any = None) -> str | None:
    """The server's API key from the keychain, or None when none is stored."""
    from workbench.core.keychain import KeyStore

    return (keystore or KeyStore()).get(KEY_ENTRY)


def loopback_key(keystore: Any = None) -> str | None:
    """The key a loopback server uses: the stored one when there is one, else none (a
    machine without a keychain serves loopback without a key)."""
    from workbench.core.keychain import KeychainUnavailable

    try:
        return server_key(keystore)
    except KeychainUnavailable:
        return None


def set_server_key(key: str, keystore: Any = None) -> None:
    """Store (or replace) the server's API key in the keychain."""
    from workbench.core.keychain import KeyStore, clean_key

    (keystore or KeyStore()).set(KEY_ENTRY, clean_key(KEY_ENTRY, key))


def delete_server_key(keystore: Any = None) -> bool:
    """Delete the server's API key; False if there was none."""
    from workbench.core.keychain import KeyStore

    return (keystore or KeyStore()).delete(KEY_ENTRY)


class PortUnavailable(BadInput, ValueError):
    """The server cannot listen where it was asked to (a busy port, a foreign address)."""


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one), for ``Server(sock=...)``.
    Bound here rather than by uvicorn, whose bind failure exits the process with a
    traceback; bind it before loading a team so a busy port is said at once."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise PortUnavailable(f"cannot listen on {host}:{port} ({exc}): check --host") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise PortUnavailable(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): stop what uses that "
            "port or give another --port (0: a free one), or check --host"
        ) from exc
    return sock


class Server:
    """The team's app on uvicorn at ``host:port`` (port 0: a free one). ``run()`` serves
    in the foreground until SIGINT/SIGTERM; ``start()`` serves from a thread and returns
    once it listens; ``stop()`` ends it gracefully: uvicorn stops accepting, in-flight
    requests get up to ``graceful_s`` to finish, then the team closes its ``serve`` run."""

    def __init__(
        self,
        team: Team,
        settings: ServeSettings | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        graceful_s: float = GRACEFUL_S,
        log_level: str = "warning",
        sock: socket.socket | None = None,
        header_timeout_s: float = HEADER_TIMEOUT_S,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        on_stop: Callable[[int], None] | None = None,
    ):
        """``sock``: a socket ``listen_socket(host, port)`` bound already (else bound here,
        raising ``PortUnavailable``). ``on_stop`` hears the signal that asked the
        foreground server to stop (each one, a second included), on the signal's thread."""
        import uvicorn

        from workbench.core.serving.connections import guarded_protocol

        settings = settings or ServeSettings()
        if not is_loopback(host) and not settings.api_key:
            raise ValueError(
                f"serving on {host} (not loopback) needs an API key for the server: store one "
                "with `trinity-workbench serve set-key --key-stdin`, or bind to 127.0.0.1"
            )
        refuse_unservable(team.source.pool)
        self.team = team
        self.settings = settings
        self.host = host
        if graceful_s < 1:
            raise ValueError("--grace must be at least 1 second")
        self.app = create_app(team, settings)
        self.graceful_s = graceful_s
        config = uvicorn.Config(
            self.app,
            host=host,
            port=port,
            log_level=log_level,
            timeout_graceful_shutdown=math.ceil(graceful_s),  # uvicorn takes whole seconds
            timeout_keep_alive=max(1, round(idle_timeout_s)),
            lifespan="on",
            http=guarded_protocol(header_timeout_s, max_connections),
        )
        self._server = _uvicorn_server(config, team, on_stop)
        self._socket = sock if sock is not None else listen_socket(host, port)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (the real one when asked for port 0)."""
        for server in self._server.servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return int(self._server.config.port)

    @property
    def url(self) -> str:
        """The base URL OpenAI clients take: ``http://host:port/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def run(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve in the foreground until interrupted (SIGINT/SIGTERM end it gracefully);
        ``on_ready`` hears the URL once the server listens."""

        async def serve() -> None:
            task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
            while not self._server.started and not task.done():
                await asyncio.sleep(0.02)
            if self._server.started and on_ready is not None:
                on_ready(self.url)
            await task

        asyncio.run(serve())
        self._raise_startup_error()

    def start(self, timeout_s: float = 60.0) -> str:
        """Serve from a background thread; returns the URL once it listens."""
        self._thread = threading.Thread(
            target=self._server.run, args=([self._socket],), name="serve", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive():
                self._raise_startup_error()
                raise RuntimeError(f"the server did not start on {self.host}:{self.port}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start within {timeout_s:.0f} s")
            time.sleep(0.01)
        return self.url

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop gracefully and wait for the thread (in-flight episodes finish first)."""
        self.team.stopping = True
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)

    @property
    def cancelled_on_stop(self) -> int:
        """Requests in flight (running or queued) that the stop cancelled past its grace."""
        return int(self.app.state.cancelled_on_stop)

    @property
    def stopping(self) -> bool:
        """Whether the server was asked to stop (a signal, or ``stop()``)."""
        return bool(self._server.should_exit)

    def _raise_startup_error(self) -> None:
        error = getattr(self.app.state, "startup_error", None)
        if error is not None:
            raise error


def _uvicorn_server(config: Any, team: Team, on_stop: Callable[[int], None] | None) -> Any:
    """uvicorn's server, telling the team (and ``on_stop``) when a signal asks it to stop,
    so that the episodes it cancels past the grace count as the stop's."""
    import uvicorn

    class StoppableServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            team.stopping = True
            super().handle_exit(sig, frame)
            if on_stop is not None:
                on_stop(sig)

    return StoppableServer(config)
