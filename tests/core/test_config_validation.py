"""Run-config validation (issue 18): every bad value is refused before anything is stored,
all problems of a file at once, each naming its key and the fix; whatever a config file
or table holds, loading it answers with a ``ConfigError`` or a config, never a traceback
(fuzzed in tests/core/test_config_fuzz.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from workbench.core.config import ConfigError, RunConfig
from workbench.core.store import Store
from workbench.core.workspace import Workspace

# the values the issue found accepted (or crashing later), one key each
BAD = {
    "optimizer": {
        "popsize": 2,  # pycma: "unused injected direction" in generation 2
        "sigma0": float("inf"),
        "learning_rate": float("nan"),
    },
    "protocol": {"temperature": float("inf")},
    "backbone": {"device": "bogus"},  # was a torch traceback
}


def test_every_bad_value_is_reported_at_once_with_its_key():
    with pytest.raises(ConfigError) as caught:
        RunConfig.from_dict(BAD, "bad.toml")
    keys = [p.split(":")[1].strip() for p in caught.value.problems]
    assert sorted(keys) == sorted(
        [
            "optimizer.popsize",
            "optimizer.sigma0",
            "optimizer.learning_rate",
            "protocol.temperature",
            "backbone.device",
        ]
    )
    assert all(p.startswith("bad.toml: ") for p in caught.value.problems)
    message = str(caught.value)
    assert "at least 3" in message and "finite" in message and "use auto, cpu" in message


def test_the_paper_options_are_listed_with_every_other_problem():
    """The shaping and SVF rules join the others in one list, one line a key: a negative
    turn penalty is pointed to turn_bonus (not also told its bounds), a turn bonus beside
    a turn penalty, SVF on an optimizer that cannot search it and an out-of-range
    diversity bonus are all reported with a bad temperature, at once."""
    bad = {
        "optimizer": {
            "name": "reinforce",
            "svf": True,
            "turn_penalty": -0.1,
            "turn_bonus": 0.1,
            "diversity_bonus": 2.0,
        },
        "protocol": {"temperature": 9.0},
    }
    with pytest.raises(ConfigError) as caught:
        RunConfig.from_dict(bad, "bad.toml")
    problems = [p.removeprefix("bad.toml: ") for p in caught.value.problems]
    by_key = sorted(p.split(": ")[0] for p in problems)
    assert by_key == [
        "optimizer.diversity_bonus",
        "optimizer.svf",
        "optimizer.turn_bonus and optimizer.turn_penalty",
        "optimizer.turn_penalty",
        "protocol.temperature",
    ], problems
    assert "set optimizer.turn_bonus instead" in str(caught.value)
    assert "reinforce cannot search SVF offsets" in str(caught.value)


@pytest.mark.parametrize(
    ("section", "key", "value", "says"),
    [
        ("optimizer", "popsize", 2, "at least 3"),
        ("optimizer", "popsize", 1, "at least 3"),
        ("optimizer", "sigma0", float("inf"), "finite"),
        ("optimizer", "sigma0", float("nan"), "finite"),
        ("optimizer", "sigma0", float("-inf"), "finite"),
        ("optimizer", "learning_rate", float("inf"), "finite"),
        ("optimizer", "learning_rate", float("nan"), "finite"),
        ("optimizer", "cost_penalty", float("inf"), "finite"),
        ("protocol", "temperature", float("inf"), "finite"),
        ("protocol", "temperature", float("nan"), "finite"),
        ("protocol", "temperature", 2.5, "from 0 to 2"),
        ("budget", "dollars", float("nan"), "finite"),
        ("budget", "minutes", float("inf"), "finite"),
        ("budget", "generations", 10**4000, "out of range"),
        ("protocol", "max_tokens", 2**31 - 1, "from 1 to 1,000,000"),
        ("protocol", "max_tokens", 0, "from 1 to"),
        ("backbone", "device", "bogus", "unknown device"),
        ("backbone", "device", "cuda:x", "unknown device"),
        ("backbone", "device", "", "unknown device"),
        ("run", "name", "x" * 300, "1 to 200 printable"),
        ("run", "name", "a\nb", "printable"),
        # pycma seeds with run.seed + 1: -1 gave a clock-seeded (unrepeatable) run, -2 and
        # below a ValueError traceback after the run was stored
        ("run", "seed", -1, "negative"),
        ("run", "seed", -2, "negative"),
        ("pool", "workers", [""], "empty worker id"),
        ("tasks", "suite", " ", "name a suite"),
    ],
)
def test_one_bad_value_names_its_key_and_the_fix(section, key, value, says):
    with pytest.raises(ConfigError, match=rf"{section}\.{key}: .*{says}"):
        RunConfig.from_dict({section: {key: value}})


def test_popsize_2_is_refused_for_sep_cma_es_only():
    """pycma fails in generation 2 with two candidates; the baselines run with two."""
    for name in ("random-search", "reinforce", "imitation"):
        config = RunConfig.from_dict({"optimizer": {"name": name, "popsize": 2}})
        assert config.optimizer.popsize == 2
    with pytest.raises(ConfigError, match="too small for sep-cma-es"):
        RunConfig.from_dict({"optimizer": {"name": "sep-cma-es", "popsize": 2}})


def test_good_devices_pass_validation():
    for device in ("auto", "cpu", "cuda", "cuda:1", "mps"):
        assert RunConfig.from_dict({"backbone": {"device": device}}).backbone.device == device


def test_config_paths_that_are_not_config_files(tmp_path):
    with pytest.raises(ConfigError, match="is a folder: give the .toml file inside it"):
        RunConfig.load(tmp_path)
    with pytest.raises(ConfigError, match="not found"):
        RunConfig.load(tmp_path / "missing.toml")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[run]\nname = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        RunConfig.load(latin)
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        RunConfig.load(fifo)  # would block forever if it were opened
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(ConfigError, match=str(deep)):
        RunConfig.load(deep)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_train_refuses_a_bad_config_before_anything_is_stored(tmp_path):
    """The issue's case: popsize 2, infinite sigma0 ... once gave a failed run in the store."""
    config = tmp_path / "bad.toml"
    config.write_text(tomli_w.dumps(BAD))
    ws = tmp_path / "ws"
    out = _cli("train", str(config), "--workspace", str(ws))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    for key in ("optimizer.popsize", "optimizer.sigma0", "protocol.temperature", "backbone.device"):
        assert key in out.stderr
    assert not ws.exists() or not (ws / "workbench.db").exists() or _no_runs(ws)
    folder = _cli("train", str(tmp_path), "--workspace", str(ws))
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    assert "Traceback" not in folder.stderr


def _no_runs(root: Path) -> bool:
    with Store.open(Workspace.open(root)) as store:
        return store.list_runs(kind=None) == []


def test_a_pool_naming_a_missing_local_model_is_refused_before_the_run_is_stored(
    tmp_path, tiny_backbone
):
    """Before: the run 'finished' with reward 0 and tracebacks on stderr."""
    from workbench.core.jobs.train import train
    from workbench.core.models import ModelSourceError

    config = RunConfig.from_dict(
        {
            "pool": {"workers": ["sandbox:mathlete", f"local:{tmp_path / 'no-such-model'}"]},
            "tasks": {"suite": "arithmetic", "train": 4, "validation": 2, "test": 2},
            "budget": {"generations": 1},
            "cache": {"policy": "off"},
        }
    )
    ws = Workspace.open(tmp_path / "ws")
    with pytest.raises(ModelSourceError, match=r"worker 'local:.*no-such-model' cannot serve"):
        train(config, ws, backbone=tiny_backbone)
    assert _no_runs(ws.root)


def test_train_with_a_missing_local_model_is_a_usage_error_and_stores_nothing(tmp_path):
    """Exit 2 like every other mistake in a config (it was 1, the code of a failed run)."""
    config = tmp_path / "missing.toml"
    config.write_text(
        tomli_w.dumps(
            {
                "pool": {"workers": ["sandbox:mathlete", f"local:{tmp_path / 'no-such-model'}"]},
                "tasks": {"suite": "arithmetic", "train": 4, "validation": 2, "test": 2},
                "budget": {"generations": 1},
            }
        )
    )
    ws = tmp_path / "ws"
    out = _cli("train", str(config), "--workspace", str(ws))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert "no-such-model" in out.stderr and "take it out of the pool" in out.stderr
    assert not ws.exists() or _no_runs(ws)


def test_a_config_saved_with_a_byte_order_mark_loads(tmp_path):
    """Windows Notepad writes one; TOML readers call it an invalid statement."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b'\xef\xbb\xbf[run]\nname = "bom"\n')
    assert RunConfig.load(path).run.name == "bom"


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        (
            {"budget": {"generations": 60}, "optimizer": {"exploring_starts": 60}},
            "fewer generations than an attempt has \\(60",
        ),
        (
            {"budget": {"generations": 60}, "optimizer": {"exploring_starts": 30, "restarts": 1}},
            "an attempt has \\(30",
        ),
        ({"optimizer": {"exploring_starts": -1}}, "-1 is negative: use 0 or more; 0 means off"),
        (
            {"optimizer": {"exploring_starts": 10, "name": "reinforce"}},
            "reinforce follows its own policy's gradient",
        ),
        (
            {"optimizer": {"exploring_starts": 10, "name": "imitation"}},
            "only sep-cma-es and random-search",
        ),
        (
            {"optimizer": {"exploring_starts": 10}, "protocol": {"max_turns": 1}},
            "max_turns = 1 the opening is the whole episode",
        ),
    ],
)
def test_exploring_starts_are_refused_where_they_cannot_work(changes, says):
    with pytest.raises(ConfigError, match=rf"optimizer\.exploring_starts: .*{says}"):
        RunConfig.from_dict(changes)
    good = RunConfig.from_dict(
        {"optimizer": {"exploring_starts": 29, "restarts": 1}, "budget": {"generations": 60}}
    )
    assert good.optimizer.exploring_starts == 29


def test_every_keys_help_says_more_than_its_label():
    """The run form shows a key's label beside its field and its help in the tooltip: a
    help that only repeats the label tells the user nothing more."""
    from workbench.core.config import config_keys

    repeated = [
        k.dotted
        for k in config_keys()
        if k.key.help.rstrip(".").strip().lower() == k.key.label.strip().lower()
    ]
    assert repeated == [], "say in these keys' help what the label does not: " + ", ".join(repeated)
