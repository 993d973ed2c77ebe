"""The project is self-contained: every document that code, tests, packaging or the README
cites exists in the repository."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a cited document: docs/NAME.md, or a bare CAPITALISED.md such as METHOD.md
CITATION = re.compile(r"(?<![\w/.-])((?:docs/)?[\w./-]*[A-Z][A-Z_]+\.md)\b|(docs/[\w./-]+\.md)")


DOC_FOLDERS = [d for d in (ROOT / "docs").rglob("*") if d.is_dir()]


def _sources() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in ("workbench", "tests", "packaging", "docs"):
        files += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
            and p.suffix in (".py", ".md", ".toml", ".spec", ".sh", ".iss", ".txt")
            and p != Path(__file__).resolve()  # its examples are not citations
        ]
    return files


def test_every_cited_document_exists():
    missing = []
    for path in _sources():
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CITATION.finditer(line):
                cited = match.group(1) or match.group(2)
                places = [ROOT / cited] if "/" in cited else [ROOT / "docs" / cited, ROOT / cited]
                # a link of a docs page, relative to it (or, in the code that generates
                # a page, to the docs folder the page is written to)
                places += [path.parent / cited, *(d / cited for d in DOC_FOLDERS)]
                if not any(p.is_file() for p in places):
                    missing.append(f"{path.relative_to(ROOT)}:{line_no}: {cited}")
    assert not missing, "cited documents that are not in the repository:\n" + "\n".join(missing)


def test_the_citation_check_sees_a_missing_document(tmp_path):
    """The pattern matches both forms a citation takes (not a check that cannot fail)."""
    text = "see DESIGN.md and docs/METHOD.md and README.md"
    cited = [m.group(1) or m.group(2) for m in CITATION.finditer(text)]
    assert cited == ["DESIGN.md", "docs/METHOD.md", "README.md"]
    assert not (ROOT / "docs" / "DESIGN.md").exists()
