"""A loopback HTTP server that serves a folder's files the way a code host's raw-file
server does (Starlette's ``FileResponse``: ``Range`` requests answered ``206`` with
``Content-Range``, ``416`` past the end, ``404`` for a file it does not have), under
``/TIGER-AI-Lab/MMLU-Pro/<commit>/eval_results/``, with faults on request:

- ``cut(name, after)``: the next request for ``name`` announces the whole length, sends
  ``after`` bytes and drops the connection (a download interrupted mid-file); the
  requests after it are answered as usual (a ``Range`` one with the rest);
- ``ignore_range``: answer every request with the whole file (``200``), as a server
  without range support does;
- ``throttle_s``: a pause after every 64 KiB sent, so that a download lasts long enough
  to be cancelled mid-file.

It runs uvicorn on a thread of its own; ``requests`` lists (file, Range header, status)
of what it answered (a cut request's status is ``-after``)::

    with RangeServer(folder) as server:
        download(["gemma-7b"], target, base_url=server.base_url)
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from pathlib import Path

from workbench.core.importers.download import UPSTREAM_COMMIT, UPSTREAM_REPOSITORY

CHUNK = 64 * 1024


class RangeServer:
    def __init__(self, folder: Path, *, throttle_s: float = 0.0, ignore_range: bool = False):
        self.folder = Path(folder)
        self.throttle_s = throttle_s
        self.ignore_range = ignore_range
        self.requests: list[tuple[str, str | None, int]] = []
        self._cuts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{UPSTREAM_REPOSITORY}/{UPSTREAM_COMMIT}/eval_results/"

    def cut(self, name: str, after: int) -> None:
        """The next request for ``name`` ends after ``after`` bytes of its body."""
        with self._lock:
            self._cuts[name] = after

    def _app(self):
        from starlette.applications import Starlette
        from starlette.responses import (
            FileResponse,
            PlainTextResponse,
            Response,
            StreamingResponse,
        )
        from starlette.routing import Route

        async def serve(request):
            name = request.path_params["name"]
            asked = request.headers.get("range")
            path = self.folder / name
            if request.path_params["commit"] != UPSTREAM_COMMIT or not path.is_file():
                self.requests.append((name, asked, 404))
                return PlainTextResponse("404: Not Found", status_code=404)
            with self._lock:
                cut = self._cuts.pop(name, None)
            size = path.stat().st_size
            if cut is None and not self.ignore_range and not self.throttle_s:
                self.requests.append((name, asked, 206 if asked else 200))
                return FileResponse(path, media_type="application/zip")
            start = 0
            match = re.fullmatch(r"bytes=(\d+)-", asked or "")
            if match and not self.ignore_range:
                start = int(match.group(1))
                if start >= size:
                    self.requests.append((name, asked, 416))
                    return Response(status_code=416, headers={"content-range": f"bytes */{size}"})
            headers = {"content-length": str(size - start)}
            if start:
                headers["content-range"] = f"bytes {start}-{size - 1}/{size}"
            status = 206 if start else 200
            end = size if cut is None else min(size, start + cut)
            self.requests.append((name, asked, status if cut is None else -cut))
            return StreamingResponse(
                self._body(path, start, end, cut is not None),
                status_code=status,
                headers=headers,
                media_type="application/zip",
            )

        route = "/" + UPSTREAM_REPOSITORY + "/{commit}/eval_results/{name}"
        return Starlette(routes=[Route(route, serve)])

    async def _body(self, path: Path, start: int, end: int, drop: bool):
        with path.open("rb") as handle:
            handle.seek(start)
            sent = start
            while sent < end:
                block = handle.read(min(CHUNK, end - sent))
                if not block:
                    break
                sent += len(block)
                yield block
                if self.throttle_s:
                    await asyncio.sleep(self.throttle_s)
        if drop:
            raise ConnectionAbortedError("the test server drops the connection mid-file")

    def start(self) -> RangeServer:
        import uvicorn

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(
            self._app(), host="127.0.0.1", port=self.port, log_level="critical", lifespan="off"
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, name="range-server", daemon=True)
        self._thread.start()
        for _ in range(200):
            if server.started:
                return self
            threading.Event().wait(0.05)
        raise RuntimeError("the range server did not start within 10 s")

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)

    def __enter__(self) -> RangeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
