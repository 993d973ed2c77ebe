"""Every figure on a Results page (and in the README's results table) comes from a results
file docs/results/data/<name>.json that names the command, commit, machine and date that
produced it: the pages render from those files (docs_hooks/results.py), and a page that
quotes a number its files do not hold fails here."""

from __future__ import annotations

import datetime
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "results" / "data"
RESULTS_PAGES = sorted((ROOT / "docs" / "results").glob("*.md"))
DATA_FILES = sorted(DATA.glob("*.json"))

_spec = importlib.util.spec_from_file_location("docs_results_hook", ROOT / "docs_hooks/results.py")
assert _spec and _spec.loader
hook = importlib.util.module_from_spec(_spec)
sys.modules["docs_results_hook"] = hook
_spec.loader.exec_module(hook)

# A number as prose writes it: 0.858, 1,024, 95 (of 95%); not the digits inside a word
# (bf16, SmolLM2, 135M) or a version's tail.
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
COMMENT = re.compile(r"<!--.*?-->", re.S)
# what is no measured figure: a date (prices as of 2024-06-01) and an interval's confidence
# level (95% Wilson interval, [95% CI], 95% paired bootstrap)
ISO_DATE = re.compile(r"(?<![\w.-])\d{4}-\d{2}-\d{2}(?![\w-])")
CONFIDENCE_LEVEL = re.compile(
    r"(?<![\w.])\d{2}(?:\.\d+)?% (?=(?:Wilson|CI|bootstrap|paired|normal|intervals?)\b)"
)


def numbers_in(text: str) -> list[str]:
    """The numbers a piece of Markdown quotes, outside code, link targets and comments, and
    not counting dates and confidence levels."""
    for pattern in (FENCE, COMMENT, CODE, LINK_TARGET, ISO_DATE, CONFIDENCE_LEVEL):
        text = pattern.sub(" ", text)
    return [m.group(0) for m in NUMBER.finditer(text)]


def held_numbers(data: object) -> list[float]:
    """Every number a results file holds: its numeric values and the numbers in its text."""
    found: list[float] = []
    if isinstance(data, bool):
        return found
    if isinstance(data, (int, float)):
        found.append(float(data))
    elif isinstance(data, str):
        found += [float(n.replace(",", "")) for n in numbers_in(data)]
    elif isinstance(data, dict):
        for value in data.values():
            found += held_numbers(value)
    elif isinstance(data, list):
        for value in data:
            found += held_numbers(value)
    return found


def is_held(quoted: str, held: list[float]) -> bool:
    """A quoted number matches a held one shown to the quoted number's decimals."""
    value = float(quoted.replace(",", ""))
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    return any(round(h, decimals) == value for h in held)


def unheld_numbers(markdown: str, data_dir: Path = DATA) -> tuple[list[str], set[str]]:
    """The numbers a page quotes outside its placeholders that none of its files hold."""
    _, names = hook.render(markdown, data_dir)
    held: list[float] = []
    for name in names:
        held += held_numbers(hook.load(name, data_dir))
    outside = hook.without_placeholders(markdown)
    return [n for n in numbers_in(outside) if not is_held(n, held)], names


def test_there_are_results_files_and_pages():
    assert DATA_FILES, "no results files under docs/results/data/"
    assert RESULTS_PAGES


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_each_results_file_names_its_command_commit_machine_and_date(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("command", "commit", "machine", "date", "figures"):
        assert data.get(key), f"{path.name}: no {key}"
    datetime.date.fromisoformat(data["date"])
    commit = data["commit"].removesuffix("+dirty")
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True
    )
    assert known.returncode == 0, f"{path.name}: commit {commit} is not in this repository"
    assert held_numbers(data["figures"]), f"{path.name}: its figures hold no number"
    # the command runs something in the repository: a script here, or the CLI
    scripts = re.findall(r"(?:[\w.-]+/)+[\w.-]+\.py\b", data["command"])
    missing = [s for s in scripts if not (ROOT / s).is_file()]
    assert not missing, f"{path.name}: its command names scripts that are not here: {missing}"
    assert scripts or "trinity-workbench" in data["command"].split(), (
        f"{path.name}: {data['command']!r} names no script of this repository nor the CLI"
    )


@pytest.mark.parametrize("page", RESULTS_PAGES, ids=lambda p: p.name)
def test_each_results_page_quotes_only_numbers_its_files_hold(page):
    markdown = page.read_text(encoding="utf-8")
    unheld, names = unheld_numbers(markdown)
    assert names, f"{page.name} quotes no results file"
    for name in names:
        assert f"{{{{ provenance {name} }}}}" in markdown, (
            f"{page.name} quotes {name}.json without showing where it comes from"
        )
    assert not unheld, f"{page.name} quotes numbers that none of {sorted(names)} holds: {unheld}"


def test_every_page_with_placeholders_renders():
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        if hook.placeholders(text):
            rendered, _ = hook.render(text)
            assert not hook.placeholders(rendered), page


def test_a_number_missing_from_the_file_is_caught(tmp_path):
    (tmp_path / "x.json").write_text(
        json.dumps(
            {
                "command": "python tests/benchmarks/bench_x.py --out x.json",
                "commit": "abc1234",
                "machine": "a CPU",
                "date": "2026-12-05",
                "figures": {"reward": 0.8, "low": 0.682, "runs": [{"minutes": 2.4}]},
            }
        )
    )
    page = "{{ provenance x }}\n\nReward {{ x.figures.reward | .3f }}, low 0.682, {} min."
    assert unheld_numbers(page.replace("{}", "2.4"), tmp_path)[0] == []
    assert unheld_numbers(page.replace("{}", "2.5"), tmp_path)[0] == ["2.5"]
    assert unheld_numbers("{{ provenance x }} about 0.80 and `--seeds 7`", tmp_path)[0] == []
    assert unheld_numbers("{{ provenance x }} about 0.783", tmp_path)[0] == ["0.783"]
    # a date and a confidence level are no figures; a percentage is one
    dated = "{{ provenance x }} prices of 2024-06-01, a 95% Wilson interval [95% CI], 95% right"
    assert unheld_numbers(dated, tmp_path)[0] == ["95"]
    rendered, names = hook.render(page.replace("{}", "1"), tmp_path)
    assert "Reward 0.800" in rendered and "`abc1234`" in rendered and names == {"x"}
    table = hook.render("{{ provenance x }}\n{{ table x figures.runs | .2f }}", tmp_path)[0]
    assert "| minutes |\n|---|\n| 2.40 |" in table
    # a placeholder in code is an example, shown as written
    example = "`{{ y.figures.reward }}` and\n```\n{{ provenance y }}\n```\n"
    assert hook.render(example, tmp_path) == (example, set())
    with pytest.raises(hook.ResultsError, match="holds no 'figures.nothing'"):
        hook.render("{{ x.figures.nothing }}", tmp_path)
    with pytest.raises(hook.ResultsError, match="no results file"):
        hook.render("{{ provenance y }}", tmp_path)


def test_percentages_points_and_keys_with_dots(tmp_path):
    (tmp_path / "c.json").write_text(
        json.dumps(
            {
                "command": "python tests/benchmarks/bench_x.py",
                "commit": "abc1234",
                "machine": "a CPU",
                "date": "2026-12-05",
                "figures": {
                    "alone/gpt-3.5/accuracy": 0.2259,
                    "alone/gpt-3.5/ci": [0.1801, 0.2795],
                    "cv/coordinator/vs_best/difference": -0.0074,
                    "cv/oracle of the four/vs_best/difference": 0.1333,
                    "gpt-3": {"5": 1},
                },
            }
        )
    )
    page = (
        "{{ provenance c }} {{ c.figures.alone/gpt-3.5/accuracy | .1% }} "
        "[{{ c.figures.alone/gpt-3.5/ci.0 | points }}, "
        "{{ c.figures.alone/gpt-3.5/ci.1 | points .1f }}]; "
        "{{ c.figures.cv/coordinator/vs_best/difference | points +.1f }} and "
        "{{ c.figures.cv/oracle of the four/vs_best/difference | points +.1f }} points; "
        "{{ c.figures.gpt-3.5 }}"
    )
    rendered = hook.render(page, tmp_path)[0]
    assert rendered.endswith(" 22.6% [18.0, 28.0]; -0.7 and +13.3 points; 1")
    assert unheld_numbers(page, tmp_path)[0] == []
    with pytest.raises(hook.ResultsError, match="holds no 'figures.alone/gpt-3.6/accuracy'"):
        hook.render("{{ c.figures.alone/gpt-3.6/accuracy | .1% }}", tmp_path)
    with pytest.raises(hook.ResultsError, match="not one value"):
        hook.render("{{ c.figures.gpt-3 | points }}", tmp_path)


def readme_results_rows() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Results so far", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")][2:]


def test_readme_results_rows_link_their_page_and_quote_its_files():
    rows = readme_results_rows()
    assert len(rows) >= 2
    for row in rows:
        links = re.findall(r"\]\((docs/[^)#]+\.md)", row)
        assert links, f"README results row links no page: {row}"
        page = ROOT / links[-1]
        assert page.is_file(), f"README results row links a missing page: {links[-1]}"
        # the README has no placeholders (GitHub shows it as written): each number of a
        # row must be held by the results files that its page quotes
        _, names = hook.render(page.read_text(encoding="utf-8"))
        held: list[float] = []
        for name in names:
            held += held_numbers(hook.load(name))
        quoted = numbers_in(row)
        assert not quoted or names, f"{links[-1]} quotes no results file, yet the row has {quoted}"
        missing = [n for n in quoted if not is_held(n, held)]
        assert not missing, f"README row quotes {missing}, not held by {sorted(names)}: {row}"


def test_write_results_names_command_commit_machine_and_date(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "benchmark_results", ROOT / "tests/benchmarks/results.py"
    )
    assert spec and spec.loader
    results = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(results)
    script = str(ROOT / "tests/benchmarks/bench_x.py")
    monkeypatch.setattr(sys, "argv", [script, "--out", "docs/results/data/x.json", "--n", "3"])
    path = results.write_results(tmp_path / "x.json", {"reward": 0.8}, systems=[{"a": 1}])
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["command"] == (
        "python tests/benchmarks/bench_x.py --out docs/results/data/x.json --n 3"
    )
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert data["commit"].removesuffix("+dirty") == head
    assert "cores" in data["machine"] and "GiB" in data["machine"]
    assert data["date"] == datetime.datetime.now(datetime.UTC).date().isoformat()
    assert data["figures"] == {"reward": 0.8} and data["systems"] == [{"a": 1}]
    with pytest.raises(ValueError, match="the file's own keys"):
        results.write_results(tmp_path / "y.json", {}, commit="abc")
