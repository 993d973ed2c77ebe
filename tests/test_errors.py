"""One error tree (workbench/core/errors.py): every error class the project defines sits
under ``WorkbenchError`` in one branch, the command line maps each by its class to the
documented exit code (docs/guides/exit-codes.md) with one sentence and no traceback
unless ``-v``, and operating-system failures name the path and the fix."""

import errno
import importlib
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main, report
from workbench.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_SYSTEM,
    EXIT_WORK_FAILED,
    BadInput,
    Interrupted,
    SystemFailure,
    WorkbenchError,
    WorkFailed,
    describe_os_error,
)
from workbench.core.serving.requests import BadRequest
from workbench.core.tasks.jsonl import SuiteValidationError
from workbench.core.workers.base import WorkerError

ROOT = Path(__file__).resolve().parents[1]
# modules run inside the sandbox's jail without the package (their errors never leave it)
IN_JAIL = {"workbench.core.tasks.sandbox.checker", "workbench.core.tasks.sandbox.plaindata"}
BRANCHES = {
    BadInput: EXIT_BAD_INPUT,
    WorkFailed: EXIT_WORK_FAILED,
    Interrupted: EXIT_INTERRUPTED,
    SystemFailure: EXIT_SYSTEM,
}


def project_error_classes() -> list[type[BaseException]]:
    """Every exception class defined in a module of workbench.core and workbench.cli."""
    found = []
    for package in ("workbench.core", "workbench.cli"):
        module = importlib.import_module(package)
        names = [package] + [m.name for m in pkgutil.walk_packages(module.__path__, package + ".")]
        for name in names:
            if name in IN_JAIL or name.endswith("__main__"):
                continue
            loaded = importlib.import_module(name)
            for _, obj in inspect.getmembers(loaded, inspect.isclass):
                if issubclass(obj, BaseException) and obj.__module__ == name:
                    found.append(obj)
    return sorted(set(found), key=lambda c: f"{c.__module__}.{c.__qualname__}")


CLASSES = project_error_classes()


def test_the_walk_finds_the_project_errors():
    names = {c.__name__ for c in CLASSES}
    assert {"ConfigError", "CheckpointError", "StoreFull", "WorkerError", "Stopped"} <= names
    assert len(CLASSES) >= 40


def unlisted(classes: list[type[BaseException]], tree: str) -> list[str]:
    """The classes of ``classes`` that ``tree`` (a docstring) does not name."""
    return [
        f"{c.__module__}.{c.__name__}"
        for c in classes
        if not re.search(rf"(?<![\w.]){re.escape(c.__name__)}(?!\w)", tree)
    ]


def test_the_error_trees_docstring_names_every_class():
    """The tree drawn in errors.py's docstring is the one a reader trusts: every error
    class of core and the CLI is in it (and the self-test's Warn, outside the tree)."""
    import workbench.core.errors
    from workbench.gui.selftest import Warn

    tree = workbench.core.errors.__doc__ or ""
    assert unlisted([*CLASSES, Warn], tree) == [], "add these to the tree in errors.py"


def test_the_docstring_check_finds_a_class_left_out():
    class Unlisted(BadInput):
        pass

    class Config(BadInput):  # a word inside ConfigError is no mention
        pass

    tree = "BadInput > ConfigError, RunNotFound"
    assert unlisted([Unlisted, Config, BadInput], tree) == [
        f"{__name__}.Unlisted",
        f"{__name__}.Config",
    ]


def instance(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` as the project builds one (its own arguments where it takes
    some)."""
    sentence = f"what happened to {cls.__name__}: the fix"
    if issubclass(cls, WorkerError):
        return cls("w1", sentence)
    if issubclass(cls, BadRequest):
        return cls(400, sentence)
    if issubclass(cls, SuiteValidationError):
        return cls([], summary=sentence)
    if cls.__name__ == "PromptTooLong":  # serve: the tokens counted and the budget
        return cls(5000, 4096)
    return cls(sentence)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_sits_under_the_root_and_maps_to_its_branchs_exit_code(cls, capsys):
    assert issubclass(cls, WorkbenchError), f"{cls.__module__}.{cls.__name__} is outside the tree"
    branch = next((b for b in cls.__mro__ if b in BRANCHES), None)
    if branch is None:  # a family (StoreError): the work failed
        assert cls.exit_code == EXIT_WORK_FAILED
    else:
        assert cls.exit_code == BRANCHES[branch]
    exc = instance(cls)
    try:
        raise exc
    except cls as raised:  # as a command raises it: with a traceback to hide
        exc = raised
    assert report(exc, verbose=False) == cls.exit_code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert report(exc, verbose=True) == cls.exit_code
    assert "Traceback" in capsys.readouterr().err  # -v adds it


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "the disk is full: free some space"),
        (errno.EACCES, "permission denied: make it readable and writable by you"),
        (errno.EROFS, "the file system is read-only: use a workspace on a writable disk"),
    ],
)
def test_an_os_failure_is_one_sentence_with_the_path_and_the_fix(code, words, capsys):
    exc = OSError(code, os.strerror(code), "/data/ws/workbench.sqlite3")
    sentence = describe_os_error(exc)
    assert sentence is not None and sentence.startswith(f"/data/ws/workbench.sqlite3: {words}")
    assert report(exc, verbose=False) == EXIT_SYSTEM
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/data/ws/workbench.sqlite3" in err and words in err


def test_a_bug_outside_the_tree_still_ends_as_a_sentence(capsys):
    assert report(ZeroDivisionError("division by zero"), verbose=False) == EXIT_WORK_FAILED
    err = capsys.readouterr().err
    assert "internal error (ZeroDivisionError" in err and "-v" in err and "Traceback" not in err


def test_an_unknown_run_is_bad_input_without_a_traceback(tmp_path, capsys):
    assert main(["--workspace", str(tmp_path), "runs", "show", "nope1234"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "nope1234" in err and "Traceback" not in err


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to run the command as another user (setpriv)",
)
def test_a_workspace_the_user_cannot_write_exits_4_with_the_path_and_the_fix(tmp_path):
    """A real permission denied: an ordinary user (uid 1000) given a root-owned folder."""
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [
            "setpriv",
            "--reuid=1000",
            "--regid=1000",
            "--clear-groups",
            sys.executable,
            "-m",
            "workbench",
            "--workspace",
            str(locked / "ws"),
            "runs",
            "list",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=120,
    )
    assert result.returncode == EXIT_SYSTEM, result.stderr
    assert str(locked / "ws") in result.stderr and "permission denied" in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


FULL_DISK_CONFIG = """
[run]
name = "full disk"
seed = 0
[backbone]
model = "offline"
[pool]
workers = ["sandbox"]
[tasks]
suite = "mixed"
train = 24
validation = 6
test = 0
[optimizer]
popsize = 4
rollouts = 3
validate_every = 2
[budget]
generations = 2
[protocol]
max_turns = 3
temperature = 0.0
[cache]
policy = "off"
"""


def _mount_tmpfs(where: Path, size: str, remount: bool = False) -> bool:
    options = f"remount,size={size}" if remount else f"size={size}"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")
def test_a_full_disk_exits_4_with_one_sentence_and_the_run_resumes_once_space_is_freed(
    tmp_path,
):
    """A real full disk: the workspace on a 256 KiB tmpfs fills while the run stores its
    first generation; the command says so in one sentence (no traceback) and exits 4;
    nothing half-written is kept, and the run resumes to its end on a larger disk."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _mount_tmpfs(disk, "256k"):
        pytest.skip("tmpfs cannot be mounted here")
    try:
        config = tmp_path / "run.toml"
        config.write_text(FULL_DISK_CONFIG, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "workbench", "--workspace", str(disk / "ws"), "train"]
        full = subprocess.run(
            [*command, str(config)], capture_output=True, text=True, env=env, timeout=600
        )
        assert full.returncode == EXIT_SYSTEM, full.stderr
        errors = [line for line in full.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "Traceback" not in full.stderr
        assert str(disk / "ws" / "workbench.sqlite3") in errors[0]
        assert "the disk is full: free some space" in errors[0]
        resume = f"Resume: trinity-workbench --workspace {disk / 'ws'} train --resume "
        assert resume in full.stderr  # the command as given, its workspace too

        assert _mount_tmpfs(disk, "64m", remount=True)  # space freed
        run_id = full.stderr.split("--resume ", 1)[1].split()[0]
        resumed = subprocess.run(
            [*command, "--resume", run_id], capture_output=True, text=True, env=env, timeout=600
        )
        assert resumed.returncode == 0, resumed.stderr
        from workbench.core.store import Store
        from workbench.core.workspace import Workspace

        with Store.open(Workspace.open(disk / "ws")) as store:
            (record,) = store.list_runs()
            assert [g["generation"] for g in store.generations(record.id)] == [0, 1]
            assert record.status == "finished"
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
