"""The user's settings: one small TOML file in the user config directory (platformdirs),
read at start and written by the Settings page.

```toml
workspace = "/home/me/trinity"   # absent: the user data directory
device = "auto"                  # the default for new runs: auto, cpu, cuda, mps
cache_policy = "auto"            # the default for new runs: auto, off, read-write, replay-only
theme = "system"                 # system, light, dark
```

Unknown keys and bad values are errors that name the key. A file that cannot be read is
never deleted or rewritten behind the user's back: ``load_settings_or_defaults`` falls back
to the defaults and says why.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from workbench.core.config import CACHE_POLICIES, RunConfig
from workbench.core.errors import BadInput, FileEncodingError, read_text
from workbench.core.workspace import APP_NAME

FILE_NAME = "settings.toml"
DEVICES = ("auto", "cpu", "cuda", "mps")
THEMES = ("system", "light", "dark")


class SettingsError(BadInput, ValueError):
    """A settings file or value that cannot be used; the message names the key and the fix."""


@dataclass(frozen=True)
class Settings:
    workspace: str | None = None  # None: the user data directory
    device: str = "auto"
    cache_policy: str = "auto"
    theme: str = "system"

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "settings") -> Settings:
        known = [f.name for f in dataclasses.fields(cls)]
        for key, value in data.items():
            if key not in known:
                raise SettingsError(
                    f"{source}: unknown key '{key}'; known keys: {', '.join(known)}"
                )
            if not isinstance(value, str):
                raise SettingsError(f"{source}: {key} must be a string, got {value!r}")
        try:
            return cls(**data)
        except SettingsError as exc:
            raise SettingsError(f"{source}: {exc}") from None

    def to_dict(self) -> dict[str, str]:
        """The TOML table (no ``workspace`` key when it is the default)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def replace(self, **changes: Any) -> Settings:
        """A validated copy with some values changed: ``settings.replace(theme="dark")``."""
        return dataclasses.replace(self, **changes)


def _check(settings: Settings) -> None:
    def need(ok: bool, key: str, message: str) -> None:
        if not ok:
            raise SettingsError(f"{key}: {message}")

    need(
        settings.device in DEVICES,
        "device",
        f"unknown device '{settings.device}'; choose one of {', '.join(DEVICES)}",
    )
    need(
        settings.cache_policy in CACHE_POLICIES,
        "cache_policy",
        f"unknown cache policy '{settings.cache_policy}'; choose one of {', '.join(CACHE_POLICIES)}",
    )
    need(
        settings.theme in THEMES,
        "theme",
        f"unknown theme '{settings.theme}'; choose one of {', '.join(THEMES)}",
    )
    need(
        settings.workspace is None or bool(settings.workspace.strip()),
        "workspace",
        "must be a folder path (leave it out for the default workspace)",
    )


def settings_path() -> Path:
    """Where the settings live: ``settings.toml`` in the user config directory."""
    return Path(platformdirs.user_config_dir(APP_NAME)) / FILE_NAME


def load_settings(path: str | Path | None = None) -> Settings:
    """The settings in ``path`` (default: ``settings_path()``); the defaults when there is no
    file. Raises ``SettingsError`` for a file that cannot be read or used."""
    path = Path(path) if path is not None else settings_path()
    try:
        text = read_text("the settings file", path)  # a byte order mark is no error
    except FileNotFoundError:
        return Settings()
    except FileEncodingError as exc:
        raise SettingsError(f"{exc}; or remove it to start from the defaults") from None
    except OSError as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(
            f"the settings file {path} is not valid TOML ({exc}): fix it or remove it"
        ) from None
    except RecursionError:
        raise SettingsError(
            f"the settings file {path} nests tables or arrays too deeply: fix it or remove it"
        ) from None
    return Settings.from_dict(data, str(path))


def load_settings_or_defaults(path: str | Path | None = None) -> tuple[Settings, str | None]:
    """The settings, or the defaults and the reason when the file cannot be used (the file
    is left as it is, for the user to fix)."""
    try:
        return load_settings(path), None
    except SettingsError as exc:
        return Settings(), f"{exc}. Using the default settings; the file was left as it is."


def save_settings(settings: Settings, path: str | Path | None = None) -> Path:
    """Write ``settings`` (atomically: a crash leaves the old file or the new one)."""
    import tomli_w

    path = Path(path) if path is not None else settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(tomli_w.dumps(settings.to_dict()), encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_run_config(path: str | Path, settings: Settings | None = None) -> RunConfig:
    """A run config TOML with the user's defaults for what the file leaves out: the
    backbone device (``[backbone] device``) and the cache policy (``[cache] policy``).
    ``settings``: the user's settings file when None (its defaults if it cannot be used:
    the Settings page says why)."""
    if settings is None:
        settings = load_settings_or_defaults()[0]
    return RunConfig.load(
        path,
        defaults={
            "backbone": {"device": settings.device},
            "cache": {"policy": settings.cache_policy},
        },
    )
