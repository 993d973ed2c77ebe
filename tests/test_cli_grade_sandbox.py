"""``suites grade`` with untrusted answers: oversize answers are refused, program output
reaches the terminal without control characters, and without a sandbox code runs only on
an explicit opt-in (real CLI subprocesses, real sandboxes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TASK = {
    "id": "sq",
    "kind": "code",
    "prompt": "def sq(x):\n    pass\n",
    "tests": {
        "style": "humaneval",
        "entry_point": "sq",
        "test": "def check(candidate):\n    assert candidate(3) == 9\n",
    },
}


def grade(suite: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "workbench", "suites", "grade", str(suite), "sq", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture()
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(TASK) + "\n")
    return path


def test_oversize_answers_are_refused(suite: Path, tmp_path: Path) -> None:
    zero = grade(suite, "--answer-file", "/dev/zero")
    assert zero.returncode == 2 and "larger than 1,000,000 bytes" in zero.stderr, zero.stderr
    big = tmp_path / "big.md"
    big.write_text("x" * 2_000_000)
    assert "larger than" in grade(suite, "--answer-file", str(big)).stderr
    binary = tmp_path / "bin.md"
    binary.write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8 text" in grade(suite, "--answer-file", str(binary)).stderr


def test_program_output_reaches_the_terminal_without_control_characters(suite: Path) -> None:
    answer = (
        "import sys\n"
        "sys.stderr.write('\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\x00')\n"
        "def sq(x):\n"
        "    raise ValueError('\\x1b[2J')\n"
    )
    result = grade(suite, "--answer", answer)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("reward 0")
    for control in ("\x1b", "\x07", "\x9b", "\u202e", "\x00"):
        assert control not in result.stdout
    assert "pwned" in result.stdout  # the text stays, only the controls go


def test_without_a_sandbox_code_runs_only_when_allowed(suite: Path) -> None:
    # a PATH without bwrap: the machine has no isolation to offer
    no_bwrap = str(Path(sys.executable).parent)
    refused = grade(suite, "--answer", "def sq(x):\n    return x * x\n", path=no_bwrap)
    assert refused.returncode == 2
    assert "bubblewrap (bwrap) is not installed" in refused.stderr
    assert "--allow-unisolated" in refused.stderr
    allowed = grade(
        suite,
        "--answer",
        "def sq(x):\n    return x * x\n",
        "--allow-unisolated",
        "--json",
        path=no_bwrap,
    )
    assert allowed.returncode == 0, allowed.stderr
    graded = json.loads(allowed.stdout)
    assert graded["reward"] == 1.0 and graded["details"]["isolation"] == "none"
