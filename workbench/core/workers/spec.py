"""A worker's spec: what ``workers.toml`` says about one registered worker, validated.

``WorkerSpec`` names the provider protocol, the model, the endpoint, per-worker decoding
overrides, prices, limits and timeouts; every invalid field is an error that names it.
``PRESETS`` are the known endpoints (cloud APIs and local servers at their default ports).
The spec never holds a key (``workbench.core.keychain`` keeps those).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote, urlsplit

from workbench.core.errors import BadInput

# The providers a worker may name, each the ``module:Class`` of its Worker subclass (whose
# ``provider`` is the row's name). One table: the spec's check reads its names, and the
# pool imports a class when it builds a worker of it (pool.provider_class); a test builds
# every row (tests/core/workers/test_provider_registry.py).
PROVIDER_CLASSES: dict[str, str] = {
    "openai": "workbench.core.workers.openai:OpenAIWorker",  # every OpenAI-compatible server
    "anthropic": "workbench.core.workers.anthropic:AnthropicWorker",
    "gemini": "workbench.core.workers.gemini:GeminiWorker",
    "local": "workbench.core.workers.local:LocalWorker",  # a model in this process
    "sandbox": "workbench.core.workers.simulated:SimulatedWorker",  # the simulation: built in
    "recorded": "workbench.core.workers.recorded:RecordedWorker",  # recorded answers: built in
}
# what workers.toml may name (the sandbox's and recorded workers are built in)
PROVIDERS = tuple(name for name in PROVIDER_CLASSES if name not in ("sandbox", "recorded"))
# The prefixes of built-in worker ids (``local:smollm2``, ``sandbox``, ``team:NAME``,
# ``recorded:POOL``), each the ``module:function`` that turns such an id into its workers,
# ``function(worker_id, workspace) -> list[Worker]`` (``workspace``: where the pool is
# built, or None; recorded pools imported into a workspace are found there).
BUILTIN_RESOLVERS: dict[str, str] = {
    "local": "workbench.core.workers.local:resolve",
    "sandbox": "workbench.core.workers.simulated:resolve",
    "team": "workbench.core.workers.simulated:resolve",
    "recorded": "workbench.core.workers.recorded:resolve",
}
BUILTIN_PREFIXES = tuple(BUILTIN_RESOLVERS)  # ids that name built-in workers

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Words that, as a part of an extra field's name, say the field carries a credential
# ("token", "api_key", "accessToken", "X-Api-Key", "Authorization"): a text value there
# would land in workers.toml. "tokens" (max_tokens, budget_tokens) is a count, not one.
_SECRET_WORDS = {
    "key",
    "apikey",
    "token",
    "accesstoken",
    "authtoken",
    "secret",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "authorization",
    "auth",
    "bearer",
    "credential",
    "credentials",
    "cookie",
    "signature",
}
# request fields whose name holds such a word but which carry no credential
_NOT_SECRET_FIELDS = {"prompt_cache_key", "idempotency_key", "safety_identifier"}
# text that is a credential whatever its field: an auth scheme, a known key format
_SECRET_VALUE = re.compile(
    r"^\s*(?:bearer\s+\S{8,}|basic\s+[A-Za-z0-9+/]{12,}=*\s*$"
    r"|(?:sk|rk|pk)[-_][\w-]{8,}|sk-ant-[\w-]{8,}|AIza[\w-]{20,}|gh[pousr]_\w{20,}"
    r"|github_pat_\w{20,}|hf_\w{20,}|xai-\w{20,}|gsk_\w{20,}|r8_\w{20,}|pplx-\w{20,}"
    r"|nvapi-[\w-]{20,}|AKIA[0-9A-Z]{16}|eyJ[\w-]{10,}\.[\w-]{10,}\.)",
    re.I,
)
# what separates the words of a text that may carry a key somewhere inside (a URL, a note)
_WORD_BREAK = re.compile(r"[\s/?#&=:;,@'\"()<>]+")


def _holds_secret(text: str) -> bool:
    """Whether ``text`` is, or has among its words, a value shaped like a key."""
    return bool(_SECRET_VALUE.match(text)) or any(
        _SECRET_VALUE.match(word) for word in _WORD_BREAK.split(text) if word
    )


# Extra fields the client itself sets from the spec; overriding them from `extra` is a mistake.
_RESERVED_FIELDS = {"model", "messages", "stream", "contents", "system", "systemInstruction"}


MAX_TIMEOUT_S = 86_400  # a day: longer is a typo, and overflows the HTTP client's timers


class RegistryError(BadInput, ValueError):
    """A registry operation cannot be done as asked (bad spec, unknown id, bad file)."""


class SpecError(RegistryError):
    """A worker spec field is invalid; the message names the field and the fix."""


# --------------------------------------------------------------------------- presets


@dataclass(frozen=True)
class Preset:
    """A known endpoint: the provider protocol it speaks, its base URL and the
    environment variable that may hold its key (None: no key needed or none assumed)."""

    provider: str
    base_url: str
    key_env: str | None


PRESETS: dict[str, Preset] = {
    # cloud APIs
    "openai": Preset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": Preset("anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
    "gemini": Preset(
        "gemini", "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY"
    ),
    "openrouter": Preset("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together": Preset("openai", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "groq": Preset("openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": Preset("openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": Preset("openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "fireworks": Preset("openai", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "xai": Preset("openai", "https://api.x.ai/v1", "XAI_API_KEY"),
    # local OpenAI-compatible servers at their default ports
    "vllm": Preset("openai", "http://127.0.0.1:8000/v1", None),
    "sglang": Preset("openai", "http://127.0.0.1:30000/v1", None),
    "ollama": Preset("openai", "http://127.0.0.1:11434/v1", None),
    "lmstudio": Preset("openai", "http://127.0.0.1:1234/v1", None),
    "llamacpp": Preset("openai", "http://127.0.0.1:8080/v1", None),
    "transformers": Preset("openai", "http://127.0.0.1:8000/v1", None),
}


def _default_key_env(provider: str, base_url: str | None) -> str | None:
    """The environment fallback for a spec without ``key_env``: the preset's variable
    for its own host only, so an OpenAI key is never sent to another server."""
    host = urlsplit(base_url or "").hostname
    for preset in PRESETS.values():
        if (
            preset.provider == provider
            and preset.key_env
            and urlsplit(preset.base_url).hostname == host
        ):
            return preset.key_env
    return None


# --------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class Timeouts:
    """Seconds: ``connect`` to open a connection, ``read`` between two chunks of the
    reply, ``total`` for one whole attempt (a reply that trickles in still ends)."""

    connect: float = 10.0
    read: float = 120.0
    total: float = 300.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not _is_number(value) or not (0 < value <= MAX_TIMEOUT_S):
                raise SpecError(
                    f"field 'timeouts.{f.name}' must be a positive number of seconds, at most "
                    f"{MAX_TIMEOUT_S} (a day) (got {_got(value)})"
                )
        if self.total < self.connect or self.total < self.read:
            raise SpecError(
                f"field 'timeouts.total' ({self.total} s) must be at least the connect and read "
                "timeouts: it bounds a whole attempt"
            )


@dataclass(frozen=True, kw_only=True)
class WorkerSpec:
    """One registered worker. Validated on creation; every error names its field.

    ``temperature`` and ``max_tokens``, when set, override the run's settings for this
    worker (a reasoning model that needs more output tokens, say). ``extra`` holds extra
    request fields sent as they are (``reasoning_effort``, ``chat_template_kwargs``,
    ``thinking``, ``generationConfig``, ...). Prices are dollars per million tokens.
    ``concurrency`` bounds the calls in flight; ``rpm`` (optional) the requests per
    minute. ``key_env`` names the environment variable read when the keychain holds no
    key (default: the preset's variable for the spec's host; none for other hosts).
    """

    id: str
    provider: str
    model: str
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)
    price_in: float = 0.0
    price_out: float = 0.0
    context_window: int | None = None
    concurrency: int = 8
    rpm: float | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    key_env: str | None = None

    def __post_init__(self) -> None:
        validate_worker_id(self.id)
        where = f"worker '{self.id}': field"
        if self.provider not in PROVIDERS:
            presets = ", ".join(p for p in PRESETS if p not in PROVIDERS)
            raise SpecError(
                f"{where} 'provider' is {self.provider!r}: use one of {', '.join(PROVIDERS)} "
                f"(or, with workers add, a preset: {presets})"
            )
        for name in ("model", "key_env", "base_url"):
            value = getattr(self, name)
            if isinstance(value, str) and _holds_secret(value):
                raise SpecError(  # the value is not repeated: it may be the key itself
                    f"{where} '{name}' looks like an API key, and workers.toml never holds one: "
                    f"give the {name.replace('_', ' ')} there, and store the key with "
                    f"trinity-workbench workers set-key {self.id} --key-stdin"
                )
        if isinstance(self.model, str) and not self.model.isprintable():
            raise SpecError(
                f"{where} 'model' holds a line break or another control character: "
                "give the model name alone"
            )
        if not isinstance(self.model, str) or not self.model.strip():
            raise SpecError(
                f"{where} 'model' is empty: give the model name the provider expects "
                f"(list them with trinity-workbench workers models {self.id})"
            )
        if self.provider == "local":
            for name in ("base_url", "temperature", "max_tokens", "rpm", "key_env"):
                if getattr(self, name) is not None:
                    raise SpecError(
                        f"{where} '{name}' does not apply to provider 'local' (an in-process "
                        "model): remove it"
                    )
            if self.extra:
                raise SpecError(f"{where} 'extra' does not apply to provider 'local': remove it")
        else:
            base = (
                self.base_url or PRESETS[self.provider].base_url
                if self.provider in PRESETS
                else self.base_url
            )
            if base is None:
                raise SpecError(
                    f"{where} 'base_url' is missing: give the server's URL, e.g. http://127.0.0.1:8000/v1"
                )
            object.__setattr__(self, "base_url", _check_url(where, base))
        if self.temperature is not None and (
            not _is_number(self.temperature) or not 0 <= self.temperature <= 2
        ):
            raise SpecError(
                f"{where} 'temperature' must be a number from 0 to 2 (got {_got(self.temperature)})"
            )
        for name in ("max_tokens", "context_window"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise SpecError(
                    f"{where} '{name}' must be a whole number of tokens, at least 1 (got {_got(value)})"
                )
        for name in ("price_in", "price_out"):
            value = getattr(self, name)
            if not _is_number(value) or value < 0 or math.isinf(value):
                raise SpecError(
                    f"{where} '{name}' must be dollars per million tokens, 0 or more (got {_got(value)})"
                )
        if (
            not isinstance(self.concurrency, int)
            or isinstance(self.concurrency, bool)
            or not 1 <= self.concurrency <= 1024
        ):
            raise SpecError(
                f"{where} 'concurrency' must be a whole number from 1 to 1024 (got {_got(self.concurrency)})"
            )
        if self.rpm is not None and (
            not _is_number(self.rpm) or self.rpm <= 0 or math.isinf(self.rpm)
        ):
            raise SpecError(
                f"{where} 'rpm' must be a positive number of requests per minute, or absent "
                f"(got {_got(self.rpm)})"
            )
        if not isinstance(self.timeouts, Timeouts):
            raise SpecError(f"{where} 'timeouts' must be a Timeouts (connect, read, total)")
        if self.key_env is not None and (
            not isinstance(self.key_env, str) or not _ENV.match(self.key_env)
        ):
            raise SpecError(  # the value is not repeated: a pasted key lands here
                f"{where} 'key_env' must name an environment variable such as OPENAI_API_KEY "
                "(capital letters, digits and '_'), not hold the key"
            )
        if not isinstance(self.extra, Mapping):
            raise SpecError(
                f"{where} 'extra' must be a table of request fields (got {type(self.extra).__name__})"
            )
        for name in self.extra:
            if not isinstance(name, str):
                raise SpecError(f"{where} 'extra' has a non-text field name {_got(name)}")
        unstorable = _unstorable_in(self.extra, "extra")
        if unstorable is not None:
            raise SpecError(f"{where} {unstorable}")
        credential = _credential_in(self.extra, "extra")
        if credential is not None:
            raise SpecError(
                f"{where} '{credential}' looks like a credential, and workers.toml never holds "
                f"one: store the key with trinity-workbench workers set-key {self.id} "
                "--key-stdin (the key goes to the OS keychain and into the request's auth header)"
            )
        for name in self.extra:
            if name in _RESERVED_FIELDS:
                raise SpecError(f"{where} 'extra.{name}' is set by the client itself: remove it")
        # Frozen means frozen: a read-only view of a private copy.
        object.__setattr__(self, "extra", MappingProxyType(_thaw(dict(self.extra))))

    # ------------------------------------------------------------- conversion

    @property
    def effective_key_env(self) -> str | None:
        """The environment variable consulted when the keychain has no key."""
        if self.provider == "local":
            return None
        return self.key_env or _default_key_env(self.provider, self.base_url)

    def to_toml(self) -> dict[str, Any]:
        """The table written under ``[workers.ID]`` (defaults left out)."""
        out: dict[str, Any] = {"provider": self.provider, "model": self.model}
        for name in ("base_url", "temperature", "max_tokens", "context_window", "rpm", "key_env"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["price_in"], out["price_out"] = self.price_in, self.price_out
        if self.provider != "local":
            out["concurrency"] = self.concurrency
            out["timeouts"] = {
                "connect": self.timeouts.connect,
                "read": self.timeouts.read,
                "total": self.timeouts.total,
            }
        if self.extra:
            out["extra"] = _thaw(dict(self.extra))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything about the worker as plain JSON (for ``workers list --json``)."""
        return {"id": self.id, **self.to_toml(), "key_env": self.effective_key_env}

    @classmethod
    def from_toml(cls, worker_id: str, table: Mapping[str, Any]) -> WorkerSpec:
        """A spec from its ``[workers.ID]`` table; unknown fields are errors (typos)."""
        validate_worker_id(worker_id)  # first: a key pasted as the id is not repeated below
        if not isinstance(table, Mapping):
            raise SpecError(f"worker '{worker_id}': [workers.{worker_id}] must be a table")
        known = {f.name for f in fields(cls)} - {"id"}
        unknown = sorted(set(table) - known)
        if unknown:
            raise SpecError(
                f"worker '{worker_id}': unknown field(s) {', '.join(repr(u) for u in unknown)}: "
                f"the fields are {', '.join(sorted(known))}"
            )
        values = dict(table)
        if "timeouts" in values:
            t = values["timeouts"]
            if not isinstance(t, Mapping) or set(t) - {"connect", "read", "total"}:
                raise SpecError(
                    f"worker '{worker_id}': field 'timeouts' takes connect, read and total (seconds)"
                )
            values["timeouts"] = Timeouts(**t)
        for name in ("provider", "model"):
            if name not in values:
                raise SpecError(f"worker '{worker_id}': field '{name}' is missing")
        return cls(id=worker_id, **values)

    def renamed(self, new_id: str) -> WorkerSpec:
        return replace(self, id=new_id)


def validate_worker_id(worker_id: Any) -> str:
    """A worker id: letters, digits, ``.``, ``_``, ``-`` (no ``:`` or ``,``, which pools
    use), and not a built-in prefix."""
    if isinstance(worker_id, str) and _SECRET_VALUE.match(worker_id):
        raise SpecError(  # not repeated: it may be the key
            "the worker id looks like an API key: give the worker a name (e.g. gpt-4o) and "
            "store the key with trinity-workbench workers set-key NAME --key-stdin"
        )
    if not isinstance(worker_id, str) or not _ID.match(worker_id):
        raise SpecError(
            f"worker id {worker_id!r} is invalid: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no ':' or ',')"
        )
    if worker_id in BUILTIN_PREFIXES:
        raise SpecError(f"worker id '{worker_id}' names built-in workers: choose another id")
    return worker_id


def _got(value: Any) -> str:
    """A refused value as an error message may show it: numbers as they are; text only
    if short and not shaped like a key (a key pasted into the wrong field is not echoed)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a number too long to show"  # repr of a 5,000-digit int raises
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        if _holds_secret(value) or len(value) > 80:
            return f"a text of {len(value)} characters"
        return repr(value)
    return f"a {type(value).__name__}"


def _is_number(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() <= 64  # beyond: no price, rate or timeout; float() overflows
    return isinstance(value, float) and not math.isnan(value)


def _check_url(where: str, url: Any) -> str:
    if not isinstance(url, str):
        raise SpecError(f"{where} 'base_url' must be a URL (got {_got(url)})")
    url = url.strip(" ")
    if not url.isprintable() or any(c.isspace() for c in url):
        # urlsplit drops CR, LF and tabs silently; a header could ride on them
        raise SpecError(
            f"{where} 'base_url' holds a line break, tab, blank or another control character: "
            "give the URL alone, e.g. http://127.0.0.1:8000/v1"
        )
    try:
        parts = urlsplit(url)
        if parts.port == 0:  # raises ValueError for a port out of 0..65535 or not a number
            parts = None
    except ValueError:  # "Invalid IPv6 URL", "Port out of range": name the field, not urllib
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecError(
            f"{where} 'base_url' must be an http:// or https:// URL with a host and, if any, "
            f"a port from 1 to 65535 (got {_got(url)})"
        )
    if parts.username or parts.password:
        raise SpecError(
            f"{where} 'base_url' must not carry credentials: store the key with "
            "trinity-workbench workers set-key ID --key-stdin"
        )
    if any(_holds_secret(unquote(segment)) for segment in parts.path.split("/")):
        raise SpecError(  # the URL is not repeated: it holds the key
            f"{where} 'base_url' has a path segment that looks like an API key, and "
            "workers.toml never holds one: give the endpoint without it (e.g. "
            "https://api.openai.com/v1) and store the key with trinity-workbench workers "
            "set-key ID --key-stdin"
        )
    if parts.query or parts.fragment:
        raise SpecError(
            f"{where} 'base_url' must not have a query or fragment (a key in the URL would land "
            "in workers.toml): give the endpoint only, e.g. https://api.openai.com/v1"
        )
    return url.rstrip("/")


def _name_words(name: str) -> tuple[set[str], str]:
    """The words of a field name (snake, kebab or camel case), lower-cased, and the
    name with its separators taken out ("X-Api-Key" -> {"x", "api", "key"}, "xapikey")."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return {w.lower() for w in words}, re.sub(r"[^a-z0-9]", "", name.lower())


def _unstorable_in(value: Any, path: str, depth: int = 0) -> str | None:
    """Why an ``extra`` value cannot be written to workers.toml and sent as JSON (None: it
    can): TOML has no null, JSON no NaN or infinity, and numbers past 64 bits overflow
    both readers."""
    if depth > 32:
        return f"'{path}' nests tables or lists too deeply (at most 32 levels)"
    if value is None:
        return f"'{path}' is empty (null): TOML has no null; leave the field out"
    if isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        return None if value.bit_length() <= 63 else f"'{path}' is a number too large to send"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"'{path}' must be a finite number"
    if isinstance(value, Mapping):
        for name, inner in value.items():
            if not isinstance(name, str):
                return f"'{path}' has a non-text field name {_got(name)}"
            found = _unstorable_in(inner, f"{path}.{name}", depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, inner in enumerate(value):
            found = _unstorable_in(inner, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
        return None
    return f"'{path}' holds a {type(value).__name__}: use text, numbers, true/false, lists, tables"


def _credential_in(value: Any, path: str, depth: int = 0) -> str | None:
    """The path of the first credential found in an ``extra`` value (None: none): a text
    value under a name that says credential, or text shaped like a key or an auth header,
    at any depth of tables and lists."""
    if depth > 64:
        return None  # deeper than any request body; TOML and JSON refuse far less already
    if isinstance(value, str):
        return path if _holds_secret(value) else None
    if isinstance(value, Mapping):
        for name, inner in value.items():
            inner_path = f"{path}.{name}"
            if isinstance(inner, str) and isinstance(name, str) and inner.strip():
                words, joined = _name_words(name)
                if name not in _NOT_SECRET_FIELDS and (
                    words & _SECRET_WORDS or joined in _SECRET_WORDS or joined.endswith("apikey")
                ):
                    return inner_path
            found = _credential_in(inner, inner_path, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, inner in enumerate(value):
            found = _credential_in(inner, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
    return None


def _thaw(value: Any) -> Any:
    """Plain dicts and lists (TOML- and JSON-serialisable) from mapping proxies."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


def spec_from_options(worker_id: str, provider: str, model: str, **options: Any) -> WorkerSpec:
    """A spec from ``workers add`` options: ``provider`` may be a preset name, which fills
    the provider protocol and the base URL (the key's environment variable follows from
    the host)."""
    preset = PRESETS.get(provider)
    if preset is not None:
        options["base_url"] = options.get("base_url") or preset.base_url
        provider = preset.provider
    return WorkerSpec(
        id=worker_id,
        provider=provider,
        model=model,
        **{k: v for k, v in options.items() if v is not None},
    )
