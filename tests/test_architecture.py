"""The layout's boundaries and the rules machines check (docs/ARCHITECTURE.md,
docs/CONVENTIONS.md): the import-linter contracts (core never imports Qt, pyqtgraph or the
GUI; the layers; no import circles), importing core costs no heavy imports, ruff's lint
and format, and mypy on the whole package (the GUI included)."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def test_import_linter_contracts_hold():
    result = _run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    for contract in (
        "core never imports Qt, pyqtgraph or the GUI",
        "the program's layers: the CLI over the GUI over core",
        "core's layers: jobs over training over the episode over its parts",
        "the workers' layers: checks over pools over providers over the transport",
        "the jobs' layers: the study over the single jobs over what they share",
        "the HTTP transport knows no API keys",
        "no import circles between the modules of any package",
    ):
        assert f"{contract} KEPT" in result.stdout, result.stdout


def test_every_module_of_core_has_its_place_in_the_layers():
    """A module left out of the layers contract has its imports unchecked: each module and
    package directly under workbench/core is named in it."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        c
        for c in data["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("core's layers")
    ]
    named = {m.strip() for layer in contract["layers"] for m in layer.split("|")}
    core = ROOT / "workbench" / "core"
    modules = {
        f"workbench.core.{p.stem}"
        for p in core.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert modules - named == set(), "add these to the core layers in pyproject.toml"


def test_the_circle_contract_catches_a_circle(tmp_path):
    """The no-circles contract is not vacuous: the same contract fails on a package whose
    two modules import each other."""
    pkg = tmp_path / "circled"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from circled import b\n")
    (pkg / "b.py").write_text("from circled import a\n")
    (tmp_path / ".importlinter").write_text(
        textwrap.dedent(
            """
            [importlinter]
            root_package = circled

            [importlinter:contract:1]
            name = no circles
            type = acyclic_siblings
            ancestors = circled
            """
        )
    )
    result = _run(str(BIN / "lint-imports"), "--no-cache", cwd=tmp_path)
    assert result.returncode == 1 and "no circles BROKEN" in result.stdout, result.stdout


def test_importing_core_and_cli_loads_neither_torch_nor_qt():
    code = (
        "import sys, workbench.cli, workbench.core.coordinator, workbench.core.protocol, "
        "workbench.core.store, workbench.core.workers.base, workbench.core.workers.pool, "
        "workbench.core.training.trainer, workbench.core.jobs.train, workbench.core.jobs.study;"
        "print(sorted(m for m in ('torch', 'transformers', 'PySide6', 'pyqtgraph') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_ruff_finds_nothing():
    result = _run(str(BIN / "ruff"), "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_is_ruff_formatted():
    result = _run(str(BIN / "ruff"), "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, (
        "run `ruff format .`: " + result.stdout[-3000:] + result.stderr[-2000:]
    )


def test_mypy_finds_no_type_errors_in_the_package():
    # the configuration (files, skipped heavy libraries) is [tool.mypy] in pyproject.toml
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def test_records_of_more_than_four_fields_are_built_by_keyword():
    """A dataclass of more than four fields is ``kw_only``: a record built from 6-11
    positional values breaks silently when a field is added or two of one type swap."""
    import ast

    positional = []
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                call = deco if isinstance(deco, ast.Call) else None
                name = call.func if call is not None else deco
                if not (isinstance(name, ast.Name) and name.id == "dataclass"):
                    continue
                fields = [
                    s
                    for s in node.body
                    if isinstance(s, ast.AnnAssign)
                    and "ClassVar" not in ast.unparse(s.annotation)
                    and not (s.value is not None and "init=False" in ast.unparse(s.value))
                ]
                kw_only = call is not None and any(
                    k.arg == "kw_only" and ast.literal_eval(k.value) is True for k in call.keywords
                )
                if len(fields) > 4 and not kw_only:
                    positional.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert positional == [], "add kw_only=True to these dataclasses: " + ", ".join(positional)
