"""The trusted side of a HumanEval-style grade, run in its own sandboxed process.

Started as ``python -I -S checker.py TASK_JSON TO_FD FROM_FD VERDICT_FD``. It runs the
task's own code (the prompt's helpers, the test, ``check``) and hands ``check`` a stand-in
for the candidate function that forwards each call to the candidate's process (see
``harness.py``) as plain data and returns the plain value that comes back. Every
comparison therefore happens here, on builtin values built here, and the verdict is
written to ``VERDICT_FD``: a pipe only this process holds. The candidate runs elsewhere,
never sees this process's memory, files or pipes, and cannot end it early.

It imports only the stdlib.
"""

import builtins
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plaindata  # noqa: E402

del sys.path[0]


def _traceback():
    """The traceback module, imported only when there is one to print: it costs more
    start-up time (tokenize, re, linecache) than everything else here."""
    import traceback

    return traceback


MAX_REPLY_BYTES = 16 * 2**20


class CandidateFailed(BaseException):
    """The candidate's process died, went silent or answered with something that is not
    plain data. A BaseException, so that a test's ``except Exception`` does not swallow
    it; and the verdict is a failure even if it were swallowed."""


class _Channel:
    def __init__(self, to_fd: int, from_fd: int) -> None:
        self.requests = os.fdopen(to_fd, "wb")
        self.replies = os.fdopen(from_fd, "rb")
        self.broken = ""

    def call(self, *args: object) -> object:
        if self.broken:
            raise CandidateFailed(self.broken)
        try:
            self.requests.write(plaindata.encode(list(args)).encode() + b"\n")
            self.requests.flush()
            line = self.replies.readline(MAX_REPLY_BYTES + 1)
        except OSError as error:
            self._fail(f"the program exited before it answered a call ({error.strerror})")
        if not line:
            self._fail("the program exited before it answered a call")
        if len(line) > MAX_REPLY_BYTES:
            self._fail(f"the candidate answered with more than {MAX_REPLY_BYTES} bytes")
        try:
            reply = plaindata.decode(line)
        except (ValueError, TypeError, RecursionError) as error:
            self._fail(f"the candidate did not answer with plain data: {error}")
        if type(reply) is list and len(reply) == 2 and reply[0] == "ok":
            return reply[1]
        if (
            type(reply) is list
            and len(reply) == 3
            and reply[0] == "raise"
            and type(reply[1]) is str
            and type(reply[2]) is str
        ):
            raise _exception_named(reply[1])(reply[2])
        self._fail("the candidate answered with something that is not a reply")

    def _fail(self, why: str) -> None:
        self.broken = why
        raise CandidateFailed(why)


def _exception_named(name: str) -> type:
    """The builtin exception class called ``name`` (a test may expect ``ValueError``),
    else ``RuntimeError``: a name from the candidate never picks anything else."""
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return RuntimeError


def _main() -> None:
    task_path, to_fd, from_fd, verdict_fd = sys.argv[1], *map(int, sys.argv[2:5])
    verdict = os.fdopen(verdict_fd, "w")
    with open(task_path, encoding="utf-8") as f:
        task = json.load(f)
    channel = _Channel(to_fd, from_fd)

    def candidate(*args: object) -> object:
        return channel.call(*args)

    candidate.__name__ = task["entry_point"]
    namespace = {"__name__": "checker", "__builtins__": builtins}
    try:
        exec(compile(task["prelude"], "prompt.py", "exec"), namespace)
        # a test may call the function by its name (HumanEval/33): that is the candidate's
        namespace[task["entry_point"]] = candidate
        exec(compile(task["test"], "test.py", "exec"), namespace)
        namespace["check"](candidate)
    except AssertionError as error:
        _traceback().print_exc()
        verdict.write(
            "fail\n"
            + (f"a test assertion failed: {error}" if str(error) else "a test assertion failed")
        )
        return
    except CandidateFailed as error:
        verdict.write(f"fail\n{error}")
        return
    except BaseException as error:
        _traceback().print_exc()
        verdict.write(f"fail\n{type(error).__name__}: {error}"[:2000])
        return
    if channel.broken:
        verdict.write(f"fail\n{channel.broken}")
        return
    verdict.write("pass\nall tests passed")


_main()
