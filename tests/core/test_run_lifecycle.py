"""One run lifecycle for every job (``store/lifecycle.py``): a run starts naming its
process, ends once, and whatever ends it (its result, an error, a stop, Ctrl-C) leaves the
same record: status from the reason, the error's sentence, the spend and the end time.
On a real SQLite file, with the real trainer, evaluation and headroom check."""

import asyncio
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.core.test_training import config
from tests.support.runs import ended_as
from workbench.core.errors import WorkFailed
from workbench.core.evaluate import EvaluationStopped
from workbench.core.jobs.evaluate import evaluate_run
from workbench.core.jobs.headroom import check_headroom
from workbench.core.jobs.shared import effective_status
from workbench.core.jobs.train import train
from workbench.core.records import RunStatus, RunStopReason, Spend
from workbench.core.store import Store
from workbench.core.store.lifecycle import RunLife, status_for
from workbench.core.training.events import EpisodeDone, Stopped, StopToken
from workbench.core.workspace import Workspace


@pytest.fixture()
def ws(tmp_path):
    return Workspace.open(tmp_path / "ws")


def started(store: Store, kind: str = "eval") -> RunLife:
    life = RunLife.create(store, f"a {kind}", kind, {"k": 1})
    life.start({"figure": 1})
    return life


def test_a_running_run_names_its_process_and_a_finished_one_its_spend_and_end(ws):
    with Store.open(ws) as store:
        life = started(store)
        running = store.get_run(life.run_id)
        assert running.status is RunStatus.RUNNING and running.result["figure"] == 1
        assert isinstance(running.result["pid"], int) and running.result["host"]
        status = life.end(
            RunStopReason.DONE,
            {"report": "r"},
            spend=Spend(episodes=3, calls=5, dollars=0.25, seconds=90),
        )
        record = store.get_run(life.run_id)
    assert status is RunStatus.FINISHED
    assert (record.status, record.stop_reason, record.error) == ("finished", "done", None)
    assert ended_as(record.result) == {"report": "r"}
    assert record.result["spend"] == {"episodes": 3, "calls": 5, "dollars": 0.25, "minutes": 1.5}


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        (RunStopReason.DONE, "finished"),
        (RunStopReason.GENERATIONS, "finished"),
        (RunStopReason.SHUTDOWN, "finished"),
        (RunStopReason.STOPPED, "stopped"),
        (RunStopReason.ERROR, "failed"),
    ],
)
def test_the_status_follows_from_the_reason(reason, status):
    assert status_for(reason) == status


def test_an_error_fails_the_run_with_its_sentence_and_goes_on_to_the_caller(ws):
    with Store.open(ws) as store:
        life = started(store)
        with pytest.raises(WorkFailed, match="the grader broke"), life:
            raise WorkFailed("the grader broke")
        record = store.get_run(life.run_id)
    assert (record.status, record.stop_reason) == ("failed", "error")
    assert record.error == "WorkFailed: the grader broke"
    # the figures written last are kept, with the minutes it ran and its end
    assert ended_as(record.result) == {"figure": 1}
    assert set(record.result["spend"]) == {"minutes"}


@pytest.mark.parametrize(
    "stop",
    [
        Stopped("stop pressed"),
        EvaluationStopped("stop pressed"),
        asyncio.CancelledError(),
        KeyboardInterrupt(),
    ],
    ids=["stop-token", "evaluation-stop", "cancelled", "ctrl-c"],
)
def test_a_stop_cancel_or_ctrl_c_ends_the_run_stopped_never_running(ws, stop):
    with Store.open(ws) as store:
        life = started(store)
        with pytest.raises(type(stop)), life:
            raise stop
        record = store.get_run(life.run_id)
    assert (record.status, record.stop_reason, record.error) == ("stopped", "stopped", None)
    assert ended_as(record.result) == {"figure": 1}


def test_a_run_ends_once_and_a_job_that_forgets_to_end_it_fails_it(ws):
    with Store.open(ws) as store:
        life = started(store)
        life.end()
        with pytest.raises(RuntimeError, match="already ended"):
            life.end(RunStopReason.STOPPED)
        assert store.get_run(life.run_id).status == "finished"
        forgotten = started(store)
        with pytest.raises(RuntimeError, match="without ending"), forgotten:
            pass
        assert store.get_run(forgotten.run_id).status == "failed"


def test_a_job_of_runs_spends_what_its_runs_spent(ws):
    with Store.open(ws) as store:
        children = []
        for dollars in (0.5, 0.25):
            child = started(store, "train")
            child.end(spend=Spend(episodes=2, calls=4, dollars=dollars, seconds=1))
            children.append(child.run_id)
        parent = started(store, "crossval")
        spend = parent.spent_by(children)
    assert (spend.episodes, spend.calls, spend.dollars) == (4, 8, 0.75)


def test_a_killed_evaluation_reads_interrupted_like_a_killed_training_run(ws, tmp_path):
    """The process that drives a run of any kind is named while it runs: a run whose
    process was killed (nothing could end it) reads interrupted, not running."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from workbench.core.store import Store
        from workbench.core.store.lifecycle import RunLife
        from workbench.core.workspace import Workspace
        with Store.open(Workspace.open({str(ws.root)!r})) as store:
            life = RunLife.create(store, "an eval", "eval", {{}})
            life.start()
        print(life.run_id, flush=True)
        time.sleep(600)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    run_id = process.stdout.readline().strip()
    with Store.open(ws) as store:
        assert effective_status(store.get_run(run_id)) == "running"
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    with Store.open(ws) as store:
        record = store.get_run(run_id)
    assert record.status == "running" and effective_status(record) == "interrupted"


def test_ctrl_c_in_training_ends_the_run_stopped_with_what_it_paid(ws, tiny_backbone):
    """Ctrl-C arriving as ``KeyboardInterrupt`` in the middle of a generation (not through
    the stop token): the run is stopped, not left running, and keeps its spend."""

    def ctrl_c(event):
        if isinstance(event, EpisodeDone) and event.generation == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config(budget={"generations": 4}), ws, listeners=[ctrl_c], backbone=tiny_backbone)
    with Store.open(ws) as store:
        (record,) = store.list_runs(kind="train")
        generations = store.generations(record.id)
    assert (record.status, record.stop_reason) == ("stopped", "stopped")
    figures = ended_as(record.result)
    assert figures["generations"] == len(generations) == 1
    assert record.result["spend"]["episodes"] > generations[0]["totals"]["episodes"]


def test_training_evaluation_and_headroom_end_their_runs_the_same_way(ws, tiny_backbone):
    run_id = train(config(budget={"generations": 2}), ws, backbone=tiny_backbone)
    evaluation = evaluate_run(ws, run=run_id, baselines=False, backbone=tiny_backbone)
    headroom = check_headroom(config(), ws, sample=6)
    stop = StopToken()
    stop.stop()
    with pytest.raises(EvaluationStopped):
        evaluate_run(ws, run=run_id, baselines=False, backbone=tiny_backbone, stop=stop)
    with Store.open(ws) as store:
        runs = store.list_runs(kind=None)
        stored = {
            r.id: (len(store.list_episodes(r.id, limit=None)), len(store.generations(r.id)))
            for r in runs
        }
    ended = {(r.kind, str(r.status)): r for r in runs}
    assert set(ended) == {
        ("train", "finished"),
        ("eval", "finished"),
        ("headroom", "finished"),
        ("eval", "stopped"),
    }
    for record in runs:
        ended_as(record.result)  # every one: its spend and its end, no process named
    spent = {key: record.result["spend"] for key, record in ended.items()}
    assert ended["eval", "finished"].id == evaluation.run_id
    assert spent["eval", "finished"]["episodes"] == stored[evaluation.run_id][0] > 0
    assert spent["headroom", "finished"]["episodes"] == stored[headroom.run_id][0] > 0
    assert spent["headroom", "finished"]["calls"] == headroom.cost.calls > 0
    assert spent["train", "finished"]["episodes"] > 0 and stored[run_id][1] == 2
    assert ended["eval", "stopped"].stop_reason == "stopped"
