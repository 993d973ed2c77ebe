"""A workspace written before the refactor into training/, optimizers/ and typed run data
(main at 2eb83a3, by tests/data's generator below) still opens, resumes and exports.

tests/data/workspace-written-by-main-2eb83a3.sqlite3 holds run 77d3fd02 ("written by
main"): the tiny test backbone routing the sandbox pool, stopped by its budget after 2
generations, with a checkpoint per generation. It was written by that commit's
``jobs.train.train`` with the config in ``CONFIG`` (budget 2 generations, validate every 1).
"""

import shutil
from pathlib import Path

import numpy as np
import pytest

from workbench.core.jobs.export import export_run
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.core.training.checkpoint import best_vector, latest_checkpoint
from workbench.core.workspace import Workspace

DATA = Path(__file__).resolve().parents[1] / "data" / "workspace-written-by-main-2eb83a3.sqlite3"
RUN = "77d3fd02759d4be19adb4ff169978914"


def test_a_run_written_by_main_opens_resumes_and_exports(
    tmp_path, tiny_backbone, tiny_chat_backbone
):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(DATA, root / "workbench.sqlite3")
    ws = Workspace.open(root)
    with Store.open(ws) as store:
        record = store.get_run(RUN)
        config = record.config()
        assert config.run.name == "written by main" and config.budget.generations == 2
        result = record.run_result()
        assert result is not None and result.generations == 2 and result.n_params > 0
        checkpoint = latest_checkpoint(store, RUN)
        assert checkpoint is not None and checkpoint.generation == 1
        assert checkpoint.n_params == result.n_params
        vector, _ = best_vector(store, RUN)
        assert vector.shape == (result.n_params,)

    # a run stored before backbone.input existed read chat-wrapped transcripts, and resumes so
    assert config.backbone.input == "chat"
    with pytest.raises(ValueError, match="reads transcripts as 'raw'"):
        train(config, ws, resume=RUN, backbone=tiny_backbone)
    # extend the budget by one generation and resume: generation 2 follows generation 1
    longer = config.replace(budget={"generations": 3})
    assert train(longer, ws, resume=RUN, backbone=tiny_chat_backbone) == RUN
    with Store.open(ws) as store:
        assert [g["generation"] for g in store.generations(RUN)] == [0, 1, 2]
        stats = store.generation_stats(RUN)
        assert [(s.run_id, s.generation) for s in stats] == [(RUN, 0), (RUN, 1), (RUN, 2)]
        assert all(s.evaluations == 12 and s.validation is not None for s in stats)
        # generations stored before the fp32 recheck counts read as none rechecked
        assert stats[0].rechecks == 0 and stats[0].recheck_note() == ""
        assert store.get_run(RUN).run_result().generations == 3
        resumed = latest_checkpoint(store, RUN)
        assert resumed.generation == 2 and resumed.spend.episodes > checkpoint.spend.episodes

    out = export_run(ws, RUN, tmp_path / "coordinator", backbone=tiny_chat_backbone)
    assert out.exists()
    assert np.isfinite(vector).all()
