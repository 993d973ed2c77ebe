"""The layout's boundaries and the rules machines check (docs/ARCHITECTURE.md,
docs/CONVENTIONS.md): the import-linter contracts (core never imports Qt, pyqtgraph or the
GUI; the layers; no import circles), importing core costs no heavy imports, ruff's lint
and format, and mypy on the whole package (the GUI included)."""

import ast
import io
import re
import subprocess
import sys
import textwrap
import tokenize
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
        "the jobs' layers: jobs of jobs over single jobs over their parts",
        "the HTTP transport knows no API keys",
        "no import circles between the modules of any package",
    ):
        assert f"{contract} KEPT" in result.stdout, result.stdout


def _layer_names(contract: dict) -> set[str]:
    return {m.strip() for layer in contract["layers"] for m in layer.split("|")}


def _modules(package: Path, prefix: str) -> set[str]:
    """The modules and packages directly in ``package``, as ``prefix.NAME``."""
    return {
        f"{prefix}.{p.stem}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }


def test_every_module_of_core_has_its_place_in_the_layers():
    """A module left out of the layers contracts has its imports unchecked: each module
    and package directly under workbench/core is named in core's layers (a package that
    straddles layers, as optimizers/ does, by each of its modules), and each module of a
    package with layers of its own (workers/, jobs/) in that package's."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [c for c in data["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    (core_layers,) = [c for c in contracts if c["name"].startswith("core's layers")]
    named = _layer_names(core_layers)
    core = ROOT / "workbench" / "core"
    unplaced = set()
    for module in _modules(core, "workbench.core"):
        package = core / module.rsplit(".", 1)[1]
        if module in named:
            continue
        if package.is_dir() and _modules(package, module) <= named:
            continue
        unplaced.add(module)
    assert unplaced == set(), "add these to the core layers in pyproject.toml"
    containers = [c for c in contracts if c.get("containers")]
    assert {c["containers"][0] for c in containers} >= {
        "workbench.core.workers",
        "workbench.core.jobs",
    }
    for contract in containers:
        (container,) = contract["containers"]
        package = ROOT / Path(*container.split("."))
        inner = {m.rsplit(".", 1)[1] for m in _modules(package, container)}
        assert inner - _layer_names(contract) == set(), f"add these to {contract['name']!r}"


def architecture_gaps(page: str, core: Path) -> list[str]:
    """The modules and packages under ``core`` that docs/ARCHITECTURE.md (``page``) does
    not place: one is placed by its path (``core/store/schema.py``, ``core/store/``) or,
    in the row of its top package (the line that names ``core/NAME/``), by its name in
    backticks or its file name (`` `schema` ``, ``schema.py``, ``sandbox/``)."""
    rows: dict[str, str] = {}
    for line in page.splitlines():
        for top in {p.name for p in core.iterdir() if (p / "__init__.py").is_file()}:
            if f"`core/{top}/" in line:
                rows[top] = rows.get(top, "") + line
    gaps = []
    for path in sorted(core.rglob("*.py")):
        rel = path.relative_to(core)
        if rel.name == "__init__.py":
            if rel.parent == Path("."):
                continue
            rel, name, shown = rel.parent, rel.parent.name, f"{rel.parent.name}/"
        else:
            name, shown = rel.stem, rel.name
        if f"core/{rel.as_posix()}" in page:
            continue
        row = rows.get(rel.parts[0], "") if len(rel.parts) > 1 else ""
        if f"`{name}`" in row or shown in row:
            continue
        gaps.append(rel.as_posix())
    return gaps


def test_every_module_of_core_is_placed_in_the_architecture_page():
    """docs/ARCHITECTURE.md says what each module and package of core owns: one added
    without a word there fails here."""
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    gaps = architecture_gaps(page, ROOT / "workbench" / "core")
    assert gaps == [], "say in docs/ARCHITECTURE.md's Modules what these own: " + ", ".join(gaps)


def test_the_architecture_check_finds_a_module_left_out(tmp_path):
    core = tmp_path / "core"
    for name in ("__init__.py", "a.py", "b.py", "pkg/__init__.py", "pkg/c.py", "pkg/d.py"):
        (core / name).parent.mkdir(parents=True, exist_ok=True)
        (core / name).write_text("")
    page = "| `core/a.py` | a |\n| `core/pkg/` | `c` and `a` |\n"
    assert architecture_gaps(page, core) == ["b.py", "pkg/d.py"]


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


# where a whole run config may be read: where it is defined and loaded (config, the user's
# defaults), where it is stored (the store), and the jobs that load one and hand its parts down
CONFIG_READERS = ("config.py", "config_schema.py", "settings.py", "store/", "jobs/")


def whole_config_readers(core: Path) -> list[str]:
    """The modules under ``core`` outside ``CONFIG_READERS`` that name ``RunConfig``
    (import it, annotate with it, call it)."""
    found = []
    for path in sorted(core.rglob("*.py")):
        rel = path.relative_to(core).as_posix()
        if rel.startswith(CONFIG_READERS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value == "RunConfig"
        }
        if "RunConfig" in names:
            found.append(rel)
    return found


def test_below_the_jobs_no_module_reads_a_whole_run_config():
    """A run's config is read by the job that loaded it, which hands each layer the typed
    parts it needs (the trainer a ``TrainPlan``, episodes their ``EpisodeSettings``, the
    optimizer its ``[optimizer]`` section): a module below the jobs that takes the whole
    config fails here."""
    found = whole_config_readers(ROOT / "workbench" / "core")
    assert found == [], "hand these modules the parts they need instead: " + ", ".join(found)


def test_the_config_reader_check_finds_a_module_that_takes_the_config(tmp_path):
    core = tmp_path / "core"
    sources = {
        "jobs/train.py": "from workbench.core.config import RunConfig\n",
        "training/trainer.py": "def f(config: 'RunConfig'): ...\n",
        "training/plan.py": "from workbench.core.config import OptimizerSection\n",
        "optimizers/make.py": "from workbench.core import config\nx = config.RunConfig()\n",
    }
    for name, text in sources.items():
        (core / name).parent.mkdir(parents=True, exist_ok=True)
        (core / name).write_text(text)
    assert whole_config_readers(core) == ["optimizers/make.py", "training/trainer.py"]


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


# a lab notebook's reference in code: "issue 16", "issues 12 and 13", "PR #40", "(#40)"
NOTEBOOK = re.compile(r"\b(?:issues?|PR|pull request|ticket|bug)\s*#?\d+\b|\(#\d+\)", re.IGNORECASE)


def notebook_references(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comment or docstring of ``source`` that cites an issue: the
    history belongs in git; a comment says why the code is as it is now."""
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT and NOTEBOOK.search(tok.string)
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            cited = NOTEBOOK.search(ast.get_docstring(node, clean=False) or "")
            if cited:
                found.append((node.body[0].lineno, cited.group(0)))
    return sorted(found)


def test_no_comment_or_docstring_cites_an_issue():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text.strip()[:80]}"
        for path in sorted((ROOT / "workbench").rglob("*.py"))
        for line, text in notebook_references(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "say why the code is as it is, without the history: " + str(found)


def test_the_issue_check_finds_a_reference_and_leaves_code_alone():
    source = (
        '"""A module (issue 16)."""\n'
        'COLOUR = "#404040"  # a grey, as #40 is not\n'
        "def f():\n"
        '    """Fixed in PR #40."""\n'
        '    return "issue 3"  # the text a user sees: not a comment\n'
        "# the cache (#12) keeps them\n"
    )
    assert [line for line, _ in notebook_references(source)] == [1, 4, 6]
