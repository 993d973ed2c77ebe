"""The Tasks page over a real workspace: the bundled suites with their counts, a suite's
tasks and a task's preview, and JSONL import, which lists every problem with its line and
imports nothing on error. Listing runs in the background: the first load of CHAMP takes
seconds and the GUI thread must not wait for it."""

from __future__ import annotations

import functools
import json
import time

import pytest

from workbench.core.tasks.suites import load_suite

GOOD = [
    {"id": "m1", "kind": "math", "prompt": "What is 6 x 7?", "answer": "42", "category": "easy"},
    {
        "id": "c1",
        "kind": "choice",
        "prompt": "Pick the colour of the sky.",
        "choices": ["red", "blue", "green"],
        "answer": "b",
        "category": "easy",
    },
    {
        "id": "k1",
        "kind": "code",
        "prompt": "Write add(a, b).",
        "category": "hard",
        "split": "test",
        "tests": {
            "style": "humaneval",
            "entry_point": "add",
            "test": "def check(c):\n    assert c(1, 2) == 3\n",
        },
        "solution": "def add(a, b):\n    return a + b\n",
    },
    {
        "id": "k2",
        "kind": "code",
        "prompt": "Echo the input.",
        "category": "hard",
        "tests": {"style": "stdio", "cases": [{"input": "hi\n", "output": "hi\n"}]},
    },
    {"id": "t1", "kind": "text", "prompt": "Capital of France?", "answer": "Paris"},
]


@pytest.fixture()
def tasks_page(qtbot, gui_workspace):
    """A Tasks page over a temporary workspace, once its suites are listed; at teardown no
    background job of it still runs."""
    from workbench.gui.background import running
    from workbench.gui.qt_tasks import QtTasks

    page = QtTasks(gui_workspace)
    qtbot.addWidget(page)
    with qtbot.waitSignal(page.suites_loaded, timeout=120_000):
        page.show()
    yield page
    page.shutdown()
    assert not running(page)


def write(path, records_or_lines):
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records_or_lines]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def do_import(qtbot, page, path, **kw) -> bool:
    with qtbot.waitSignal(page.import_finished, timeout=30_000) as blocker:
        page.import_file(str(path), **kw)
    return blocker.args[0]


def test_a_bad_file_lists_every_problem_with_its_line_and_imports_nothing(
    tasks_page, qtbot, tmp_path
):
    page = tasks_page
    listed = [e.info.name for e in page.entries]
    path = write(
        tmp_path / "bad.jsonl",
        [
            GOOD[0],  # 1: fine
            '{"id": "broken", "kind": ',  # 2: not JSON
            {"id": "x1", "kind": "essay", "prompt": "Write."},  # 3: unknown kind
            "",  # 4: blank, skipped
            {"id": "m1", "kind": "math", "prompt": "Again?", "answer": "1"},  # 5: duplicate id
            {
                "id": "c9",
                "kind": "choice",
                "prompt": "Pick.",
                "choices": ["a", "b"],
                "answer": "D",
                "topic": "x",
            },  # 6: two
        ],
    )
    assert do_import(qtbot, page, path, name="bad") is False
    shown = [page.errors.item(i).text() for i in range(page.errors.count())]
    assert [s.split(":")[0] for s in shown] == ["line 2", "line 3", "line 5", "line 6", "line 6"]
    assert "not valid JSON" in shown[0] and "kind: must be one of" in shown[1]
    assert "duplicate id 'm1' (first used on line 1)" in shown[2]
    assert any("topic: unknown field" in s for s in shown[3:]) and any(
        "out of range" in s for s in shown[3:]
    )
    assert (
        page.errors_title.text().startswith("5 problem(s) in")
        and "nothing was imported" in page.errors_title.text()
    )
    assert page.errors.isVisible() and "Traceback" not in page.status.text()
    assert not list(
        page.workspace.suites_dir.glob("*.jsonl")
    )  # (a missing folder globs to nothing)
    assert [e.info.name for e in page.entries] == listed


def test_a_good_file_is_imported_listed_with_counts_and_previewed(tasks_page, qtbot, tmp_path):
    page = tasks_page
    path = write(tmp_path / "my-suite.jsonl", GOOD)
    with qtbot.waitSignal(page.suites_loaded, timeout=30_000):
        assert do_import(qtbot, page, path) is True  # named after the file
    assert (page.workspace.suites_dir / "my-suite.jsonl").is_file()
    assert (
        page.suite_cell("my-suite", "Source") == "imported"
        and page.suite_cell("my-suite", "Tasks") == "5"
    )
    assert page.suite_cell("my-suite", "Kinds") == "choice 1 · code 2 · math 1 · text 1"
    assert page.suite_cell("my-suite", "Categories") == "easy 2 · hard 2 · text 1"
    counts = load_suite("my-suite", page.workspace).counts()["split"]
    assert page.suite_cell("my-suite", "Splits") == " · ".join(
        f"{s} {counts[s]}" for s in ("train", "validation", "test")
    )
    assert page.suite is not None and page.suite.name == "my-suite"  # the new suite is shown
    assert [page.tasks.item(r, 0).text() for r in range(page.tasks.rowCount())] == [
        t["id"] for t in GOOD
    ]
    assert page.tasks.item(2, 3).text() == "test"  # the split named in the file
    assert (
        "Imported 5 tasks as suite 'my-suite'" in page.status.text() and not page.errors.isVisible()
    )

    page.select_task("c1")
    assert (
        page.prompt.toPlainText() == "Pick the colour of the sky.\n\n(A) red\n(B) blue\n(C) green"
    )
    assert page.reference.toPlainText() == "answer: (B) blue"
    page.select_task("k1")
    assert page.prompt.toPlainText() == "Write add(a, b)."
    assert (
        "entry point: add" in page.tests.toPlainText()
        and "assert c(1, 2) == 3" in page.tests.toPlainText()
    )
    assert "reference solution:\ndef add(a, b):" in page.reference.toPlainText()
    page.select_task("k2")
    assert (
        "input:\nhi\n" in page.tests.toPlainText()
        and "expected output:\nhi" in page.tests.toPlainText()
    )

    assert do_import(qtbot, page, path) is False  # the same name again, without "replace"
    assert "already exists" in page.status.text() and "Nothing was imported" in page.status.text()
    page.replace_box.setChecked(True)
    assert do_import(qtbot, page, write(tmp_path / "my-suite.jsonl", GOOD[:2])) is True
    qtbot.waitUntil(lambda: page.suite_cell("my-suite", "Tasks") == "2", timeout=30_000)


def test_bundled_suites_are_listed_with_their_counts_and_tasks(tasks_page):
    page = tasks_page
    for name in ("humaneval", "champ", "arithmetic", "mixed"):
        suite = load_suite(name)
        assert page.suite_cell(name, "Source") == "bundled"
        assert page.suite_cell(name, "Tasks") == str(len(suite))
        kinds = page.suite_cell(name, "Kinds")
        assert all(f"{kind} {n}" in kinds for kind, n in suite.counts()["kind"].items())
    page.select_suite("humaneval")
    assert page.tasks.rowCount() == 164
    page.select_task("HumanEval/0")
    assert "def has_close_elements" in page.prompt.toPlainText()
    assert "def check(candidate)" in page.tests.toPlainText()
    assert page.reference.toPlainText().startswith("answer: (none: graded by its tests)")


def test_loading_the_suites_does_not_hold_the_gui_thread(
    qtbot, gui_workspace, tmp_path, monkeypatch
):
    from workbench.core.tasks import suites
    from workbench.gui.background import running
    from workbench.gui.qt import QTimer
    from workbench.gui.qt_tasks import QtTasks

    # The worst case, a first start: nothing loaded in this process, and CHAMP not yet
    # converted from its package's 70 MB JSON (seconds of parsing).
    monkeypatch.setattr(suites, "_bundled", functools.cache(suites._bundled.__wrapped__))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    started = time.perf_counter()
    page = QtTasks(gui_workspace)
    qtbot.addWidget(page)
    assert time.perf_counter() - started < 0.5
    assert page.status.text() == "Loading suites…" and page.suites.rowCount() == 0
    ticks = []
    timer = QTimer(page)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(20)
    loading_started = time.perf_counter()
    with qtbot.waitSignal(page.suites_loaded, timeout=120_000):
        pass
    loading_s = time.perf_counter() - loading_started
    timer.stop()
    assert page.suites.rowCount() >= 4
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert loading_s > 0.3 and len(ticks) >= 0.5 * loading_s / 0.020  # the event loop kept turning
    assert max(gaps) < 0.25, f"the GUI thread stalled for {max(gaps):.2f} s"
    assert next((tmp_path / "cache").rglob("champ-v0-*.jsonl")).is_file()
    page.shutdown()
    assert not running(page)


def test_the_page_opens_on_a_suite_and_a_task_and_shows_the_counts_whole(
    make_main_window, qtbot, gui_workspace
):
    """At 1280 x 800 the page opens on the first suite's tasks and its first task's prompt
    (it opened on an empty list and 'Pick a task'), the task list fits without scrolling
    sideways (the prompt elided, whole in its tooltip), and each suite's counts per kind
    and category are whole on as many lines as they need (CHAMP's five categories were
    cut mid-line)."""
    from workbench.gui.qt import QApplication, QFontMetrics, Qt
    from workbench.gui.qt_tasks import SUITE_COLUMNS, TASK_COLUMNS

    window = make_main_window()
    window.resize(1280, 800)
    window.go("Tasks")
    page = window.pages["Tasks"]
    qtbot.waitUntil(lambda: page.suites.rowCount() >= 4 and page.suite is not None, timeout=120_000)
    first = page.entries[0]
    assert page.suite is first.suite and page.tasks.rowCount() == len(first.suite.tasks)
    shown = first.suite.tasks[tables_item_index(page, 0)]
    assert page.task_header.text().startswith(f"{shown.id} · ")
    assert page.prompt.toPlainText() == shown.full_prompt()
    QApplication.processEvents()
    tasks = page.tasks
    widths = [tasks.columnWidth(c) for c in range(tasks.columnCount())]
    assert (
        not tasks.horizontalScrollBar().isVisible() and tasks.horizontalScrollBar().maximum() == 0
    )
    assert sum(widths) <= tasks.viewport().width(), (widths, tasks.viewport().width())
    prompt = TASK_COLUMNS.index("Prompt")
    for column in range(tasks.columnCount()):  # every column but the prompt whole
        if column != prompt:
            assert widths[column] >= tasks.sizeHintForColumn(column), (column, widths)
    assert tasks.item(0, prompt).toolTip() == shown.prompt  # whole, its lines kept
    metrics = QFontMetrics(page.suites.font())
    for row in range(page.suites.rowCount()):
        for column in (SUITE_COLUMNS.index("Kinds"), SUITE_COLUMNS.index("Categories")):
            text = page.suites.item(row, column).text()
            room = page.suites.columnWidth(column) - 8  # less the cell's margins
            wrapped = metrics.boundingRect(0, 0, room, 10_000, Qt.TextFlag.TextWordWrap, text)
            assert wrapped.height() <= page.suites.rowHeight(row), (text, wrapped)
    champ = page.suite_row("champ")
    assert page.suites.rowHeight(champ) >= 2 * metrics.lineSpacing()


def tables_item_index(page, row: int) -> int:
    """The index in the suite of the task shown in ``row`` of the task list."""
    from workbench.gui import tables
    from workbench.gui.qt import Qt

    return tables.item(page.tasks, row, 0).data(Qt.ItemDataRole.UserRole)
