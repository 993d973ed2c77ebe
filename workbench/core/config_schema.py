"""How a run config's keys are declared, and how a TOML file's values are read into them.

A key is a dataclass field made with ``key(default, label, help, ...)``: its ``Key`` (label,
one-sentence help, bounds, choices) rides in the field's metadata, where the check, the run
form and the config reference read it. This module reads a config file (``read_toml``),
types each value by its field (``read_section``, ``coerce``: every problem listed, each
naming its key) and checks it against its key's bounds (``bounds_problem``). Which keys
exist, and the rules that join them, are the sections' (``config.py``, and
``optimizers/settings.py`` for ``[optimizer]``).
"""

from __future__ import annotations

import math
import stat
import tomllib
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.errors import BadInput, FileEncodingError, read_text

# an integer key beyond this is a typo (and would overflow numpy or pycma later)
MAX_INT = 2**31 - 1


class ConfigError(BadInput, ValueError):
    """A config that cannot be used. ``problems`` lists every problem found, each naming
    its key (``section.key``) and the fix; the message is all of them, one a line."""

    def __init__(self, message: str | Sequence[str]):
        self.problems: tuple[str, ...] = (message,) if isinstance(message, str) else tuple(message)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, kw_only=True)
class Key:
    """One config key's documentation and bounds, kept where the key is defined (its
    dataclass field's ``metadata["key"]``): the config check, the run form's labels,
    tooltips and choices, and the config reference (docs/reference/config.md) all read it.

    ``low`` / ``high``: inclusive bounds of a number (``low_open``: strictly above
    ``low``); ``choices``: the values allowed (``strict=False``: the values offered, the
    check being the key's own rule); ``zero``: what 0 means ("no limit"); ``ours``: an option of ours
    that departs from the paper (docs/METHOD.md)."""

    label: str
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    strict: bool = True
    zero: str = ""
    unit: str = ""
    ours: bool = False

    def bounds(self, whole: bool) -> str:
        """The allowed range in words: "a number from 0 to 2", "1 or more", ..."""
        kind = "a whole number" if whole else "a number"

        def n(x: float) -> str:
            return f"{x:,g}" if not whole else f"{int(x):,}"

        if self.low is not None and self.high is not None:
            text = f"{kind} from {n(self.low)} to {n(self.high)}"
        elif self.low is not None and self.low_open:
            text = f"{kind} above {n(self.low)}"
        elif self.low is not None:
            text = f"{n(self.low)} or more"
        elif self.high is not None:
            text = f"at most {n(self.high)}"
        else:
            text = kind
        return f"{text}; 0 means {self.zero}" if self.zero else text


def key(default: Any, label: str, help: str, **bounds: Any) -> Any:
    """A config key: its default and its ``Key`` (label, one-sentence help, bounds)."""
    return field(default=default, metadata={"key": Key(label=label, help=help, **bounds)})


@dataclass(frozen=True, kw_only=True)
class ConfigKey:
    """One key of the run config as the docs and the form list it."""

    section: str
    name: str
    type: Any
    default: Any
    key: Key

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def type_name(self) -> str:
        return {int: "integer", float: "number", str: "string", bool: "true or false"}.get(
            self.type, "list of strings"
        )


# a config file is a few hundred bytes; anything far larger is not one
MAX_CONFIG_BYTES = 1_000_000


def read_toml(path: Path) -> dict[str, Any]:
    """The table in TOML file ``path``; every way the file can be unusable (missing, a
    folder, a device, too large, unreadable, not UTF-8, not TOML) is a ``ConfigError``
    naming it and the fix."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found: check the path") from None
    except OSError as exc:
        raise ConfigError(
            f"config file {path} cannot be read ({exc.strerror}): check the path"
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            f"config path {path} is a folder: give the .toml file inside it "
            "(e.g. workbench/resources/examples/sandbox.toml)"
        )
    if not stat.S_ISREG(st.st_mode):  # a pipe or a device would block or never end
        raise ConfigError(f"config path {path} is not a regular file: give a .toml file")
    if st.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {path} is {st.st_size:,} bytes, too large for a run config "
            f"(at most {MAX_CONFIG_BYTES:,}): check that it is the right file"
        )
    try:
        text = read_text("config file", path)  # a BOM (Windows Notepad) is no error
    except PermissionError:
        raise ConfigError(
            f"config file {path} is not readable by you: check its permissions"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror})") from None
    except FileEncodingError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(f"{path} nests arrays or tables too deeply to be a run config") from None


def shown(value: Any, limit: int = 60) -> str:
    """``value`` as a short repr for a message (a huge value does not flood the terminal)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long for repr
        return "a number too long to show"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_name(key: str) -> str:
    """A key as written in a message: plain if it is a short printable word."""
    return key if len(key) <= 60 and key.isprintable() and "'" not in key else shown(key)


def read_section(cls: type, values: dict[str, Any], where: str, problems: list[str]) -> Any:
    """Section ``cls`` from a file's ``values``: each problem (an unknown key, a wrong type)
    is added to ``problems``, naming ``where``; the keys in error keep their defaults."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        if key not in hints:
            problems.append(f"{where}.{key_name(key)}: unknown key; known keys: {', '.join(hints)}")
            continue
        try:
            kwargs[key] = coerce(value, hints[key], f"{where}.{key}")
        except ConfigError as exc:
            problems.extend(exc.problems)
    return cls(**kwargs)  # the keys in error keep their defaults


def coerce(value: Any, hint: Any, where: str) -> Any:
    """``value`` as the field type ``hint`` wants it, or a ``ConfigError`` naming ``where``."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {shown(value)}")
        return tuple(value)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {shown(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {shown(value)}")
        if abs(value) > MAX_INT:
            raise ConfigError(f"{where}: {shown(value)} is out of range (at most {MAX_INT})")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {shown(value)}")
        if isinstance(value, int) and abs(value) > MAX_INT:
            raise ConfigError(f"{where}: {shown(value)} is out of range")
        if not math.isfinite(value):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {shown(value)}")
        return value
    raise ConfigError(f"{where}: unsupported type {hint}")


def bounds_problem(value: Any, k: ConfigKey) -> str | None:
    """What is wrong with ``value`` by ``k``'s own bounds and choices, or None."""
    spec = k.key
    if spec.choices and spec.strict:
        if value in spec.choices:
            return None
        what = {"name": k.section, "policy": f"{k.section} policy"}.get(
            k.name, k.name.replace("_", " ")
        )
        return f"unknown {what} '{key_name(str(value))}'; choose one of {', '.join(spec.choices)}"
    if k.type not in (int, float) or (spec.low is None and spec.high is None):
        return None
    use = spec.bounds(whole=k.type is int)
    if not math.isfinite(value):
        return f"{value} is not a finite number: use {use}"
    low_ok = spec.low is None or (value > spec.low if spec.low_open else value >= spec.low)
    if not low_ok and spec.low == 0 and not spec.low_open:
        return f"{value} is negative: use {use}"
    if not low_ok or (spec.high is not None and value > spec.high):
        return f"{value} is out of range: use {use}"
    return None
