"""The coordinator file: a trained coordinator for use elsewhere.

One ``.safetensors`` file: the head weights (``head``, shape ``(L + 3, d)``) and, when SVF
was trained, its offsets (``svf``), in float64 so that decisions after loading are
identical; the JSON manifest (backbone, feature, pool, roles, max turns, training run
and figures) lives in the file's metadata under ``manifest``.

Where it goes (``resolve_out``, after ``outputs.output_path``): a path to an existing
folder, or one ending in ``/``, means "inside that folder" under the default name; any
other path is the file itself, ``.safetensors`` appended when it has another suffix. Only
a regular file is ever written or replaced, and atomically (``outputs.write_atomically``),
so a failed export leaves nothing behind and never a half-written coordinator file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.coordinator import Backbone, Coordinator, Head, HeadConfig
from workbench.core.coordinator.backbone import INPUTS
from workbench.core.errors import BadInput
from workbench.core.outputs import OutputError, output_path, write_atomically
from workbench.core.records import ROLES

FORMAT = "trinity-workbench/coordinator"
# 2: the manifest's training.best_validation_generation counts from 1, as its
# training.generations (a count) and the GUI do; version 1 files counted it from 0. They
# are still read: nothing a load uses changed, and that field is only shown, never used.
VERSION = 2
FEATURE = {"layer": "final", "token": "penultimate", "normalisation": "unit-rms"}
# "input" (the backbone's, ``backbone.INPUTS``); files written before it was a choice
# describe the chat template in words and are read as "chat"


class CoordinatorFileError(BadInput, ValueError):
    """A coordinator file that cannot be used or written; the message names the file and
    the fix."""


def resolve_out(out: str | os.PathLike[str], default_name: str = "coordinator") -> Path:
    """The coordinator file that ``--out out`` names (see the module's docstring); raises
    ``CoordinatorFileError`` for a place that is not a regular file, before any work."""
    try:
        return output_path(out, f"{default_name}.safetensors", suffix=".safetensors")
    except OutputError as error:
        raise CoordinatorFileError(f"coordinator file: {error}") from None


def save_coordinator(
    path: str | Path,
    coordinator: Coordinator,
    *,
    pool: list[dict[str, str]],
    backbone_source: str,
    max_turns: int,
    training: dict[str, Any],
    default_name: str = "coordinator",
) -> Path:
    """Write ``coordinator`` with its manifest to the file ``path`` names (``resolve_out``;
    ``default_name`` inside a folder), atomically; returns the file's path. Raises
    ``CoordinatorFileError`` with the reason if it cannot be written (nothing is left)."""
    from safetensors import SafetensorError  # failed writes are reported as this
    from safetensors.numpy import save_file

    path = resolve_out(path, default_name)
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
        "feature": {**FEATURE, "input": backbone.input},
        "pool": pool,
        "roles": [str(r) for r in ROLES],
        "max_turns": max_turns,
        "svf": svf,
        "training": training,
    }

    def write(temporary: str) -> None:
        try:
            save_file(tensors, temporary, metadata={"manifest": json.dumps(manifest)})
        except SafetensorError as error:  # safetensors' own error for failed writes
            raise OSError(str(error)) from error
        try:  # read back: a short write (a full disk) fails here
            read_manifest(temporary)
        except CoordinatorFileError as error:
            raise OSError(f"the written file does not read back ({error})") from error

    try:
        write_atomically(path, write)
    except OutputError as error:
        raise CoordinatorFileError(f"coordinator file: {error}") from None
    return path


def read_manifest(path: str | Path) -> dict[str, Any]:
    from safetensors import safe_open

    path = Path(path)
    if path.is_dir():
        raise CoordinatorFileError(
            f"coordinator file {path} is a folder: give the .safetensors file that "
            "trinity-workbench export wrote (coordinator-RUNID.safetensors inside it?)"
        )
    if path.exists() and not path.is_file():
        raise CoordinatorFileError(
            f"coordinator file {path} is not a regular file (a device or a pipe): give the "
            ".safetensors file that trinity-workbench export wrote"
        )
    if not path.is_file():
        raise CoordinatorFileError(f"coordinator file {path} not found: check the path")
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


def feature_input(manifest: dict[str, Any]) -> str:
    """What the coordinator of ``manifest`` reads: "raw" or "chat" (``Backbone.input``)."""
    given = (manifest.get("feature") or {}).get("input")
    return given if given in INPUTS else "chat"


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
            input=feature_input(manifest),
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
    if backbone.input != feature_input(manifest):
        raise CoordinatorFileError(
            f"{path} was trained on {feature_input(manifest)} input; the given backbone reads "
            f"{backbone.input} input: load it with Backbone(..., input="
            f"'{feature_input(manifest)}') or without a backbone"
        )
    head = Head(HeadConfig(n_workers, backbone.hidden_size), head_weights)
    return Coordinator(backbone, head, tensors.get("svf")), manifest
