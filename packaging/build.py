"""Build the packaged application with PyInstaller (run from the repository root).

    pip install -e ".[packaging]"         # PyInstaller (and Pillow for Windows/macOS icons)
    python packaging/build.py [--offline] [--self-test] [--no-archive]

Produces the one-folder app ``dist/trinity-workbench/`` (executable
``dist/trinity-workbench/trinity-workbench``, ``.exe`` on Windows, and
``dist/Trinity Workbench.app`` on macOS), then the platform's archive: a tarball with
the ``.desktop`` entry on Linux; on Windows run Inno Setup on
``packaging/windows/trinity-workbench.iss``; on macOS ``packaging/macos/make-dmg.sh``.
``--offline`` bundles the offline starter model (the "offline" edition); ``--self-test``
runs the built app's ``--self-test``. Prints the build time and the bundle's size.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "trinity-workbench"
ICONS = ROOT / "workbench" / "resources" / "icons"


def fail(message: str) -> None:
    print(f"build: {message}", file=sys.stderr)
    sys.exit(2)


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def platform_icons() -> None:
    """Windows wants .ico and macOS .icns: made from the PNG with Pillow."""
    target = {"win32": ICONS / f"{NAME}.ico", "darwin": ICONS / f"{NAME}.icns"}.get(sys.platform)
    if target is None or target.exists():
        return
    try:
        from PIL import Image
    except ImportError:
        fail('Pillow is needed to make the app icon here: pip install -e ".[packaging]"')
    Image.open(ICONS / f"{NAME}.png").save(target)


def version() -> str:
    from importlib.metadata import version as dist_version

    return dist_version(NAME)


def linux_archive(app: Path) -> Path:
    shutil.copy(ROOT / "packaging" / "linux" / f"{NAME}.desktop", app / f"{NAME}.desktop")
    shutil.copy(ICONS / f"{NAME}.png", app / f"{NAME}.png")
    shutil.copy(ROOT / "packaging" / "linux" / "install.sh", app / "install.sh")
    archive = app.parent / f"{NAME}-{version()}-linux-{platform.machine()}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(app, arcname=NAME)
    return archive


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--offline", action="store_true", help="bundle the offline starter model")
    parser.add_argument("--self-test", action="store_true", help="run the built app's --self-test")
    parser.add_argument("--no-archive", action="store_true", help="skip the tarball (Linux)")
    args = parser.parse_args()
    if Path.cwd().resolve() != ROOT:
        fail(f"run me from the repository root: cd {ROOT} && python packaging/build.py")
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        fail('PyInstaller is not installed: pip install -e ".[packaging]"')
    platform_icons()
    env = {
        **os.environ,
        "TRINITY_EDITION": "offline" if args.offline else "standard",
        "TRINITY_VERSION": version(),
    }
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "PyInstaller",
            "--noconfirm",
            "--clean",
            "--distpath",
            "dist",
            "--workpath",
            "build/pyinstaller",
            f"packaging/{NAME}.spec",
        ],
        check=True,
        env=env,
    )
    built = time.perf_counter() - started
    app = ROOT / "dist" / NAME
    executable = app / (f"{NAME}.exe" if sys.platform == "win32" else NAME)
    if not executable.is_file():
        fail(f"PyInstaller finished but {executable} is missing")
    print(f"built {app} in {built:.0f} s: {folder_size(app) / 2**20:.0f} MiB")
    if sys.platform.startswith("linux") and not args.no_archive:
        archive = linux_archive(app)
        print(f"archive {archive}: {archive.stat().st_size / 2**20:.0f} MiB")
    if args.self_test:
        started = time.perf_counter()
        result = subprocess.run([str(executable), "--self-test"])
        print(f"self-test exit {result.returncode} in {time.perf_counter() - started:.1f} s")
        sys.exit(result.returncode)


if __name__ == "__main__":
    main()
