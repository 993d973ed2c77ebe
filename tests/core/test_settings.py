"""User settings: a TOML file in the user config directory, validated with errors that name
the key; a corrupt file falls back to the defaults and is left in place."""

import os
from pathlib import Path

import pytest

from workbench.core.config import RunConfig
from workbench.core.settings import (
    Settings,
    SettingsError,
    load_run_config,
    load_settings,
    load_settings_or_defaults,
    save_settings,
    settings_path,
)


def test_no_file_gives_the_defaults_and_a_save_round_trips(tmp_path):
    assert (
        settings_path()
        == Path(os.environ["XDG_CONFIG_HOME"]) / "trinity-workbench" / "settings.toml"
    )
    assert load_settings() == Settings()
    chosen = Settings(
        workspace=str(tmp_path / "elsewhere"),
        device="cpu",
        cache_policy="replay-only",
        theme="dark",
    )
    path = save_settings(chosen)
    assert path == settings_path() and path.is_file()
    assert load_settings() == chosen
    assert 'theme = "dark"' in path.read_text()
    assert "workspace" not in save_settings(Settings()).read_text()  # the default is not written


@pytest.mark.parametrize(
    "text,key",
    [
        ('device = "tpu"\n', "device"),
        ('cache_policy = "sometimes"\n', "cache_policy"),
        ('theme = "sepia"\n', "theme"),
        ('colour = "blue"\n', "colour"),
        ("device = 3\n", "device"),
        ('workspace = "  "\n', "workspace"),
    ],
)
def test_bad_values_are_errors_that_name_the_key(tmp_path, text, key):
    path = tmp_path / "settings.toml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=key) as error:
        load_settings(path)
    assert str(path) in str(error.value)


def test_a_bad_value_given_in_code_names_the_key():
    with pytest.raises(
        SettingsError, match="theme: unknown theme 'sepia'; choose one of system, light, dark"
    ):
        Settings().replace(theme="sepia")


def test_a_corrupt_file_falls_back_to_the_defaults_and_is_kept(tmp_path):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("theme = [unclosed\n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings()
    settings, message = load_settings_or_defaults()
    assert settings == Settings()
    assert str(path) in message and "default settings" in message
    assert path.read_text() == "theme = [unclosed\n"


def test_new_run_configs_take_the_device_and_cache_policy_they_leave_out(tmp_path):
    settings = Settings(device="cpu", cache_policy="read-write")
    bare = tmp_path / "bare.toml"
    bare.write_text('[run]\nname = "bare"\n')
    config = load_run_config(bare, settings)
    assert (
        config.backbone.device == "cpu"
        and config.cache.policy == "read-write"
        and config.run.name == "bare"
    )
    explicit = tmp_path / "explicit.toml"
    explicit.write_text(
        RunConfig().replace(backbone={"device": "auto"}, cache={"policy": "off"}).to_toml()
    )
    config = load_run_config(explicit, settings)
    assert config.backbone.device == "auto" and config.cache.policy == "off"
    # without settings given: the user's settings file's (what the Runs page loads with)
    save_settings(settings)
    config = load_run_config(bare)
    assert (config.backbone.device, config.cache.policy) == ("cpu", "read-write")


def test_a_byte_order_mark_reads_and_deep_nesting_is_a_settings_error(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_bytes(b'\xef\xbb\xbfdevice = "cpu"\n')
    assert load_settings(path).device == "cpu"
    path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(SettingsError, match="nests tables or arrays too deeply"):
        load_settings(path)
