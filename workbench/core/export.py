"""The coordinator file: a trained coordinator for use elsewhere.

One ``.safetensors`` file: the head weights (``head``, shape ``(L + 3, d)``) and, when SVF
was trained, its offsets (``svf``), in float64 so that decisions after loading are
identical; the JSON manifest (backbone, feature, pool, roles, max turns, training run
and figures) lives in the file's metadata under ``manifest``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.coordinator import Backbone, Coordinator, Head, HeadConfig
from workbench.core.records import ROLES

FORMAT = "trinity-workbench/coordinator"
VERSION = 1
FEATURE = {
    "layer": "final",
    "token": "penultimate",
    "normalisation": "unit-rms",
    "input": "transcript as one user message in the backbone's chat template",
}


class CoordinatorFileError(ValueError):
    """A coordinator file that cannot be used; the message names the file and the fix."""


def save_coordinator(
    path: str | Path,
    coordinator: Coordinator,
    *,
    pool: list[dict[str, str]],
    backbone_source: str,
    max_turns: int,
    training: dict[str, Any],
) -> Path:
    """Write ``coordinator`` with its manifest; returns the path."""
    from safetensors.numpy import save_file

    path = Path(path)
    if path.suffix != ".safetensors":
        path = (
            path.with_suffix(path.suffix + ".safetensors")
            if path.suffix
            else path.with_suffix(".safetensors")
        )
    backbone = coordinator.backbone
    tensors = {"head": np.ascontiguousarray(coordinator.head.weights, dtype=np.float64)}
    svf = None
    if coordinator.svf_delta is not None:
        tensors["svf"] = np.ascontiguousarray(coordinator.svf_delta, dtype=np.float64)
        svf = {"layer": backbone.svf_layer, "n": int(coordinator.svf_delta.shape[0])}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "backbone": {
            "model": backbone_source,
            "id": backbone.id,
            "hidden_size": backbone.hidden_size,
            "revision": getattr(backbone.model.config, "_commit_hash", None),
        },
        "feature": FEATURE,
        "pool": pool,
        "roles": [str(r) for r in ROLES],
        "max_turns": max_turns,
        "svf": svf,
        "training": training,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    save_file(tensors, str(tmp), metadata={"manifest": json.dumps(manifest)})
    tmp.replace(path)
    return path


def read_manifest(path: str | Path) -> dict[str, Any]:
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise CoordinatorFileError(f"coordinator file {path} not found")
    try:
        with safe_open(str(path), framework="numpy") as f:
            metadata = f.metadata() or {}
    except Exception as exc:
        raise CoordinatorFileError(
            f"{path} is not a coordinator file (not safetensors: {exc})"
        ) from exc
    try:
        manifest = json.loads(metadata["manifest"])
    except (KeyError, json.JSONDecodeError):
        raise CoordinatorFileError(
            f"{path} has no coordinator manifest: export it with "
            "trinity-workbench export RUN --out FILE"
        ) from None
    if manifest.get("format") != FORMAT:
        raise CoordinatorFileError(
            f"{path} is not a coordinator file (format {manifest.get('format')!r})"
        )
    if manifest.get("version", 0) > VERSION:
        raise CoordinatorFileError(
            f"{path} was written by a newer version (format version "
            f"{manifest['version']}): upgrade trinity-workbench"
        )
    return manifest


def load_coordinator(
    path: str | Path, backbone: Backbone | None = None, device: str = "auto"
) -> tuple[Coordinator, dict]:
    """Load a coordinator file; the backbone is loaded from the manifest unless given."""
    from safetensors.numpy import load_file

    manifest = read_manifest(path)
    tensors = load_file(str(path))
    if backbone is None:
        backbone = Backbone(
            manifest["backbone"]["model"],
            device=device,
            svf_layer=(manifest.get("svf") or {}).get("layer", -2),
        )
    head_weights = tensors["head"]
    n_workers = len(manifest["pool"])
    if backbone.hidden_size != manifest["backbone"]["hidden_size"] or head_weights.shape != (
        n_workers + 3,
        backbone.hidden_size,
    ):
        raise CoordinatorFileError(
            f"{path} was trained on a backbone of hidden size {manifest['backbone']['hidden_size']} "
            f"({manifest['backbone']['model']}); the given backbone has {backbone.hidden_size}"
        )
    head = Head(HeadConfig(n_workers, backbone.hidden_size), head_weights)
    return Coordinator(backbone, head, tensors.get("svf")), manifest
