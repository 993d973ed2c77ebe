"""The frozen application's entry point (PyInstaller runs this file).

Besides ``trinity-workbench [COMMAND ...]`` (the GUI with no command), the bundle's own
Python must stand in for ``python`` where the engine starts one: the code sandbox runs
``python -I -S harness.py ...`` and probes its isolation and bytecode with
``python -I -S -c CODE``. A frozen app has no separate interpreter, so those forms are
served here with the bundled one.
"""

import runpy
import sys


def main() -> int:
    if getattr(sys, "frozen", False) and len(sys.argv) > 2 and sys.argv[1] == "-I":
        args = sys.argv[2:]
        while args and args[0] == "-S":  # the sandbox also asks for no site: nothing to do
            args = args[1:]
        if args and args[0] == "-c":  # python -c CODE [ARG ...]: sys.argv[0] is "-c"
            sys.argv = ["-c", *args[2:]]
            exec(
                compile(args[1] if len(args) > 1 else "", "<string>", "exec"),
                {"__name__": "__main__"},
            )
            return 0
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
        return 0
    from workbench.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
