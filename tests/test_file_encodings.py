"""Every text file the workbench reads (workers.toml, the settings, run configs, suites,
local data files) meets an encoding error as it meets a syntax error: one sentence with
the file, the line and column of the first bad byte, and the fix; exit code 2 on the
command line, never a traceback (docs/guides/exit-codes.md)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.config import ConfigError, RunConfig
from workbench.core.errors import EXIT_BAD_INPUT, FileEncodingError
from workbench.core.settings import SettingsError, load_settings
from workbench.core.tasks.hub import _read_local
from workbench.core.tasks.jsonl import SuiteValidationError, load_jsonl
from workbench.core.workers.registry import Registry, default_file
from workbench.core.workers.spec import RegistryError

ROOT = Path(__file__).resolve().parents[1]
# "café" in Windows-1252 on line 3, column 6: the byte 0xe9 is not UTF-8
LATIN1 = b'[run]\nname = "x"\n# caf\xe9 notes\n'


def _says_where_and_how(message: str, path: Path, line: int = 3, column: int = 6) -> None:
    assert str(path) in message
    assert f"line {line}, column {column}" in message and "0xe9" in message
    assert "save the file as UTF-8" in message


def test_a_run_config_that_is_not_utf8(tmp_path):
    path = tmp_path / "run.toml"
    path.write_bytes(LATIN1)
    with pytest.raises(ConfigError) as caught:
        RunConfig.load(path)
    _says_where_and_how(str(caught.value), path)


def test_the_settings_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_bytes(LATIN1)
    with pytest.raises(SettingsError) as caught:
        load_settings(path)
    _says_where_and_how(str(caught.value), path)
    assert "remove it" in str(caught.value)


def test_a_worker_registry_that_is_not_utf8(tmp_path):
    path = tmp_path / "workers.toml"
    path.write_bytes(b"version = 1\n\n[workers.a]\nprovider = 'openai' # \xe9\n")
    with pytest.raises(RegistryError) as caught:
        Registry.open(path).list()
    _says_where_and_how(str(caught.value), path, line=4, column=23)


def test_a_suite_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(b'{"id": "a", "prompt": "ok", "answer": "1"}\n{"id": "b", "prompt": "\xe9"}\n')
    with pytest.raises(SuiteValidationError) as caught:
        load_jsonl(path)
    _says_where_and_how(str(caught.value), path, line=2, column=24)
    assert caught.value.issues[0].line == 2


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_local_data_file_that_is_not_utf8(tmp_path, suffix):
    path = tmp_path / f"rows{suffix}"
    path.write_bytes(b'[{"q": "1"},\n {"q": "2"},\n {"q": "caf\xe9"}]\n')
    with pytest.raises(FileEncodingError) as caught:
        _read_local(path)
    _says_where_and_how(str(caught.value), path, line=3, column=12)


def test_the_command_line_exits_2_with_the_sentence_for_a_config_and_for_workers_toml(
    tmp_path,
):
    config = tmp_path / "run.toml"
    config.write_bytes(LATIN1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    train = subprocess.run(
        [sys.executable, "-m", "workbench", "--workspace", str(tmp_path / "ws"), "train"]
        + [str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert train.returncode == EXIT_BAD_INPUT
    _says_where_and_how(train.stderr, config)
    assert "Traceback" not in train.stderr

    registry = default_file()  # in the test's own user folders (conftest)
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_bytes(b"version = 1\n# \xe9\n")
    listed = subprocess.run(
        [sys.executable, "-m", "workbench", "workers", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert listed.returncode == EXIT_BAD_INPUT, listed.stderr
    _says_where_and_how(listed.stderr, registry, line=2, column=3)
    assert "Traceback" not in listed.stderr
