"""What a built bundle carries, by package, with sizes.

    python packaging/sizes.py [dist/trinity-workbench] [--top 10] [--by-folder torch]

Files under the bundle's ``_internal`` folder are counted under their top-level folder
(``torch``, ``PySide6``, ...; ``NAME.libs`` and ``NAME-VERSION.dist-info`` under NAME),
files directly in it under "(shared libraries)" (libpython and the system libraries
PyInstaller copied in) and "(python stdlib)" (base_library.zip and lib-dynload), and the
byte-compiled modules inside the executable's PYZ archive under their top-level package
("(pyz) NAME"), at their compressed size. Symbolic links are not counted (they take no
space). ``--by-folder NAME`` lists one package's biggest sub-folders and files instead.
Sizes are MiB (2^20 bytes), as on disk, before the tarball's compression.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


def package_of(relative: Path) -> str:
    first = relative.parts[0]
    if len(relative.parts) == 1:
        if first == "base_library.zip":
            return "(python stdlib)"
        return "(shared libraries)"
    if first == "lib-dynload" or first == "python3.11":
        return "(python stdlib)"
    first = re.sub(r"\.libs$", "", first)
    first = re.sub(r"-[0-9][^-]*\.dist-info$", "", first)
    return first


def pyz_sizes(executable: Path) -> Counter[str]:
    """Compressed size of the byte-compiled modules in the executable's PYZ, by package."""
    sizes: Counter[str] = Counter()
    try:
        from PyInstaller.archive.readers import PKG_ITEM_PYZ, CArchiveReader
    except ImportError:
        print("sizes: PyInstaller is not installed; the PYZ is counted whole", file=sys.stderr)
        sizes["(pyz: python modules)"] = executable.stat().st_size
        return sizes
    archive = CArchiveReader(str(executable))
    for name, entry in archive.toc.items():
        if entry[-1] != PKG_ITEM_PYZ:
            continue
        pyz = archive.open_embedded_archive(name)
        for module, (_typecode, _offset, length) in pyz.toc.items():
            sizes[f"(pyz) {module.split('.')[0]}"] += length
    return sizes


def bundle_sizes(app: Path) -> Counter[str]:
    internal = app / "_internal"
    sizes: Counter[str] = Counter()
    for path in internal.rglob("*"):
        if path.is_file() and not path.is_symlink():
            sizes[package_of(path.relative_to(internal))] += path.stat().st_size
    executables = [
        p for p in app.iterdir() if p.is_file() and p.name.startswith("trinity-workbench")
    ]
    for executable in executables:
        if executable.suffix in ("", ".exe"):
            sizes.update(pyz_sizes(executable))
            pyz_total = sum(v for k, v in sizes.items() if k.startswith("(pyz"))
            sizes["(executable and its archive header)"] += executable.stat().st_size - pyz_total
        else:
            sizes["(menu entry, icon, install script)"] += executable.stat().st_size
    for path in app.iterdir():
        if path.is_file() and path not in executables:
            sizes["(menu entry, icon, install script)"] += path.stat().st_size
    return sizes


def folder_sizes(folder: Path) -> Counter[str]:
    sizes: Counter[str] = Counter()
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            relative = path.relative_to(folder)
            key = "/".join(relative.parts[:2]) if len(relative.parts) > 2 else str(relative)
            sizes[key] += path.stat().st_size
    return sizes


def table(sizes: Counter[str], top: int | None) -> str:
    total = sum(sizes.values())
    rows = sizes.most_common(top)
    width = max((len(name) for name, _ in rows), default=10)
    lines = [f"{'package':<{width}}  {'MiB':>8}  share"]
    for name, size in rows:
        lines.append(f"{name:<{width}}  {size / MIB:8.1f}  {100 * size / total:4.1f}%")
    rest = total - sum(size for _, size in rows)
    if rest:
        shown = f"(the other {len(sizes) - len(rows)})"
        lines.append(f"{shown:<{width}}  {rest / MIB:8.1f}  {100 * rest / total:4.1f}%")
    lines.append(f"{'total':<{width}}  {total / MIB:8.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("app", nargs="?", default=str(ROOT / "dist" / "trinity-workbench"))
    parser.add_argument("--top", type=int, default=None, help="only the N biggest (default all)")
    parser.add_argument("--by-folder", metavar="NAME", help="one package's biggest parts")
    args = parser.parse_args()
    app = Path(args.app)
    if not (app / "_internal").is_dir():
        sys.exit(f"sizes: {app} is not a built bundle (no _internal folder): build it first")
    if args.by_folder:
        print(table(folder_sizes(app / "_internal" / args.by_folder), args.top))
    else:
        print(table(bundle_sizes(app), args.top))


if __name__ == "__main__":
    main()
