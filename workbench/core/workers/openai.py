"""The OpenAI-compatible Chat Completions API: OpenAI itself, OpenRouter, Together, Groq,
DeepSeek, Mistral, Fireworks, xAI, and local servers (vLLM, SGLang, Ollama, LM Studio,
llama.cpp server, ``transformers serve``). Presets for their base URLs are in
``workbench.core.workers.spec.PRESETS``.

Request: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer KEY`` (when a
key is set), ``model``, ``messages``, ``max_tokens`` (or ``max_completion_tokens`` when
the spec's extra fields name it, as OpenAI's reasoning models need), ``temperature``,
``seed``, then the extra fields. Reply: ``choices[0].message.content`` and
``usage.prompt_tokens`` / ``usage.completion_tokens``. Models: ``GET {base_url}/models``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.core.workers.base import Message
from workbench.core.workers.http import HTTPWorker, Parsed, table


class OpenAIWorker(HTTPWorker):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    provider = "openai"

    default_base_url = "https://api.openai.com/v1"

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._key.reveal()}"} if self._key is not None else {}

    def _chat_request(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, seed: int | None
    ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": temperature,
        }
        if "max_completion_tokens" not in self.spec.extra:
            body["max_tokens"] = max_tokens
        if seed is not None:
            body["seed"] = seed
        body.update(self.spec.extra)
        return "/chat/completions", body

    def _parse(self, data: Any) -> Parsed:
        if not isinstance(data, Mapping):
            raise ValueError("the reply is not a JSON object")
        if "error" in data and "choices" not in data:
            raise ValueError(f"the reply carries an error: {self._error_detail(data)}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ValueError("no 'choices' in the reply")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            raise ValueError("no 'message' in choices[0]")
        content = message.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        if not isinstance(content, str) or not content.strip():
            finish = choice.get("finish_reason")
            hint = (
                f": the model used all its output tokens (finish_reason '{finish}'), perhaps on reasoning; "
                "raise max_tokens"
                if finish == "length"
                else f" (finish_reason {finish!r})"
            )
            raise ValueError(f"empty content{hint}")
        usage = table(data, "usage")
        return Parsed(
            content,
            _int(usage.get("prompt_tokens")),
            _int(usage.get("completion_tokens")),
            data.get("model") if isinstance(data.get("model"), str) else None,
        )

    def _models_request(self, page: str | None) -> tuple[str, dict[str, str]]:
        return "/models", {}

    def _parse_models(self, data: Any) -> tuple[list[str], str | None]:
        items = data.get("data") if isinstance(data, Mapping) else None
        if not isinstance(items, list):
            raise ValueError("no 'data' list")
        return [
            m["id"] for m in items if isinstance(m, Mapping) and isinstance(m.get("id"), str)
        ], None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
