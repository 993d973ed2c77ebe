"""The AppImage of a built Linux bundle: the AppImage runtime, compiled here from its vendored
source, followed by a squashfs image of the AppDir.

    python packaging/build.py --offline --appimage      # builds the bundle, then this
    python packaging/linux/appimage.py dist/trinity-workbench VERSION   # an already built one
    python packaging/linux/appimage.py --runtime build/appimage/runtime # the runtime alone

An AppImage (type 2) is one executable file: an ELF program, the runtime, that carries the
magic bytes ``AI\\x02`` at offset 8 of its ELF header, with a squashfs image of an AppDir
appended right after its last byte. Run, the runtime mounts that image with FUSE and runs
its ``AppRun``; ``--appimage-extract`` unpacks it to ``squashfs-root/`` and
``--appimage-extract-and-run`` unpacks it to a temporary folder, runs it and removes it
(both without FUSE). The runtime is AppImage's own (github.com/AppImage/type2-runtime,
MIT), vendored in packaging/linux/appimage-runtime/ (its README says from which commit
and what was changed) because every AppImage tool on PyPI, Debian and npm downloads the
runtime from GitHub while it builds, and CI reaches only those registries. It is compiled with gcc and
linked statically against Debian's squashfuse, libfuse3 and compression libraries, so the
AppImage needs no FUSE library on the user's machine (mounting needs ``fusermount3``, from
the fuse3 package, which desktop distributions install; without it the runtime says so and
``--appimage-extract-and-run`` still works).

The AppDir: ``AppRun`` (a shell script that runs the bundle's executable), the bundle itself
in ``trinity-workbench/`` (hard links to the built bundle: nothing is copied), the menu
entry the .deb and the tarball carry, its icon and ``.DirIcon``. The image is compressed
with zstd (level 9, 1 MiB blocks) by ``mksquashfs`` (squashfs-tools).

Build tools (Debian 12 package names; scripts/system-packages.sh --build installs them): gcc,
libc6-dev, squashfs-tools, libsquashfuse-dev, libfuse3-dev, libzstd-dev, zlib1g-dev,
liblzma-dev, liblz4-dev, liblzo2-dev.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

NAME = "trinity-workbench"
TITLE = "Trinity_Workbench"  # the file name appimagetool would give: the entry's Name
ROOT = Path(__file__).resolve().parents[2]
RUNTIME_SOURCE = ROOT / "packaging" / "linux" / "appimage-runtime"
# the type2-runtime commit the vendored runtime.c comes from
# (packaging/linux/appimage-runtime/README.md)
RUNTIME_COMMIT = "caf24f9f712084686bfc24a70b75e50df0aefb9c"
MAGIC = b"AI\x02"
MAGIC_OFFSET = 8
SQUASHFS_MAGIC = b"hsqs"
# zstd level 9: measured on the offline bundle (tests/benchmarks/bench_appimage.py,
# docs/results/data/appimage.json), it packs within 0.4% of level 15 in a quarter of the
# time (15 s on 2 cores); level 19 is 6% smaller but takes 10 times as long, level 3 4%
# larger; 1 MiB blocks pack 4% smaller than 128 KiB ones
ZSTD_LEVEL = 9
BLOCK_SIZE = "1M"
# Debian's libsquashfuse_ll.a is built with every squashfs compressor: linked statically, the
# runtime needs each one's static library (and libfuse3's)
STATIC_LIBS = ["squashfuse_ll", "fuse3", "zstd", "z", "lzma", "lz4", "lzo2"]
BUILD_PACKAGES = {
    "gcc": "gcc",
    "mksquashfs": "squashfs-tools",
    "/usr/include/squashfuse/ll.h": "libsquashfuse-dev",
    "/usr/include/fuse3/fuse_lowlevel.h": "libfuse3-dev",
    "/usr/include/zstd.h": "libzstd-dev",
    "/usr/include/zlib.h": "zlib1g-dev",
    "/usr/include/lzma.h": "liblzma-dev",
    "/usr/include/lz4.h": "liblz4-dev",
    "/usr/include/lzo/lzo1x.h": "liblzo2-dev",
}
APPRUN = """#!/bin/sh
# The AppImage's entry point: the runtime mounts (or extracts) the image and runs this with
# APPDIR set to where it is; run by hand from an extracted squashfs-root/, it finds itself.
here=${APPDIR:-$(dirname "$(readlink -f "$0")")}
exec "$here/trinity-workbench/trinity-workbench" "$@"
"""


@dataclass(frozen=True)
class AppImageBuild:
    """What one AppImage build made and how long its steps took (seconds)."""

    appimage: Path
    runtime_bytes: int
    runtime_seconds: float
    squashfs_seconds: float


def missing_build_tools(runtime: bool = True) -> list[str]:
    """The Debian packages the AppImage build needs that are not installed here (without
    ``runtime``: those it needs with a runtime compiled elsewhere, mksquashfs only)."""
    missing = []
    for thing, package in BUILD_PACKAGES.items():
        if not runtime and thing != "mksquashfs":
            continue
        found = Path(thing).exists() if thing.startswith("/") else shutil.which(thing)
        if not found:
            missing.append(package)
    return missing


def _require_build_tools(runtime: bool = True) -> None:
    missing = missing_build_tools(runtime)
    if missing:
        raise SystemExit(
            "appimage: the AppImage build needs these Debian packages: "
            f"sudo apt-get install {' '.join(missing)} (scripts/system-packages.sh --build installs them)"
        )
    config = Path("/usr/include/squashfuse/config.h")
    if runtime and config.is_file() and "FUSE_USE_VERSION 3" not in config.read_text():
        raise SystemExit(
            "appimage: this system's squashfuse is built for FUSE 2; the runtime needs one "
            "built against libfuse3 (Debian 12 and later have it): build the AppImage there"
        )


def build_runtime(work: Path) -> Path:
    """Compile the vendored runtime into ``work/runtime``: static, stripped, with the AppImage
    magic at offset 8 (as upstream's scripts/build-runtime.sh does, after stripping)."""
    _require_build_tools()
    work.mkdir(parents=True, exist_ok=True)
    runtime = work / "runtime"
    command = [
        "gcc",
        # upstream's src/runtime/Makefile, with gcc for clang and without mimalloc
        "-std=gnu99",
        "-Os",
        "-D_FILE_OFFSET_BITS=64",
        f'-DGIT_COMMIT="type2-runtime {RUNTIME_COMMIT[:7]} (Trinity Workbench build)"',
        "-T",
        str(RUNTIME_SOURCE / "data_sections.ld"),
        "-ffunction-sections",
        "-fdata-sections",
        "-Wl,--gc-sections",
        "-static-pie",
        "-Wall",
        "-Werror",
        # gcc (not clang, upstream's compiler) warns that upstream's sprintf of PATH_MAX
        # bytes plus ".home" into PATH_MAX may overflow: upstream's code, left as it is
        "-Wno-error=format-overflow",
        # squashfuse/fuseprivate.h, which Debian's libsquashfuse-dev does not install
        f"-I{RUNTIME_SOURCE}",
        "-I/usr/include/squashfuse",
        "-I/usr/include/fuse3",
        str(RUNTIME_SOURCE / "runtime.c"),
        *[f"-l{lib}" for lib in STATIC_LIBS],
        "-o",
        str(runtime),
    ]
    compiled = subprocess.run(command, capture_output=True, text=True)
    if compiled.returncode != 0:
        raise SystemExit(f"appimage: compiling the runtime failed:\n{compiled.stderr[-4000:]}")
    subprocess.run(["strip", "--strip-debug", "--strip-unneeded", str(runtime)], check=True)
    with runtime.open("r+b") as file:
        file.seek(MAGIC_OFFSET)
        file.write(MAGIC)
    return runtime


def write_appdir(app: Path, appdir: Path) -> None:
    """The AppDir: AppRun, the bundle (hard links where the file system allows, else copies),
    the menu entry, its icon and .DirIcon."""
    if appdir.exists():
        shutil.rmtree(appdir)
    appdir.mkdir(parents=True)
    try:
        shutil.copytree(app, appdir / NAME, symlinks=True, copy_function=os.link)
    except OSError:  # another file system than dist/: copy
        shutil.rmtree(appdir / NAME, ignore_errors=True)
        shutil.copytree(app, appdir / NAME, symlinks=True)
    for loose in ("install.sh", f"{NAME}.desktop", f"{NAME}.png"):  # the tarball's own
        (appdir / NAME / loose).unlink(missing_ok=True)
    (appdir / "AppRun").write_text(APPRUN)
    (appdir / "AppRun").chmod(0o755)
    shutil.copy(ROOT / "packaging" / "linux" / f"{NAME}.desktop", appdir / f"{NAME}.desktop")
    shutil.copy(ROOT / "workbench" / "resources" / "icons" / f"{NAME}.png", appdir / f"{NAME}.png")
    os.symlink(f"{NAME}.png", appdir / ".DirIcon")


def appimage_name(version: str) -> str:
    return f"{TITLE}-{version}-{platform.machine()}.AppImage"


def build_appimage(
    app: Path, version: str, out: Path, work: Path | None = None, runtime: Path | None = None
) -> AppImageBuild:
    """Build ``out/Trinity_Workbench-VERSION-ARCH.AppImage`` from the bundle folder ``app``
    (``work``, default ``build/appimage``, holds the runtime and the AppDir) with the
    runtime compiled here, or with ``runtime``, one compiled elsewhere (``--runtime``: where
    this system's squashfuse is built for FUSE 2, as Ubuntu 22.04's is)."""
    work = work or ROOT / "build" / "appimage"
    started = time.perf_counter()
    if runtime is None:
        runtime = build_runtime(work)
    else:
        _require_build_tools(runtime=False)
        if runtime.read_bytes()[:4] != b"\x7fELF":
            raise SystemExit(f"appimage: {runtime} is not an ELF executable (an AppImage runtime)")
    runtime_seconds = time.perf_counter() - started
    appdir = work / "AppDir"
    write_appdir(app, appdir)
    image = work / "image.squashfs"
    image.unlink(missing_ok=True)
    started = time.perf_counter()
    subprocess.run(
        [
            "mksquashfs",
            str(appdir),
            str(image),
            "-noappend",
            "-all-root",
            "-comp",
            "zstd",
            "-Xcompression-level",
            str(ZSTD_LEVEL),
            "-b",
            BLOCK_SIZE,
            "-quiet",
            "-no-progress",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    squashfs_seconds = time.perf_counter() - started
    appimage = out / appimage_name(version)
    head = bytearray(runtime.read_bytes())
    if head[MAGIC_OFFSET : MAGIC_OFFSET + len(MAGIC)] != MAGIC:
        head[MAGIC_OFFSET : MAGIC_OFFSET + len(MAGIC)] = MAGIC
    with appimage.open("wb") as target, image.open("rb") as source:
        target.write(head)
        shutil.copyfileobj(source, target, 2**20)
    appimage.chmod(0o755)
    image.unlink()
    shutil.rmtree(appdir)
    return AppImageBuild(appimage, len(head), runtime_seconds, squashfs_seconds)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--runtime":
        target = Path(sys.argv[2])
        shutil.copy(build_runtime(target.parent / "runtime-build"), target)
        shutil.rmtree(target.parent / "runtime-build")
        print(f"{target}: the AppImage runtime, {target.stat().st_size / 1024:.0f} KiB")
        sys.exit(0)
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    made = build_appimage(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[1]).parent)
    print(
        f"{made.appimage}: {made.appimage.stat().st_size / 2**20:.0f} MiB (runtime "
        f"{made.runtime_bytes / 1024:.0f} KiB in {made.runtime_seconds:.1f} s, squashfs "
        f"{made.squashfs_seconds:.0f} s)"
    )
