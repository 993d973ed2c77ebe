"""MMLU-Pro's official per-model output files for tests and benchmarks: read from
``../shared/data/mmlu-pro/`` beside the checkout when that folder is there, else
downloaded once from the repository at the commit the workbench pins into the user's
cache. Either way each file is checked against the SHA-256 the project keeps
(``workbench.core.importers.download.KNOWN``): a test never runs on another file, and
never skips for want of one. The repository of this project holds none of them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

from workbench.core.importers.download import KNOWN, default_folder, download, file_name

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "mmlu-pro"
# MMLU-Pro's own small-6 pool, the first six models of its README's table
SMALL_SIX = (
    "Meta-Llama-3_1-8B-Instruct",
    "mathstral-7B",
    "Phi-3-mini-4k-instruct",
    "gemma-7b",
    "Mistral-7B-Instruct-v0.2",
    "Qwen1.5-7B-Chat",
)
ALL_NINE = tuple(KNOWN)


def mmlu_pro_file(model: str) -> Path:
    """The official file of ``model`` (one of ``KNOWN``), checked."""
    return _checked(model)


@functools.cache
def _checked(model: str) -> Path:
    path = SHARED / file_name(model)
    if not path.is_file():
        (downloaded,) = download([model], default_folder() / "tests")
        path = downloaded.path
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != KNOWN[model][0]:
        raise AssertionError(
            f"{path} is not MMLU-Pro's published file of {model}: SHA-256 {digest}, the "
            f"project keeps {KNOWN[model][0]}"
        )
    return path


@functools.cache
def records(model: str) -> list[dict[str, Any]]:
    """The JSON list inside ``model``'s file, read here with the standard library alone:
    the outside reference an importer's result is compared with (read once; do not change
    it)."""
    with zipfile.ZipFile(mmlu_pro_file(model)) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith(".json")]
        return json.loads(archive.read(member))
