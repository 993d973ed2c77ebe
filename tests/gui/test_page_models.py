"""The pages' models, read without a window: what the Runs, Replay and Evaluate pages say,
built from core's typed objects. A run being trained shows its live generation and state
in the runs list; times read short; the method's terms stay out of the words a newcomer
reads (fitness, sigma, a stop reason's identifier); an episode that answered on its last
turn says "answered", "out of turns" only when the turns ran out before an answer stood;
plurals are right; the Evaluate page's tables put systems in columns."""

from __future__ import annotations

import time
from dataclasses import replace

from workbench.core.evaluate import GroupResult, Report, SystemResult
from workbench.core.jobs.evaluate import StoredEvaluation
from workbench.core.jobs.shared import RunSummary, run_day
from workbench.core.records import GenerationStats, Role, StopReason
from workbench.core.spend import Spend
from workbench.core.store import Store
from workbench.core.training.events import RunFinished
from workbench.core.workspace import Workspace
from workbench.gui.evaluate_model import (
    baseline_words,
    category_rows,
    evaluation_cells,
    source_words,
    system_headers,
    usage_rows,
)
from workbench.gui.replay_model import (
    LOOSE,
    EpisodeList,
    RunsOffered,
    ending_sentence,
    ending_word,
    list_note,
    read_episodes,
    read_runs,
    run_choice,
    runs_note,
)
from workbench.gui.runs_model import (
    RUN_COLUMNS,
    Eta,
    RunProgress,
    duration,
    finished_lines,
    generation_lines,
    run_cells,
    spend_line,
    started_text,
    strip_text,
)
from workbench.gui.words import plural

NOW = time.mktime((2026, 6, 15, 14, 30, 0, 0, 0, -1))


def summary(**changes) -> RunSummary:
    values = dict(
        id="abcdef0123456789",
        name="sandbox routing",
        title="sandbox routing",
        status="running",
        stop_reason="",
        generations=0,
        created_at=NOW - 600,
    )
    values.update(changes)
    return RunSummary(**values)


def test_a_run_being_trained_shows_its_live_generation_and_state_in_the_list():
    run = summary()
    stored = dict(zip(RUN_COLUMNS, (c.text for c in run_cells(run, None, NOW)), strict=True))
    assert (stored["Status"], stored["Gen."]) == ("running", "0")  # what the store said
    live = RunProgress(state="running", run_id=run.id, generation=3, budget=10)
    cells = dict(zip(RUN_COLUMNS, (c.text for c in run_cells(run, live, NOW)), strict=True))
    assert cells["Status"] == "training" and cells["Gen."] == "3 of 10"
    paused = RunProgress(state="paused", run_id=run.id, generation=3, budget=10)
    assert run_cells(run, paused, NOW)[1].text == "paused"
    other = RunProgress(state="running", run_id="another", generation=3, budget=10)
    assert run_cells(run, other, NOW)[3].text == "0"  # another run's events say nothing
    assert cells["Started"] == "today 14:20"


def test_start_times_read_short_and_whole_in_their_tooltip():
    assert started_text(NOW - 60, NOW) == "today 14:29"
    assert started_text(NOW - 86400, NOW).startswith("yesterday ")
    assert started_text(NOW - 40 * 86400, NOW) == time.strftime(
        "%b %-d %H:%M", time.localtime(NOW - 40 * 86400)
    )
    assert started_text(NOW - 400 * 86400, NOW) == time.strftime(
        "%Y-%m-%d", time.localtime(NOW - 400 * 86400)
    )
    tooltip = run_cells(summary(), None, NOW)[4].tooltip
    assert tooltip is not None and tooltip.startswith("2026-06-15 14:20")


def test_the_strip_and_the_log_speak_plain_words():
    progress = RunProgress(
        state="running", name="sandbox routing", generation=4, budget=10, best=0.75
    )
    progress.spent, progress.eta = "$0.0100 (simulated)", "about 2 min 00 s left"
    line = strip_text(progress, opened=False)
    assert line == (
        "Training 'sandbox routing' · generation 4 of 10 · best training score 75% · spent "
        "$0.0100 (simulated) · about 2 min 00 s left"
    )
    assert "fitness" not in line
    stats = stats_of(generation=3, best=0.75, mean=0.5, validation=0.6)
    plain, details = generation_lines(stats, 10, "simulated")
    assert plain.startswith("generation 4 of 10: the best candidate answered 75% right")
    assert "validation questions 60% right" in plain
    assert "sigma" not in plain and "sigma 0.0300" in details  # the term: behind the box
    ended, why = finished_lines(RunFinished("abcdef01", "budget.generations", 10, 0.6))
    assert "budget.generations" not in ended and why == "stop reason budget.generations"
    assert "it ran all its generations" in ended
    # a budget the work before the first generation used up: what to do about it
    ended, _ = finished_lines(RunFinished("abcdef01", "budget.minutes", 0, None))
    assert ended == (
        "run abcdef01 ended after 0 generations: it used its budget of time; the work "
        "before its first generation (the questions' features, the routing table, the "
        "search basis) used it: raise it on the Budget tab and start again"
    )


def test_the_time_left_and_the_spend_in_words():
    eta = Eta()
    eta.start(now=100.0)
    assert eta.left(1, 5, now=130.0) == "about 2 min 00 s left"  # 30 s a generation, 4 left
    assert eta.left(5, 5, now=250.0) == ""  # the last: nothing left to say
    assert duration(45) == "45 s" and duration(3700) == "1 h 01 min"
    assert spend_line(Spend(1, 2, 0.5, 0.25), "") == "Spent: 1 episode, 2 calls, $0.5000, 0.2 min"


def stats_of(**changes) -> GenerationStats:
    values = dict(
        run_id="r",
        generation=0,
        best=0.5,
        mean=0.4,
        median=0.4,
        worst=0.1,
        sigma=0.03,
        evaluations=3,
        calls=3,
        tokens=30,
        dollars=0.0,
        cache_hits=0,
        wall_s=1.0,
        coordinator_s=0.5,
        worker_s=0.2,
        features_requested=3,
        features_computed=3,
        usage={},
        validation=None,
        best_validation=None,
        totals={},
    )
    values.update(changes)
    return GenerationStats(**values)


def test_an_episode_says_how_it_ended():
    # a one-turn episode that answered: "answered", not "out of turns"
    assert ending_word(StopReason.MAX_TURNS, Role.WORKER) == "answered"
    assert ending_sentence("max_turns", "worker") == "A Worker answered on its last turn"
    # the turns ran out on a plan or a check: "out of turns"
    assert ending_word(StopReason.MAX_TURNS, Role.THINKER) == "out of turns"
    assert ending_word("max_turns", Role.VERIFIER) == "out of turns"
    assert ending_sentence("max_turns", "thinker") == "It used all its turns"
    assert ending_word(StopReason.ACCEPTED, Role.VERIFIER) == "accepted"
    assert ending_word("verifier_without_answer", Role.VERIFIER) == "Verifier too early"
    assert ending_word("worker_errors", Role.WORKER) == "calls failed"


def test_counts_read_in_the_singular_and_the_plural():
    assert plural(1, "episode") == "1 episode" and plural(2, "episode") == "2 episodes"
    assert plural(1200, "episode") == "1,200 episodes"
    one = EpisodeList(
        episodes=[], matched=1, best=None, best_share=0, generations=[], candidates=[], workers=[]
    )
    assert list_note(one, 1, "train") == "1 episode"
    many = EpisodeList(
        episodes=[],
        matched=30,
        best=(2, 0),
        best_share=0.75,
        generations=[],
        candidates=[],
        workers=[],
    )
    assert (
        list_note(many, 30, "eval") == "30 episodes. Best first: generation 3, system 1, 75% right."
    )
    # served questions (and single episodes) are no candidate, nor a validation
    served = replace(many, best=(None, None), best_share=0.0)
    assert list_note(served, 30, "serve") == "30 episodes"
    validated = replace(many, best=(2, None))
    assert list_note(validated, 30, "train").endswith("generation 3, validation, 75% right.")


def test_replays_run_list_names_and_dates_each_run_never_a_dict():
    train = run_choice(summary(status="finished"), NOW)
    assert train.label == "sandbox routing · training · today 14:20"
    evaluation = run_choice(
        summary(
            kind="eval", name="eval of {'run': 'abc'}", title="evaluation of 'sandbox routing'"
        ),
        NOW,
    )
    assert evaluation.label == "evaluation of 'sandbox routing' · evaluation · today 14:20"
    assert "{" not in evaluation.label
    # a name that carries its day (train's default) is not followed by the day again
    day = run_day(NOW - 600)
    for title in (f"sandbox routing, {day}", f"sandbox routing, {day} (2)"):
        named = run_choice(summary(title=title, status="finished"), NOW)
        assert named.label == f"{title} · training · 14:20"
    other_day = run_choice(summary(title="sandbox routing, Feb 30", status="finished"), NOW)
    assert other_day.label == "sandbox routing, Feb 30 · training · today 14:20"


def test_replay_offers_only_runs_with_episodes_and_says_how_many_it_leaves_out(tmp_path):
    """In a real workspace: a run trained on a routing table stores no episode, so Replay
    does not offer it (chosen, it would show an empty list) and says so under the list;
    the episodes outside any run are offered last, with their own pool."""
    from tests.core.test_store import make_episode

    ws = Workspace.open(tmp_path / "ws")
    empty_note = runs_note(read_runs(ws))
    assert empty_note.startswith("No episodes yet")
    with Store.open(ws) as store:
        played = store.create_run("played", "train", {})
        store.add_episode(make_episode("a", run_id=played, generation=0, candidate=0))
        assert runs_note(read_runs(ws)) == ""  # nothing left out: no line
        table = store.create_run("on a table", "train", {})
        store.add_episode(replace(make_episode("loose"), pool=("solo",)))
    offered = read_runs(ws)
    assert [c.run_id for c in offered.choices] == [played, LOOSE]
    assert table not in [c.run_id for c in offered.choices] and offered.unlisted == 1
    assert runs_note(offered).startswith("Not listed: 1 run without episodes")
    assert "2 runs" in runs_note(RunsOffered(offered.choices, 2))
    loose = read_episodes(ws, LOOSE, {}, "")
    assert [e.id for e in loose.episodes] == ["loose"] and loose.workers == ["solo"]
    assert [e.id for e in read_episodes(ws, played, {}, "").episodes] == ["a"]


def test_a_coordinators_line_names_a_backbone_file_by_its_name_not_its_path():
    """The line under the Evaluate page's choice: a backbone that is a file of this
    computer by its name (the machine's folders stay off the screen), a hub id whole."""
    from workbench.core.config import RunConfig
    from workbench.core.jobs.evaluate import EvaluationSource

    config = RunConfig.from_dict({"protocol": {"max_turns": 1}})
    local = EvaluationSource(
        config=config, pool=("a", "b"), backbone_model="/srv/models/gemma-3-270m-q4_k_m.gguf"
    )
    assert "backbone …/gemma-3-270m-q4_k_m.gguf · " in source_words(local)
    assert "/srv/models" not in source_words(local)
    hub = EvaluationSource(
        config=config, pool=("a",), backbone_model="HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    assert "backbone HuggingFaceTB/SmolLM2-135M-Instruct · " in source_words(hub)
    assert source_words(hub).endswith("up to 1 turn")
    assert source_words(local).startswith("pool a, b · ")
    # a recorded pool's shared name once, then its models (six full ids ran past the page)
    recorded = EvaluationSource(
        config=config,
        pool=("recorded:small-6/gemma-7b", "recorded:small-6/mathstral-7B"),
        backbone_model="tiny",
    )
    assert source_words(recorded).startswith("pool recorded:small-6/ (gemma-7b, mathstral-7B) · ")
    # more than three: counted (the baselines under it list each one; seven lines were cut)
    six = replace(recorded, pool=tuple(f"recorded:small-6/m{i}" for i in range(6)))
    assert source_words(six).startswith("pool recorded:small-6/ (6 workers) · ")
    assert source_words(replace(six, pool=("a", "b", "c", "d"))).startswith("pool 4 workers · ")


def figures_report() -> Report:
    def system(name, kind, accuracy, usage, groups):
        return SystemResult(
            name=name,
            kind=kind,
            accuracy=accuracy,
            ci_low=accuracy - 0.1,
            ci_high=accuracy + 0.1,
            n=4,
            avg_turns=1.0,
            avg_tokens=10.0,
            avg_cost=0.0,
            usage=usage,
            by_group={g: GroupResult(a, a - 0.1, a + 0.1, 2) for g, a in groups.items()},
        )

    return Report(
        suite="mixed",
        split="test",
        systems=(
            system(
                "coordinator",
                "coordinator",
                0.75,
                {"a/worker": 3, "b/thinker": 1},
                {"math": 1.0, "code": 0.5},
            ),
            system("single:a", "single", 0.5, {"a/worker": 4}, {"math": 0.5, "code": 0.5}),
        ),
    )


def test_the_evaluate_pages_tables_put_systems_in_columns():
    report = figures_report()
    assert system_headers(report) == [
        ("coordinator", "coordinator (coordinator)"),
        ("a", "single:a (single)"),
    ]
    usage = [[c.text for c in row] for row in usage_rows(report, ["a", "b"])]
    assert usage == [["a as Worker", "3", "4"], ["b as Thinker", "1", "0"]]
    categories = [[c.text for c in row] for row in category_rows(report)]
    assert categories == [  # every system answered as many: the count said once
        ["code (2)", "0.500", "0.500"],
        ["math (2)", "1.000", "0.500"],
        ["all (4)", "0.750", "0.500"],
    ]
    # a system that answered fewer of a category: each cell says its own count
    single = report.systems[1]
    fewer = replace(single, by_group={**single.by_group, "code": GroupResult(1.0, 0.2, 1.0, 1)})
    report = replace(report, systems=(report.systems[0], fewer))
    assert [c.text for c in category_rows(report)[0]] == ["code", "0.500 (2)", "1.000 (1)"]
    assert baseline_words("single:sandbox:coder") == "sandbox:coder alone"
    assert baseline_words("random") == "random"
    # a recorded pool's worker by its own name: the pool's would widen the page
    assert (
        baseline_words("single:recorded:small-6/Meta-Llama-3_1-8B-Instruct")
        == "Meta-Llama-3_1-8B-Instruct alone"
    )


def test_a_stored_evaluation_is_listed_by_what_it_evaluated():
    done = StoredEvaluation(
        id="e1",
        title="evaluation of 'sandbox routing'",
        evaluated="sandbox routing",
        evaluated_run="r1",
        suite="mixed",
        split="test",
        status="finished",
        created_at=NOW - 60,
        accuracy=0.8,
    )
    assert [c.text for c in evaluation_cells(done, NOW)] == [
        "sandbox routing",
        "0.800",
        "today 14:29",
    ]
    stopped = StoredEvaluation(**{**done.__dict__, "status": "stopped", "accuracy": None})
    assert evaluation_cells(stopped, NOW)[1].text == "stopped"
