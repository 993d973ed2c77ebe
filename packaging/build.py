"""Build the packaged application with PyInstaller (run from the repository root).

    pip install torch==2.13.0 && pip install -e ".[packaging,docs]" -c packaging/requirements-lock.txt
    python packaging/build.py [--offline] [--self-test] [--no-archive] [--deb]

First builds the documentation site for offline reading into
``workbench/resources/docs`` (packaging/docs_site.py; the docs extra, mkdocs, must be
installed: ``pip install -e ".[packaging,docs]"``), which the bundle carries for Help >
Documentation. Produces the one-folder app ``dist/trinity-workbench/`` (executable
``dist/trinity-workbench/trinity-workbench``, ``.exe`` on Windows, and
``dist/Trinity Workbench.app`` on macOS), then the platform's archive: a tarball with
the ``.desktop`` entry on Linux; on Windows run Inno Setup on
``packaging/windows/trinity-workbench.iss``; on macOS ``packaging/macos/make-dmg.sh``.
``--offline`` bundles the offline starter model (the "offline" edition); ``--self-test``
runs the built app's ``--self-test``; ``--deb`` (Linux) also makes the Debian package
``dist/trinity-workbench_VERSION_ARCH.deb`` (packaging/linux/deb.py). The tarball and
the ``.deb`` are the Linux downloads (no AppImage: docs/guides/packaging.md says why). On
Linux torch's
libraries, libpython and the native modules are stripped of their symbol tables (``strip
--strip-unneeded``: torch's 415 MB CPU library loses 85 MB; what the dynamic linker needs
stays). Not all: libraries that auditwheel vendored and patchelf rewrote (numpy's
OpenBLAS, ``*.libs``, and the modules whose RPATH points there) no longer load once
stripped ("ELF load command address/offset not page-aligned"). Prints the build time, the
bundle's size and its ten biggest packages (packaging/sizes.py lists them all).
Build it from the lock (packaging/requirements-lock.txt), as CI and the installers
workflow do: the bundle carries exactly the locked versions.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
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


def strippable(path: Path, internal: Path) -> bool:
    """An ELF shared library over 1 MiB that survives ``strip``: not one that auditwheel
    vendored (``NAME.libs/``) or rewrote with patchelf to find those (its RPATH names a
    ``.libs`` folder: numpy's extension modules), where stripping breaks loading (the
    module's docstring), and not Qt's (PySide6's are stripped already but for ICU's, which
    gain 1 MiB)."""
    relative = path.relative_to(internal)
    if relative.parts[0] == "PySide6" or any(p.endswith(".libs") for p in relative.parts):
        return False
    if path.is_symlink() or not path.is_file() or path.stat().st_size < 2**20:
        return False
    with path.open("rb") as file:
        if file.read(4) != b"\x7fELF":
            return False
    dynamic = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True).stdout
    return re.search(r"^\s+(RPATH|RUNPATH)\s+\S*\.libs", dynamic, re.M) is None


def strip_libraries(app: Path) -> int:
    """Strip the symbol tables of the bundle's ELF shared libraries that allow it (Linux;
    ``strippable``); returns the bytes saved. Symbols the dynamic linker needs are kept
    (--strip-unneeded). What it saves: torch's CPU library 85 MB, libpython 17 MB (a Python
    built from source, as pyenv builds it, keeps its debug symbols), tokenizers',
    cryptography's, PyYAML's and regex's native modules 10 MB."""
    strip = shutil.which("strip")
    if strip is None or shutil.which("objdump") is None:
        print("build: no `strip` or `objdump` (binutils) here: libraries keep their symbols")
        return 0
    saved = 0
    internal = app / "_internal"
    for path in sorted(p for p in internal.rglob("*.so*") if strippable(p, internal)):
        before = path.stat().st_size
        subprocess.run([strip, "--strip-unneeded", str(path)], check=True)
        saved += before - path.stat().st_size
    return saved


def linux_archive(app: Path) -> Path:
    shutil.copy(ROOT / "packaging" / "linux" / f"{NAME}.desktop", app / f"{NAME}.desktop")
    shutil.copy(ICONS / f"{NAME}.png", app / f"{NAME}.png")
    shutil.copy(ROOT / "packaging" / "linux" / "install.sh", app / "install.sh")
    archive = app.parent / f"{NAME}-{version()}-linux-{platform.machine()}.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:  # 9: 2x the time, 1% smaller
        tar.add(app, arcname=NAME)
    return archive


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--offline", action="store_true", help="bundle the offline starter model")
    parser.add_argument("--self-test", action="store_true", help="run the built app's --self-test")
    parser.add_argument("--no-archive", action="store_true", help="skip the tarball (Linux)")
    parser.add_argument("--deb", action="store_true", help="also build the .deb (Linux)")
    parser.add_argument(
        "--require-pass",
        metavar="CHECKS",
        default="",
        help="self-test checks that must PASS, not only not FAIL (comma-separated, e.g. "
        "GUI,backbone,sandbox,serve: CI, where bubblewrap runs, must see the sandbox grade)",
    )
    args = parser.parse_args()
    if Path.cwd().resolve() != ROOT:
        fail(f"run me from the repository root: cd {ROOT} && python packaging/build.py")
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        fail('PyInstaller is not installed: pip install -e ".[packaging]"')
    platform_icons()
    # the documentation, for Help > Documentation without a network (packaging/docs_site.py):
    # built into workbench/resources/docs, which the spec's collect_data_files takes
    sys.path.insert(0, str(ROOT / "packaging"))
    from docs_site import build as build_docs

    started = time.perf_counter()
    try:
        index = build_docs()
    except RuntimeError as exc:
        fail(f"the documentation site: {exc}")
    print(f"built the documentation site {index.parent} in {time.perf_counter() - started:.0f} s")
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
    app = ROOT / "dist" / NAME
    executable = app / (f"{NAME}.exe" if sys.platform == "win32" else NAME)
    if not executable.is_file():
        fail(f"PyInstaller finished but {executable} is missing")
    if sys.platform.startswith("linux"):
        saved = strip_libraries(app) / 2**20
        print(f"stripped the shared libraries' symbol tables: {saved:.0f} MiB saved")
    built = time.perf_counter() - started
    print(f"built {app} in {built:.0f} s: {folder_size(app) / 2**20:.0f} MiB")
    from sizes import bundle_sizes, table

    print(table(bundle_sizes(app), 10))
    if sys.platform.startswith("linux") and not args.no_archive:
        started = time.perf_counter()
        archive = linux_archive(app)
        took = time.perf_counter() - started
        print(f"archive {archive}: {archive.stat().st_size / 2**20:.0f} MiB in {took:.0f} s")
    if sys.platform.startswith("linux") and args.deb:
        from linux.deb import build_deb

        started = time.perf_counter()
        deb = build_deb(app, version(), ROOT / "dist")
        took = time.perf_counter() - started
        print(f"package {deb}: {deb.stat().st_size / 2**20:.0f} MiB in {took:.0f} s")
    if args.self_test:
        required = [name for name in args.require_pass.split(",") if name]
        sys.exit(self_test([str(executable), "--self-test"], required))


def self_test(command: list[str], required: list[str]) -> int:
    """Run a built app's self-test and print it; the exit status: the self-test's, or 1
    where a check in ``required`` did not PASS."""
    started = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    print(result.stdout, end="")
    print(f"self-test exit {result.returncode} in {time.perf_counter() - started:.1f} s")
    verdicts = dict(re.findall(r"^self-test (\S+)\s+(PASS|WARN|FAIL) ", result.stdout, re.M))
    short = [
        f"{name}: {verdicts.get(name, 'missing')}"
        for name in required
        if verdicts.get(name) != "PASS"
    ]
    if short:
        print(f"build: self-test checks required to PASS did not: {', '.join(short)}")
        return 1
    return result.returncode


if __name__ == "__main__":
    main()
