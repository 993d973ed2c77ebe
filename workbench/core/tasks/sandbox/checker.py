"""The trusted side of a HumanEval-style grade, and the process the candidate's forks from.

Started inside one sandbox per grade, ahead of its grade, as
``python -I -S checker.py LIMITS TASK_FD CANDIDATE_TASK_FD VERDICT_FD OUT_FD ERR_FD
CHECKER_OUT_FD CHECKER_ERR_FD`` (the last two become its own stdout and stderr).
Before anything of the grade arrives it

1. imports the candidate's side (``harness.py``), ``limits.py`` and ``plaindata.py``:
   nothing more, not even ``typing`` (21 of HumanEval's 164 prompts import it, and each
   import costs both processes about 8 ms of CPU, which a grade that does not need it
   would pay for nothing); none of them does anything at import;
2. (``main``) sets the resource limits ``LIMITS`` on itself (``limits.py``), inherited
   by all below;
3. makes itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): the kernel then refuses a
   process without ``CAP_SYS_PTRACE`` (the sandbox has no capability) to trace it, read
   or write its memory, or open its ``/proc/PID/fd``, ``mem``, ``environ``, even though
   the candidate runs as the same user;
4. forks the candidate's process (``harness.serve``). That child keeps only its task pipe
   ``CANDIDATE_TASK_FD``, its ends of the two call pipes and its own output files
   ``OUT_FD``/``ERR_FD`` as stdout and stderr, and makes itself dumpable again (its own
   ``/proc/self`` stays readable to it). Nothing of the test is in memory yet.

The checker then blocks every signal it can (so a candidate's ``kill`` can only end or
stop it: no verdict, a failure), leaves the writable ``/tmp`` for ``/`` (so a traceback's
source lines come from nowhere the candidate can write), and waits for its task on
``TASK_FD``: plain data ``[prelude, test, entry_point]``. It runs the task's own code (the
prompt's helpers, the test, ``check``) and hands ``check`` a stand-in for the candidate
function that forwards each call to the candidate's process as plain data and returns the
plain value that comes back. Every comparison happens here, on builtin values built here,
and the verdict is written to ``VERDICT_FD``, which only this process holds (after
``ready`` and a newline, written once the candidate's process is forked: a sandbox that
did not get that far is replaced by the host, as no grade ran in it):
``pass`` or ``fail``, a newline, the candidate's exit status (empty if it had not ended
0.2 s after the last call), a newline, and why.

It imports only the stdlib. Imported as a module of workbench (not run), it does nothing:
the work is ``main()``, which runs only when the sandbox starts the file as a script.
"""

import builtins
import os
import sys

if __package__:  # imported as part of workbench (a check, a documentation tool): no action
    from workbench.core.tasks.sandbox import harness, limits, plaindata
else:  # run in the sandbox by path under -I -S: its siblings lie beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness  # type: ignore[no-redef]
    import limits  # type: ignore[no-redef]
    import plaindata  # type: ignore[no-redef]

    del sys.path[0]

MAX_REPLY_BYTES = 16 * 2**20
_PR_SET_DUMPABLE = 4
_CANDIDATE_EXIT_WAIT_S = 0.2


def _traceback():
    """The traceback module, imported only when there is one to print: it costs more
    start-up time (tokenize, re, linecache) than everything else here."""
    import traceback

    return traceback


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

    def close(self) -> None:
        """No more calls: the candidate's process ends when it sees the end of its
        requests."""
        try:
            self.requests.close()
        except OSError:
            pass

    def _failure(self, why: str) -> CandidateFailed:
        """The failure to raise; later calls fail with it too."""
        self.broken = why
        return CandidateFailed(why)


def _exception_named(name: str) -> type:
    """The builtin exception class called ``name`` (a test may expect ``ValueError``),
    else ``RuntimeError``: a name from the candidate never picks anything else. Nor
    ``StopIteration`` (or ``StopAsyncIteration``): raised in the checker's stand-in it would
    end the test's ``map``/``zip`` loop over the candidate's answers early and silently,
    passing a wrong answer; PEP 479 turns it into ``RuntimeError`` at a generator's edge,
    and this is one too."""
    found = getattr(builtins, name, None)
    if (
        isinstance(found, type)
        and issubclass(found, Exception)
        and not issubclass(found, (StopIteration, StopAsyncIteration))
    ):
        return found
    return RuntimeError


def _read_task(fd: int) -> list:
    with os.fdopen(fd, "rb") as pipe:
        task = plaindata.decode(pipe.read())
    if type(task) is not list or len(task) != 3 or any(type(x) is not str for x in task):
        sys.exit("checker: the task is not [prelude, test, entry_point]")
    return task


def _set_dumpable(value: int) -> None:
    """``prctl(PR_SET_DUMPABLE, value)``; raises ``OSError`` if the kernel refuses. Through
    ``_ctypes`` itself: the ``ctypes`` package would cost each grade 2 ms of start-up.
    Linux only: macOS has no ``prctl`` (nor ``/proc``); there the sandbox-exec profile,
    which denies by default, allows no process another's task port (``macos.py``, untested
    here like all of macOS)."""
    if not sys.platform.startswith("linux"):
        return
    import _ctypes

    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class Function(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = Int

    # None: this program and its libraries (libc), as ctypes.CDLL(None) does
    program = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type]
    prctl = Function(_ctypes.dlsym(program, "prctl"))
    if prctl(_PR_SET_DUMPABLE, value, 0, 0, 0) != 0:
        raise OSError(_ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def _run_test(task_fd: int, channel: _Channel) -> str:
    """The verdict: ``pass`` or ``fail``, a newline, and why."""
    prelude, test, entry_point = _read_task(task_fd)

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


def _candidate_status(pid: int) -> str:
    """The candidate's exit code (negative: the signal that ended it) once it has ended,
    waiting at most ``_CANDIDATE_EXIT_WAIT_S``; empty if it has not."""
    import time

    deadline = time.monotonic() + _CANDIDATE_EXIT_WAIT_S
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return ""
        if done:
            return str(os.waitstatus_to_exitcode(status))
        if time.monotonic() >= deadline:
            return ""
        time.sleep(0.0005)


def main() -> None:
    """The checker's process, as the sandbox starts it (see the module's docstring)."""
    limits.apply(sys.argv[1])
    task_fd, candidate_task_fd, verdict_fd, out_fd, err_fd = map(int, sys.argv[2:7])
    # its own output files, not bwrap's (the sandbox's pid 1 holds those, within the
    # candidate's reach)
    for own, standard in zip(map(int, sys.argv[7:9]), (1, 2), strict=True):
        os.dup2(own, standard)
        os.close(own)
    import _signal  # not signal: its enums would cost each grade 4 ms of start-up

    # before the fork, so that the checker is never traceable by the candidate nor ended
    # by a signal it could catch; the candidate's process takes back its signals
    _set_dumpable(0)
    unblocked = _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
    to_candidate_r, to_candidate_w = os.pipe()
    from_candidate_r, from_candidate_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, unblocked)
        for fd in (task_fd, verdict_fd, to_candidate_w, from_candidate_r):
            os.close(fd)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.close(out_fd)
        os.close(err_fd)
        harness.serve(candidate_task_fd, to_candidate_r, from_candidate_w, _set_dumpable)
        os._exit(70)  # not reached: serve ends the process
    for fd in (candidate_task_fd, out_fd, err_fd, to_candidate_r, from_candidate_w):
        os.close(fd)
    os.write(verdict_fd, b"ready\n")  # started: the grade can run here
    os.chdir("/")
    channel = _Channel(to_candidate_w, from_candidate_r)
    verdict = _run_test(task_fd, channel)
    channel.close()
    status, _, why = verdict.partition("\n")
    exit_code = _candidate_status(pid)
    # the output first: the sandbox is ended as soon as the verdict is in
    sys.stdout.flush()
    sys.stderr.flush()
    with os.fdopen(verdict_fd, "w") as pipe:
        pipe.write(f"{status}\n{exit_code}\n{why}")
    os._exit(0)  # at once: the interpreter's teardown would only make the grade wait


if __name__ == "__main__":
    main()
