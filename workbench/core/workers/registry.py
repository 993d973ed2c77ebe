"""Registered workers: their specs in a TOML file, their keys in the OS keychain.

Specs live in one file per user, ``workers.toml`` in the user config directory
(``platformdirs.user_config_dir("trinity-workbench")``, e.g.
``~/.config/trinity-workbench/workers.toml`` on Linux). Workers are per user, not per
workspace: a registered worker can be named in every workspace, and ``--workspace`` never
changes which workers exist. The file is written atomically and never holds a key.

Keys live in the OS keychain (``workbench.core.keychain``), one entry per worker id. An
environment variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``,
``OPENROUTER_API_KEY``, ..., or the spec's ``key_env``) is the documented fallback, read
at call time and never stored. Turning a spec into a worker object is
``workbench.core.workers.pool.worker_for``: the registry knows no provider classes.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path

import platformdirs
import tomli_w

from workbench.core.errors import FileEncodingError, read_text
from workbench.core.keychain import KeychainUnavailable, KeyStatus, KeyStore, Secret
from workbench.core.workers.base import UnknownWorker
from workbench.core.workers.spec import RegistryError, SpecError, WorkerSpec, validate_worker_id

FILE_NAME = "workers.toml"
FORMAT_VERSION = 1


def default_file() -> Path:
    """``workers.toml`` in the user config directory."""
    return Path(platformdirs.user_config_dir("trinity-workbench")) / FILE_NAME


class Registry:
    """The registered workers of ``path`` (default: the user's workers.toml) and their keys.

    Every change rewrites the file atomically (a temporary file in the same folder, then
    ``os.replace``); the file is re-read on each operation, so two processes see each
    other's changes.
    """

    def __init__(self, path: str | Path | None = None, *, keys: KeyStore | None = None):
        self.path = Path(path) if path is not None else default_file()
        self.keys = keys or KeyStore()

    @classmethod
    def open(cls, path: str | Path | None = None, *, keys: KeyStore | None = None) -> Registry:
        return cls(path, keys=keys)

    # ------------------------------------------------------------- reading

    def _read(self) -> dict[str, WorkerSpec]:
        if not self.path.exists():
            return {}
        try:
            # utf-8-sig: a file saved with a byte order mark (Windows Notepad) still reads
            doc = tomllib.loads(read_text("worker registry", self.path))
        except FileEncodingError as exc:
            raise RegistryError(f"{exc}; or move it away and add the workers again") from None
        except OSError as exc:
            raise RegistryError(f"cannot read worker registry {self.path}: {exc}") from None
        except RecursionError:
            raise RegistryError(
                f"worker registry {self.path} nests tables or arrays too deeply: fix the file "
                "or move it away and add the workers again"
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(
                f"worker registry {self.path} is not valid TOML ({exc}): fix the file or move "
                "it away and add the workers again"
            ) from None
        unknown = sorted(set(doc) - {"version", "workers"})
        if unknown:
            raise RegistryError(
                f"worker registry {self.path}: unknown top-level key(s) {', '.join(unknown)} "
                "(expected 'version' and [workers.ID] tables)"
            )
        version = doc.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise RegistryError(
                f"worker registry {self.path} has version {version!r}; this workbench reads "
                f"version {FORMAT_VERSION}: upgrade trinity-workbench"
            )
        workers = doc.get("workers", {})
        if not isinstance(workers, dict):
            raise RegistryError(
                f"worker registry {self.path}: 'workers' must be tables [workers.ID]"
            )
        specs = {}
        for wid, table in workers.items():
            try:
                specs[wid] = WorkerSpec.from_toml(wid, table)
            except (SpecError, TypeError) as exc:
                raise RegistryError(f"worker registry {self.path}: {exc}") from None
        return specs

    def list(self) -> list[WorkerSpec]:
        """The registered workers, in the file's order."""
        return list(self._read().values())

    def find(self, worker_id: str) -> WorkerSpec | None:
        return self._read().get(worker_id)

    def get(self, worker_id: str) -> WorkerSpec:
        spec = self.find(worker_id)
        if spec is None:
            ids = ", ".join(self._read()) or "none yet"
            raise UnknownWorker(
                f"no registered worker '{worker_id}' (registered: {ids}): add it with "
                f"trinity-workbench workers add {worker_id} --provider P --model M"
            )
        return spec

    # ------------------------------------------------------------- writing

    def _write(self, specs: Mapping[str, WorkerSpec]) -> None:
        doc = {"version": FORMAT_VERSION, "workers": {wid: s.to_toml() for wid, s in specs.items()}}
        text = (
            "# Trinity Workbench workers. Keys are never stored here: they live in the OS keychain\n"
            "# (service 'trinity-workbench'); see trinity-workbench workers set-key.\n"
            + tomli_w.dumps(doc)
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".workers-", suffix=".toml.tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def add(self, spec: WorkerSpec, *, key: str | None = None, replace: bool = False) -> WorkerSpec:
        """Register ``spec`` (and store ``key`` in the keychain). With a key and no secure
        keychain nothing is written. ``replace`` updates an existing worker (its key stays
        unless a new one is given)."""
        specs = self._read()
        if spec.id in specs and not replace:
            raise RegistryError(
                f"worker '{spec.id}' is already registered: remove it first, rename it, "
                "or pass --replace to update it"
            )
        if key is not None:
            self.keys.set(spec.id, Secret(key).reveal(), spec.effective_key_env)
        specs[spec.id] = spec
        try:
            self._write(specs)
        except BaseException:
            if key is not None and not replace:
                self.keys.delete(spec.id)
            raise
        return spec

    def set_key(self, worker_id: str, key: str) -> None:
        """Store (or replace) the key of a registered worker in the keychain."""
        spec = self.get(worker_id)
        self.keys.set(worker_id, Secret(key).reveal(), spec.effective_key_env)

    def remove(self, worker_id: str) -> bool:
        """Unregister a worker and delete its key from the keychain. Returns whether a key
        was deleted. With no keychain backend the spec is still removed (no key can be
        stored there anyway)."""
        specs = self._read()
        if worker_id not in specs:
            self.get(worker_id)  # raises with the list of ids
        del specs[worker_id]
        self._write(specs)
        try:
            return self.keys.delete(worker_id)
        except KeychainUnavailable:
            return False

    def rename(self, old: str, new: str) -> WorkerSpec:
        """Give a worker a new id; its key moves with it."""
        validate_worker_id(new)
        specs = self._read()
        spec = specs.get(old) or self.get(old)
        if new in specs:
            raise RegistryError(f"cannot rename '{old}' to '{new}': '{new}' is already registered")
        try:
            key = self.keys.get(old)
        except KeychainUnavailable:
            key = None
        if key is not None:
            self.keys.set(new, key, spec.effective_key_env)
        renamed = {
            (new if wid == old else wid): (s.renamed(new) if wid == old else s)
            for wid, s in specs.items()
        }
        try:
            self._write(renamed)
        except BaseException:
            if key is not None:
                self.keys.delete(new)
            raise
        if key is not None:
            self.keys.delete(old)
        return renamed[new]

    # ------------------------------------------------------------- keys

    def key_status(self, spec: WorkerSpec) -> KeyStatus:
        env = spec.effective_key_env
        if spec.provider == "local":
            return KeyStatus("not needed")
        note = None
        try:
            if self.keys.get(spec.id, env) is not None:
                return KeyStatus("keychain", env)
        except KeychainUnavailable:
            note = "no keyring backend"
        if env and os.environ.get(env, "").strip():
            return KeyStatus("environment", env, note)
        return KeyStatus("missing", env, note)

    def resolve_key(self, spec: WorkerSpec) -> tuple[Secret | None, KeyStatus]:
        """The key for a call (keychain first, then the environment) and where it came
        from. A missing key is not an error here: local servers need none, and a server
        that does answers 401, which the worker explains."""
        env = spec.effective_key_env
        if spec.provider == "local":
            return None, KeyStatus("not needed")
        note = None
        try:
            value = self.keys.get(spec.id, env)
            if value:
                return Secret(value), KeyStatus("keychain", env)
        except KeychainUnavailable:
            note = "no keyring backend"
        value = os.environ.get(env, "") if env else ""
        if value.strip():
            return Secret(value), KeyStatus("environment", env, note)
        return None, KeyStatus("missing", env, note)


class FixedRegistry(Registry):
    """Registered workers given as specs, with no file: a Ray actor's registry, the
    driver's specs as they were when the run started (``pool.registered_specs``). Keys
    are resolved like any registry's, from this machine's keychain or environment.
    Read-only."""

    def __init__(self, specs: Mapping[str, WorkerSpec], *, keys: KeyStore | None = None):
        super().__init__(os.devnull, keys=keys)
        self._specs = dict(specs)

    def _read(self) -> dict[str, WorkerSpec]:
        return dict(self._specs)

    def _write(self, specs: Mapping[str, WorkerSpec]) -> None:
        raise RegistryError("a run's fixed worker registry cannot be changed")
