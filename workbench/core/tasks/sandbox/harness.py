"""The candidate's side of the sandbox: start the untrusted program.

* ``python -I -S harness.py LIMITS run PROGRAM``: run the program as ``__main__`` (a
  stdin/stdout task, ``run_program``). Its first act is to set the resource limits
  ``LIMITS`` on itself (``limits.py``).
* ``serve(...)``: the candidate's process of a HumanEval-style grade, forked by the
  checker (``checker.py``, which set the limits) before the grade arrives. It reads its
  task from a pipe: plain data ``[program, entry]`` up to the end of that pipe. It runs
  the program as a module named ``candidate`` (like the official HumanEval harness, a
  ``__main__`` block does not run), then answers calls of its function ``entry``: each
  request on ``IN_FD`` is one line of plain data (``plaindata``) holding the argument
  list, each reply on ``OUT_FD`` one line holding ``["ok", value]`` or
  ``["raise", exception name, message]``. The checker decides the grade; nothing this
  process writes can do more than answer a call.

This process is as untrusted as the program it runs: it holds no secret and decides
nothing. It imports only the stdlib, and does nothing at import (``main`` runs only when
the sandbox starts the file as a script).
"""

import os
import sys

if __package__:  # imported as part of workbench (a check, a documentation tool)
    from workbench.core.tasks.sandbox import limits, plaindata
else:  # in the sandbox, run by path (or imported by checker.py) under -I -S
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import limits  # type: ignore[no-redef]
    import plaindata  # type: ignore[no-redef]

    del sys.path[0]


def _traceback():
    """The traceback module, imported only when there is one to print: it costs more
    start-up time (tokenize, re, linecache) than everything else here."""
    import traceback

    return traceback


def _load(source: bytes | str, name: str) -> dict:
    try:
        code = compile(source, "program.py", "exec")
    except SyntaxError:
        _traceback().print_exc(limit=0)
        sys.exit(1)
    sys.argv = ["program.py"]
    namespace = {"__name__": name, "__file__": "program.py", "__builtins__": __builtins__}
    try:
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as error:
        # drop the harness's own frames so the traceback starts in the program
        tb = error.__traceback__
        _traceback().print_exception(type(error), error, tb.tb_next if tb else None)
        sys.stderr.flush()
        sys.exit(1)
    return namespace


def _serve(namespace: dict, entry: str, in_fd: int, out_fd: int) -> None:
    function = namespace.get(entry)
    requests = os.fdopen(in_fd, "rb")
    replies = os.fdopen(out_fd, "wb")
    for line in requests:
        try:
            args = plaindata.decode(line)
            if type(args) is not list:
                raise TypeError("the call's arguments are not a list")
            if function is None:
                raise NameError(f"the program defines no function {entry!r}")
            reply = plaindata.encode(["ok", function(*args)])
        except SystemExit:
            raise
        except BaseException as error:
            reply = plaindata.encode(["raise", type(error).__name__, str(error)[:2000]])
            _traceback().print_exception(type(error), error, error.__traceback__)
        replies.write(reply.encode() + b"\n")
        replies.flush()
    # the checker is done: keep what the program printed, skip the interpreter's teardown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have replaced or closed it
            pass
    os._exit(0)


def _read_task(fd: int) -> tuple[str, str]:
    with os.fdopen(fd, "rb") as pipe:
        task = plaindata.decode(pipe.read())
    if type(task) is not list or len(task) != 2 or any(type(x) is not str for x in task):
        sys.exit("harness: the task is not [program, entry]")
    return task[0], task[1]


def _exit_code(exit: SystemExit) -> int:
    """The exit status the interpreter would give ``exit`` (its message goes to stderr)."""
    code = exit.code
    if code is None:
        return 0
    if type(code) is int:
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:  # noqa: BLE001 - the program may have replaced stderr
        pass
    return 1


def serve(task_fd: int, in_fd: int, out_fd: int, set_dumpable) -> None:
    """The candidate's process (forked by the checker): wait for the task, run the
    program, answer the checker's calls; never returns (the process ends here)."""
    code = 1
    try:
        set_dumpable(1)  # its own /proc/self stays readable to it, as in a fresh process
        program, entry = _read_task(task_fd)
        _serve(_load(program, "candidate"), entry, in_fd, out_fd)
    except SystemExit as exit:
        code = _exit_code(exit)
    except BaseException:  # noqa: BLE001 - anything else ends it as the interpreter would
        try:
            _traceback().print_exc()
        except BaseException:  # noqa: BLE001
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have replaced or closed it
            pass
    os._exit(code)


def main() -> None:
    """``python -I -S harness.py LIMITS run PROGRAM``: set the limits, run the program."""
    limits.apply(sys.argv[1])
    mode = sys.argv[2]
    if mode == "run":
        with open(sys.argv[3], "rb") as f:
            _load(f.read(), "__main__")
    else:
        sys.exit(f"harness: unknown mode {mode!r}")


if __name__ == "__main__":
    main()
