"""API keys in the OS keychain, never in a file.

Keys live in the OS keychain through ``keyring`` (macOS Keychain, Windows Credential
Locker, Secret Service on Linux via gnome-keyring or KWallet), service
``trinity-workbench``, one entry per worker id. With no secure keyring backend the store
says so, with the fix for the platform, and refuses to store a key; it never falls back to
a plain-text file. ``Secret`` carries a key through the program without ever printing it.
"""

from __future__ import annotations

import base64
import re
import sys
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import BadInput

SERVICE = "trinity-workbench"  # the keychain service name; one entry per worker id


class KeychainError(BadInput, ValueError):
    """A key cannot be used or kept as asked; the message names the worker and the fix."""


class InvalidKey(KeychainError):
    """A key as entered is empty or holds blanks (two keys pasted, or a key with its label)."""


class KeychainUnavailable(KeychainError):
    """No secure keyring backend works here; the message gives the fix per platform."""


class Secret:
    """An API key that does not print itself: ``repr``, ``str`` and f-strings show a mask.
    ``reveal()`` is the only way to the value (for the one request header that needs it)."""

    __slots__ = ("_value", "_echoes", "_pieces")

    def __init__(self, value: str):
        if not isinstance(value, str) or not value.strip():
            raise ValueError("an API key must be a non-empty string")
        self._value = value.strip()
        self._echoes: re.Pattern[str] | None = None
        self._pieces: PieceMasker | None = None

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """``text`` with every echo of the key replaced by a mask: the key itself in any
        letter case, split by blanks, quotes or escapes, JSON-, URL- or HTML-escaped, in
        base64 (any alignment, standard or URL-safe) or hex, and any piece of it of
        ``PIECE`` (8) characters or more, in any of those forms (a key echoed in pieces). Used on everything a worker returns (replies, errors)
        before it is stored or printed."""
        if not text:
            return text
        if self._echoes is None:
            self._echoes = echo_pattern(self._value)
            self._pieces = PieceMasker([self._value])
        assert self._pieces is not None
        return self._pieces.mask(self._echoes.sub("****", text))

    def __repr__(self) -> str:
        return "Secret('****')"

    __str__ = __repr__

    def __reduce__(self):  # never pickled into a file or a process pool by accident
        raise TypeError("a Secret cannot be pickled")


# what may sit between two characters of a key echoed "split": blanks, quotes, commas,
# dots, zero-width characters and escaped line breaks
_SPLIT = r"""(?:[\s"'`+,.|;:\\/*_-]|\\[nrt]|[\u200b-\u200f\u2060\ufeff]){0,6}"""


def _char(c: str) -> str:
    """A pattern for one key character as echoed: itself or an escape of it."""
    code = ord(c)
    forms = [re.escape(c)]
    if code < 0x10000:
        forms.append(rf"\\u{code:04x}")  # JSON (case-insensitive below)
    forms += [rf"%{code:02x}", rf"&#{code};", rf"&#x{code:x};"]  # URL, HTML
    return "(?:" + "|".join(forms) + ")"


def _base64_cores(data: bytes) -> set[str]:
    """Pieces of text present in any base64 encoding of a text that contains ``data``,
    whatever its offset: one per alignment, trimmed of the characters the neighbours
    change, in the standard and the URL-safe alphabet."""
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode().rstrip("=")
        start = (offset * 4 + 2) // 3  # the characters the leading bytes reach into
        end = len(encoded) - (1 if (offset + len(data)) % 3 else 0)
        core = encoded[start:end]
        if len(core) >= 8:
            cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


def echo_pattern(key: str) -> re.Pattern[str]:
    """One case-insensitive pattern for the echoes of ``key`` that ``Secret.redact`` masks."""
    alternatives = [_SPLIT.join(_char(c) for c in key)]  # whole, split, escaped, any case
    raw = key.encode("utf-8")
    alternatives.append(re.escape(raw.hex()))
    pattern = "|".join(alternatives)
    # base64 is case-sensitive: a separate, exact group
    b64 = "|".join(re.escape(c) for c in sorted(_base64_cores(raw), key=len, reverse=True))
    return re.compile(f"(?i:{pattern})" + (f"|{b64}" if b64 else ""))


# the shortest piece of a key that is masked wherever it turns up: a provider prefix such
# as ``sk-proj-`` is 8 characters, so any piece of the secret part of that length is
# masked too
PIECE = 8
# characters ignored between two characters of a key echoed "split" or "spaced": blanks,
# quotes, separators and zero-width characters (the normalised view of a text)
_IGNORED = frozenset(" \t\r\n\x0b\x0c\"'`+,.|;:\\/*_-\u200b\u200c\u200d\u200e\u200f\u2060\ufeff")


# the public prefixes of providers' keys (they name the provider, not the key): a piece
# that lies wholly inside one is left as it is, any piece reaching past it is masked
KEY_PREFIXES = (
    "sk-ant-admin01-",
    "sk-ant-api03-",
    "sk-svcacct-",
    "sk-or-v1-",
    "sk-admin-",
    "sk-proj-",
    "sk-ant-",
    "AIza",
    "gsk_",
    "xai-",
    "hf_",
    "sk-",
)


def public_prefix(key: str) -> str:
    """The longest provider prefix ``key`` starts with (``KEY_PREFIXES``), or ``""``."""
    return max((p for p in KEY_PREFIXES if key.startswith(p)), key=len, default="")


def _forms(key: str) -> set[str]:
    """The texts whose pieces are masked: the key, its hex and its base64 (every
    alignment, both alphabets), lower-cased (the masker compares letters case-blind)."""
    raw = key.encode("utf-8")
    forms = {key, raw.hex()}
    for core in _base64_cores(raw):
        forms.add(core)
    return {f.lower() for f in forms}


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased without the characters in ``_IGNORED``, and the index in
    ``text`` of each character kept."""
    kept, where = [], []
    for i, c in enumerate(text):
        if c not in _IGNORED:
            kept.append(c)
            where.append(i)
    return "".join(kept).lower(), where


class PieceMasker:
    """Masks every piece of at least ``PIECE`` characters of a set of keys wherever it
    occurs in a text: the key's own characters in any letter case, its hex or its base64,
    contiguous or with blanks, quotes or separators between them. An Aho-Corasick
    automaton (pyahocorasick) over every ``PIECE``-gram of every form of every key finds
    all of them in one pass over the text and one over its normalised view; overlapping
    and adjacent hits merge into one mask, so a run of key characters is masked whole."""

    def __init__(self, keys: list[str]):
        import ahocorasick

        self._raw = ahocorasick.Automaton()
        self._flat = ahocorasick.Automaton()
        for key in keys:
            prefix = public_prefix(key).lower()
            for form in _forms(key):
                for i in range(len(form) - PIECE + 1):
                    gram = form[i : i + PIECE]
                    if form.startswith(prefix) and i + PIECE <= len(prefix):
                        continue  # wholly inside the provider's public prefix
                    self._raw.add_word(gram, PIECE)
                    flat = "".join(c for c in gram if c not in _IGNORED)
                    if len(flat) == PIECE:
                        self._flat.add_word(flat, PIECE)
                # the pieces of a form with its separators left out (``sk-proj-ab...``
                # echoed as ``skprojab...``)
                bare = "".join(c for c in form if c not in _IGNORED)
                inside = len("".join(c for c in prefix if c not in _IGNORED))
                for i in range(len(bare) - PIECE + 1):
                    if form.startswith(prefix) and i + PIECE <= inside:
                        continue
                    self._flat.add_word(bare[i : i + PIECE], PIECE)
        self._empty = not len(self._raw) and not len(self._flat)
        if len(self._raw):
            self._raw.make_automaton()
        if len(self._flat):
            self._flat.make_automaton()

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The spans ``[start, end)`` of ``text`` to mask, merged and in order."""
        if self._empty or len(text) < PIECE:
            return []
        hits: list[tuple[int, int]] = []
        if len(self._raw):
            lowered = text.lower()
            if len(lowered) == len(text):  # else a character whose lower case is longer
                hits += [(end - n + 1, end + 1) for end, n in self._raw.iter(lowered)]
        if len(self._flat):
            flat, where = _normalised(text)
            if len(flat) == len(where):
                hits += [(where[end - n + 1], where[end] + 1) for end, n in self._flat.iter(flat)]
        merged: list[tuple[int, int]] = []
        for start, end in sorted(hits):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def mask(self, text: str) -> str:
        """``text`` with every span of ``spans`` replaced by ``****``."""
        out, copied = [], 0
        for start, end in self.spans(text):
            out += [text[copied:start], "****"]
            copied = end
        out.append(text[copied:])
        return "".join(out)


def clean_key(worker_id: str, key: str) -> str:
    """``key`` without surrounding blanks, or ``InvalidKey`` if it is empty or holds
    spaces or line breaks (two keys pasted, or a key with its label)."""
    key = (key or "").strip()
    if not key:
        raise InvalidKey(f"the key for worker '{worker_id}' is empty: give the API key")
    if any(c.isspace() for c in key):
        raise InvalidKey(
            f"the key for worker '{worker_id}' contains spaces or line breaks: give exactly one key"
        )
    return key


def mask(key: str) -> str:
    """A key as the GUI may show it after entry: never more than its last 4 characters."""
    return "****" + key[-4:] if len(key) >= 12 else "****"


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
