"""The Anthropic Messages API.

Request: ``POST {base_url}/messages`` (base URL ``https://api.anthropic.com/v1``) with
headers ``x-api-key`` and ``anthropic-version: 2023-06-01``; body ``model``,
``max_tokens`` (required), ``messages`` (``user`` / ``assistant`` only), ``system`` (the
system prompt, separate), ``temperature``, then the extra fields (e.g. ``thinking``). The
API takes no seed. Reply: the ``text`` blocks of ``content`` (``thinking`` blocks are
skipped), ``usage.input_tokens`` / ``usage.output_tokens``. Models: ``GET
{base_url}/models`` paged with ``after_id`` while ``has_more``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.core.workers.base import Message, WorkerError
from workbench.core.workers.http import HTTPWorker, Parsed, table

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicWorker(HTTPWorker):
    """A Claude model through the Messages API."""

    provider = "anthropic"

    default_base_url = "https://api.anthropic.com/v1"
    sends_seed = False

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._key is not None:
            headers["x-api-key"] = self._key.reveal()
        return headers

    def _chat_request(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, seed: int | None
    ) -> tuple[str, dict[str, Any]]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns: list[dict[str, str]] = []
        for m in messages:
            if m["role"] == "system":
                continue
            if turns and turns[-1]["role"] == m["role"]:  # the API wants alternating roles
                turns[-1] = {
                    "role": m["role"],
                    "content": turns[-1]["content"] + "\n\n" + m["content"],
                }
            else:
                turns.append({"role": m["role"], "content": m["content"]})
        if temperature > 1.0:
            raise WorkerError(
                self.id,
                f"temperature {temperature:g} is above the Messages API's maximum of 1: "
                f"set temperature = 1 for this worker in workers.toml",
            )
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": turns,
            "temperature": temperature,
        }
        if system:
            body["system"] = system
        body.update(self.spec.extra)
        return "/messages", body

    def _parse(self, data: Any) -> Parsed:
        if not isinstance(data, Mapping):
            raise ValueError("the reply is not a JSON object")
        if data.get("type") == "error":
            raise ValueError(f"the reply carries an error: {self._error_detail(data)}")
        content = data.get("content")
        if not isinstance(content, list):
            raise ValueError("no 'content' list in the reply")
        text = "".join(
            b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
        if not text.strip():
            stop = data.get("stop_reason")
            hint = (
                ": the model used all max_tokens; raise max_tokens" if stop == "max_tokens" else ""
            )
            raise ValueError(f"empty content (stop_reason {stop!r}){hint}")
        usage = table(data, "usage")
        return Parsed(
            text,
            _int(usage.get("input_tokens")),
            _int(usage.get("output_tokens")),
            data.get("model") if isinstance(data.get("model"), str) else None,
        )

    def _models_request(self, page: str | None) -> tuple[str, dict[str, str]]:
        params = {"limit": "1000"}
        if page:
            params["after_id"] = page
        return "/models", params

    def _parse_models(self, data: Any) -> tuple[list[str], str | None]:
        items = data.get("data") if isinstance(data, Mapping) else None
        if not isinstance(items, list):
            raise ValueError("no 'data' list")
        ids = [m["id"] for m in items if isinstance(m, Mapping) and isinstance(m.get("id"), str)]
        return ids, (data.get("last_id") if data.get("has_more") else None)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
