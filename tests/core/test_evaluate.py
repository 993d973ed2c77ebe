"""Evaluation as the GUI drives it: a chosen subset of baselines, progress per episode, a
stop that ends it cleanly, and the description of what is evaluated (run or file)."""

import pytest

from tests.core.test_training import config
from workbench.core.evaluate import EvaluationProgress, EvaluationStopped, baseline_names
from workbench.core.export import CoordinatorFileError
from workbench.core.jobs.evaluate import evaluable_runs, evaluate_run, evaluation_source
from workbench.core.jobs.export import export_run
from workbench.core.jobs.train import train
from workbench.core.replay import role_label
from workbench.core.store import Store
from workbench.core.training.events import StopToken
from workbench.core.workspace import Workspace

SANDBOX = ["sandbox:mathlete", "sandbox:scholar", "sandbox:coder"]


@pytest.fixture()
def ws(tmp_path):
    return Workspace.open(tmp_path / "ws")


@pytest.fixture()
def trained(ws, tiny_backbone):
    return train(config(budget={"generations": 1}), ws, backbone=tiny_backbone)


def test_baselines_of_a_pool():
    assert baseline_names(SANDBOX) == [*(f"single:{w}" for w in SANDBOX), "random", "oracle"]
    # the oracle knows the sandbox workers' skills only
    assert baseline_names(["sandbox:mathlete", "local:smollm2"]) == [
        "single:sandbox:mathlete",
        "single:local:smollm2",
        "random",
    ]


def test_a_run_and_its_coordinator_file_describe_the_same_evaluation(
    ws, tiny_backbone, trained, tmp_path
):
    assert [r.id for r in evaluable_runs(ws)] == [trained]
    by_run = evaluation_source(ws, run=trained[:8])
    assert by_run.run_id == trained and by_run.pool == tuple(SANDBOX)
    with Store.open(ws) as store:
        name = store.get_run(trained).name  # the run's own, unique in the workspace
    assert by_run.config.tasks.test == 9 and by_run.reference == {"run": trained, "run_name": name}
    path = export_run(ws, trained, tmp_path / "c.safetensors", backbone=tiny_backbone)
    by_file = evaluation_source(ws, coordinator_file=path)
    assert by_file.pool == by_run.pool and by_file.baselines == by_run.baselines == baseline_names(
        SANDBOX, by_run.config.protocol.max_turns
    )
    assert by_file.config == by_run.config and by_file.reference == {"coordinator_file": str(path)}
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a coordinator")
    with pytest.raises(CoordinatorFileError, match="is not a coordinator file"):
        evaluation_source(ws, coordinator_file=bad)


def test_chosen_baselines_only_with_progress_per_episode(ws, tiny_backbone, trained):
    heard: list[EvaluationProgress] = []
    result = evaluate_run(
        ws,
        run=trained,
        baselines=["single:sandbox:coder", "oracle"],
        backbone=tiny_backbone,
        progress=heard.append,
    )
    assert [s.name for s in result.report.systems] == [
        "coordinator",
        "single:sandbox:coder",
        "oracle",
    ]
    assert [p.done for p in heard] == list(range(1, 28)) and {p.total for p in heard} == {27}
    assert {p.system for p in heard} == {"coordinator", "single:sandbox:coder", "oracle"}
    with pytest.raises(ValueError, match="unknown baseline.*single:nobody"):
        evaluate_run(ws, run=trained, baselines=["single:nobody"], backbone=tiny_backbone)


def test_stop_ends_the_evaluation_and_marks_its_record_stopped(ws, tiny_backbone, trained):
    stop = StopToken()
    heard = []

    def progress(event):
        heard.append(event)
        stop.stop()  # after the first episode

    with pytest.raises(EvaluationStopped):
        evaluate_run(ws, run=trained, backbone=tiny_backbone, progress=progress, stop=stop)
    # the episodes in flight when it stopped ended; no other started
    assert 1 <= len(heard) <= 9 and {p.system for p in heard} == {"coordinator"}
    with Store.open(ws) as store:
        (record,) = store.list_runs(kind="eval")
        assert record.status == "stopped" and record.stop_reason == "stopped"
        assert store.list_episodes(record.id) == []


def test_a_backbone_that_reads_transcripts_otherwise_is_refused_before_anything_is_stored(
    ws, tiny_backbone, tiny_chat_backbone, trained
):
    """A head trained on raw transcripts means nothing on chat-wrapped ones: train,
    evaluate and study refuse a given backbone whose input mode differs from the config's
    (issue 15), naming both modes and the fix."""
    from workbench.core.jobs.study import study_optimizers

    with Store.open(ws) as store:
        before = len(store.list_runs(kind=None))
    chat_config = config(budget={"generations": 1}, backbone={"input": "chat"})
    with pytest.raises(ValueError, match=r"reads transcripts as 'raw'.*backbone.input = 'chat'"):
        train(chat_config, ws, backbone=tiny_backbone)
    with pytest.raises(ValueError, match=r"reads transcripts as 'raw'.*backbone.input = 'chat'"):
        study_optimizers(
            chat_config, ws, seeds=1, optimizers=["sep-cma-es"], backbone=tiny_backbone
        )
    with pytest.raises(ValueError, match=r"reads transcripts as 'chat'.*backbone.input = 'raw'"):
        evaluate_run(ws, run=trained, backbone=tiny_chat_backbone)
    with Store.open(ws) as store:
        assert len(store.list_runs(kind=None)) == before


def test_final_turn_worker_leaves_no_episode_without_an_answer(ws, tiny_backbone, trained):
    """The option ``serve`` uses by default, offered to evaluation: random routing (which
    often picks a Verifier first or ends on a Thinker) then always has an answer, and
    the evaluation's record says which protocol it used."""
    outcomes = {}
    for final_turn in ("free", "worker"):
        result = evaluate_run(
            ws, run=trained, baselines=["random"], backbone=tiny_backbone, final_turn=final_turn
        )
        with Store.open(ws) as store:
            record = store.get_run(result.run_id)
            assert record.config_data["evaluation"]["final_turn"] == final_turn
            episodes = [store.get_episode(e.id) for e in store.list_episodes(result.run_id)]
        outcomes[final_turn] = episodes
    assert any(e.answer is None for e in outcomes["free"])  # the paper's protocol allows it
    assert all(e.answer is not None for e in outcomes["worker"])
    forced = [e for e in outcomes["worker"] if "worker_only_turns" in e.grade_details]
    assert forced
    for episode in forced:
        for index in episode.grade_details["worker_only_turns"]:
            assert episode.turns[index].role == "worker"
            assert role_label(episode, index) == "worker (worker only)"  # replays say so
    with pytest.raises(ValueError, match="unknown final_turn 'last'"):
        evaluate_run(ws, run=trained, baselines=False, backbone=tiny_backbone, final_turn="last")


def test_one_bootstrap_one_best_single_rule_one_any_right_oracle_one_mean_interval():
    """Every module uses the one statistics module and evaluate's rules, not copies."""
    import numpy as np

    from workbench.core import evaluate as ev
    from workbench.core import power, stats
    from workbench.core.jobs import (
        crossval,
        crossval_report,
        frontier,
        frontier_report,
        headroom,
        headroom_figures,
        study,
        study_stats,
    )

    # the statistics live in workbench.core.stats alone
    modules = (ev, crossval, crossval_report, frontier, frontier_report, headroom)
    for module in (*modules, headroom_figures, study_stats):
        for name in ("wilson", "bootstrap_mean", "paired_values", "sign_test", "mean_ci"):
            assert getattr(module, name, getattr(stats, name)) is getattr(stats, name), (
                module.__name__,
                name,
            )
    assert headroom.RESAMPLES == stats.BOOTSTRAP and study.mean_ci is stats.mean_ci
    assert power.normal_quantile is stats.normal_quantile
    assert not hasattr(study_stats, "_T975") and not hasattr(ev, "BOOTSTRAP")
    assert not hasattr(headroom, "best_index") and not hasattr(headroom, "mean_interval")
    assert frontier_report.best_single_index is ev.best_single_index
    assert crossval_report.best_single_index is ev.best_single_index
    # the paired difference's interval is the bootstrap's, clamped to hold the mean
    d = np.array([1.0] * 3 + [0.0] * 97)
    p = stats.paired_values("a", "b", d, seed=3)
    assert (p.difference, p.ci_low, p.ci_high) == stats.bootstrap_mean(d, seed=3)
    # best single: the most accurate, a tie to the cheaper, then to the earlier
    assert ev.best_single_index([0.5, 0.7, 0.7], [1.0, 2.0, 1.0]) == 2
    assert ev.best_single_index([0.7, 0.7], [1.0, 1.0]) == 0
    # any right: the cheapest right answer; none right: the best reward, the cheapest
    assert ev.any_right_index([1.0, 0.0, 1.0], [3.0, 0.5, 2.0]) == 2
    assert ev.any_right_index([0.0, 0.5, 0.0], [1.0, 9.0, 0.1]) == 1
    # dollars per task are not clipped at 1 (rewards are)
    assert stats.mean_ci([2.0, 4.0], upper=float("inf"))[2] > 3.0
    assert stats.mean_ci([0.9, 1.0])[2] == 1.0
