"""The AppImage's squashfs compression: size and time of each choice, on a built bundle.

    python packaging/build.py --offline            # dist/trinity-workbench
    python tests/benchmarks/bench_appimage.py --out docs/results/data/appimage.json

For each compressor, level and block size: the seconds ``mksquashfs`` takes to pack the
bundle's AppDir (on every core), the AppImage's size, and the seconds the runtime takes to
unpack it again (``--appimage-extract``, one thread: what ``--appimage-extract-and-run``
costs before the app starts). packaging/linux/appimage.py's ZSTD_LEVEL and BLOCK_SIZE are
chosen from these (the table marks them). One run each: on a shared machine the seconds are noisy (the results
file records the load).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))
sys.path.insert(0, str(ROOT))

from linux import appimage  # noqa: E402

from tests.benchmarks.results import write_results  # noqa: E402

# (name, compressor, its options, block size); the build's is marked in the table
CHOICES = [
    ("zstd3_1M", "zstd", ["-Xcompression-level", "3"], "1M"),
    ("zstd9_1M", "zstd", ["-Xcompression-level", "9"], "1M"),
    ("zstd9_128K", "zstd", ["-Xcompression-level", "9"], "128K"),
    ("zstd15_1M", "zstd", ["-Xcompression-level", "15"], "1M"),
    ("zstd19_1M", "zstd", ["-Xcompression-level", "19"], "1M"),
    ("gzip_128K", "gzip", [], "128K"),
    ("xz_1M", "xz", [], "1M"),
]


def measure(appdir: Path, runtime: bytes, work: Path, comp: str, options: list[str], block: str):
    image = work / "image.squashfs"
    image.unlink(missing_ok=True)
    started = time.perf_counter()
    subprocess.run(
        ["mksquashfs", str(appdir), str(image), "-noappend", "-all-root", "-comp", comp]
        + options
        + ["-b", block, "-quiet", "-no-progress"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    pack = time.perf_counter() - started
    made = work / "bench.AppImage"
    with made.open("wb") as target, image.open("rb") as source:
        target.write(runtime)
        shutil.copyfileobj(source, target, 2**20)
    made.chmod(0o755)
    image.unlink()
    unpacked = work / "unpack"
    unpacked.mkdir()
    started = time.perf_counter()
    subprocess.run(
        [str(made), "--appimage-extract"], cwd=unpacked, check=True, stdout=subprocess.DEVNULL
    )
    unpack = time.perf_counter() - started
    size = made.stat().st_size
    shutil.rmtree(unpacked)
    made.unlink()
    return pack, size, unpack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "trinity-workbench")
    parser.add_argument("--out", type=Path, default=ROOT / "docs/results/data/appimage.json")
    args = parser.parse_args()
    if not (args.bundle / "trinity-workbench").is_file():
        raise SystemExit(f"no built bundle at {args.bundle}: python packaging/build.py --offline")
    bundle_mib = (
        sum(p.stat().st_size for p in args.bundle.rglob("*") if p.is_file() and not p.is_symlink())
        / 2**20
    )
    rows = []
    figures: dict[str, float | str] = {"bundle_mib": round(bundle_mib, 1)}
    with tempfile.TemporaryDirectory(dir=ROOT / "dist") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        runtime = appimage.build_runtime(work / "runtime-build")
        figures["runtime_compile_s"] = round(time.perf_counter() - started, 1)
        figures["runtime_kib"] = round(runtime.stat().st_size / 1024)
        appdir = work / "AppDir"
        appimage.write_appdir(args.bundle, appdir)
        for name, comp, options, block in CHOICES:
            label = f"{comp} {' '.join(options[1:]) or 'default'} -b {block}"
            if comp == "zstd" and options[1:] == [str(appimage.ZSTD_LEVEL)]:
                label += " (the build's)" if block == appimage.BLOCK_SIZE else ""
            pack, size, unpack = measure(appdir, runtime.read_bytes(), work, comp, options, block)
            print(
                f"{label}: {size / 2**20:.1f} MiB, packed in {pack:.0f} s, unpacked {unpack:.0f} s"
            )
            rows.append([label, f"{size / 2**20:.1f}", f"{pack:.0f}", f"{unpack:.0f}"])
            figures[f"{name}_mib"] = round(size / 2**20, 1)
            figures[f"{name}_mksquashfs_s"] = round(pack)
            figures[f"{name}_extract_s"] = round(unpack)
    columns = ["compression", "AppImage MiB", "mksquashfs s", "--appimage-extract s"]
    write_results(args.out, figures, tables={"choices": {"columns": columns, "rows": rows}})


if __name__ == "__main__":
    main()
