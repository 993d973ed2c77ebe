"""Pools: worker ids (built-in ones and those registered in ``workers.toml``) turned into
worker objects, in head order.

``build_pool`` expands ``sandbox`` to the whole built-in sandbox pool, resolves
``local:...`` and ``sandbox:...`` ids through the built-in providers, and builds
registered workers from their specs (``worker_for``) with their keys resolved now.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from workbench.core.keychain import KeyStatus, Secret, clean_key
from workbench.core.workers.base import UnknownWorker, Worker
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import BUILTIN_RESOLVERS, PROVIDER_CLASSES, WorkerSpec

if TYPE_CHECKING:
    import httpx

    from workbench.core.workers.recorded import RecordedPool
    from workbench.core.workspace import Workspace


def builtin_prefixes() -> list[str]:
    """The id prefixes of built-in workers (``local``, ``recorded``, ``sandbox``, ``team``)."""
    return sorted(BUILTIN_RESOLVERS)


def _imported(path: str) -> Any:
    """The object a table's ``module:name`` path names, its module imported now (the heavy
    imports happen inside the classes)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def provider_class(provider: str) -> type[Worker]:
    """The Worker subclass of ``provider`` (a name of ``spec.PROVIDER_CLASSES``)."""
    cls: type[Worker] = _imported(PROVIDER_CLASSES[provider])
    return cls


@dataclass(frozen=True)
class BuiltinWorker:
    """A worker that needs no registration, as listings show it (nothing is loaded)."""

    id: str
    provider: str
    model: str  # what answers, in words


def builtin_workers() -> list[BuiltinWorker]:
    """The built-in workers a pool can name without registering anything: the offline
    local model and each sandbox profile (``local:SOURCE`` names any other local model)."""
    from workbench.core.workers.local import SMOLLM2_ID
    from workbench.core.workers.simulated import PROFILES_BY_ID

    return [
        BuiltinWorker(SMOLLM2_ID, "local", "SmolLM2-135M-Instruct (offline, GGUF)"),
        *(
            BuiltinWorker(wid, "sandbox", f"simulated/{p.name} (a simulation)")
            for wid, p in PROFILES_BY_ID.items()
        ),
    ]


def build_pool(
    worker_ids: Sequence[str],
    *,
    registry: Registry | None = None,
    client: httpx.AsyncClient | None = None,
    workspace: Workspace | None = None,
    recorded: Mapping[str, RecordedPool] | None = None,
) -> list[Worker]:
    """Turn worker ids into workers, in order: built-in ids (``local:smollm2``,
    ``local:SOURCE``, ``sandbox``, ``sandbox:<name>``) and ids registered with
    ``trinity-workbench workers add`` (``registry``, default: the user's workers.toml).
    ``sandbox`` expands to the whole built-in sandbox pool; ``recorded:NAME`` to every
    worker of a recorded pool (``recorded:champ`` built in, others imported into
    ``workspace`` with ``trinity-workbench records import``).

    ``client`` is the run's shared ``httpx.AsyncClient`` (see
    ``workbench.core.workers.transport.open_client``); workers built without one open their
    own on first use and close it in ``aclose()``. ``recorded``: imported recorded pools
    read elsewhere, by name (a Ray actor's, which has no workspace), used before
    ``workspace``'s.
    """
    registry = registry or _registry_if_needed(worker_ids)
    pool = [
        w if isinstance(w, Worker) else worker_for(registry, w, client=client)
        for w in _expand(worker_ids, registry, workspace, recorded)
    ]
    share_secrets(pool)
    return pool


def registered_specs(worker_ids: Sequence[str]) -> dict[str, WorkerSpec]:
    """The specs of the registered workers among ``worker_ids`` (none for built-in ones,
    which are not built here), as ``build_pool`` would read them: what a Ray actor builds
    the same pool from. Specs hold no key."""
    registered = [w for w in worker_ids if w.strip().split(":", 1)[0] not in BUILTIN_RESOLVERS]
    if not registered:
        return {}
    return {w.id: w for w in _expand(registered, Registry.open()) if isinstance(w, WorkerSpec)}


def share_secrets(pool: Sequence[Worker]) -> None:
    """Give every worker of ``pool`` the keys of all of them to mask: a reply or error of
    one worker that echoes another's key (two endpoints of one account, a proxy that
    reflects headers) is masked like an echo of its own."""
    keys: list[Secret] = []
    for worker in pool:
        keys += [s for s in worker.secrets if all(s is not k for k in keys)]
    for worker in pool:
        own = list(worker.secrets)
        worker.secrets = (*own, *(k for k in keys if all(k is not o for o in own)))


def describe_pool(
    worker_ids: Sequence[str],
    *,
    registry: Registry | None = None,
    workspace: Workspace | None = None,
) -> list[tuple[str, str]]:
    """(id, model) of each worker ``worker_ids`` names, in head order, as ``build_pool``
    would build them but without building registered workers: no key is read (listing
    a pool must not touch the keychain)."""
    return [
        (w.id, w.model)
        for w in _expand(worker_ids, registry or _registry_if_needed(worker_ids), workspace)
    ]


def _registry_if_needed(worker_ids: Sequence[str]) -> Registry | None:
    if all(wid.strip().split(":", 1)[0] in BUILTIN_RESOLVERS for wid in worker_ids):
        return None
    return Registry.open()


def _expand(
    worker_ids: Sequence[str],
    registry: Registry | None,
    workspace: Workspace | None = None,
    recorded: Mapping[str, RecordedPool] | None = None,
) -> list[Worker | WorkerSpec]:
    """Built-in workers (cheap: nothing loads until a call) and registered specs, in order."""
    pool: list[Worker | WorkerSpec] = []
    for wid in worker_ids:
        wid = wid.strip()
        prefix = wid.split(":", 1)[0]
        if prefix == "recorded" and recorded:
            from workbench.core.workers.recorded import resolve

            pool.extend(resolve(wid, workspace, recorded))
            continue
        if prefix in BUILTIN_RESOLVERS:
            pool.extend(_imported(BUILTIN_RESOLVERS[prefix])(wid, workspace))
            continue
        spec = registry.find(wid) if registry is not None else None
        if spec is None:
            known = ", ".join(
                f"{p}:..." if p != "sandbox" else "sandbox, sandbox:..." for p in builtin_prefixes()
            )
            registered = ", ".join(w.id for w in registry.list()) if registry is not None else ""
            raise UnknownWorker(
                f"unknown worker '{wid}': built-in workers are {known}; registered workers: "
                f"{registered or 'none yet'} (list them with trinity-workbench workers list, add one with "
                "trinity-workbench workers add)"
            )
        pool.append(spec)
    ids = [w.id for w in pool]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(
            f"pool names worker(s) {', '.join(dupes)} twice: each worker may appear once"
        )
    if not pool:
        raise ValueError("empty pool: name at least one worker, e.g. --pool sandbox")
    return pool


def worker_for(
    registry: Registry | None,
    spec: WorkerSpec,
    *,
    key: str | None = None,
    client: httpx.AsyncClient | None = None,
) -> Worker:
    """The worker object for ``spec``, registered or not (a spec still being edited).
    ``key`` is a key entered but not stored yet; without one the key is resolved now from
    ``registry``'s keychain, then the environment (default registry: the user's)."""
    if spec.provider == "local":
        from workbench.core.workers.local import LocalWorker

        return LocalWorker(spec.id, spec.model, price_in=spec.price_in, price_out=spec.price_out)
    status: KeyStatus
    secret: Secret | None
    if key is not None:
        secret = Secret(clean_key(spec.id, key))
        status = KeyStatus("entered", spec.effective_key_env)
    else:
        registry = registry or Registry.open()
        secret, status = registry.resolve_key(spec)
    # the providers take the spec and the key (Worker subclasses with their own __init__)
    provider = cast(Callable[..., Worker], provider_class(spec.provider))
    return provider(spec, key=secret, key_status=status, client=client)
