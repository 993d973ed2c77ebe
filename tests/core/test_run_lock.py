"""One process drives a run (issue 18): a second ``train --resume`` of a run that another
process is training is refused at once, changes nothing, and does not mark the live run
failed; the lock dies with its process, so a killed run resumes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.test_training import ROOT, config
from workbench.cli import main
from workbench.core.jobs.shared import RunLocked, effective_status, run_lock
from workbench.core.jobs.train import train
from workbench.core.store import Store
from workbench.core.workspace import Workspace

LONG_RUN = """
import sys
from tests.conftest import build_tiny_lm
from tests.core.test_training import config
from workbench.core.coordinator import Backbone
from workbench.core.jobs.train import train
from workbench.core.workspace import Workspace
model, tok = build_tiny_lm()
train(config(budget={"generations": 400}), Workspace.open(sys.argv[1]),
      backbone=Backbone("tiny", model=model, tokenizer=tok))
"""


def _wait_for_generations(ws: Workspace, count: int, proc: subprocess.Popen) -> str:
    deadline = time.time() + 300
    while time.time() < deadline:
        assert proc.poll() is None, "the training process ended early"
        if ws.db_path.exists():
            with Store.open(ws) as store:
                runs = store.list_runs()
                if runs and len(store.generations(runs[0].id)) >= count:
                    return runs[0].id
        time.sleep(0.2)
    raise AssertionError("the training process made no progress")


def test_a_second_resume_is_refused_and_leaves_the_live_run_alone(
    tmp_path: Path, tiny_backbone, capsys
) -> None:
    ws = Workspace.open(tmp_path / "ws")
    proc = subprocess.Popen([sys.executable, "-c", LONG_RUN, str(ws.root)], cwd=ROOT)
    try:
        run_id = _wait_for_generations(ws, 1, proc)
        with Store.open(ws) as store:
            before = store.get_run(run_id)
        with pytest.raises(RunLocked, match=rf"run {run_id[:8]} is being trained by another"):
            train(config(budget={"generations": 500}), ws, resume=run_id, backbone=tiny_backbone)
        # the CLI's loser: a clear message, exit 2, before any backbone is loaded
        assert main(["train", "--resume", run_id[:8], "--workspace", str(ws.root)]) == 2
        err = capsys.readouterr().err
        assert f"process {proc.pid}" in err and "nothing was changed" in err
        assert "Traceback" not in err
        with Store.open(ws) as store:
            after = store.get_run(run_id)
        assert after.status == "running" and after.error is None
        assert after.config_data == before.config_data  # the loser's budget was not written
        assert effective_status(after) == "running" and proc.poll() is None
        assert _wait_for_generations(ws, 2, proc) == run_id  # it trains on, undisturbed
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # the kernel released the dead process's lock: the run resumes and finishes
    with Store.open(ws) as store:
        generations = len(store.generations(run_id))
    train(
        config(budget={"generations": generations + 1}),
        ws,
        resume=run_id,
        backbone=tiny_backbone,
    )
    with Store.open(ws) as store:
        assert store.get_run(run_id).status == "finished"


def test_the_lock_is_one_holder_at_a_time(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path / "ws")
    with run_lock(ws, "abcd" * 8):
        with pytest.raises(RunLocked), run_lock(ws, "abcd" * 8):
            pass
        with run_lock(ws, "ef01" * 8):  # another run is another lock
            pass
    with run_lock(ws, "abcd" * 8):  # released on exit
        pass
