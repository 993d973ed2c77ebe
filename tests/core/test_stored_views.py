"""Core's typed readers of what a workspace stores, which the GUI's pages show instead of
digging in the stored JSON: a run as its page shows it (``read_run``: every generation,
its budget, its spend as a ``Spend``), every stored evaluation whichever interface made
it (``stored_evaluations``, ``load_evaluation``: the report read back equal to the one
computed), lists' names for evaluations (never a dict), and each episode's last role."""

from __future__ import annotations

import pytest

from tests.core.test_training import config
from workbench.core.errors import InvalidInput
from workbench.core.evaluate import Report
from workbench.core.jobs.evaluate import evaluate_run, load_evaluation, stored_evaluations
from workbench.core.jobs.shared import list_runs, read_run
from workbench.core.jobs.train import train
from workbench.core.spend import Spend
from workbench.core.store import Store
from workbench.core.workspace import Workspace


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_lm):
    """A trained run and its evaluation, stored as ``eval`` on the command line stores it
    (the CLI's ``eval`` calls ``evaluate_run``)."""
    from workbench.core.coordinator import Backbone

    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer)
    ws = Workspace.open(tmp_path_factory.mktemp("stored") / "ws")
    run_id = train(
        config(run={"name": "routing"}, budget={"generations": 2}), ws, backbone=backbone
    )
    result = evaluate_run(ws, run=run_id, backbone=backbone)
    backbone.close()
    return ws, run_id, result


def test_a_stored_evaluation_reads_back_as_the_report_that_was_computed(evaluated):
    ws, run_id, result = evaluated
    (listed,) = stored_evaluations(ws)
    assert listed.id == result.run_id and listed.evaluated_run == run_id
    (run,) = list_runs(ws)
    assert run.id == run_id and run.name.startswith("routing, ")  # the config's name, the day
    assert listed.title == f"evaluation of '{run.name}'"  # the run's own name, no stored dict
    assert listed.evaluated == run.name
    assert "{" not in listed.title
    assert (listed.suite, listed.split, listed.status) == ("mixed", "test", "finished")
    coordinator = next(s for s in result.report.systems if s.kind == "coordinator")
    assert listed.accuracy == coordinator.accuracy and listed.has_report
    loaded = load_evaluation(ws, result.run_id[:8])
    assert loaded.run_id == result.run_id
    assert loaded.report == result.report  # every figure, learned and paired included
    assert Report.from_json(result.report.to_json()) == result.report


def test_an_evaluation_without_a_report_says_so(evaluated):
    ws, run_id, _ = evaluated
    with Store.open(ws) as store:
        stopped = store.create_run(
            "evaluation of 'routing'", "eval", {"evaluation": {"run": run_id}}
        )
        store.set_run_status(stopped, "stopped", stop_reason="stopped")
    listed = {e.id: e for e in stored_evaluations(ws)}
    assert listed[stopped].accuracy is None and not listed[stopped].has_report
    with pytest.raises(InvalidInput, match="no report to show"):
        load_evaluation(ws, stopped)
    with pytest.raises(InvalidInput, match="is no evaluation"):
        load_evaluation(ws, run_id)
    with Store.open(ws) as store:
        store.delete_run(stopped)


def test_lists_name_an_evaluation_by_what_it_evaluated_even_one_stored_with_a_dict(evaluated):
    ws, run_id, _ = evaluated
    with Store.open(ws) as store:  # the name an older version stored
        old = store.create_run(
            f"eval of {{'run': '{run_id}'}}",
            "eval",
            {"run": {"name": "routing"}, "evaluation": {"run": run_id, "split": "test"}},
        )
    titles = {r.id: r.title for r in list_runs(ws, kind=None)}
    # stored with no run name: the name in the config the run was trained under
    assert titles[old] == "evaluation of 'routing'" and titles[run_id].startswith("routing, ")
    with Store.open(ws) as store:
        store.delete_run(old)


def test_evaluations_of_two_runs_of_one_config_are_told_apart(tmp_path, tiny_backbone):
    """Two runs of one config get different names, and so do their evaluations in every
    list (the evaluation is named after the run's own name, not the config's)."""
    ws = Workspace.open(tmp_path / "ws")
    runs = [
        train(config(run={"name": "same"}, budget={"generations": 1}), ws, backbone=tiny_backbone)
        for _ in range(2)
    ]
    for run in runs:
        evaluate_run(ws, run=run, backbone=tiny_backbone, baselines=False)
    names = {r.id: r.name for r in list_runs(ws)}
    assert len(set(names.values())) == 2
    listed = {e.evaluated_run: e for e in stored_evaluations(ws)}
    assert {run: listed[run].title for run in runs} == {
        run: f"evaluation of '{names[run]}'" for run in runs
    }
    with Store.open(ws) as store:
        assert {r.name for r in store.list_runs("eval")} == {
            f"evaluation of '{names[run]}'" for run in runs
        }


def test_read_run_gives_every_generation_its_budget_and_its_spend(evaluated):
    ws, run_id, _ = evaluated
    stored = read_run(ws, run_id)
    assert stored.summary.id == run_id and stored.summary.status == "finished"
    assert [s.generation for s in stored.generations] == [0, 1]
    assert stored.budget_generations == 2 and stored.pool == ("sandbox",)
    last = stored.generations[-1].totals
    # the last generation's running totals; the minutes run on to the run's end
    generation = Spend.of(last)
    assert stored.spend.episodes == generation.episodes == int(last["episodes"])
    assert (stored.spend.calls, stored.spend.dollars) == (generation.calls, generation.dollars)
    assert stored.spend.minutes >= generation.minutes
    assert stored.spend_kind == "simulated" and stored.where == ""
    assert "(simulated)" in stored.spend.words(stored.spend_kind)


def test_spend_in_words_counts_in_the_singular_and_plural():
    assert Spend(1, 1, 0.5, 1.25).words("") == "1 episode, 1 call, $0.5000, 1.2 min"
    assert Spend(2, 3, 0.0, 0.0).words("simulated") == (
        "2 episodes, 3 calls, $0.0000 (simulated), 0.0 min"
    )
    assert Spend.of({"episodes": 4.0, "calls": 9.0}) == Spend(4, 9, 0.0, 0.0)
    assert Spend.of(None) == Spend()


def test_each_episode_summary_names_the_role_of_its_last_turn(evaluated):
    ws, run_id, _ = evaluated
    with Store.open(ws) as store:
        summaries = store.list_episodes(run_id)
        for summary in summaries[:20]:
            episode = store.get_episode(summary.id)
            assert summary.last_role == (episode.turns[-1].role if episode.turns else None)
