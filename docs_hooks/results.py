"""Render measured figures into the documentation from their results files.

A MkDocs hook (``hooks:`` in mkdocs.yml). A page quotes a results file
``docs/results/data/<name>.json`` (``tests/benchmarks/results.py`` writes them) with
placeholders that the build replaces:

``{{ NAME.figures.KEY.SUBKEY }}``           a value, as the file holds it
``{{ NAME.figures.KEY | .3f }}``            a number, formatted (any format spec; ``.1%``
                                            shows a fraction as a percentage: 52.6%)
``{{ NAME.figures.KEY | points .1f }}``     a fraction in percentage points, no % sign
                                            (0.4664 shows as 46.6; the spec after
                                            ``points`` formats it, ``.1f`` if none)
``{{ provenance NAME }}``                   the file's command, commit, machine, date and
                                            load average when it was written
``{{ table NAME KEY }}``                    a table the file holds: {"columns": [...],
                                            "rows": [[...], ...]} or a list of objects
``{{ table NAME KEY | .3f }}``              the same, its fractional numbers formatted
``{{ text NAME KEY }}``                     Markdown the file holds as recorded (``text``)

A KEY may hold dots itself (``alone/gpt-3.5/accuracy``): a part that is not a key is
joined with the next ones until it is. Every file under docs/results/data/ is found by its
name; a new one needs no code. A
placeholder that names a missing file or key fails the build (``ResultsError``).
``tests/test_results_pages.py`` checks that every number a Results page quotes outside its
placeholders, and every number in a measured section of any other page (a section with a
placeholder, or under a "Figures" / "Measured: ..." heading), is held by a file it quotes.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "results" / "data"
PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")
# code (fenced blocks and inline spans) is shown as written: a placeholder there is an example
CODE_OR_PLACEHOLDER = re.compile(r"(?ms)(^```.*?^```|`[^`\n]*`)|\{\{\s*(.+?)\s*\}\}")


class ResultsError(ValueError):
    """A placeholder that the results files cannot answer."""


def load(name: str, data_dir: Path = DATA) -> dict[str, Any]:
    path = data_dir / f"{name}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in data_dir.glob("*.json"))) or "none"
        raise ResultsError(f"no results file {name}.json in {data_dir} (known: {known})")
    data = json.loads(path.read_text(encoding="utf-8"))
    missing = [k for k in ("command", "commit", "machine", "date", "figures") if k not in data]
    if missing:
        raise ResultsError(f"{path.name} lacks {', '.join(missing)} (tests/benchmarks/results.py)")
    return data


def lookup(data: dict[str, Any], name: str, dotted: str) -> Any:
    value: Any = data
    parts = dotted.split(".")
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(value, dict):
            # a key with dots of its own (gpt-3.5): the shortest run of parts that is a key
            ends = [j for j in range(i + 1, len(parts) + 1) if ".".join(parts[i:j]) in value]
            if not ends:
                raise ResultsError(f"{name}.json holds no {dotted!r} (stopped at {part!r})")
            value, i = value[".".join(parts[i : ends[0]])], ends[0]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value, i = value[int(part)], i + 1
        else:
            raise ResultsError(f"{name}.json holds no {dotted!r} (stopped at {part!r})")
    return value


def format_number(value: float, spec: str) -> str:
    """``format(value, spec)``; ``points SPEC``: a fraction as percentage points, no % sign."""
    if spec.split()[0] == "points":
        return format(value * 100, spec.removeprefix("points").strip() or ".1f")
    return format(value, spec)


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_table(table: Any, where: str, spec: str = "") -> str:
    """A Markdown table; ``spec`` formats its non-integer numbers (e.g. ``.3f``)."""
    if isinstance(table, dict) and "columns" in table and "rows" in table:
        columns, rows = table["columns"], table["rows"]
    elif isinstance(table, list) and table and all(isinstance(r, dict) for r in table):
        columns = list(table[0])
        rows = [[r.get(c, "") for c in columns] for r in table]
    else:
        raise ResultsError(f"{where} is not a table ({{columns, rows}} or a list of objects)")
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |"]
    lines.append("|" + "---|" * len(columns))

    def shown(value: Any) -> str:
        if spec and isinstance(value, float):
            return format(value, spec)
        return _cell(value)

    lines += ["| " + " | ".join(shown(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_provenance(data: dict[str, Any], name: str, link: str | None = None) -> str:
    title = f"[`{name}.json`]({link}/{name}.json)" if link else f"`{name}.json`"
    lines = [
        '!!! info "Where these figures come from"',
        f"    The results file {title}, written by",
        "",
        f"    - command: `{data['command']}`",
        f"    - commit: `{data['commit']}`",
        f"    - machine: {data['machine']}",
        f"    - date: {data['date']}",
    ]
    if data.get("load"):
        load = ", ".join(str(x) for x in data["load"])
        lines.append(f"    - load average when written (1, 5, 15 min): {load}")
    if data.get("recorded"):
        lines += ["", f"    {data['recorded']}"]
    return "\n".join(lines)


def expand(expression: str, data_dir: Path = DATA, link: str | None = None) -> tuple[str, str]:
    """One placeholder's text and the results file it quotes."""
    words = expression.split()
    if words[0] == "table" and "|" in expression:
        head, _, spec = expression.partition("|")
        name, key = head.split()[1:3]
        table = lookup(load(name, data_dir), name, key)
        return render_table(table, f"{name}.{key}", spec.strip()), name
    if words[0] in ("provenance", "table", "text"):
        if len(words) != (2 if words[0] == "provenance" else 3):
            raise ResultsError(f"malformed placeholder {{{{ {expression} }}}}")
        name = words[1]
        data = load(name, data_dir)
        if words[0] == "provenance":
            return render_provenance(data, name, link), name
        value = lookup(data, name, words[2])
        if words[0] == "table":
            return render_table(value, f"{name}.{words[2]}"), name
        if not isinstance(value, str):
            raise ResultsError(f"{name}.{words[2]} is not text")
        return value, name
    path, _, spec = expression.partition("|")
    name, _, dotted = path.strip().partition(".")
    if not dotted:
        raise ResultsError(f"{{{{ {expression} }}}} names no key: {{{{ NAME.figures.KEY }}}}")
    value = lookup(load(name, data_dir), name, dotted)
    spec = spec.strip()
    if isinstance(value, (dict, list)):
        raise ResultsError(f"{name}.{dotted} is not one value")
    if spec:
        if not isinstance(value, (int, float)):
            raise ResultsError(f"{name}.{dotted} is not a number to format with {spec!r}")
        return format_number(value, spec), name
    return str(value), name


def render(markdown: str, data_dir: Path = DATA, link: str | None = None) -> tuple[str, set[str]]:
    """The page with its placeholders replaced, and the names of the files it quotes.
    ``link``: the results folder relative to the page, to link each file from its
    provenance (the site copies the files beside the pages)."""
    quoted: set[str] = set()

    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        text, name = expand(match.group(2), data_dir, link)
        quoted.add(name)
        return text

    return CODE_OR_PLACEHOLDER.sub(one, markdown), quoted


def placeholders(markdown: str) -> list[str]:
    """The placeholders of a page, outside code."""
    return [m.group(2) for m in CODE_OR_PLACEHOLDER.finditer(markdown) if m.group(1) is None]


def without_placeholders(markdown: str) -> str:
    """The page with its placeholders (outside code) blanked."""
    return CODE_OR_PLACEHOLDER.sub(
        lambda m: m.group(1) if m.group(1) is not None else " ", markdown
    )


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    here = posixpath.dirname(page.file.src_uri)
    link = posixpath.relpath("results/data", here or ".")
    try:
        return render(markdown, DATA, link)[0]
    except ResultsError as error:
        raise ResultsError(f"{page.file.src_path}: {error}") from None
