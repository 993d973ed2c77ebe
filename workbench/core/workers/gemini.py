"""The Gemini API (``generateContent``).

Request: ``POST {base_url}/models/{model}:generateContent`` (base URL
``https://generativelanguage.googleapis.com/v1beta``) with header ``x-goog-api-key``;
body ``contents`` (roles ``user`` and ``model``, text ``parts``), ``systemInstruction``
(the system prompt), ``generationConfig`` (``temperature``, ``maxOutputTokens``,
``seed``). Extra fields are merged into the body, tables into tables, so
``extra = {generationConfig = {thinkingConfig = {thinkingBudget = 0}}}`` works. Reply:
the text parts of ``candidates[0].content.parts`` (thought parts skipped),
``usageMetadata.promptTokenCount`` and ``candidatesTokenCount`` plus
``thoughtsTokenCount`` (billed as output). Models: ``GET {base_url}/models`` paged with
``pageToken``; only those supporting ``generateContent`` are listed.

Gemini answers an invalid key with 400 ``INVALID_ARGUMENT`` (reason ``API_KEY_INVALID``):
that is an ``AuthError`` too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from workbench.core.workers.base import Message
from workbench.core.workers.http import HTTPWorker, Parsed, array, table


class GeminiWorker(HTTPWorker):
    """A Gemini model through ``generateContent``."""

    provider = "gemini"

    default_base_url = "https://generativelanguage.googleapis.com/v1beta"

    @property
    def _model_path(self) -> str:
        name = self.model.removeprefix("models/")
        return f"/models/{quote(name, safe='-._~')}"

    def _headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key.reveal()} if self._key is not None else {}

    def _chat_request(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, seed: int | None
    ) -> tuple[str, dict[str, Any]]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        contents = [
            {
                "role": "model" if m["role"] == "assistant" else "user",
                "parts": [{"text": m["content"]}],
            }
            for m in messages
            if m["role"] != "system"
        ]
        config: dict[str, Any] = {"temperature": temperature, "maxOutputTokens": max_tokens}
        if seed is not None:
            config["seed"] = seed & 0x7FFFFFFF  # an int32 in the API
        body: dict[str, Any] = {"contents": contents, "generationConfig": config}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return f"{self._model_path}:generateContent", _merge(body, self.spec.extra)

    def _parse(self, data: Any) -> Parsed:
        if not isinstance(data, Mapping):
            raise ValueError("the reply is not a JSON object")
        feedback = data.get("promptFeedback")
        if isinstance(feedback, Mapping) and feedback.get("blockReason"):
            raise ValueError(f"the prompt was blocked (blockReason {feedback['blockReason']})")
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            raise ValueError("no 'candidates' in the reply")
        first = candidates[0] if isinstance(candidates[0], Mapping) else {}
        content = table(first, "content")
        parts = array(content, "parts")
        text = "".join(
            p.get("text", "") for p in parts if isinstance(p, Mapping) and not p.get("thought")
        )
        if not text.strip():
            finish = first.get("finishReason")
            hint = (
                ": the model used all maxOutputTokens, perhaps thinking; raise max_tokens"
                if finish == "MAX_TOKENS"
                else ""
            )
            raise ValueError(f"empty content (finishReason {finish!r}){hint}")
        usage = table(data, "usageMetadata")
        tokens_in = _int(usage.get("promptTokenCount"))
        out, thoughts = (
            _int(usage.get("candidatesTokenCount")),
            _int(usage.get("thoughtsTokenCount")),
        )
        tokens_out = None if out is None else out + (thoughts or 0)
        model = data.get("modelVersion") if isinstance(data.get("modelVersion"), str) else None
        return Parsed(text, tokens_in, tokens_out, model)

    def _error_detail(self, data: Any) -> str | None:
        if isinstance(data, list) and data:  # some Google front ends wrap the error in a list
            data = data[0]
        return super()._error_detail(data)

    def _is_auth_failure(self, status: int, data: Any) -> bool:
        if status in (401, 403):
            return True
        if status == 400 and isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
            err = data["error"]
            reasons = [d.get("reason") for d in err.get("details", []) if isinstance(d, Mapping)]
            return "API_KEY_INVALID" in reasons or "API key not valid" in str(
                err.get("message", "")
            )
        return False

    def _models_request(self, page: str | None) -> tuple[str, dict[str, str]]:
        params = {"pageSize": "1000"}
        if page:
            params["pageToken"] = page
        return "/models", params

    def _parse_models(self, data: Any) -> tuple[list[str], str | None]:
        items = data.get("models") if isinstance(data, Mapping) else None
        if not isinstance(items, list):
            raise ValueError("no 'models' list")
        ids = [
            m["name"].removeprefix("models/")
            for m in items
            if isinstance(m, Mapping)
            and isinstance(m.get("name"), str)
            and "generateContent" in (m.get("supportedGenerationMethods") or ["generateContent"])
        ]
        return ids, data.get("nextPageToken") or None


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in: tables into tables, other values replaced."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
