"""``trinity-workbench --screenshot DIR``: every page rendered with sample content to PNG.

The sample content is made on the fly with the real engine, kept small so that it takes
well under a minute on a laptop's processor: a short one-turn sep-CMA-ES run on the
built-in sandbox pool (a labelled simulation) with the offline backbone, an evaluation of
its coordinator against each single worker, random and the oracle, a second run that
differs only in its step size (the Compare page), and the headroom check of the sample's
config. What costs time is the backbone reading the questions (forwards of SmolLM2-135M,
about a second each on a busy laptop processor, again in every generation: a trainer
empties the backbone's caches at each generation's start so that a resumed run computes
what an uninterrupted one did), so the sample asks few: three questions per candidate,
six validation questions once, at its last generation, twelve test questions. It goes into a temporary workspace, or into ``--workspace W`` when one is given (it
is kept there). Then the main window opens on that workspace, each page is brought to a
representative state (the run's plots, an episode, the evaluation, a task preview, a
question answered in the Playground) and grabbed. Progress goes to stderr (with the
seconds since the start); the PNG paths to stdout.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from workbench.core.config import RunConfig
from workbench.core.workspace import Workspace

SAMPLE_CONFIG = {
    "run": {"name": "sandbox sample", "seed": 0},
    "backbone": {"model": "offline", "device": "auto"},
    "pool": {"workers": ["sandbox"]},
    "tasks": {"suite": "mixed", "train": 0, "validation": 6, "test": 12},
    "optimizer": {"popsize": 6, "rollouts": 3, "validate_every": 3},
    "budget": {"generations": 3},
    "protocol": {"max_turns": 1, "temperature": 0.0, "max_tokens": 256},
    "cache": {"policy": "off"},
}
STARTED = time.perf_counter()
WAIT_S = 60.0  # the longest a page may take to read what it shows


def say(message: str) -> None:
    print(f"[{time.perf_counter() - STARTED:5.1f} s] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Sample:
    run_id: str  # the sample training run
    evaluation: Any  # its evaluation (jobs.evaluate.EvaluationResult)
    other_run_id: str = ""  # a second run, twice the step size (the Compare page)
    config_path: Path | None = None  # the sample's config (the headroom check reads it)


def make_sample(
    workspace: Workspace, config: RunConfig | None = None, backbone: Any = None
) -> Sample:
    """Train the sample run, evaluate it, train the second run; write the config."""
    from workbench.core.jobs.evaluate import evaluate_run
    from workbench.core.jobs.train import train
    from workbench.core.training.events import GenerationStats

    config = config or RunConfig.from_dict(SAMPLE_CONFIG)

    def progress(event: Any) -> None:
        if isinstance(event, GenerationStats):
            say(
                f"  generation {event.generation + 1} of {config.budget.generations}: the best "
                f"candidate {event.best:.0%} right, the average {event.mean:.0%}"
            )

    say(f"training a sample run on the simulated sandbox team in {workspace.root} ...")
    run_id = train(config, workspace, listeners=[progress], backbone=backbone)
    say("evaluating it against each single worker, random and the oracle ...")
    evaluation = evaluate_run(workspace, run=run_id, backbone=backbone)
    data = config.to_dict()
    data["run"] = {**data["run"], "name": f"{config.run.name}, step size x2"}
    data["optimizer"] = {**data["optimizer"], "sigma0": config.optimizer.sigma0 * 2}
    other = RunConfig.from_dict(data)
    say("training a second run (twice the step size, the same questions) to compare ...")
    other_id = train(other, workspace, listeners=[progress], backbone=backbone)
    path = workspace.root / "sample.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    return Sample(run_id, evaluation, other_id, path)


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Run the event loop until ``condition`` holds (a page finished reading)."""
    from workbench.gui.qt import QApplication

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {what} did not finish within {timeout_s:.0f} s")
        QApplication.processEvents()
        time.sleep(0.01)


def settle(seconds: float) -> None:
    """Run the event loop for ``seconds`` (layout requests are posted events)."""
    from workbench.gui.qt import QApplication

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.01)


def file_name(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + ".png"


def take(
    out_dir: str | Path,
    workspace: str | Path | None = None,
    backbone: Any = None,
    config: RunConfig | None = None,
    on_page: Callable[[Any, str], None] | None = None,
) -> list[Path]:
    """Make the sample content, render every page to ``out_dir`` and return the files.
    ``on_page(window, title)`` is called on each page before it is grabbed (a test's
    checks of the page with its content)."""
    from workbench.gui import app as gui_app
    from workbench.gui.qt import QApplication
    from workbench.gui.qt_runs import QtRuns

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _app = QApplication.instance() or QApplication(sys.argv[:1])  # kept alive while in use
    with tempfile.TemporaryDirectory(prefix="trinity-screenshots-") as tmp:
        ws = Workspace.open(workspace if workspace is not None else Path(tmp) / "workspace")
        sample = make_sample(ws, config, backbone)
        # a new user's window: not this machine's remembered sizes and splitters
        window = gui_app.MainWindow(ws, backbone=backbone, remember_layout=False)
        window.resize(1280, 800)  # a laptop's screen: what a new user has
        window.show()
        files = []
        try:
            runs = window.pages.get("Runs")
            if isinstance(
                runs, QtRuns
            ):  # its first listing picks the start page: let it land first
                wait_for(lambda: runs.listed and not _busy(runs), "the runs list")
            shots = [(title, title, PREPARE.get(title)) for title in window.pages]
            shots += [(name, title, prepare) for name, title, prepare in VIEWS]
            for name, title, prepare in shots:
                window.go(title)
                page = window.pages[title]
                if prepare is not None:
                    prepare(page, sample)
                wait_for(partial(_idle, page), f"{title} page")
                settle(0.3)  # the layouts of what was just shown (posted events) settle
                if on_page is not None:
                    on_page(window, title)
                path = out / file_name(name)
                if not window.grab().save(str(path)):
                    raise OSError(f"could not write {path}")
                files.append(path)
                say(f"  {name}: {path}")
        finally:
            for page in window.pages.values():
                if hasattr(page, "shutdown"):
                    page.shutdown()
            window.close()
    return files


def _busy(page: Any) -> bool:
    """Whether a page's background jobs, or their outcomes, are still on their way."""
    return bool(page.jobs_running)


def _idle(page: Any) -> bool:
    return not _busy(page)


# -- bringing each page to a representative state ---------------------------------


def _runs(page: Any, sample: Sample) -> None:
    run_id = sample.run_id
    wait_for(lambda: page.row_of(run_id) is not None, "runs list")
    page.select_run(run_id)
    page.open_selected()
    wait_for(lambda: page.opened == run_id, "run's plots")
    page.redraw()


def _replay(page: Any, sample: Sample) -> None:
    """The sample run chosen: the page shows its best candidate's first episode."""
    run_id = sample.run_id
    wait_for(lambda: page.runs.findData(run_id) >= 0 and not page.loading, "runs list")
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    wait_for(
        lambda: (
            not page.loading and page.replay is not None and page.replay.episode.run_id == run_id
        ),
        "episode",
    )


def _tasks(page: Any, _sample: Sample) -> None:
    wait_for(lambda: page.suite_row("mixed") is not None, "suites list")
    page.select_suite("mixed")
    wait_for(lambda: page.suite is not None, "suite")
    page.select_task(page.suite.tasks[0].id)


def _evaluate(page: Any, sample: Sample) -> None:
    """The sample's evaluation, clicked in the list of stored evaluations."""
    eval_id = sample.evaluation.run_id
    wait_for(lambda: eval_id in page.evaluation_ids() and not page.listing, "evaluations list")
    page.select_run(sample.run_id)
    page.stored.select(eval_id)
    wait_for(lambda: page.result is not None and page.result.run_id == eval_id, "evaluation")


def _headroom(page: Any, sample: Sample) -> None:
    """The Headroom and cost tab: the headroom check of the sample's config."""
    page.show_headroom()
    panel = page.headroom_panel
    panel.choose_config(sample.config_path)
    panel.sample_box.setValue(30)
    panel.check()
    wait_for(lambda: not panel.checking, "headroom check")


def _playground(page: Any, sample: Sample) -> None:
    run = f"run:{sample.run_id}"
    wait_for(lambda: page.source_combo.findData(run) >= 0, "runs list")
    page.source_combo.setCurrentIndex(page.source_combo.findData(run))
    page.question.setPlainText("What is 12 + 30?")
    page.ask()
    wait_for(lambda: not page.running, "episode")
    if page.turns.rowCount():
        page.turns.selectRow(0)


def _compare(page: Any, sample: Sample) -> None:
    wait_for(lambda: len(page.runs) >= 2 and not _busy(page), "runs list")
    page.tick([sample.run_id, sample.other_run_id])
    wait_for(lambda: len(page.shown) == 2 and not _busy(page), "runs compared")


PREPARE: dict[str, Callable[[Any, Sample], None]] = {
    "Runs": _runs,
    "Compare": _compare,
    "Replay": _replay,
    "Tasks": _tasks,
    "Evaluate": _evaluate,
    "Playground": _playground,
}
# more views of a page, each its own picture: (file name, page, how to bring it there)
VIEWS: list[tuple[str, str, Callable[[Any, Sample], None]]] = [
    ("headroom", "Evaluate", _headroom),
]
