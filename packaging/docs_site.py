"""Build the documentation site for reading offline, bundled with the app (run from the
repository root; needs the docs extra: pip install -e ".[docs]"):

    python packaging/docs_site.py [--out DIR]

The site of mkdocs.yml, built strictly into ``workbench/resources/docs/`` (or ``DIR``),
with three changes that make it work from a folder on disk, opened with file:// (Help >
Documentation opens its index.html in the system browser): each page is a file
(``guides/desktop.html``, not a folder's index, which a browser would list rather than
open), Material's offline plugin (search works without a server) and no web fonts (no
request leaves the computer). ``workbench/resources/**`` is package data, so a wheel or
an editable install built after this carries it, and ``packaging/build.py`` runs it before
PyInstaller for the installers. The folder is not committed (.gitignore): it is built.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "workbench" / "resources" / "docs"


def offline_config(site: Path) -> dict:
    """mkdocs.yml with the offline changes, every path in it absolute (the config is
    written to a temporary folder, and mkdocs resolves paths from the config's folder)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(ROOT / config.get("docs_dir", "docs"))
    config["site_dir"] = str(site)
    config["use_directory_urls"] = False
    config["hooks"] = [str(ROOT / hook) for hook in config.get("hooks", [])]
    config.setdefault("theme", {})["font"] = False
    plugins = []
    for plugin in config.get("plugins", []):
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            handler = plugin["mkdocstrings"]["handlers"]["python"]
            handler["paths"] = [str(ROOT / p) for p in handler.get("paths", ["."])]
        plugins.append(plugin)
    config["plugins"] = [*plugins, "offline"]
    return config


def build(site: Path = SITE) -> Path:
    """Build the offline site into ``site``; returns its index.html. Raises
    ``RuntimeError`` with mkdocs' output when the build fails."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        raise RuntimeError(
            'mkdocs is not installed here: pip install -e ".[docs]" (the docs extra), then '
            "run this again"
        ) from None
    with tempfile.TemporaryDirectory(prefix="docs-site-") as tmp:
        config = Path(tmp) / "mkdocs.yml"
        config.write_text(yaml.safe_dump(offline_config(site), sort_keys=False), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f", str(config)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
    if done.returncode != 0:
        raise RuntimeError(f"mkdocs build failed:\n{done.stdout}{done.stderr}")
    return site / "index.html"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SITE, help=f"where (default {SITE})")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        index = build(args.out.resolve())
    except RuntimeError as exc:
        print(f"docs_site: {exc}", file=sys.stderr)
        sys.exit(1)
    print(f"built {index} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
