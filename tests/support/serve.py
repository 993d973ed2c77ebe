"""A real OpenAI-compatible server on loopback: ``transformers serve`` (the
``transformers[serving]`` extra) pinned to the offline SmolLM2 model, converted once per
machine to a model folder by ``workbench.core.models.local_directory("offline")``.

Started once per test session (a few seconds on CPU) and stopped by its pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


@dataclass
class ServedModel:
    base_url: str  # http://127.0.0.1:PORT/v1
    model: str  # the model id the server answers to (the model folder's path)
    process: subprocess.Popen
    log_path: Path

    def stop(self) -> None:
        """Stop the server's process group (by its pid) and wait for it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_command() -> list[str]:
    exe = Path(sys.executable).parent / "transformers"
    if not exe.exists():
        found = shutil.which("transformers")
        if found is None:
            raise RuntimeError(
                "the `transformers` command is missing: install the dev extra "
                "(pip install -e '.[dev]', which brings transformers[serving])"
            )
        exe = Path(found)
    return [str(exe), "serve"]


def start_transformers_serve(
    model_dir: Path, log_dir: Path, timeout_s: float = 180.0
) -> ServedModel:
    port = _free_port()
    log_path = log_dir / "transformers-serve.log"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    cmd = [
        *_serve_command(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--log-level",
        "warning",
        str(model_dir),
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    served = ServedModel(f"http://127.0.0.1:{port}/v1", str(model_dir), process, log_path)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"transformers serve exited with {process.returncode}:\n"
                f"{log_path.read_text(errors='replace')[-3000:]}"
            )
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                return served
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    served.stop()
    raise RuntimeError(
        f"transformers serve did not answer /health within {timeout_s:.0f} s:\n"
        f"{log_path.read_text(errors='replace')[-3000:]}"
    )
