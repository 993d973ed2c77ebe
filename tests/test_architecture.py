"""The layout's boundaries (DESIGN.md): core never imports Qt, pyqtgraph or the GUI, and
importing core costs no heavy imports."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contract_holds():
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "core never imports Qt, pyqtgraph or the GUI KEPT" in result.stdout


def test_importing_core_and_cli_loads_neither_torch_nor_qt():
    code = (
        "import sys, workbench.cli, workbench.core.coordinator, workbench.core.protocol, "
        "workbench.core.store, workbench.core.workers.base;"
        "print(sorted(m for m in ('torch', 'transformers', 'PySide6', 'pyqtgraph') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_ruff_finds_nothing():
    result = subprocess.run(
        [str(Path(sys.executable).with_name("ruff")), "check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
