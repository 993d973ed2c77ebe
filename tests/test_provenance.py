"""Everything in the repository is written here: no file carries another author's copyright
or licence notice (code copied in from elsewhere does), whatever that licence allows. Facts
and figures from elsewhere are cited, not copied. The project's own licence file, should
one be added, is the one exception."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OWN_LICENCE = {"LICENSE", "LICENSE.txt", "COPYING"}  # at the root: the project's own
# the word of a notice, built so that this file carries no notice of its own
NOTICE = "Copy" + "right"
# notices of copied code: a copyright line, a licence tag, a licence's own wording
FOREIGN = re.compile(
    r"copy"
    r"right\s*(?:\(c\)|\u00a9|\d{4})|\u00a9\s*\d{4}|"
    r"SPDX-"
    r"License-Identifier|Permission is hereby granted, free of charge|"
    r"Licensed under the Apache License|GNU (?:Lesser |Library )?General Public License",
    re.IGNORECASE,
)


def foreign_notices(paths: list[Path], root: Path) -> list[str]:
    """``path:line: text`` for every line of a text file in ``paths`` that carries a
    copyright or licence notice (binary files, which hold a NUL byte, are not read)."""
    found = []
    for path in paths:
        data = path.read_bytes()
        if b"\0" in data:
            continue
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if FOREIGN.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:120]}")
    return found


def repository_files() -> list[Path]:
    """The files git tracks or would add (ignored ones, such as .venv, are not ours)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = [ROOT / name for name in listed.split("\0") if name]
    return [
        p
        for p in paths
        if p.is_file()
        and p.relative_to(ROOT).as_posix() not in OWN_LICENCE
        and p != Path(__file__).resolve()  # its examples of notices are not notices
    ]


def test_no_file_carries_another_authors_copyright_or_licence():
    files = repository_files()
    assert len(files) > 100 and ROOT / "workbench" / "core" / "config.py" in files
    found = foreign_notices(files, ROOT)
    assert found == [], (
        "copied code: write it here instead (cite the facts it holds), or use the library "
        "as a dependency:\n" + "\n".join(found)
    )


def test_the_check_finds_a_copied_file(tmp_path):
    """Not vacuous: a C file with a copyright line, a Python file with a licence tag and an
    MIT notice are each found, in any letter case; a file that only talks about licences
    and the binary file are not."""
    notices = {
        "runtime.c": f"/*\n * {NOTICE} (c) 2004-24 Someone Else\n */\nint main(void) {{}}\n",
        "vendored.py": "# spdx-license-identifier: Apache-2.0\nx = 1\n",
        "NOTICE": "Permission is hereby granted, free of charge, to any person\n",
        "page.h": "/* \u00a9 2019 A Company */\n",
    }
    clean = {
        "ours.py": '"""The licence of a recorded pool is the dataset\'s (see its card)."""\n',
        "image.bin": f"\0{NOTICE} (C) 2020 in a binary",
    }
    for name, text in {**notices, **clean}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = foreign_notices(sorted(tmp_path.iterdir()), tmp_path)
    assert sorted(line.split(":")[0] for line in found) == sorted(notices)
