"""Run a command as an ordinary user (uid and gid 1000) who may mount with FUSE, as on a
desktop: an AppImage run plainly mounts itself through the setuid ``fusermount3``.

A desktop's udev makes ``/dev/fuse`` open to every user (0666); some servers and CI
machines leave it 0600, where no ordinary user can mount. There the command runs in a
private mount namespace whose ``/dev/fuse`` is a 0666 node of the same device, bound over
the machine's: the user's mount then goes through fusermount3 exactly as on a desktop, and
the machine's own ``/dev/fuse`` and mounts are untouched. Needs root (tests run as root in
CI) for setpriv, unshare and mknod.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

DEVICE = Path("/dev/fuse")
USER = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]


def why_not() -> str | None:
    """Why this machine cannot let an ordinary user mount with FUSE (not root, so no
    setpriv; no fuse kernel device), or None when it can. Missing tools are no reason:
    ``command`` fails on them, naming the package."""
    if os.geteuid() != 0:
        return "needs root to run a command as uid 1000 (setpriv)"
    if not DEVICE.exists():
        return "no /dev/fuse (the fuse kernel module)"
    return None


def missing_tools() -> list[str]:
    """What ``command`` needs that is not installed, each with its Debian package."""
    missing = []
    fusermount = shutil.which("fusermount3")
    if fusermount is None or not os.stat(fusermount).st_mode & stat.S_ISUID:
        missing.append("a setuid fusermount3 (fuse3)")
    missing += [
        f"{tool} (util-linux)" for tool in ("setpriv", "unshare", "mount") if not shutil.which(tool)
    ]
    if shutil.which("mknod") is None:
        missing.append("mknod (coreutils)")
    return missing


def command(args: list[str], scratch: Path) -> list[str]:
    """``args`` as uid 1000 with FUSE open to it; ``scratch`` (a folder on a file system
    that allows device nodes, such as /tmp) holds the 0666 node where one is needed."""
    missing = missing_tools()
    assert not missing, (
        f"running as a FUSE user needs {', '.join(missing)}: sudo bash scripts/system-packages.sh --build"
    )
    if DEVICE.stat().st_mode & 0o006 == 0o006:
        return [*USER, *args]
    rdev = DEVICE.stat().st_rdev
    script = (
        f'mknod -m 666 "$0/fuse-device" c {os.major(rdev)} {os.minor(rdev)} '
        '&& mount --bind "$0/fuse-device" /dev/fuse && exec "$@"'
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(scratch)] + [
        *USER,
        *args,
    ]
