"""Every measured figure the documentation quotes comes from a results file
docs/results/data/<name>.json that names the command, commit, machine and date that
produced it: the pages render from those files (docs_hooks/results.py), and a page that
quotes a number its files do not hold fails here.

What is checked:

- a Results page (docs/results/*.md): every number on it, outside code, link targets,
  comments, dates and confidence levels;
- any other docs page (a guide, the Start page, Development pages): each **measured
  section** of it, a section (heading to next heading) that holds a placeholder or whose
  heading says it reports measurements ("## Figures", "### Measured: ..."); its numbers
  must be held by the files that section quotes. A measured figure is written in such a
  section; the other sections state no measurement: config defaults, limits, prices with
  their date and the paper's published figures (docs/METHOD.md) stay text there. A
  published figure that a measured section compares against is put in the results file
  under a key that names its source (``champ_paper/gpt-4-turbo``);
- every file a page quotes has its provenance box on that page;
- the README's results rows, against the files of the page each row links.

When a number is held (``is_held``): a number with decimals (0.783, 17.5) is held by a
value that shows as it when rounded to those decimals; a whole number (5, 235) is held by a
value equal to it, or, when it is 10 or more, by a non-integer it is the rounding of
(235 of 234.6: rounding to a whole number then moves a figure by at most 5%). Below 10 a
whole number must be held exactly: "5" is not held by 4.6 or 5.4, which would make any
small count pass."""

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
OTHER_PAGES = sorted(
    p for p in (ROOT / "docs").rglob("*.md") if not p.is_relative_to(ROOT / "docs" / "results")
)
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
    """A quoted number matches a held one (the rule: this module's docstring). With
    decimals: a held value rounded to them. Whole: a held value equal to it, or, from 10
    up, a held non-integer that rounds to it."""
    value = float(quoted.replace(",", ""))
    if "." in quoted:
        decimals = len(quoted.split(".")[1])
        return any(round(h, decimals) == value for h in held)
    return any(h == value or (value >= 10 and round(h) == value) for h in held)


def unheld_numbers(markdown: str, data_dir: Path = DATA) -> tuple[list[str], set[str]]:
    """The numbers a page quotes outside its placeholders that none of its files hold."""
    names = hook.quoted(markdown, data_dir)
    held: list[float] = []
    for name in names:
        held += held_numbers(hook.load(name, data_dir))
    outside = hook.without_placeholders(markdown)
    return [n for n in numbers_in(outside) if not is_held(n, held)], names


HEADING = re.compile(r"^#{1,6} ", re.M)
# a heading that says its section reports measurements
MEASURED_HEADING = re.compile(r"\A#{1,6} (?:.*\W)?(?:Figures|Measured)\b")


def sections(markdown: str) -> list[str]:
    """The page cut at its headings (a heading inside fenced code is none)."""
    masked = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), markdown)
    starts = [0, *(m.start() for m in HEADING.finditer(masked)), len(markdown)]
    return [markdown[a:b] for a, b in zip(starts, starts[1:], strict=False) if b > a]


def measured_sections(markdown: str) -> list[str]:
    """The sections of a page that quote a results file or whose heading says they report
    measurements."""
    return [s for s in sections(markdown) if hook.placeholders(s) or MEASURED_HEADING.match(s)]


def unheld_in_sections(markdown: str, data_dir: Path = DATA) -> tuple[list[str], set[str]]:
    """The numbers a page's measured sections quote that the files each section quotes do
    not hold, and the files the page quotes."""
    unheld: list[str] = []
    names: set[str] = set()
    for section in measured_sections(markdown):
        missing, quoted = unheld_numbers(section, data_dir)
        heading = section.splitlines()[0] if section.startswith("#") else "(page start)"
        unheld += [f"{n} ({heading})" for n in missing]
        names |= quoted
    return unheld, names


MEASURED_PAGES = [p for p in OTHER_PAGES if measured_sections(p.read_text(encoding="utf-8"))]


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
        assert hook.quotes_provenance(markdown, name), (
            f"{page.name} quotes {name}.json without showing where it comes from"
        )
    assert not unheld, f"{page.name} quotes numbers that none of {sorted(names)} holds: {unheld}"


@pytest.mark.parametrize("page", MEASURED_PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_each_measured_section_of_a_page_quotes_only_numbers_its_files_hold(page):
    markdown = page.read_text(encoding="utf-8")
    unheld, names = unheld_in_sections(markdown)
    for name in names:
        assert hook.quotes_provenance(markdown, name), (
            f"{page.name} quotes {name}.json without showing where it comes from"
        )
    assert not unheld, f"{page.name} quotes numbers its results files do not hold: {unheld}"


def test_the_guides_that_quote_measurements_are_checked():
    checked = {p.relative_to(ROOT / "docs").as_posix() for p in MEASURED_PAGES}
    guides = ("serving", "training", "grading", "code-sandbox", "ray", "headroom-and-cost")
    for page in (f"guides/{name}.md" for name in guides):
        assert page in checked


def test_a_measured_section_is_checked_and_other_sections_are_not(tmp_path):
    (tmp_path / "x.json").write_text(
        json.dumps(
            {
                "command": "python tests/benchmarks/bench_x.py --out x.json",
                "commit": "abc1234",
                "machine": "a CPU",
                "date": "2026-12-05",
                "figures": {"reward": 0.8, "turns": 5, "minutes": 4.6},
            }
        )
    )
    page = (
        "# Guide\n\nA body cap of 1 MiB, a 30 s timeout.\n\n"
        "## Figures\n\n{{ provenance x }}\n\nReward {{ x.figures.reward }} in 5 turns{}.\n\n"
        "## Limits\n\nAt most 256 connections.\n"
    )
    assert unheld_in_sections(page.replace("{}", ""), tmp_path) == ([], {"x"})
    # a figure written by hand in the measured section, not held by its file
    assert unheld_in_sections(page.replace("{}", ", 0.783 before"), tmp_path)[0] == [
        "0.783 (## Figures)"
    ]
    # a section whose heading says it is measured needs a file for its numbers
    measured = "# G\n\nUp to 64 processes.\n\n### Measured: speed\n\n1,080 answers in 10 s.\n"
    assert unheld_in_sections(measured, tmp_path)[0] == [
        "1,080 (### Measured: speed)",
        "10 (### Measured: speed)",
    ]
    # a heading inside fenced code cuts nothing
    fenced = "## Figures\n\n{{ provenance x }}\n\n```\n# not a heading\n```\n\nIn 7 turns.\n"
    assert unheld_in_sections(fenced, tmp_path)[0] == ["7 (## Figures)"]


def test_a_small_whole_number_must_be_held_exactly():
    # 5 is not held by 4.6 or 5.4 (any small count would pass); 5 and 5.0 hold it
    assert not is_held("5", [4.6, 5.4])
    assert is_held("5", [5]) and is_held("5", [5.0])
    # from 10 up a whole number may round a measurement: 235 s of 234.6 s
    assert is_held("235", [234.6]) and not is_held("235", [234.4])
    assert not is_held("9", [9.4]) and is_held("10", [9.6])
    # decimals: the held value rounded to the quoted decimals
    assert is_held("0.80", [0.8]) and is_held("17.5", [17.46]) and not is_held("17.5", [17.44])


def test_a_wrong_small_count_on_a_page_is_caught(tmp_path):
    (tmp_path / "x.json").write_text(
        json.dumps(
            {
                "command": "python tests/benchmarks/bench_x.py --out x.json",
                "commit": "abc1234",
                "machine": "a CPU",
                "date": "2026-12-05",
                "figures": {"turns": 5, "seconds": 4.6},
            }
        )
    )
    assert unheld_numbers("{{ provenance x }} at most 5 turns", tmp_path)[0] == []
    # before: 4.6 rounded to 5 and "held" a wrong count of 4.6's neighbour
    assert unheld_numbers("{{ provenance x }} at most 5 turns, 4.6 s", tmp_path)[0] == []
    assert unheld_numbers("{{ provenance x }} in 4 turns", tmp_path)[0] == ["4"]
    (tmp_path / "y.json").write_text((tmp_path / "x.json").read_text().replace('"turns": 5, ', ""))
    assert unheld_numbers("{{ provenance y }} at most 5 turns", tmp_path)[0] == ["5"]


def shown(markdown: str) -> str:
    """What a reader sees of a page's value figures: their text, without the markers."""
    return re.sub(r'<span data-figure="[^"]*">(.*?)</span>', r"\1", markdown)


def test_every_page_holds_its_figures_as_its_results_files_say():
    """A page a reader opens (under docs/, the README) holds its figures written in, as
    the results files hold them now: ``python docs_hooks/results.py`` writes them, and a
    page left behind by a new results file or a hand edit is caught here."""
    stale = [str(p.relative_to(ROOT)) for p in hook.render_pages(hook.pages())]
    assert not stale, f"not current: {stale}: run python docs_hooks/results.py"
    checked = subprocess.run(
        [sys.executable, "docs_hooks/results.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_no_placeholder_reaches_a_reader():
    """No ``{{ ... }}`` outside code on a page under docs/ or in the README: a reader of the
    file (the repository's web page, an editor) would see it instead of the figure."""
    raw = {
        str(p.relative_to(ROOT)): found
        for p in hook.pages()
        if (found := hook.raw_placeholders(p.read_text(encoding="utf-8")))
    }
    assert raw == {}, f"placeholders a reader would see (run python docs_hooks/results.py): {raw}"


def page_file(tmp_path):
    (tmp_path / "x.json").write_text(
        json.dumps(
            {
                "command": "python tests/benchmarks/bench_x.py --out x.json",
                "commit": "abc1234",
                "machine": "a CPU",
                "date": "2026-12-05",
                "figures": {"reward": 0.8, "low": 0.6824, "turns": 5, "runs": [{"minutes": 2.4}]},
            }
        )
    )
    return (
        "# Page\n\n{{ provenance x }}\n\nThe coordinator scored\n{{ x.figures.reward | .3f }}"
        " in {{ x.figures.turns }} turns.\n\n| what | low |\n|---|---|\n"
        "| reward | {{ x.figures.low | .3f }} |\n\n{{ table x figures.runs | .1f }}\n\n"
        "An example: `{{ x.figures.reward }}`.\n"
    )


def test_a_page_with_placeholders_is_written_once_and_then_current(tmp_path):
    from markdown_it import MarkdownIt

    page = page_file(tmp_path)
    written, names = hook.render(page, tmp_path, "data")
    assert names == {"x"} and hook.raw_placeholders(written) == []
    assert hook.render(written, tmp_path, "data") == (written, {"x"})  # current: unchanged
    assert "scored\n0.800 in 5 turns." in shown(written)
    assert "`{{ x.figures.reward }}`" in written  # an example in code stays as written
    assert '| reward | <span data-figure="x.figures.low \\| .3f">0.682</span> |' in written
    assert "| minutes |\n|---|\n| 2.4 |" in written
    assert "<!-- figure: provenance x -->\n\n!!! info" in written
    assert "[`x.json`](data/x.json)" in written
    # as CommonMark (the repository's web page) reads it: each figure inside its
    # paragraph or cell, the table row of two cells, no marker shown as text
    html = MarkdownIt("commonmark").enable("table").render(written)
    assert "<p>The coordinator scored\n" in html and "0.800</span> in" in html
    assert "<td>reward</td>\n<td>" in html and "&lt;span" not in html
    assert hook.placeholders(written) == hook.placeholders(page)


def test_a_new_results_file_or_a_hand_edit_makes_a_page_stale(tmp_path):
    written, _ = hook.render(page_file(tmp_path), tmp_path, "data")
    data = json.loads((tmp_path / "x.json").read_text())
    data["figures"]["reward"] = 0.85
    (tmp_path / "x.json").write_text(json.dumps(data))
    again, _ = hook.render(written, tmp_path, "data")
    assert again != written and "scored\n0.850 in" in shown(again)
    edited = again.replace(">0.850<", ">0.9<")
    assert hook.render(edited, tmp_path, "data")[0] == again  # the file's figure, not the edit


def test_a_block_placeholder_must_stand_alone_on_its_line(tmp_path):
    page_file(tmp_path)
    with pytest.raises(hook.ResultsError, match="alone on its line"):
        hook.render("See {{ provenance x }} here.", tmp_path)


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
    assert "Reward 0.800" in shown(rendered) and "`abc1234`" in rendered and names == {"x"}
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
        "{{ provenance c }}\n\n{{ c.figures.alone/gpt-3.5/accuracy | .1% }} "
        "[{{ c.figures.alone/gpt-3.5/ci.0 | points }}, "
        "{{ c.figures.alone/gpt-3.5/ci.1 | points .1f }}]; "
        "{{ c.figures.cv/coordinator/vs_best/difference | points +.1f }} and "
        "{{ c.figures.cv/oracle of the four/vs_best/difference | points +.1f }} points; "
        "{{ c.figures.gpt-3.5 }}"
    )
    rendered = shown(hook.render(page, tmp_path)[0])
    assert rendered.endswith("\n22.6% [18.0, 28.0]; -0.7 and +13.3 points; 1")
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
        names = hook.quoted(page.read_text(encoding="utf-8"))
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


def test_the_provenance_box_names_the_load_when_the_file_holds_it(tmp_path):
    data = {
        "command": "python tests/benchmarks/bench_x.py",
        "commit": "abc1234",
        "machine": "a CPU",
        "date": "2026-12-05",
        "figures": {"seconds": 4.6},
    }
    (tmp_path / "x.json").write_text(json.dumps(data))
    assert "load average" not in hook.render("{{ provenance x }}", tmp_path)[0]
    (tmp_path / "x.json").write_text(json.dumps({**data, "load": [7.43, 6.82, 4.21]}))
    box = hook.render("{{ provenance x }}", tmp_path)[0]
    assert "- load average when written (1, 5, 15 min): 7.43, 6.82, 4.21" in box
