"""``trinity-workbench --screenshot DIR``: every page rendered with sample content to PNG.

The sample content is made on the fly with the real engine: a short sep-CMA-ES run on
the built-in sandbox pool with the offline backbone (a few minutes on a CPU), an
evaluation of its coordinator against each single worker, random and the oracle, and a
second run (another seed and step size) for the Compare page. It
goes into a temporary workspace, or into ``--workspace W`` when one is given (it is
kept there). Then the main window opens on that workspace, each page is brought to a
representative state (the run's plots, an episode mid-way, the evaluation table, a
task preview, a question answered in the Playground) and grabbed. Progress goes to stderr; the PNG paths to stdout.
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
    "tasks": {"suite": "mixed", "train": 0, "validation": 12, "test": 24},
    "optimizer": {"popsize": 6, "rollouts": 4, "validate_every": 2},
    "budget": {"generations": 4},
    "protocol": {"max_turns": 3, "temperature": 0.0, "max_tokens": 256},
    "cache": {"policy": "off"},
}
WAIT_S = 60.0  # the longest a page may take to read what it shows


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Sample:
    run_id: str  # the sample training run
    evaluation: Any  # its evaluation (jobs.evaluate.EvaluationResult)
    other_run_id: str = ""  # a second run, another seed and step size (the Compare page)


def make_sample(
    workspace: Workspace, config: RunConfig | None = None, backbone: Any = None
) -> Sample:
    """Train the sample run and evaluate it."""
    from workbench.core.jobs.evaluate import evaluate_run
    from workbench.core.jobs.train import train
    from workbench.core.training.events import GenerationStats

    config = config or RunConfig.from_dict(SAMPLE_CONFIG)
    started = time.perf_counter()

    def progress(event: Any) -> None:
        if isinstance(event, GenerationStats):
            say(
                f"  generation {event.generation + 1}/{config.budget.generations}: best {event.best:.3f}, "
                f"mean {event.mean:.3f} ({time.perf_counter() - started:.0f} s)"
            )

    say(f"training a sample run on the sandbox pool in {workspace.root} ...")
    run_id = train(config, workspace, listeners=[progress], backbone=backbone)
    say("evaluating it against each single worker, random and the oracle ...")
    evaluation = evaluate_run(workspace, run=run_id, backbone=backbone)
    data = config.to_dict()
    data["run"] = {**data["run"], "name": f"{config.run.name}, seed 1", "seed": 1}
    data["optimizer"] = {**data["optimizer"], "sigma0": config.optimizer.sigma0 * 2}
    other = RunConfig.from_dict(data)
    say("training a second run (another seed, twice the step size) to compare ...")
    other_id = train(other, workspace, listeners=[progress], backbone=backbone)
    return Sample(run_id, evaluation, other_id)


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
            for row, title in enumerate(window.pages):
                window.nav.setCurrentRow(row)
                page = window.pages[title]
                prepare = PREPARE.get(title)
                if prepare is not None:
                    prepare(page, sample)
                wait_for(partial(_idle, page), f"{title} page")
                settle(0.3)  # the layouts of what was just shown (posted events) settle
                if on_page is not None:
                    on_page(window, title)
                path = out / file_name(title)
                if not window.grab().save(str(path)):
                    raise OSError(f"could not write {path}")
                files.append(path)
                say(f"  {title}: {path}")
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
    run_id = sample.run_id
    wait_for(lambda: page.runs.findData(run_id) >= 0 and not page.loading, "runs list")
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    wait_for(lambda: not page.loading and page.episodes.rowCount() > 0, "episode list")
    # among the best candidate's first episodes, the longest, shown at its second turn
    turns = page.episode_ids()[:20]
    rows = range(len(turns))
    row = max(rows, key=lambda r: int(page.episodes.item(r, 2).text()))
    page.episodes.selectRow(row)
    wait_for(lambda: page.replay is not None and not page.loading, "episode")
    if page.replay.n_turns > 1:
        page.replay.go(1)


def _tasks(page: Any, _sample: Sample) -> None:
    wait_for(lambda: page.suite_row("mixed") is not None, "suites list")
    page.select_suite("mixed")
    wait_for(lambda: page.suite is not None, "suite")
    page.select_task(page.suite.tasks[0].id)


def _evaluate(page: Any, sample: Sample) -> None:
    wait_for(lambda: not _busy(page) and not page.listing, "runs list")
    page.select_run(sample.run_id)
    page.show_result(sample.evaluation)


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
