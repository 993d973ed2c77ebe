"""The trusted side of a HumanEval-style grade, run in its own sandboxed process.

Started as ``python -I -S checker.py LIMITS TASK_FD TO_FD FROM_FD VERDICT_FD``, ahead of
its grade: it sets the resource limits ``LIMITS`` on itself (``limits.py``), imports
``typing`` (most prompts do), and waits for its task on ``TASK_FD``: plain data
``[prelude, test, entry_point]`` up to the end of that pipe. It then runs the task's own code (the prompt's helpers, the test, ``check``) and hands ``check`` a stand-in
for the candidate function that forwards each call to the candidate's process (see
``harness.py``) as plain data and returns the plain value that comes back. Every
comparison therefore happens here, on builtin values built here, and the verdict is
written to ``VERDICT_FD``: a pipe only this process holds. The candidate runs elsewhere,
never sees this process's memory, files or pipes, and cannot end it early.

It imports only the stdlib.
"""

import builtins
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import limits  # noqa: E402

limits.apply(sys.argv[1])
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
            why = f"the program exited before it answered a call ({error.strerror})"
            raise self._failure(why) from None
        if not line:
            raise self._failure("the program exited before it answered a call")
        if len(line) > MAX_REPLY_BYTES:
            raise self._failure(f"the candidate answered with more than {MAX_REPLY_BYTES} bytes")
        try:
            reply = plaindata.decode(line)
        except (ValueError, TypeError, RecursionError) as error:
            raise self._failure(f"the candidate did not answer with plain data: {error}") from None
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
        raise self._failure("the candidate answered with something that is not a reply")

    def _failure(self, why: str) -> CandidateFailed:
        """The failure to raise; later calls fail with it too."""
        self.broken = why
        return CandidateFailed(why)


def _exception_named(name: str) -> type:
    """The builtin exception class called ``name`` (a test may expect ``ValueError``),
    else ``RuntimeError``: a name from the candidate never picks anything else."""
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return RuntimeError


def _read_task(fd: int) -> list:
    with os.fdopen(fd, "rb") as pipe:
        task = plaindata.decode(pipe.read())
    if type(task) is not list or len(task) != 3 or any(type(x) is not str for x in task):
        sys.exit("checker: the task is not [prelude, test, entry_point]")
    return task


def _main() -> str:
    """The verdict: ``pass`` or ``fail``, a newline, and why."""
    task_fd, to_fd, from_fd = map(int, sys.argv[2:5])
    import typing  # noqa: F401 - most HumanEval prompts import from it; load it while idle

    prelude, test, entry_point = _read_task(task_fd)
    channel = _Channel(to_fd, from_fd)

    def candidate(*args: object) -> object:
        return channel.call(*args)

    candidate.__name__ = entry_point
    namespace: dict = {"__name__": "checker", "__builtins__": builtins}
    try:
        exec(compile(prelude, "prompt.py", "exec"), namespace)
        # a test may call the function by its name (HumanEval/33): that is the candidate's
        namespace[entry_point] = candidate
        exec(compile(test, "test.py", "exec"), namespace)
        namespace["check"](candidate)
    except AssertionError as error:
        _traceback().print_exc()
        return "fail\n" + (
            f"a test assertion failed: {error}" if str(error) else "a test assertion failed"
        )
    except CandidateFailed as error:
        return f"fail\n{error}"
    except BaseException as error:
        _traceback().print_exc()
        return f"fail\n{type(error).__name__}: {error}"[:2000]
    if channel.broken:
        return f"fail\n{channel.broken}"
    return "pass\nall tests passed"


def _finish() -> None:
    """Run the test, write the verdict, then end at once: the interpreter's teardown
    would only make the grade wait."""
    verdict = _main()
    with os.fdopen(int(sys.argv[5]), "w") as pipe:
        pipe.write(verdict)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


_finish()
