"""CHAMP's data file for the bundle, without the part the app never reads.

The ``champ-dataset`` package's v0.json (70 MB) is 97% the paper's recorded model
conversations; the workbench's CHAMP suite (workbench/core/tasks/suites.py) takes each
problem's text, answer, category and solution only. The bundle carries a copy with the
conversations emptied (1.5 MB) at the same place, so ``champ_dataset.load("v0")`` reads it
unchanged (tests/packaging/test_packaging.py checks the suite is the same).
"""

from __future__ import annotations

import json
from pathlib import Path


def write_slim_champ(target: Path) -> Path:
    import champ_dataset

    source = Path(champ_dataset.__file__).parent / "dataset_files" / "v0.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    for problem in data["problems"].values():
        problem["conversations"] = {}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data), encoding="utf-8")
    return target
