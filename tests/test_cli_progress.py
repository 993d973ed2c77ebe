"""The CLI's progress display (workbench/cli/progress.py) without a terminal: its estimate
of the time left, its words, the sparse plain lines a pipe or a CI log gets, and the
training view's lines. The display in a real terminal: tests/test_cli_terminal.py."""

import io

import pytest
from rich.console import Console

from workbench.cli.progress import Display, Eta, duration_words, eta_words
from workbench.cli.views import TrainingView
from workbench.core.records import GenerationStats
from workbench.core.training.events import EpisodeDone, Preparing, RunFinished, RunStarted


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_estimate_waits_for_the_warm_up_then_goes_by_the_time_per_unit_since():
    clock = Clock()
    eta = Eta(10, warmup=1, clock=clock)
    clock.now = 100.0  # a slow first unit: reading every task once
    eta.update(1)
    assert eta.remaining() is None  # no measured unit after the warm-up yet
    clock.now = 130.0
    eta.update(4)  # 10 s a unit since the warm-up, not (130 / 4) = 32.5
    assert eta.remaining() == pytest.approx(60.0)
    clock.now = 135.0  # between updates it counts down
    assert eta.remaining() == pytest.approx(55.0)
    clock.now = 200.0  # past its own estimate it says under a minute, never less than 0
    assert eta.remaining() == 0.0
    eta.update(10)
    assert eta.remaining() == 0.0


def test_a_resumed_run_warms_up_from_where_it_resumed():
    clock = Clock()
    eta = Eta(60, start=20, warmup=1, clock=clock)
    clock.now = 50.0
    eta.update(20.5)
    assert eta.remaining() is None
    clock.now = 60.0
    eta.update(21)  # the warm-up ends here
    clock.now = 80.0
    eta.update(23)
    assert eta.remaining() == pytest.approx(10.0 * 37)


def test_times_are_said_in_words():
    assert [duration_words(s) for s in (0.2, 45, 61, 9 * 60 + 40, 80 * 60)] == [
        "1 s",
        "45 s",
        "1 min",
        "10 min",
        "1 h 20 min",
    ]
    assert eta_words(None) == "estimating time left"
    assert eta_words(30) == "under a minute left"
    assert eta_words(9.6 * 60) == "about 10 min left"


def plain_display(verbose: bool = False, clock=None) -> tuple[Display, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, highlight=False)
    return Display("auto", verbose=verbose, console=console, clock=clock or Clock()), out


def test_in_a_terminal_every_step_is_drawn_however_short():
    """A step that ends before the display's next tick (a short episode after the model
    loaded) is still drawn once: the user sees every step, and a terminal's record has
    each one."""
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, highlight=False)
    with Display("auto", console=console) as display:
        display.stage("loading the offline model")
        display.stage("playing task mixed-math-001 (at most 5 turns)")
        display.end_stage()
        console.print("reward: 1")
    assert "loading the offline model" in out.getvalue()
    assert "playing task mixed-math-001" in out.getvalue()


def test_without_a_terminal_work_done_in_2_s_prints_only_its_end():
    clock = Clock()
    display, out = plain_display(clock=clock)
    with display:
        counter = display.count("asking the workers", 60, "answers")
        for done in range(1, 61):
            clock.now = done * 0.01
            counter.update(done)
    assert out.getvalue().splitlines() == [
        "asking the workers: 60/60 answers, 0:00 elapsed, under a minute left"
    ]


def test_without_a_terminal_counted_work_prints_a_line_each_tenth_not_a_redrawn_bar():
    clock = Clock()
    display, out = plain_display(clock=clock)
    with display:
        display.stage("loading the offline model")
        counter = display.count("evaluating", 200, "episodes")
        for done in range(1, 201):
            clock.now = done * 0.5  # 100 s in all
            counter.update(done)
    lines = out.getvalue().splitlines()
    assert lines[0] == "loading the offline model"
    counted = [line for line in lines if line.startswith("evaluating: ")]
    # one at each tenth once the first 2 s have passed: 10, not 200
    assert len(counted) == 10
    assert counted[0].startswith("evaluating: 20/200 episodes, 0:10 elapsed, about 2 min left")
    assert counted[-1].startswith("evaluating: 200/200 episodes, 1:40 elapsed")
    assert "\r" not in out.getvalue() and "━" not in out.getvalue()
    assert all(len(line) <= 80 for line in lines)


def run_started(**changes) -> RunStarted:
    fields = dict(
        run_id="0f3a9c1e" + "0" * 24,
        name="sandbox routing, Dec 6",
        n_params=3456,
        popsize=2,
        rollouts=2,
        start_generation=0,
        budget={"generations": 3, "episodes": 0, "calls": 0, "dollars": 0.0, "minutes": 0.0},
    )
    return RunStarted(**{**fields, **changes})


def generation(g: int, validation: float | None, best: float | None) -> GenerationStats:
    return GenerationStats(
        run_id="0f3a9c1e" + "0" * 24,
        generation=g,
        best=0.9,
        mean=0.5,
        median=0.5,
        worst=0.1,
        sigma=0.03,
        evaluations=4,
        calls=4,
        tokens=100,
        dollars=0.01,
        cache_hits=0,
        wall_s=2.0,
        coordinator_s=1.5,
        worker_s=0.1,
        features_requested=4,
        features_computed=2,
        usage={"sandbox:coder/worker": 4},
        validation=validation,
        best_validation=best,
        totals={"episodes": 4, "calls": 4, "dollars": 0.01, "minutes": 0.1},
    )


def episode(g: int) -> EpisodeDone:
    return EpisodeDone(
        run_id="x",
        generation=g,
        candidate=0,
        task_id="t",
        reward=1.0,
        turns=1,
        stop_reason="max_turns",
        cost=0.0,
    )


@pytest.mark.parametrize("verbose", [False, True])
def test_a_training_run_in_plain_words_and_its_details_only_when_asked(verbose):
    display, out = plain_display(verbose)
    view = TrainingView(display, lambda run_id: f"trinity-workbench train --resume {run_id[:8]}")
    with display:
        for event in (
            run_started(),
            episode(0),
            generation(0, None, None),
            episode(1),
            generation(1, 0.5, 0.5),
            generation(2, 0.5, 0.5),  # a tie is not a new best
            RunFinished("0f3a9c1e", "budget.generations", 3, 0.5),
        ):
            view(event)
    text = out.getvalue()
    words = " ".join(text.split())  # as said, before the lines were cut at 80 columns
    assert 'Training run 0f3a9c1e, "sandbox routing, Dec 6":' in text
    assert "Ctrl-C stops it and keeps every finished generation." in words
    assert "generation 2: validation score 0.500 (the best so far)" in text
    assert "generation 3: validation score 0.500\n" in text  # no "best so far" for a tie
    assert "training: 3/3 generations" in text
    assert ("sigma 0.0300" in words) is verbose  # the details: -v or --progress detailed
    assert all(len(line) <= 80 for line in text.splitlines())
    assert view.ended == RunFinished("0f3a9c1e", "budget.generations", 3, 0.5)


@pytest.mark.parametrize("verbose", [False, True])
def test_log_lines_reach_the_terminal_only_with_v(verbose, capsys):
    """Even when a logger below the root is set to INFO (the GUI does, for its log file),
    its INFO lines stay off the terminal without -v; warnings always show."""
    import logging

    from workbench.cli import configure_logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()  # as in a new process: the CLI's own handler is the one
    try:
        configure_logging(verbose)
        logging.getLogger("workbench").setLevel(logging.INFO)
        logging.getLogger("workbench.core.x").info("an info line")
        logging.getLogger("workbench.core.x").warning("a warning")
        err = capsys.readouterr().err
    finally:
        logging.getLogger("workbench").setLevel(logging.NOTSET)
        root.handlers[:] = handlers
        root.setLevel(level)
    assert "WARNING workbench.core.x: a warning" in err
    assert ("an info line" in err) is verbose


def test_the_work_before_the_first_generation_has_a_bar_of_its_own_when_it_takes_a_while():
    """A table run grades its recorded answers and reads its questions with the backbone
    before generation 1: each step with work to do is counted in questions; one done at
    its first word (features an earlier run kept) draws nothing."""
    clock = Clock()
    display, out = plain_display(clock=clock)
    view = TrainingView(display, resume=None)

    def preparing(stage: str, done: int, total: int) -> Preparing:
        return Preparing(run_id="0f3a9c1e" + "0" * 24, stage=stage, done=done, total=total)

    with display:
        view(run_started())
        view(preparing("table", 1798, 1798))  # graded in one step: no bar
        for done in (0, 640, 1280, 1798):
            clock.now += 60.0
            view(preparing("features", done, 1798))
        view(generation(0, None, None))
    text = out.getvalue()
    assert "grading the recorded answers" not in text
    assert "reading every question with the backbone: 640/1798 questions, 1:00" in text
    assert "reading every question with the backbone: 1798/1798 questions" in text
    assert text.index("1798/1798 questions") < text.index("training: 1/3 generations")


def test_without_a_terminal_the_end_of_the_work_is_said_once_whatever_its_total():
    """2,397 questions in steps of 240: the last tenth ends at 2,397, not at a step's
    multiple (MMLU-Pro's table run showed 2187/2397 as its last line); it is said once,
    however often the end is reported."""
    clock = Clock()
    display, out = plain_display(clock=clock)
    with display:
        counter = display.count("reading", 2397, "questions")
        for done in (258, 2187, 2397, 2397):
            clock.now += 5.0  # well within the minute's line
            counter.update(done)
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "reading: 258/2397 questions",
        "reading: 2187/2397 questions",
        "reading: 2397/2397 questions",
    ]
