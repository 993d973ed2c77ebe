r"""Measured figures written into the documentation's Markdown files from their results
files, so a page reads right rendered (the site, the repository's web page) and raw (an
editor): ``python docs_hooks/results.py`` rewrites every page under docs/ and the README.

A page asks for a figure of a results file ``docs/results/data/<name>.json``
(``tests/benchmarks/results.py`` writes them) with a placeholder:

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

The command replaces each placeholder with its figure, marked with what it came from so
the next run can write it again from newer files:

- a value: ``<span data-figure="NAME.figures.KEY | .3f">0.800</span>`` (a ``|`` inside a
  table row is written ``\|``); a reader sees 0.800, on the site and on the repository's
  web page, and the expression beside it in an editor;
- a provenance box, a table or a text (each alone on its line): the rendered block between
  ``<!-- figure: provenance NAME -->`` and ``<!-- /figure -->`` lines.

So a page is written once with placeholders and converted by running the command; after
a benchmark writes a results file, the command rewrites every figure that changed.
``--check`` writes nothing and exits 1 if a page is stale (its figures differ from their
files') or holds a raw placeholder; ``tests/test_results_pages.py`` fails then too, and the
site's build (this module is also its MkDocs hook, ``hooks:`` in mkdocs.yml). A placeholder
or a marker in code (a fenced block, an inline span) is an example, left as written.

A KEY may hold dots itself (``alone/gpt-3.5/accuracy``): a part that is not a key is
joined with the next ones until it is. Every file under docs/results/data/ is found by its
name; a new one needs no code. A placeholder that names a missing file or key is an error
(``ResultsError``) and the command writes no page. ``tests/test_results_pages.py`` checks
that every number a Results page quotes outside its figures, and every number in a
measured section of any other page (a section with a figure, or under a "Figures" /
"Measured: ..." heading), is held by a file it quotes.
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "results" / "data"


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


# code (fenced blocks and inline spans) is shown as written: a figure there is an example;
# then a block figure, a value figure, a raw placeholder
FIGURES = re.compile(
    r"(?ms)(?P<code>^```.*?^```|`[^`\n]*`)"
    r"|^<!-- figure: (?P<block>.+?) -->\n.*?^<!-- /figure -->$"
    r'|<span data-figure="(?P<inline>[^"]*)">(?P<value>.*?)</span>'
    r"|\{\{\s*(?P<raw>.+?)\s*\}\}"
)
BLOCKS = ("provenance", "table", "text")  # placeholders that render to a block of lines


def _expression(match: re.Match[str]) -> str | None:
    """The expression of a figure or placeholder (None for code), ``\\|`` read as ``|``."""
    found = match.group("block") or match.group("inline") or match.group("raw")
    if found is None:
        return None
    return found.replace("\\|", "|").replace("&quot;", '"').strip()


def render(markdown: str, data_dir: Path = DATA, link: str | None = None) -> tuple[str, set[str]]:
    """The page with every figure written from its results file (a raw placeholder becomes
    a marked figure, a marked one is written again), and the names of the files it quotes.
    ``link``: the results folder relative to the page, to link each file from its
    provenance box. A page that comes back unchanged is current."""
    quoted: set[str] = set()
    out: list[str] = []
    at = 0
    for match in FIGURES.finditer(markdown):
        expression = _expression(match)
        if expression is None:
            continue
        text, name = expand(expression, data_dir, link)
        quoted.add(name)
        out.append(markdown[at : match.start()])
        out.append(_marked(markdown, match, expression, text))
        at = match.end()
    out.append(markdown[at:])
    return "".join(out), quoted


def _marked(markdown: str, match: re.Match[str], expression: str, text: str) -> str:
    """A figure's text inside its marker: a block between comment lines, a value in a
    span (in a table row with ``|`` escaped, which would end its cell)."""
    if expression.split()[0] in BLOCKS:
        line_start = markdown.rfind("\n", 0, match.start()) + 1
        line_end = markdown.find("\n", match.end())
        line = markdown[line_start : len(markdown) if line_end < 0 else line_end]
        if line.strip() != match.group(0).strip():
            raise ResultsError(
                f"{{{{ {expression} }}}} renders to a block of lines: put it alone on its line"
            )
        return f"<!-- figure: {expression} -->\n\n{text}\n\n<!-- /figure -->"
    line_start = markdown.rfind("\n", 0, match.start()) + 1
    in_table = markdown[line_start:].lstrip().startswith("|")
    shown = expression.replace('"', "&quot;")
    if in_table:
        shown, text = shown.replace("|", "\\|"), text.replace("|", "\\|")
    return f'<span data-figure="{shown}">{text}</span>'


def placeholders(markdown: str) -> list[str]:
    """The expressions of a page's figures and raw placeholders, outside code."""
    return [e for m in FIGURES.finditer(markdown) if (e := _expression(m)) is not None]


def quoted(markdown: str, data_dir: Path = DATA) -> set[str]:
    """The results files a page's figures and placeholders quote (each expression checked
    against its file: ``ResultsError`` names a missing file or key)."""
    return {expand(e, data_dir)[1] for e in placeholders(markdown)}


def raw_placeholders(markdown: str) -> list[str]:
    """The placeholders of a page not yet written as figures (outside code)."""
    return [m.group("raw").strip() for m in FIGURES.finditer(markdown) if m.group("raw")]


def without_placeholders(markdown: str) -> str:
    """The page with its figures and placeholders (outside code) blanked."""
    return FIGURES.sub(lambda m: m.group("code") if m.group("code") is not None else " ", markdown)


def quotes_provenance(markdown: str, name: str) -> bool:
    """Whether a page shows the provenance box of results file ``name``."""
    return any(e.split() == ["provenance", name] for e in placeholders(markdown))


def link_for(page: Path, root: Path = ROOT) -> str:
    """The results folder relative to ``page`` (a page under docs/ or the README)."""
    return posixpath.relpath(
        (root / "docs" / "results" / "data").as_posix(), page.parent.resolve().as_posix()
    )


def pages(root: Path = ROOT) -> list[Path]:
    """Every page the command writes: the Markdown under docs/ and the README."""
    return [*sorted((root / "docs").rglob("*.md")), root / "README.md"]


def render_pages(paths: list[Path], data_dir: Path = DATA) -> dict[Path, str]:
    """Each page of ``paths`` that its files would change, with its new text; raises
    ``ResultsError`` naming every page whose placeholders cannot be answered."""
    changed: dict[Path, str] = {}
    problems: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            rendered, _ = render(text, data_dir, link_for(path))
        except ResultsError as error:
            problems.append(
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {error}"
            )
            continue
        if rendered != text:
            changed[path] = rendered
    if problems:
        raise ResultsError("\n".join(problems))
    return changed


def main(argv: list[str] | None = None) -> int:
    """``python docs_hooks/results.py [--check] [PAGE ...]``: write every page's figures
    from the results files (the pages under docs/ and the README by default)."""
    import argparse

    parser = argparse.ArgumentParser(
        description="Write the measured figures of the documentation's pages from "
        "docs/results/data/ (placeholders become marked figures; marked ones are updated)."
    )
    parser.add_argument("pages", nargs="*", type=Path, help="these pages only")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a page is not current"
    )
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.pages] or pages()
    try:
        changed = render_pages(paths)
    except ResultsError as error:
        print(f"error: {error}\nno page was written", file=sys.stderr)
        return 1
    for path, text in changed.items():
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        if args.check:
            print(f"not current: {shown} (run python docs_hooks/results.py)")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {shown}")
    return 1 if args.check and changed else 0


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The site's build shows the pages as their files hold them, and refuses a page
    whose figures are not current (run the command above)."""
    here = posixpath.dirname(page.file.src_uri)
    link = posixpath.relpath("results/data", here or ".")
    try:
        rendered = render(markdown, DATA, link)[0]
    except ResultsError as error:
        raise ResultsError(f"{page.file.src_path}: {error}") from None
    if rendered != markdown:
        raise ResultsError(
            f"{page.file.src_path}: its figures are not current or it holds a placeholder: "
            "run python docs_hooks/results.py"
        )
    return markdown


if __name__ == "__main__":
    sys.exit(main())
