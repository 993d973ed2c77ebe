"""Files written where ``--out`` points (issue 18): folders, devices, failures that leave
nothing behind; through ``episodes export`` as a user runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.core.test_store import make_episode
from workbench.cli import main
from workbench.core.outputs import OutputError, output_path, write_atomically, write_text
from workbench.core.store import Store
from workbench.core.workspace import Workspace


def test_paths_folders_and_suffixes(tmp_path: Path) -> None:
    assert output_path(tmp_path, "d.json") == tmp_path / "d.json"
    assert output_path(f"{tmp_path / 'new'}{os.sep}", "d.json") == tmp_path / "new" / "d.json"
    assert output_path(tmp_path / "a", "d", suffix=".x") == tmp_path / "a.x"
    assert output_path(tmp_path / "a.x", "d", suffix=".x") == tmp_path / "a.x"
    with pytest.raises(OutputError, match="no output path"):
        output_path("", "d")
    with pytest.raises(OutputError, match="not a regular file"):
        output_path("/dev/null", "d", suffix=".x")
    with pytest.raises(OutputError, match="cannot write"):
        output_path(f"{tmp_path}/a\0b", "d")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = write_text(tmp_path / "out.json", "old")

    def fail(temporary: str) -> None:
        Path(temporary).write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="No space left on device.*nothing was written"):
        write_atomically(target, fail)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_episodes_export_to_a_folder_a_device_and_a_blocked_path(tmp_path: Path, capsys) -> None:
    ws = Workspace.open(tmp_path / "ws")
    with Store.open(ws) as store:
        store.add_episode(make_episode("0123456789abcdef"))
    folder = tmp_path / "out"
    folder.mkdir()
    assert (
        main(["episodes", "export", "01234567", "--out", str(folder), "--workspace", str(ws.root)])
        == 0
    )
    written = folder / "episode-01234567.json"
    assert json.loads(written.read_text())["id"] == "0123456789abcdef"
    assert not (tmp_path / "out.json").exists()
    capsys.readouterr()
    for out, fragment in (
        ("/dev/null", "not a regular file"),
        (str(written / "x"), "cannot write"),
    ):
        assert (
            main(["episodes", "export", "01234567", "--out", out, "--workspace", str(ws.root)]) == 2
        )
        err = capsys.readouterr().err
        assert fragment in err and "Traceback" not in err


def test_a_shown_path_hides_the_home_folder_and_the_install_location(monkeypatch, tmp_path):
    from workbench.core.printable import RESOURCES, shown_path

    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    assert shown_path(tmp_path / "alice" / "ws" / "workbench.db") == "~/ws/workbench.db"
    assert shown_path(tmp_path / "alice") == "~"
    assert shown_path(tmp_path / "alicette" / "x") == str(tmp_path / "alicette" / "x")
    assert shown_path("/srv/data/suite.jsonl") == "/srv/data/suite.jsonl"
    example = RESOURCES / "examples" / "sandbox.toml"
    assert example.is_file() and shown_path(example) == "bundled examples/sandbox.toml"
    # short (a label with the full path in its tooltip): elsewhere by its last part only
    assert shown_path("/srv/data/suite.jsonl", short=True) == "…/suite.jsonl"
    assert shown_path(tmp_path / "alice" / "ws", short=True) == "~/ws"  # home: as before
    assert shown_path(tmp_path / "ws" / "a.toml", tmp_path / "ws", short=True) == "workspace/a.toml"
    assert shown_path("/srv", short=True) == "/srv"  # nothing to shorten
