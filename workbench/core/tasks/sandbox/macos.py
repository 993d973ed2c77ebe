"""The sandbox-exec profile for one sandboxed interpreter (macOS).

Untested on this project's CI (Linux only): ``sandbox_profile`` is unit-tested for what it
allows, the macOS kernel enforcement itself is not. The profile denies everything, then
allows reading the system and the interpreter's prefix, reading the run's harness folder,
writing only to the run's own work folder, and starting processes of the interpreter;
network access stays denied. There is no pid namespace: the run's process group is killed
at the end, and a program that leaves it (``setsid``) can outlive the grade.
"""

from __future__ import annotations


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sandbox_profile(*, python_prefix: str, harness_dir: str, work_dir: str) -> str:
    """The SBPL profile text that confines one run."""
    return "\n".join(
        [
            "(version 1)",
            "(deny default)",
            "(allow process-fork)",
            f"(allow process-exec (subpath {_quote(python_prefix)}))",
            "(allow file-read-metadata)",
            "(allow file-read*"
            ' (subpath "/usr/lib") (subpath "/System") (subpath "/Library/Apple")'
            ' (literal "/dev/null") (literal "/dev/urandom") (literal "/dev/random")'
            f" (subpath {_quote(python_prefix)}) (subpath {_quote(harness_dir)})"
            f" (subpath {_quote(work_dir)}))",
            f'(allow file-write* (subpath {_quote(work_dir)}) (literal "/dev/null"))',
            "(allow sysctl-read)",
            "(allow signal (target same-sandbox))",
            "(deny network*)",
            "",
        ]
    )
