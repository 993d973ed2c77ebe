"""A real Secret Service keyring for tests: a private D-Bus session bus and an unlocked
gnome-keyring-daemon on it, started by the tests and stopped by their pids.

Nothing touches the user's own keyring: the bus is new, and the daemon keeps its
keyrings under a temporary HOME.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PASSWORD = "workbench-test-keyring"  # the test keyring's unlock password, not an API key


@dataclass
class SecretService:
    address: str  # DBUS_SESSION_BUS_ADDRESS of the private bus
    home: Path
    pids: list[int] = field(default_factory=list)
    _procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """Environment variables that point keyring (and subprocesses) at this bus."""
        return {"DBUS_SESSION_BUS_ADDRESS": self.address}

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(10)


def _require(command: str) -> str:
    path = shutil.which(command)
    if path is None:
        raise RuntimeError(
            f"`{command}` is missing: install the system packages with "
            "`apt-get install -y dbus gnome-keyring` (.ci/run does)"
        )
    return path


def start_secret_service(home: Path, timeout_s: float = 30.0, attempts: int = 2) -> SecretService:
    """A private bus with an unlocked gnome-keyring-daemon on it. A daemon that has not
    registered within ``timeout_s`` is stopped and started afresh, up to ``attempts``
    times; the error then quotes the daemon's own log and the last check's failure."""
    failures = []
    for attempt in range(attempts):
        try:
            return _start_once(home / f"attempt-{attempt}", timeout_s)
        except RuntimeError as exc:
            failures.append(str(exc))
    raise RuntimeError("; then ".join(failures))


def _start_once(home: Path, timeout_s: float) -> SecretService:
    home.mkdir(parents=True, exist_ok=True)
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    bus = subprocess.Popen(
        [_require("dbus-daemon"), "--session", "--nofork", "--nopidfile", "--print-address=1"],
        stderr=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    address = bus.stdout.readline().strip()
    if not address:
        bus.kill()
        raise RuntimeError("dbus-daemon printed no bus address")
    service = SecretService(address, home, [bus.pid], [bus])
    env = {
        **os.environ,
        "DBUS_SESSION_BUS_ADDRESS": address,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    log_path = home / "gnome-keyring-daemon.log"
    with log_path.open("wb") as log_file:
        daemon = subprocess.Popen(
            [_require("gnome-keyring-daemon"), "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
    daemon.stdin.write(PASSWORD.encode())
    daemon.stdin.close()
    service.pids.append(daemon.pid)
    service._procs.append(daemon)
    deadline = time.monotonic() + timeout_s
    why = "not checked"
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            service.stop()
            raise RuntimeError(
                f"gnome-keyring-daemon exited with {daemon.returncode}: {_tail(log_path)}"
            )
        why = _unready(address)
        if why is None:
            return service
        time.sleep(0.1)
    service.stop()
    raise RuntimeError(
        f"the Secret Service did not come up on {address} within {timeout_s:.0f} s (last "
        f"check: {why}; the daemon's log: {_tail(log_path)})"
    )


def _tail(path: Path, chars: int = 600) -> str:
    text = path.read_text(errors="replace").strip() if path.exists() else ""
    return repr(text[-chars:]) if text else "empty"


def _unready(address: str) -> str | None:
    """None when the Secret Service on ``address`` answers with an unlocked default
    collection; else why not (not up yet: the name not owned, the collection not made)."""
    import secretstorage
    from jeepney.io.blocking import open_dbus_connection

    try:
        with open_dbus_connection(bus=address) as conn:
            if not secretstorage.check_service_availability(conn):
                return "the org.freedesktop.secrets name is not owned"
            if secretstorage.get_default_collection(conn).is_locked():
                return "the default collection is locked"
            return None
    except Exception as exc:  # noqa: BLE001 - reported in the timeout's message
        return f"{type(exc).__name__}: {exc}"


def clear_service(address: str, service: str) -> int:
    """Delete every item of ``service`` on the bus (between tests); how many were deleted."""
    import secretstorage
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(bus=address) as conn:
        collection = secretstorage.get_default_collection(conn)
        items = list(collection.search_items({"service": service}))
        for item in items:
            item.delete()
        return len(items)


def stored_items(address: str, service: str) -> dict[str, str]:
    """{username: secret} of ``service`` on the bus, read directly over D-Bus."""
    import secretstorage
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(bus=address) as conn:
        collection = secretstorage.get_default_collection(conn)
        return {
            item.get_attributes().get("username", ""): item.get_secret().decode()
            for item in collection.search_items({"service": service})
        }
