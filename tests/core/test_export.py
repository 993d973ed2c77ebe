"""Writing coordinator files (issue 18): where ``--out`` points, refusals before any
work, atomic writes that leave nothing behind on failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.core.coordinator import Coordinator, Head, HeadConfig
from workbench.core.export import (
    CoordinatorFileError,
    read_manifest,
    resolve_out,
    save_coordinator,
)


@pytest.fixture
def coordinator(tiny_backbone) -> Coordinator:
    return Coordinator(tiny_backbone, Head(HeadConfig(2, tiny_backbone.hidden_size)), None)


def _save(coordinator: Coordinator, out) -> Path:
    return save_coordinator(
        out,
        coordinator,
        pool=[{"id": "a", "model": "m"}, {"id": "b", "model": "m"}],
        backbone_source="tiny",
        max_turns=3,
        training={"run_id": "r"},
        default_name="coordinator-abcd1234",
    )


def test_an_existing_folder_is_written_inside(coordinator, tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    path = _save(coordinator, folder)
    assert path == folder / "coordinator-abcd1234.safetensors"
    assert read_manifest(path)["max_turns"] == 3
    assert not (tmp_path / "exports.safetensors").exists()  # no sibling DIR.safetensors
    assert sorted(p.name for p in folder.iterdir()) == [path.name]


def test_a_path_ending_in_a_slash_is_a_new_folder(coordinator, tmp_path: Path) -> None:
    path = _save(coordinator, f"{tmp_path / 'new'}{os.sep}")
    assert path == tmp_path / "new" / "coordinator-abcd1234.safetensors" and path.is_file()


def test_a_file_path_gets_its_suffix_and_is_replaced_whole(coordinator, tmp_path: Path) -> None:
    path = _save(coordinator, tmp_path / "router")
    assert path == tmp_path / "router.safetensors"
    again = _save(coordinator, path)
    assert again == path and read_manifest(path)["pool"][0]["id"] == "a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["router.safetensors"]


def test_a_device_or_pipe_is_refused_and_no_regular_file_is_made(
    coordinator, tmp_path: Path
) -> None:
    # /dev/null stands for /dev/full (absent in some containers); a FIFO is the portable case
    with pytest.raises(CoordinatorFileError, match="not a regular file"):
        _save(coordinator, "/dev/null")
    assert not Path("/dev/null.safetensors").exists()
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(CoordinatorFileError, match="not a regular file"):
        resolve_out(pipe)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_an_unwritable_place_is_a_clear_error_and_leaves_nothing(
    coordinator, tmp_path: Path
) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    with pytest.raises(CoordinatorFileError, match="coordinator file: cannot write"):
        _save(coordinator, blocker / "sub" / "router.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    readonly = tmp_path / "ro"
    readonly.mkdir(mode=0o500)
    try:
        if not os.access(readonly, os.W_OK):  # root may write anywhere
            with pytest.raises(CoordinatorFileError, match="choose a folder you can write"):
                _save(coordinator, readonly / "router.safetensors")
        assert list(readonly.iterdir()) == [] or os.access(readonly, os.W_OK)
    finally:
        readonly.chmod(0o700)


def test_a_long_file_name_is_written(coordinator, tmp_path: Path) -> None:
    # the temporary file's name is bounded: a name that fits fits with its temporary too
    name = "r" * (255 - len(".safetensors"))
    path = _save(coordinator, tmp_path / name)
    assert path.name == name + ".safetensors" and path.is_file()


def test_reading_a_folder_or_a_device_as_a_coordinator_file_says_what_it_is(tmp_path: Path):
    with pytest.raises(CoordinatorFileError, match="is a folder: give the .safetensors file"):
        read_manifest(tmp_path)
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(CoordinatorFileError, match="not a regular file"):
        read_manifest(fifo)  # would block if it were opened
    with pytest.raises(CoordinatorFileError, match="not found: check the path"):
        read_manifest(tmp_path / "missing.safetensors")
