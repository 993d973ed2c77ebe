"""The ``trinity-workbench`` command: no argument starts the GUI (``--workspace DIR``); subcommands do
headless work through ``workbench.core`` (never the GUI).

Exit codes (docs/guides/exit-codes.md), by the error's branch in ``workbench.core.errors``:
0 success, 1 the work failed, 2 bad input (a usage error or an invalid file), 3
interrupted (Ctrl-C), 4 the operating system refused (disk full, permission denied, a
read-only file system). Errors print as one sentence; ``-v`` adds the traceback.
Each command module has a ``register(sub, common)`` that adds its subcommands.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence

from workbench import __version__
from workbench.cli import (
    crossval,
    doctor,
    episodes,
    headroom,
    records,
    serve,
    suites,
    training,
    workers,
)
from workbench.cli.common import exit_now
from workbench.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    WorkbenchError,
    exit_code,
    sentence,
)

log = logging.getLogger("workbench")

COMMAND_MODULES = (suites, records, episodes, training, crossval, headroom, workers, serve, doctor)


class StderrHandler(logging.StreamHandler):
    """Log records to ``sys.stderr`` as it is when each is written: while a progress bar
    draws, rich stands in for it and puts the line above the bar (a handler holding the
    stream it was made with would write through the bar)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def configure_logging(verbose: bool) -> None:
    """Log lines on stderr only with -v; warnings and errors always. The handler's own
    level holds that when a logger below the root is set lower (the GUI sets the
    workbench logger to INFO for its log file, and a library may set its own)."""
    level = logging.INFO if verbose else logging.WARNING
    handler = StderrHandler()
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trinity-workbench",
        description="Build, train and inspect evolved LLM coordinators (TRINITY).",
    )
    parser.add_argument("--version", action="version", version=f"trinity-workbench {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log progress and details to stderr"
    )
    parser.add_argument(
        "--workspace",
        metavar="DIR",
        dest="gui_workspace",
        default=None,
        help="workspace folder, for the GUI or for the command that follows (default: the user "
        "data directory)",
    )
    parser.add_argument(
        "--screenshot",
        metavar="DIR",
        default=None,
        help="render every page of the GUI with sample content (a short sandbox run made on "
        "the fly) to PNG files in DIR, then exit",
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="check this installation: build the GUI offscreen and run one stored sandbox "
        "episode with the offline model in a temporary workspace; exit 0 if all works",
    )
    # for smoke tests: show the main window, then close it after MS milliseconds
    parser.add_argument(
        "--quit-after",
        metavar="MS",
        dest="quit_after",
        type=int,
        default=None,
        help=argparse.SUPPRESS,
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--workspace",
        metavar="DIR",
        default=None,
        help="workspace folder (default: the user data directory)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    if args.command is not None and args.gui_workspace is not None:
        # `--workspace DIR COMMAND` once trained, stored and listed in the default workspace
        # without a word (the command's own --workspace default won): DIR counts for both
        own = getattr(args, "workspace", None)
        if own is not None and own != args.gui_workspace:
            parser.error(
                f"--workspace is given twice, {args.gui_workspace!r} before the command and "
                f"{own!r} after it: give it once"
            )
        args.workspace = args.gui_workspace
    if args.command is None and args.self_test:
        from workbench.gui.selftest import run as self_test

        return self_test()
    if args.command is None and args.screenshot:
        args.func = lambda a: _screenshots(a.screenshot, a.gui_workspace)
    elif args.command is None:
        from workbench.gui.app import main as gui_main  # lazily: the CLI never loads Qt otherwise

        return gui_main(args.gui_workspace, quit_after_ms=args.quit_after)
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into head, less, ...
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:  # the job has unwound: its store is closed
        print("Interrupted (Ctrl-C).", file=sys.stderr)
        exit_now(EXIT_INTERRUPTED)
    except Exception as exc:  # every error ends as a sentence, never a traceback (but -v)
        return report(exc, verbose=args.verbose)


def report(exc: BaseException, *, verbose: bool) -> int:
    """Print ``exc`` as the sentence it carries (the traceback only when ``verbose``) and
    return its exit code (by its branch of the error tree, ``workbench.core.errors``). An
    OSError of the project's own making (disk full, permission denied, a read-only file
    system) gets one sentence naming its path and the fix."""
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"error: {sentence(exc)}", file=sys.stderr)
    if isinstance(exc, ValueError | LookupError) and not isinstance(exc, WorkbenchError):
        # a standard-library error raised with a sentence (a value given that cannot be
        # used): bad input, as the tree's BadInput
        return EXIT_BAD_INPUT
    return exit_code(exc)


def _screenshots(out_dir: str, workspace: str | None) -> int:
    import os

    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no screen needed to render
    from workbench.gui.screenshots import take

    for path in take(out_dir, workspace):
        print(path)
    return 0
