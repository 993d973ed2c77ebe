"""The real offline AppImage, after the build: `.ci/run` runs this file once
`python packaging/build.py --offline --appimage ...` has made it (and build.py has run its
``--appimage-extract-and-run --self-test``), with TRINITY_BUILT_APPIMAGE naming the file:

    TRINITY_BUILT_APPIMAGE=dist/Trinity_Workbench-0.1.0-x86_64.AppImage \\
        python -m pytest tests/packaging/test_built_appimage.py

``--appimage-extract`` gives back the built bundle file for file, and an ordinary user's
self-test through the AppImage, run plainly as a desktop user runs it (mounted with FUSE),
passes the checks CI requires of the bundle (GUI, backbone, sandbox, serve). Without the
variable the test run does not collect this file (tests/packaging/conftest.py: the suite
runs before the bundle is built); named without it, its tests fail saying so."""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import fuse_user

ROOT = Path(__file__).resolve().parents[2]
BUILT = os.environ.get("TRINITY_BUILT_APPIMAGE")
REQUIRED = ("GUI", "backbone", "sandbox", "serve")


@pytest.fixture(scope="module")
def built() -> Path:
    if not BUILT:
        pytest.fail(
            "set TRINITY_BUILT_APPIMAGE to a built AppImage (.ci/run does, after the build)"
        )
    path = Path(BUILT).resolve()
    if not path.is_file():
        pytest.fail(f"TRINITY_BUILT_APPIMAGE={BUILT}: no such file; build it first")
    return path


def _tree(folder: Path) -> dict[str, tuple[str, int]]:
    """Every entry under ``folder``: its kind and mode, or a symlink's target."""
    entries = {}
    for path in folder.rglob("*"):
        relative = str(path.relative_to(folder))
        if path.is_symlink():
            entries[relative] = ("link " + os.readlink(path), 0)
        else:
            kind = "dir" if path.is_dir() else "file"
            entries[relative] = (kind, path.stat().st_mode & 0o777)
    return entries


def test_extract_gives_back_the_built_bundle(built, tmp_path):
    bundle = built.parent / "trinity-workbench"
    if not bundle.is_dir():
        pytest.fail(f"the bundle {bundle} the AppImage was built from is not beside it")
    result = subprocess.run(
        [str(built), "--appimage-extract"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    appdir = tmp_path / "squashfs-root"
    for name in ("AppRun", "trinity-workbench.desktop", "trinity-workbench.png", ".DirIcon"):
        assert (appdir / name).exists() or (appdir / name).is_symlink(), name
    extracted = _tree(appdir / "trinity-workbench")
    original = _tree(bundle)
    for loose in ("install.sh", "trinity-workbench.desktop", "trinity-workbench.png"):
        original.pop(loose, None)  # the tarball's, beside the executable
    assert extracted.keys() == original.keys()
    # squashfs keeps the permission bits; mksquashfs -all-root only changes the owner
    assert extracted == original
    files = [name for name, (kind, _) in original.items() if kind == "file"]
    _, differ, errors = filecmp.cmpfiles(bundle, appdir / "trinity-workbench", files, shallow=False)
    assert (differ, errors) == ([], [])


@pytest.mark.skipif(fuse_user.why_not() is not None, reason=f"FUSE: {fuse_user.why_not()}")
def test_an_ordinary_user_runs_its_self_test_mounted_with_fuse(built, user_dir):
    """As a desktop user runs it: uid 1000 with its own HOME, the AppImage run plainly, so
    the runtime mounts it through fusermount3 (build.py has already run its self-test with
    --appimage-extract-and-run)."""
    copy = user_dir / built.name
    shutil.copy(built, copy)  # the build folder may be closed to other users
    home = user_dir / "home"
    home.mkdir()
    os.chown(home, 1000, 1000)
    env = {
        **os.environ,
        "HOME": str(home),
        "TMPDIR": str(user_dir),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    result = subprocess.run(
        fuse_user.command([str(copy), "--self-test"], user_dir),
        cwd=user_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    sys.stdout.write(f"the AppImage's self-test as uid 1000, mounted with FUSE:\n{result.stdout}")
    verdicts = dict(re.findall(r"^self-test (\S+)\s+(PASS|WARN|FAIL) ", result.stdout, re.M))
    assert {name: verdicts.get(name) for name in REQUIRED} == dict.fromkeys(REQUIRED, "PASS"), (
        result.stdout[-4000:] + result.stderr[-4000:]
    )
    assert result.returncode == 0
    assert "Cannot mount AppImage" not in result.stdout
    # the runtime's FUSE process unmounts the image and removes its mount point once the
    # app has exited
    deadline = time.monotonic() + 60
    while list(user_dir.glob(".mount_*")):
        assert time.monotonic() < deadline, "still mounted 60 s after the app exited"
        time.sleep(0.2)
