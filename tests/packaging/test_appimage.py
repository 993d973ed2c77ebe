"""The AppImage build (packaging/linux/appimage.py) on a small stand-in bundle: the runtime
compiled from the vendored source is a static ELF with the AppImage magic, the squashfs
image follows it at the offset the runtime itself reports, and the three ways a user runs
an AppImage work: mounted with FUSE, ``--appimage-extract-and-run`` (also as an ordinary
user) and ``--appimage-extract``. The real offline bundle's AppImage is self-tested after
CI builds it (tests/packaging/test_built_appimage.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))

from linux import appimage  # noqa: E402

from tests.support import fuse_user  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _build_tools() -> None:
    """The AppImage's build tools are test dependencies, as bubblewrap is: missing, the
    tests fail naming them (never skip)."""
    missing = appimage.missing_build_tools()
    assert not missing, (
        f"the AppImage tests need these Debian packages: {', '.join(missing)} "
        "(sudo bash scripts/system-packages.sh --build installs them)"
    )


# the stand-in for the PyInstaller executable: says where it runs, with which arguments and
# environment, and exits with the status it is asked for
FAKE_EXECUTABLE = """#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
echo "bundle at $here"
echo "APPDIR=$APPDIR APPIMAGE=$APPIMAGE"
echo "uid $(id -u), capabilities $(grep CapEff /proc/self/status | cut -f2)"
for arg in "$@"; do echo "arg: $arg"; done
cat "$here/_internal/data.txt"
exit "${FAKE_EXIT:-0}"
"""


def _fake_bundle(root: Path) -> Path:
    app = root / "trinity-workbench"
    (app / "_internal" / "lib").mkdir(parents=True)
    (app / "_internal" / "data.txt").write_text("the bundle's data file\n")
    # incompressible, so the image holds more than one squashfs block of real data
    (app / "_internal" / "lib" / "libbig.so").write_bytes(os.urandom(3 * 2**20))
    os.symlink("libbig.so", app / "_internal" / "lib" / "libbig.so.1")
    (app / "trinity-workbench").write_text(FAKE_EXECUTABLE)
    (app / "trinity-workbench").chmod(0o755)
    (app / "install.sh").write_text("#!/bin/sh\n")  # the tarball's: not in the AppImage
    return app


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> appimage.AppImageBuild:
    root = tmp_path_factory.mktemp("appimage")
    app = _fake_bundle(root)
    out = root / "out"
    out.mkdir()
    return appimage.build_appimage(app, "0.1.0", out, work=root / "work")


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, **kw):
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kw,
    )


def test_the_runtime_is_a_static_elf_with_the_magic_and_the_image_follows_it(built, tmp_path):
    data = built.appimage.read_bytes()
    assert built.appimage.name == "Trinity_Workbench-0.1.0-x86_64.AppImage" or (
        built.appimage.name.startswith("Trinity_Workbench-0.1.0-")
    )
    assert data[:4] == b"\x7fELF"
    assert data[8:11] == b"AI\x02"
    assert os.access(built.appimage, os.X_OK)
    header = subprocess.run(
        ["readelf", "-h", "-l", str(built.appimage)], capture_output=True, text=True, check=True
    ).stdout
    assert "DYN" in header and "INTERP" not in header  # static-pie: no dynamic loader
    offset = _run(built.appimage, "--appimage-offset", cwd=tmp_path)
    assert offset.returncode == 0, offset.stderr
    assert int(offset.stdout) == built.runtime_bytes
    assert data[built.runtime_bytes : built.runtime_bytes + 4] == b"hsqs"
    # an outside reader of the format, squashfs-tools' unsquashfs, finds there the AppDir
    # the AppImage specification asks for: AppRun, a .desktop entry and the .DirIcon
    listing = subprocess.run(
        ["unsquashfs", "-o", str(built.runtime_bytes), "-l", "-d", "", str(built.appimage)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert {"/AppRun", "/.DirIcon"} <= set(listing), listing[:20]
    assert any(n.endswith(".desktop") and n.count("/") == 1 for n in listing), listing[:20]
    version = _run(built.appimage, "--appimage-version", cwd=tmp_path)
    assert appimage.RUNTIME_COMMIT[:7] in version.stderr
    # the update-information section upstream's linker script reserves is there (empty)
    assert _run(built.appimage, "--appimage-updateinformation", cwd=tmp_path).returncode == 0


def test_extract_gives_the_appdir(built, tmp_path):
    result = _run(built.appimage, "--appimage-extract", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    appdir = tmp_path / "squashfs-root"
    assert sorted(p.name for p in appdir.iterdir()) == [
        ".DirIcon",
        "AppRun",
        "trinity-workbench",
        "trinity-workbench.desktop",
        "trinity-workbench.png",
    ]
    assert os.access(appdir / "AppRun", os.X_OK)
    assert os.readlink(appdir / ".DirIcon") == "trinity-workbench.png"
    entry = (appdir / "trinity-workbench.desktop").read_text()
    assert "Name=Trinity Workbench" in entry and "Icon=trinity-workbench" in entry
    icon = ROOT / "workbench" / "resources" / "icons" / "trinity-workbench.png"
    assert (appdir / "trinity-workbench.png").read_bytes() == icon.read_bytes()
    bundle = appdir / "trinity-workbench"
    source = built.appimage.parent.parent / "trinity-workbench"
    for relative in ("trinity-workbench", "_internal/data.txt", "_internal/lib/libbig.so"):
        assert (bundle / relative).read_bytes() == (source / relative).read_bytes(), relative
    assert stat.S_IMODE((bundle / "trinity-workbench").stat().st_mode) == 0o755
    assert os.readlink(bundle / "_internal" / "lib" / "libbig.so.1") == "libbig.so"
    assert not (bundle / "install.sh").exists()
    # and the extracted AppDir runs by itself
    ran = _run(appdir / "AppRun", "hello", cwd=tmp_path)
    assert ran.returncode == 0 and "arg: hello" in ran.stdout


def test_extract_and_run_passes_arguments_and_exit_status_and_cleans_up(built, tmp_path):
    result = _run(
        built.appimage,
        "--appimage-extract-and-run",
        "--self-test",
        "two words",
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path), "FAKE_EXIT": "3"},
    )
    assert result.returncode == 3, result.stderr
    assert "arg: --self-test\narg: two words\n" in result.stdout
    assert "--appimage-extract-and-run" not in result.stdout
    assert "the bundle's data file" in result.stdout
    digest = hashlib.md5(built.appimage.read_bytes()).hexdigest()
    assert f"bundle at {tmp_path}/appimage_extracted_{digest}/trinity-workbench" in result.stdout
    assert f"APPIMAGE={built.appimage}" in result.stdout
    assert not list(tmp_path.glob("appimage_extracted_*"))  # removed after the run


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="runs the AppImage as uid 1000 with setpriv, which needs root",
)
def test_an_ordinary_user_runs_it(built, user_dir):
    copy = user_dir / built.appimage.name
    shutil.copy(built.appimage, copy)
    result = _run(
        "setpriv",
        "--reuid=1000",
        "--regid=1000",
        "--clear-groups",
        copy,
        "--appimage-extract-and-run",
        "hi",
        cwd=user_dir,
        env={"TMPDIR": str(user_dir), "HOME": str(user_dir)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "arg: hi" in result.stdout and "the bundle's data file" in result.stdout
    assert "uid 1000, capabilities 0000000000000000" in result.stdout
    assert not list(user_dir.glob("appimage_extracted_*"))


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/fuse").exists(),
    reason="FUSE mounting as root needs root and /dev/fuse",
)
def test_run_plainly_it_mounts_the_image_with_fuse(built, tmp_path):
    result = _run(built.appimage, "mounted", cwd=tmp_path, env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"bundle at {tmp_path}/.mount_" in result.stdout
    assert "arg: mounted" in result.stdout and "the bundle's data file" in result.stdout
    assert f"{tmp_path}/.mount_" in next(
        line for line in result.stdout.splitlines() if line.startswith("APPDIR=")
    )
    # the runtime's FUSE process unmounts once the app has exited (it notices the closed
    # keep-alive pipe), and removes the mount point
    deadline = time.monotonic() + 30
    while str(tmp_path) in Path("/proc/self/mounts").read_text() or list(tmp_path.glob(".mount_*")):
        assert time.monotonic() < deadline, "still mounted 30 s after the app exited"
        time.sleep(0.1)


@pytest.mark.skipif(fuse_user.why_not() is not None, reason=f"FUSE: {fuse_user.why_not()}")
def test_an_ordinary_user_mounts_it_with_fuse(built, user_dir):
    """As a desktop user runs an AppImage: uid 1000, mounted through fusermount3."""
    copy = user_dir / built.appimage.name
    shutil.copy(built.appimage, copy)
    result = _run(
        *fuse_user.command([str(copy), "mounted"], user_dir),
        cwd=user_dir,
        env={"TMPDIR": str(user_dir), "HOME": str(user_dir)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"bundle at {user_dir}/.mount_" in result.stdout
    assert "uid 1000, capabilities 0000000000000000" in result.stdout
    assert "arg: mounted" in result.stdout and "the bundle's data file" in result.stdout
    deadline = time.monotonic() + 30
    while list(user_dir.glob(".mount_*")):  # unmounted and removed after the app exited
        assert time.monotonic() < deadline, "still mounted 30 s after the app exited"
        time.sleep(0.1)
