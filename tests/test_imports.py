"""Every module of workbench imports cleanly and does nothing at import: what a Qt-free
check, a documentation generator or a type checker does to the package.

The modules are listed with ``pkgutil.walk_packages`` (skipping only ``__main__``) in one
fresh interpreter, then imported one at a time in another: no display, no command-line
arguments, an empty working folder, ``HOME`` and ``TMPDIR``. After each import the second
interpreter compares what a module may not change at import with what it was before: it
must not raise (``SystemExit`` included), print, start a Python thread or a process,
create a file, change the working folder, the environment, ``sys.path``, ``sys.argv``, a resource
limit, a signal handler or the root logger's handlers, nor load a module of the package
under a top-level name (an in-jail script's siblings). The modules of ``workbench.core``
are imported first, and none of them may load Qt, pyqtgraph or the GUI. What torch and
PySide6 themselves do at import (an environment variable each, torch's cache folder,
native threads of the numeric libraries) is not the package's and is left out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_LIST = """
import json, pkgutil, workbench
names = [m.name for m in pkgutil.walk_packages(workbench.__path__, "workbench.")]
print(json.dumps([n for n in names if n.rsplit(".", 1)[-1] != "__main__"]))
"""

_IMPORT_EACH = textwrap.dedent(
    """
    import importlib, io, json, logging, os, resource, signal, sys, threading
    from pathlib import Path

    names = json.loads(sys.stdin.read())
    package_dir = os.path.dirname(importlib.util.find_spec("workbench").origin)
    watched = [Path(os.getcwd()), Path(os.environ["HOME"]), Path(os.environ["TMPDIR"])]
    limits = [getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")]
    signals = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    out = os.dup(1)
    sink = open(os.environ["SINK"], "wb", buffering=0)
    os.dup2(sink.fileno(), 1)
    os.dup2(sink.fileno(), 2)
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    QT = ("PySide6", "shiboken6", "pyqtgraph", "workbench.gui")
    # what the libraries themselves do at import, not the package: torch names its
    # compile cache (and makes its folder), PySide6 picks its enum style
    THIRD_PARTY_ENV = ("TORCHINDUCTOR_CACHE_DIR", "PYSIDE6_OPTION_PYTHON_ENUM")
    THIRD_PARTY_FILES = ("torchinductor_",)

    def children():
        tasks = Path("/proc/self/task")
        return sorted(p for t in tasks.iterdir() for p in (t / "children").read_text().split())

    def state():
        return {
            "output": os.fstat(sink.fileno()).st_size + len(sys.stdout.getvalue())
            + len(sys.stderr.getvalue()),
            "threads": sorted(t.name for t in threading.enumerate()),
            "processes": children(),
            "files": sorted(
                str(p) for folder in watched for p in folder.rglob("*")
                if not p.relative_to(folder).parts[0].startswith(THIRD_PARTY_FILES)
            ),
            "cwd": os.getcwd(),
            "environ": {k: v for k, v in os.environ.items() if k not in THIRD_PARTY_ENV},
            "sys.path": list(sys.path),
            "sys.argv": list(sys.argv),
            "rlimits": [resource.getrlimit(r) for r in limits],
            "signals": [repr(signal.getsignal(s)) for s in signals],
            "log handlers": [repr(h) for h in logging.getLogger().handlers],
            "package modules under another name": sorted(
                name for name, m in list(sys.modules.items())
                if not name.startswith("workbench")
                and str(getattr(m, "__file__", None) or "").startswith(package_dir)
            ),
        }

    found = []
    before = state()
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as error:
            found.append([name, "raised", f"{type(error).__name__}: {error}"])
        after = state()
        for key, value in after.items():
            if value != before[key]:
                found.append([name, key, f"{before[key]!r:.300} -> {value!r:.300}"])
        if name.startswith("workbench.core"):
            qt = sorted(m for m in sys.modules if m.startswith(QT))
            if qt:
                found.append([name, "loaded Qt from core", ", ".join(qt[:5])])
        before = after
    os.write(out, json.dumps(found).encode())
    """
)


def _module_names() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LIST], capture_output=True, text=True, env=_bare_env(), cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _bare_env(**extra: str) -> dict[str, str]:
    """The environment without a display (and without anything that would pick one)."""
    keep = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL")
    return {k: v for k, v in os.environ.items() if k in keep} | extra


def test_every_module_imports_without_side_effects_and_core_without_qt(tmp_path) -> None:
    names = _module_names()
    assert len(names) > 50 and "workbench.core.tasks.sandbox.checker" in names
    # core first: a core module that loads Qt is caught before a GUI module loads it anyway
    names.sort(key=lambda n: not n.startswith("workbench.core"))
    folders = {name: tmp_path / name for name in ("cwd", "home", "tmp")}
    for folder in folders.values():
        folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH],
        input=json.dumps(names),
        capture_output=True,
        text=True,
        cwd=folders["cwd"],
        env=_bare_env(
            HOME=str(folders["home"]),
            TMPDIR=str(folders["tmp"]),
            SINK=str(tmp_path / "output"),
        ),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(done.stdout)
    output = (tmp_path / "output").read_text(errors="replace")
    assert found == [], "\n".join(" | ".join(f) for f in found) + "\noutput:\n" + output[-3000:]


def test_the_check_catches_a_module_that_acts_at_import(tmp_path) -> None:
    """Not vacuous: a module that reads its arguments at import, and one that starts a
    thread, are each reported (the same driver, over a throwaway package)."""
    pkg = tmp_path / "src" / "workbench_probe"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "argv.py").write_text("import sys\nLIMITS = sys.argv[1]\n")
    (pkg / "thread.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(5,)).start()\n"
    )
    (pkg / "quiet.py").write_text("def main():\n    print('hello')\n")
    for name in ("cwd", "home", "tmp"):
        (tmp_path / name).mkdir()
    driver = _IMPORT_EACH.replace('find_spec("workbench")', 'find_spec("workbench_probe")')
    done = subprocess.run(
        [sys.executable, "-c", driver],
        input=json.dumps(
            ["workbench_probe.argv", "workbench_probe.quiet", "workbench_probe.thread"]
        ),
        capture_output=True,
        text=True,
        cwd=tmp_path / "cwd",
        env=_bare_env(
            PYTHONPATH=str(tmp_path / "src"),
            HOME=str(tmp_path / "home"),
            TMPDIR=str(tmp_path / "tmp"),
            SINK=str(tmp_path / "output"),
        ),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = {(name, what) for name, what, _ in json.loads(done.stdout)}
    assert ("workbench_probe.argv", "raised") in found
    assert ("workbench_probe.thread", "threads") in found
    assert not any(name == "workbench_probe.quiet" for name, _ in found)
