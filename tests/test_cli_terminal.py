"""The README's first run in a real terminal of 80 x 24 (a pseudo-terminal,
tests/support/terminal.py), as a newcomer meets it: the sandbox example trained (a
shorter budget), then ``runs show``, ``eval`` and the demo episode. Every line it shows
fits 80 columns (a progress bar's redraws included), no log line shows without ``-v``, and
Ctrl-C stops a run, prints its id and the exact command that resumes it, and that command
resumes it to its end. Each command is a real process with the real offline model."""

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import platformdirs
import pytest
import tomli_w

from tests.support.terminal import ESCAPE, Session, run_in_terminal
from workbench.core.errors import EXIT_INTERRUPTED
from workbench.core.store import Store
from workbench.core.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "workbench/resources/examples/sandbox.toml"
CLI = os.path.join(os.path.dirname(sys.executable), "trinity-workbench")
LOG_LINE = re.compile(r"^(?:INFO|DEBUG)\b|\bINFO\b")


@pytest.fixture()
def home(tmp_path, monkeypatch):
    """A new home folder with its data folder, where the default workspace lives (for the
    commands and for this test's own look into it; paths under it show as ``~/...``, as a
    user's do); the model cache stays the machine's, where the offline model was converted
    once."""
    env = {
        "XDG_CACHE_HOME": platformdirs.user_cache_dir(),
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / ".local" / "share"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def example(tmp_path: Path, generations: int, **optimizer) -> Path:
    """The README's example with a shorter budget and smaller validation and test splits
    (and ``optimizer`` settings changed)."""
    config = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    config["budget"]["generations"] = generations
    config["tasks"].update(validation=10, test=10)
    config["optimizer"].update(optimizer)
    path = tmp_path / "sandbox.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return path


def terminal(*args: str, env: dict[str, str], **kwargs) -> Session:
    return run_in_terminal([CLI, *args], env=env, cwd=str(ROOT), timeout=1200, **kwargs)


def only_run(env: dict[str, str]) -> dict:
    listed = subprocess.run(
        [CLI, "runs", "list", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    (run,) = json.loads(listed.stdout)
    return run


def fits(session: Session, what: str) -> str:
    """What ``session`` showed, as one text, once it is known to fit 80 columns and to
    hold no log line."""
    assert session.wide_lines(80) == [], f"{what}: lines wider than 80 columns"
    logged = [line for line in session.screen_lines() if LOG_LINE.search(line)]
    assert logged == [], f"{what}: log lines without -v"
    return "\n".join(session.screen_lines())


def test_the_readme_first_run_fits_80_columns_and_shows_no_log_lines(tmp_path, home):
    trained = terminal("train", str(example(tmp_path, 3)), env=home)
    assert trained.status == 0, trained.text[-3000:]
    shown = fits(trained, "train")
    run_id = only_run(home)["id"]
    assert f'Training run {run_id[:8]}, "sandbox routing, ' in shown
    assert re.search(r"training .*━.* 1/3 generations \d:\d\d ", shown)  # the bar, drawn
    assert f"Done: run {run_id[:8]} trained 3 generations" in shown
    assert f"Next: trinity-workbench eval --run {run_id[:8]}" in shown

    shown = fits(terminal("runs", "show", run_id[:8], env=home), "runs show")
    assert "gen  best   mean   worst  validation  episodes  wall" in shown

    evaluated = terminal("eval", "--run", run_id[:8], env=home)
    assert evaluated.status == 0, evaluated.text[-3000:]
    shown = fits(evaluated, "eval")
    assert re.search(r"evaluating .* \d+/\d+ episodes", shown)
    assert "$ / query: simulated dollars" in shown

    played = terminal("run-episode", "--run", run_id[:8], "--task", "mixed-math-001", env=home)
    assert played.status == 0, played.text[-3000:]
    shown = fits(played, "run-episode")
    assert "playing task mixed-math-001" in shown
    assert re.search(r"^1 +worker +sandbox:\w+ +\d\.\d\d ", shown, re.M)
    assert "reward: " in shown and "grader: " in shown


def test_ctrl_c_stops_a_run_and_prints_the_command_that_resumes_it(tmp_path, home):
    # smaller generations, and no search basis to read tasks for first: the run reaches
    # its second generation sooner
    config = example(tmp_path, 5, popsize=8, rollouts=4, search_basis="identity")
    # Ctrl-C once the first generation is stored: the second one is in flight
    stopped = terminal(
        "train",
        str(config),
        env=home,
        interrupt_when=lambda text: "1/5 generations" in ESCAPE.sub("", text),
    )
    assert stopped.status == EXIT_INTERRUPTED, stopped.text[-3000:]
    shown = fits(stopped, "a stopped train")
    run = only_run(home)
    short = run["id"][:8]
    assert run["status"] == "stopped" and 1 <= run["generations"] < 5
    assert f"Stopped. Run {short} saved at generation {run['generations']} of 5." in shown
    resume = f"trinity-workbench train --resume {short}"
    assert f"Resume: {resume}\n" in shown + "\n"

    argv = shlex.split(resume)
    resumed = terminal(*argv[1:], env=home)
    assert resumed.status == 0, resumed.text[-3000:]
    shown = fits(resumed, "the resumed train")
    assert f"Resuming run {short} at generation {run['generations'] + 1}" in shown
    with Store.open(Workspace.open()) as store:  # the default one, in the new data folder
        generations = [g["generation"] for g in store.generations(run["id"])]
        assert store.get_run(run["id"]).status == "finished"
    assert generations == [0, 1, 2, 3, 4]  # each once: none repeated, none skipped


def test_a_budget_spent_before_the_first_generation_says_so_and_how_to_resume(tmp_path, home):
    """Fitting the search basis (its calibration episodes, the backbone's features) is
    training time: a minutes budget it uses up ends the run with no generation, and the
    command says so and prints the one that resumes it with a larger budget, not an
    ``eval`` that would refuse a run without a generation."""
    config = example(tmp_path, 2)
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    data["budget"]["minutes"] = 0.0001  # 6 ms: less than the basis takes
    config.write_text(tomli_w.dumps(data), encoding="utf-8")
    # in the config's folder, as a user types it (a long path would not fit 80 columns)
    ended = run_in_terminal([CLI, "train", config.name], env=home, cwd=str(tmp_path))
    assert ended.status == 0, ended.text[-3000:]
    shown = fits(ended, "a train its budget ended first")
    run = only_run(home)
    short = run["id"][:8]
    assert run["generations"] == 0 and run["stop_reason"] == "budget.minutes", run
    assert f"Done: run {short} trained 0 generations (budget.minutes)." in shown
    assert "The work before the first generation used its budget.minutes" in shown
    assert "eval" not in shown
    resume = f"trinity-workbench train {config.name} --resume {short}"
    assert f"Resume: {resume}\n" in shown + "\n"

    data["budget"]["minutes"] = 30
    config.write_text(tomli_w.dumps(data), encoding="utf-8")
    resumed = run_in_terminal([CLI, *shlex.split(resume)[1:]], env=home, cwd=str(tmp_path))
    assert resumed.status == 0, resumed.text[-3000:]
    with Store.open(Workspace.open()) as store:
        generations = [g["generation"] for g in store.generations(run["id"])]
        minutes = store.get_run(run["id"]).run_result().spend["minutes"]
    assert generations == [0, 1]
    assert minutes * 60 > 0.006  # the basis's time counted, with the generations'
