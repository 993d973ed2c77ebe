"""The documentation site: its generated reference pages are what the code says today, and
`mkdocs build --strict` builds it (a broken link or a missing page fails)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli.reference import PAGES
from workbench.core.config import RunConfig, config_keys

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_generated_reference_page_is_current(page):
    on_disk = (ROOT / page).read_text(encoding="utf-8")
    assert on_disk == PAGES[page](), (
        f"{page} is stale: run `python -m workbench.cli.reference` and commit the result"
    )


def test_every_config_key_is_documented_where_it_is_defined():
    """Each key carries its label and one sentence (config_schema.Key), and the config reference
    lists each with its default."""
    keys = config_keys()
    sections = {f.name for f in dataclasses.fields(RunConfig)}
    assert {k.section for k in keys} == sections
    reference = (ROOT / "docs/reference/config.md").read_text(encoding="utf-8")
    for k in keys:
        assert k.key.label and k.key.help.endswith("."), k.dotted
        assert f"## `[{k.section}]`" in reference and f"| `{k.name}` |" in reference


def test_every_command_is_in_the_cli_reference():
    import argparse

    from workbench.cli import build_parser

    reference = (ROOT / "docs/reference/cli.md").read_text(encoding="utf-8")
    commands: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    commands.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "")
    assert len(commands) > 20
    missing = [c for c in commands if f"`trinity-workbench{c}`" not in reference]
    assert not missing, missing


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "config" / "index.html").is_file()
