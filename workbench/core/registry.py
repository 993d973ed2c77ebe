"""Registered workers: their specs in a TOML file, their keys in the OS keychain.

Specs live in one file per user, ``workers.toml`` in the user config directory
(``platformdirs.user_config_dir("trinity-workbench")``, e.g.
``~/.config/trinity-workbench/workers.toml`` on Linux). Workers are per user, not per
workspace: a registered worker can be named in every workspace, and ``--workspace`` never
changes which workers exist. The file is written atomically and never holds a key.

Keys live in the OS keychain through ``keyring`` (macOS Keychain, Windows Credential
Locker, Secret Service on Linux via gnome-keyring or KWallet), service
``trinity-workbench``, one entry per worker id. An environment variable
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``, ``OPENROUTER_API_KEY``, ...,
or the spec's ``key_env``) is the documented fallback, read at call time and never
stored. With no secure keyring backend the registry says so, with the fix for the
platform, and refuses to store a key; it never falls back to a plain-text file.
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import platformdirs
import tomli_w

from workbench.core.workers.base import UnknownWorker, Worker

if TYPE_CHECKING:
    import httpx

SERVICE = "trinity-workbench"  # the keychain service name; one entry per worker id
FILE_NAME = "workers.toml"
FORMAT_VERSION = 1
PROVIDERS = ("openai", "anthropic", "gemini", "local")
BUILTIN_PREFIXES = ("local", "sandbox")  # ids that name built-in workers

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Extra request fields whose name says they carry a credential: they would land in the file.
_SECRET_FIELD = re.compile(
    r"(api[_-]?key|secret|password|passwd|authorization|bearer|credential)", re.I
)
# Extra fields the client itself sets from the spec; overriding them from `extra` is a mistake.
_RESERVED_FIELDS = {"model", "messages", "stream", "contents", "system", "systemInstruction"}


class RegistryError(ValueError):
    """A registry operation cannot be done as asked (bad spec, unknown id, bad file)."""


class SpecError(RegistryError):
    """A worker spec field is invalid; the message names the field and the fix."""


class KeychainUnavailable(RegistryError):
    """No secure keyring backend works here; the message gives the fix per platform."""


# --------------------------------------------------------------------------- secrets


class Secret:
    """An API key that does not print itself: ``repr``, ``str`` and f-strings show a mask.
    ``reveal()`` is the only way to the value (for the one request header that needs it)."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if not isinstance(value, str) or not value.strip():
            raise ValueError("an API key must be a non-empty string")
        self._value = value.strip()

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by a mask."""
        return text.replace(self._value, "****") if text else text

    def __repr__(self) -> str:
        return "Secret('****')"

    __str__ = __repr__

    def __reduce__(self):  # never pickled into a file or a process pool by accident
        raise TypeError("a Secret cannot be pickled")


def clean_key(worker_id: str, key: str) -> str:
    """``key`` without surrounding blanks, or ``RegistryError`` if it is empty or holds
    spaces or line breaks (two keys pasted, or a key with its label)."""
    key = (key or "").strip()
    if not key:
        raise RegistryError(f"the key for worker '{worker_id}' is empty: give the API key")
    if any(c.isspace() for c in key):
        raise RegistryError(
            f"the key for worker '{worker_id}' contains spaces or line breaks: give exactly one key"
        )
    return key


def mask(key: str) -> str:
    """A key as the GUI may show it after entry: never more than its last 4 characters."""
    return "****" + key[-4:] if len(key) >= 12 else "****"


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
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 < value < math.inf)
            ):
                raise SpecError(
                    f"field 'timeouts.{f.name}' must be a positive number of seconds (got {value!r})"
                )
        if self.total < self.connect or self.total < self.read:
            raise SpecError(
                f"field 'timeouts.total' ({self.total} s) must be at least the connect and read "
                "timeouts: it bounds a whole attempt"
            )


@dataclass(frozen=True)
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
                f"{where} 'temperature' must be a number from 0 to 2 (got {self.temperature!r})"
            )
        for name in ("max_tokens", "context_window"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise SpecError(
                    f"{where} '{name}' must be a whole number of tokens, at least 1 (got {value!r})"
                )
        for name in ("price_in", "price_out"):
            value = getattr(self, name)
            if not _is_number(value) or value < 0 or math.isinf(value):
                raise SpecError(
                    f"{where} '{name}' must be dollars per million tokens, 0 or more (got {value!r})"
                )
        if (
            not isinstance(self.concurrency, int)
            or isinstance(self.concurrency, bool)
            or not 1 <= self.concurrency <= 1024
        ):
            raise SpecError(
                f"{where} 'concurrency' must be a whole number from 1 to 1024 (got {self.concurrency!r})"
            )
        if self.rpm is not None and (
            not _is_number(self.rpm) or self.rpm <= 0 or math.isinf(self.rpm)
        ):
            raise SpecError(
                f"{where} 'rpm' must be a positive number of requests per minute, or absent "
                f"(got {self.rpm!r})"
            )
        if not isinstance(self.timeouts, Timeouts):
            raise SpecError(f"{where} 'timeouts' must be a Timeouts (connect, read, total)")
        if self.key_env is not None and (
            not isinstance(self.key_env, str) or not _ENV.match(self.key_env)
        ):
            raise SpecError(
                f"{where} 'key_env' must name an environment variable such as OPENAI_API_KEY "
                f"(got {self.key_env!r})"
            )
        if not isinstance(self.extra, Mapping):
            raise SpecError(
                f"{where} 'extra' must be a table of request fields (got {type(self.extra).__name__})"
            )
        for name in self.extra:
            if not isinstance(name, str):
                raise SpecError(f"{where} 'extra' has a non-text field name {name!r}")
            if _SECRET_FIELD.search(name):
                raise SpecError(
                    f"{where} 'extra.{name}' looks like a credential, and workers.toml never holds "
                    f"one: store the key with trinity-workbench workers set-key {self.id} --key-stdin"
                )
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
    if not isinstance(worker_id, str) or not _ID.match(worker_id):
        raise SpecError(
            f"worker id {worker_id!r} is invalid: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no ':' or ',')"
        )
    if worker_id in BUILTIN_PREFIXES:
        raise SpecError(f"worker id '{worker_id}' names built-in workers: choose another id")
    return worker_id


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _check_url(where: str, url: Any) -> str:
    if not isinstance(url, str):
        raise SpecError(f"{where} 'base_url' must be a URL (got {url!r})")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecError(
            f"{where} 'base_url' must be an http:// or https:// URL with a host (got {url!r})"
        )
    if parts.username or parts.password:
        raise SpecError(
            f"{where} 'base_url' must not carry credentials: store the key with "
            "trinity-workbench workers set-key ID --key-stdin"
        )
    if parts.query or parts.fragment:
        raise SpecError(
            f"{where} 'base_url' must not have a query or fragment (a key in the URL would land "
            "in workers.toml): give the endpoint only, e.g. https://api.openai.com/v1"
        )
    return url.strip().rstrip("/")


def _thaw(value: Any) -> Any:
    """Plain dicts and lists (TOML- and JSON-serialisable) from mapping proxies."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


# --------------------------------------------------------------------------- keychain


def _platform_fix(env: str | None) -> str:
    env_hint = (
        f"set {env} in the environment (read at call time, never stored)"
        if env
        else "set the environment variable named by the worker's key_env"
    )
    if sys.platform == "darwin":
        return (
            f"unlock the macOS Keychain (log in to the desktop session, or run "
            f"`security unlock-keychain`), or {env_hint}"
        )
    if sys.platform.startswith("win"):
        return f"use a normal Windows user session (Windows Credential Locker), or {env_hint}"
    return (
        "start a Secret Service provider in a D-Bus session: install gnome-keyring (`apt install "
        "gnome-keyring dbus-user-session`) or KWallet; on a headless server run the workbench under "
        "`dbus-run-session -- sh -c 'echo -n PASSWORD | gnome-keyring-daemon --unlock "
        f"--components=secrets; trinity-workbench ...'`; or {env_hint}"
    )


def _insecure(backend: Any) -> bool:
    module = type(backend).__module__
    return (
        module.startswith("keyrings.alt")
        or module in ("keyring.backends.null", "keyring.backends.fail")
        or "plaintext" in type(backend).__name__.lower()
    )


class KeyStore:
    """Keys in the OS keychain: service ``trinity-workbench``, one entry per worker id.

    Only a secure backend is used. keyring's chainer is opened up and its best secure
    member used directly, so a key can never slip into a plain-text member of the chain.
    """

    def __init__(self, backend: Any | None = None):
        self._backend = backend

    def backend(self, env: str | None = None) -> Any:
        """The secure keyring backend, or ``KeychainUnavailable`` with the fix."""
        import keyring

        chosen = self._backend if self._backend is not None else keyring.get_keyring()
        members = list(getattr(chosen, "backends", None) or [chosen])
        secure = [b for b in members if not _insecure(b)]
        if not secure:
            names = ", ".join(f"{type(b).__module__}.{type(b).__name__}" for b in members) or "none"
            plain = [
                b
                for b in members
                if type(b).__module__ not in ("keyring.backends.fail", "keyring.backends.null")
            ]
            what = (
                "keyring would store keys in plain text"
                if plain
                else "no keyring backend is available"
            )
            raise KeychainUnavailable(
                f"no secure keychain for API keys ({what}: {names}); the workbench never stores a key in "
                f"plain text. Fix: {_platform_fix(env)}"
            )
        return max(secure, key=lambda b: getattr(b, "priority", 0))

    def available(self) -> bool:
        try:
            self.backend()
        except KeychainUnavailable:
            return False
        return True

    def get(self, worker_id: str, env: str | None = None) -> str | None:
        from keyring.errors import KeyringError

        backend = self.backend(env)
        try:
            return backend.get_password(SERVICE, worker_id)
        except KeyringError as exc:
            raise self._failed("read", worker_id, exc, env) from None

    def set(self, worker_id: str, key: str, env: str | None = None) -> None:
        from keyring.errors import KeyringError

        value = Secret(key).reveal()
        backend = self.backend(env)
        try:
            backend.set_password(SERVICE, worker_id, value)
        except KeyringError as exc:
            raise self._failed("store", worker_id, exc, env) from None

    def delete(self, worker_id: str) -> bool:
        """Delete the key of ``worker_id``; False if there was none."""
        from keyring.errors import KeyringError, PasswordDeleteError

        backend = self.backend()
        try:
            if backend.get_password(SERVICE, worker_id) is None:
                return False
            backend.delete_password(SERVICE, worker_id)
        except PasswordDeleteError:
            return False
        except KeyringError as exc:
            raise self._failed("delete", worker_id, exc, None) from None
        return True

    @staticmethod
    def _failed(
        action: str, worker_id: str, exc: Exception, env: str | None
    ) -> KeychainUnavailable:
        # keyring's messages hold backend details, never the key; keep only the class name
        # and the first line to be safe.
        detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        locked = "lock" in detail.lower() or type(exc).__name__ == "KeyringLocked"
        fix = (
            "unlock the keyring (log in to the desktop session, or `gnome-keyring-daemon --unlock`)"
            if locked
            else _platform_fix(env)
        )
        return KeychainUnavailable(
            f"cannot {action} the key of worker '{worker_id}' in the keychain "
            f"({type(exc).__name__}: {detail}): {fix}"
        )


@dataclass(frozen=True)
class KeyStatus:
    """Where a worker's key would come from; never the key itself."""

    source: (
        str  # "keychain", "environment", "missing", "not needed", "entered" (typed, not stored yet)
    )
    env: str | None = None  # the environment variable consulted (if any)
    note: str | None = None  # e.g. why the keychain could not be read

    @property
    def label(self) -> str:
        if self.source == "keychain":
            return "in keychain"
        if self.source == "environment":
            return f"from environment ({self.env})"
        if self.source == "not needed":
            return "not needed"
        if self.source == "entered":
            return "entered (not stored yet)"
        return "missing" + (f" ({self.note})" if self.note else "")


# --------------------------------------------------------------------------- registry


def default_file() -> Path:
    """``workers.toml`` in the user config directory."""
    return Path(platformdirs.user_config_dir("trinity-workbench")) / FILE_NAME


class Registry:
    """The registered workers of ``path`` (default: the user's workers.toml) and their keys.

    Every change rewrites the file atomically (a temporary file in the same folder, then
    ``os.replace``); the file is re-read on each operation, so two processes see each
    other's changes.
    """

    def __init__(self, path: str | Path | None = None, *, keys: KeyStore | None = None):
        self.path = Path(path) if path is not None else default_file()
        self.keys = keys or KeyStore()

    @classmethod
    def open(cls, path: str | Path | None = None, *, keys: KeyStore | None = None) -> Registry:
        return cls(path, keys=keys)

    # ------------------------------------------------------------- reading

    def _read(self) -> dict[str, WorkerSpec]:
        if not self.path.exists():
            return {}
        try:
            doc = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RegistryError(f"cannot read worker registry {self.path}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(
                f"worker registry {self.path} is not valid TOML ({exc}): fix the file or move "
                "it away and add the workers again"
            ) from None
        unknown = sorted(set(doc) - {"version", "workers"})
        if unknown:
            raise RegistryError(
                f"worker registry {self.path}: unknown top-level key(s) {', '.join(unknown)} "
                "(expected 'version' and [workers.ID] tables)"
            )
        version = doc.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise RegistryError(
                f"worker registry {self.path} has version {version!r}; this workbench reads "
                f"version {FORMAT_VERSION}: upgrade trinity-workbench"
            )
        workers = doc.get("workers", {})
        if not isinstance(workers, dict):
            raise RegistryError(
                f"worker registry {self.path}: 'workers' must be tables [workers.ID]"
            )
        specs = {}
        for wid, table in workers.items():
            try:
                specs[wid] = WorkerSpec.from_toml(wid, table)
            except (SpecError, TypeError) as exc:
                raise RegistryError(f"worker registry {self.path}: {exc}") from None
        return specs

    def list(self) -> list[WorkerSpec]:
        """The registered workers, in the file's order."""
        return list(self._read().values())

    def find(self, worker_id: str) -> WorkerSpec | None:
        return self._read().get(worker_id)

    def get(self, worker_id: str) -> WorkerSpec:
        spec = self.find(worker_id)
        if spec is None:
            ids = ", ".join(self._read()) or "none yet"
            raise UnknownWorker(
                f"no registered worker '{worker_id}' (registered: {ids}): add it with "
                f"trinity-workbench workers add {worker_id} --provider P --model M"
            )
        return spec

    # ------------------------------------------------------------- writing

    def _write(self, specs: Mapping[str, WorkerSpec]) -> None:
        doc = {"version": FORMAT_VERSION, "workers": {wid: s.to_toml() for wid, s in specs.items()}}
        text = (
            "# Trinity Workbench workers. Keys are never stored here: they live in the OS keychain\n"
            "# (service 'trinity-workbench'); see trinity-workbench workers set-key.\n"
            + tomli_w.dumps(doc)
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".workers-", suffix=".toml.tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def add(self, spec: WorkerSpec, *, key: str | None = None, replace: bool = False) -> WorkerSpec:
        """Register ``spec`` (and store ``key`` in the keychain). With a key and no secure
        keychain nothing is written. ``replace`` updates an existing worker (its key stays
        unless a new one is given)."""
        specs = self._read()
        if spec.id in specs and not replace:
            raise RegistryError(
                f"worker '{spec.id}' is already registered: remove it first, rename it, "
                "or pass --replace to update it"
            )
        if key is not None:
            self.keys.set(spec.id, Secret(key).reveal(), spec.effective_key_env)
        specs[spec.id] = spec
        try:
            self._write(specs)
        except BaseException:
            if key is not None and not replace:
                self.keys.delete(spec.id)
            raise
        return spec

    def set_key(self, worker_id: str, key: str) -> None:
        """Store (or replace) the key of a registered worker in the keychain."""
        spec = self.get(worker_id)
        self.keys.set(worker_id, Secret(key).reveal(), spec.effective_key_env)

    def remove(self, worker_id: str) -> bool:
        """Unregister a worker and delete its key from the keychain. Returns whether a key
        was deleted. With no keychain backend the spec is still removed (no key can be
        stored there anyway)."""
        specs = self._read()
        if worker_id not in specs:
            self.get(worker_id)  # raises with the list of ids
        del specs[worker_id]
        self._write(specs)
        try:
            return self.keys.delete(worker_id)
        except KeychainUnavailable:
            return False

    def rename(self, old: str, new: str) -> WorkerSpec:
        """Give a worker a new id; its key moves with it."""
        validate_worker_id(new)
        specs = self._read()
        spec = specs.get(old) or self.get(old)
        if new in specs:
            raise RegistryError(f"cannot rename '{old}' to '{new}': '{new}' is already registered")
        try:
            key = self.keys.get(old)
        except KeychainUnavailable:
            key = None
        if key is not None:
            self.keys.set(new, key, spec.effective_key_env)
        renamed = {
            (new if wid == old else wid): (s.renamed(new) if wid == old else s)
            for wid, s in specs.items()
        }
        try:
            self._write(renamed)
        except BaseException:
            if key is not None:
                self.keys.delete(new)
            raise
        if key is not None:
            self.keys.delete(old)
        return renamed[new]

    # ------------------------------------------------------------- keys

    def key_status(self, spec: WorkerSpec) -> KeyStatus:
        env = spec.effective_key_env
        if spec.provider == "local":
            return KeyStatus("not needed")
        note = None
        try:
            if self.keys.get(spec.id, env) is not None:
                return KeyStatus("keychain", env)
        except KeychainUnavailable:
            note = "no keyring backend"
        if env and os.environ.get(env, "").strip():
            return KeyStatus("environment", env, note)
        return KeyStatus("missing", env, note)

    def resolve_key(self, spec: WorkerSpec) -> tuple[Secret | None, KeyStatus]:
        """The key for a call (keychain first, then the environment) and where it came
        from. A missing key is not an error here: local servers need none, and a server
        that does answers 401, which the worker explains."""
        env = spec.effective_key_env
        if spec.provider == "local":
            return None, KeyStatus("not needed")
        note = None
        try:
            value = self.keys.get(spec.id, env)
            if value:
                return Secret(value), KeyStatus("keychain", env)
        except KeychainUnavailable:
            note = "no keyring backend"
        value = os.environ.get(env, "") if env else ""
        if value.strip():
            return Secret(value), KeyStatus("environment", env, note)
        return None, KeyStatus("missing", env, note)

    # ------------------------------------------------------------- workers

    def build_worker(self, worker_id: str, *, client: httpx.AsyncClient | None = None) -> Worker:
        """The worker object for a registered id, with its key resolved now."""
        return self.worker_for(self.get(worker_id), client=client)

    def worker_for(
        self, spec: WorkerSpec, *, key: str | None = None, client: httpx.AsyncClient | None = None
    ) -> Worker:
        """The worker object for ``spec``, registered or not (a spec still being edited).
        ``key`` is a key entered but not stored yet; without one the key is resolved now
        (keychain, then environment)."""
        if spec.provider == "local":
            from workbench.core.workers.local import LocalWorker

            return LocalWorker(
                spec.id, spec.model, price_in=spec.price_in, price_out=spec.price_out
            )
        if key is not None:
            key, status = (
                Secret(clean_key(spec.id, key)),
                KeyStatus("entered", spec.effective_key_env),
            )
        else:
            key, status = self.resolve_key(spec)
        from workbench.core.workers.base import PROVIDERS as CLASSES
        from workbench.core.workers.http import load_http_providers

        load_http_providers()
        return CLASSES[spec.provider](spec, key=key, key_status=status, client=client)


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
