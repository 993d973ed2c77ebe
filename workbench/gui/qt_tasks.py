"""The Tasks page: the bundled and imported suites with their counts per kind, category
and split; the tasks of the suite picked; the prompt, reference answer and tests of the
task picked; and Import JSONL…, which lists every validation error with its line and
imports nothing unless the whole file is valid.

The page is a view over ``workbench.core.tasks.suites`` (list, load, import). Loading
suites (CHAMP takes seconds the first time) and importing run in background jobs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from workbench.core.printable import shown_path
from workbench.core.tasks.jsonl import SuiteValidationError
from workbench.core.tasks.model import SPLITS, Suite, Task
from workbench.core.tasks.suites import SuiteInfo, import_suite, list_suites, load_suite
from workbench.core.workspace import Workspace
from workbench.gui import tables
from workbench.gui.page import ErrorLabel, Page, message_label
from workbench.gui.qt import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSplitter,
    Qt,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
    Signal,
    read_only_table,
    text_view,
)

log = logging.getLogger(__name__)

SUITE_COLUMNS = ("Suite", "Source", "Tasks", "Kinds", "Categories", "Splits")
TASK_COLUMNS = ("Task", "Kind", "Category", "Split", "Prompt")


@dataclass(frozen=True)
class SuiteEntry:
    """One suite as listed: its listing line, and (when it loads) the suite, its counts
    per kind, category and split, and the split of each task."""

    info: SuiteInfo
    suite: Suite | None = None
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    split_of: dict[str, str] = field(default_factory=dict)


def read_suites(workspace: Workspace) -> list[SuiteEntry]:
    """Every suite with its counts (a job: the first load of a bundled suite can take
    seconds)."""
    entries = []
    for info in list_suites(workspace):
        try:
            suite = load_suite(info.name, workspace)
        except (
            LookupError,
            ValueError,
            OSError,
        ) as exc:  # listed with the reason (list_suites says it)
            log.info("suite %s cannot be loaded: %s", info.name, exc)
            entries.append(SuiteEntry(info))
            continue
        split_of = {task.id: split for split, tasks in suite.splits().items() for task in tasks}
        entries.append(SuiteEntry(info, suite, suite.counts(), split_of))
    return entries


def _counts_text(counts: dict[str, int], order: tuple[str, ...] = ()) -> str:
    names = [n for n in order if n in counts] + sorted(n for n in counts if n not in order)
    return " · ".join(f"{name} {counts[name]}" for name in names)


def _one_line(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def reference_text(task: Task) -> str:
    """The reference a grader compares with: the answer (the option for a choice task) and
    the reference solution when there is one."""
    parts = []
    if task.kind == "choice" and task.answer and task.choices:
        index = ord(task.answer) - ord("A")
        option = task.choices[index] if 0 <= index < len(task.choices) else "?"
        parts.append(f"answer: ({task.answer}) {option}")
    elif task.answer is not None:
        parts.append(f"answer: {task.answer}")
    else:
        parts.append("answer: (none: graded by its tests)" if task.tests else "answer: (none)")
    if task.solution:
        parts.append(f"reference solution:\n{task.solution}")
    return "\n\n".join(parts)


def tests_text(task: Task) -> str:
    """A code task's tests as a reader wants them: the test source, or each stdio case."""
    tests = task.tests
    if not tests:
        return "(no tests: graded against the reference answer)"
    if tests.get("style") == "humaneval":
        return (
            f"style: humaneval · entry point: {tests.get('entry_point')}\n\n{tests.get('test', '')}"
        )
    if tests.get("style") == "stdio":
        cases = [
            f"case {i + 1}\ninput:\n{c.get('input', '')}\nexpected output:\n{c.get('output', '')}"
            for i, c in enumerate(tests.get("cases", []))
        ]
        return "style: stdio\n\n" + "\n\n".join(cases)
    return json.dumps(tests, indent=2)


class QtTasks(Page):
    """The Tasks page over a workspace (its imported suites live there)."""

    suites_loaded = Signal()  # the suites table shows the suites as just listed
    import_finished = Signal(bool)  # an import ended: True if the suite was imported

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.entries: list[SuiteEntry] = []
        self.suite: Suite | None = None  # the suite whose tasks are shown
        self._select_next: str | None = None

        self.status = self.message_label = message_label("Loading suites…", error=False)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.import_name = QLineEdit()
        self.import_name.setPlaceholderText("suite name (default: the file's name)")
        self.replace_box = QCheckBox("replace an imported suite of that name")
        self.import_button = QPushButton("Import JSONL…")
        self.refresh_button = QPushButton("Refresh")
        bar = QHBoxLayout()
        bar.addWidget(self.import_name, 1)
        bar.addWidget(self.replace_box)
        bar.addWidget(self.import_button)
        bar.addWidget(self.refresh_button)
        self.errors_title = ErrorLabel()
        self.errors_title.setWordWrap(True)
        self.errors = QListWidget()
        self.errors.setMaximumHeight(160)

        self.suites = read_only_table(SUITE_COLUMNS)
        # counts whole: the kinds and the categories (fourteen for MMLU-Pro) share the
        # width the others leave, on as many lines as they need
        tables.fit_width(
            self.suites,
            [SUITE_COLUMNS.index("Kinds"), SUITE_COLUMNS.index("Categories")],
            wrap=True,
            shares=[1, 2],
        )
        self.tasks = read_only_table(TASK_COLUMNS)
        tables.sortable(self.tasks)
        # never scrolled sideways: the prompt takes the width left, whole in its tooltip
        tables.fit_width(self.tasks, [TASK_COLUMNS.index("Prompt")])
        self.task_header = QLabel("Pick a task")
        self.task_header.setWordWrap(True)
        self.prompt, self.reference, self.tests = text_view(), text_view(), text_view()
        preview = QSplitter(Qt.Orientation.Vertical)
        preview.addWidget(self.task_header)
        for title, view in (
            ("Prompt (as a worker sees it)", self.prompt),
            ("Reference", self.reference),
            ("Tests", self.tests),
        ):
            box = QWidget()
            box_layout = QVBoxLayout(box)
            box_layout.setContentsMargins(0, 0, 0, 0)
            box_layout.addWidget(QLabel(title))
            box_layout.addWidget(view)
            preview.addWidget(box)
        lower = QSplitter()
        lower.addWidget(self.tasks)
        lower.addWidget(preview)
        lower.setStretchFactor(0, 3)
        lower.setStretchFactor(1, 2)
        main = QSplitter(Qt.Orientation.Vertical)
        main.addWidget(self.suites)
        main.addWidget(lower)
        main.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.errors_title)
        layout.addWidget(self.errors)
        layout.addWidget(main, 1)
        layout.addWidget(self.status)
        self._show_errors("", [])

        self.import_button.clicked.connect(lambda: self.import_file())
        self.refresh_button.clicked.connect(lambda: self.refresh())
        self.suites.itemSelectionChanged.connect(self._suite_picked)
        self.tasks.itemSelectionChanged.connect(self._task_picked)
        self.refresh()

    # -- suites --------------------------------------------------------------------

    def refresh(self, select: str | None = None) -> None:
        """List the suites again (in the background), then select ``select`` (default: the
        suite selected now)."""
        self._select_next = select or (self.suite.name if self.suite else None)
        workspace = self.workspace
        self.in_background(
            "list suites",
            lambda: read_suites(workspace),
            self._show_suites,
            self._listing_failed,
            latest=True,
        )

    def _show_suites(self, _context: object, entries: list[SuiteEntry]) -> None:
        self.entries = entries
        self.suites.blockSignals(True)
        self.suites.setRowCount(len(entries))
        for row, entry in enumerate(entries):
            info, counts = entry.info, entry.counts
            cells = (
                info.name,
                info.source,
                str(info.count),
                _counts_text(counts.get("kind", {})),
                _counts_text(counts.get("category", {})),
                _counts_text(counts.get("split", {}), SPLITS),
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{text}\n\n{info.description}" if column else info.description)
                if column == SUITE_COLUMNS.index("Tasks"):
                    item.setTextAlignment(tables.NUMBER)
                self.suites.setItem(row, column, item)
        self.suites.clearSelection()
        # the suite asked for, else the one shown, else the first: never an empty task list
        chosen = self.suite_row(self._select_next or "")
        if chosen is None and entries:
            chosen = 0
        if chosen is not None:
            self.suites.selectRow(chosen)
        self.suites.blockSignals(False)
        self._select_next = None
        self._suite_picked()  # the suite objects are new: show the tasks again
        if self.status.text() == "Loading suites…":
            self.status.setText(f"{len(entries)} suites.")
        self.suites_loaded.emit()

    def _listing_failed(self, _context: object, exc: Exception) -> None:
        self.say(f"Cannot list the suites: {exc}", error=True)
        self.suites_loaded.emit()

    def suite_row(self, name: str) -> int | None:
        return next((i for i, e in enumerate(self.entries) if e.info.name == name), None)

    def suite_cell(self, name: str, column: str) -> str:
        """The text shown for suite ``name`` in ``column`` (one of SUITE_COLUMNS)."""
        row = self.suite_row(name)
        if row is None:
            raise KeyError(name)
        return tables.item(self.suites, row, SUITE_COLUMNS.index(column)).text()

    def select_suite(self, name: str) -> None:
        row = self.suite_row(name)
        if row is not None:
            self.suites.selectRow(row)

    def _suite_picked(self) -> None:
        rows = self.suites.selectionModel().selectedRows()
        entry = self.entries[rows[0].row()] if rows else None
        self.suite = entry.suite if entry else None
        self.tasks.blockSignals(True)
        self.tasks.clearContents()
        tasks = self.suite.tasks if self.suite else ()
        task_rows: list[tuple[tables.Cell, ...]] = []
        for index, task in enumerate(tasks):
            cells = (
                tables.Cell(task.id),
                tables.Cell(task.kind),
                tables.Cell(task.group or ""),
                tables.Cell(entry.split_of.get(task.id, "") if entry else ""),
                tables.Cell(_one_line(task.prompt), tooltip=task.prompt[:1500]),
            )
            for cell in cells:
                cell.setData(Qt.ItemDataRole.UserRole, index)  # the row may be sorted
            task_rows.append(cells)
        tables.fill(self.tasks, task_rows)
        self.tasks.blockSignals(False)
        if task_rows:
            self.tasks.selectRow(0)  # a task in view from the start (its signal shows it)
        else:
            self._show_task(None)
        if entry is not None and entry.suite is None:
            self.say(
                f"Suite '{entry.info.name}' cannot be loaded: {entry.info.description}", error=True
            )

    # -- tasks ---------------------------------------------------------------------

    def select_task(self, task_id: str) -> None:
        if self.suite is None:
            return
        for row in range(self.tasks.rowCount()):
            if (
                self.suite.tasks[tables.item(self.tasks, row, 0).data(Qt.ItemDataRole.UserRole)].id
                == task_id
            ):
                self.tasks.selectRow(row)
                return

    def _task_picked(self) -> None:
        rows = self.tasks.selectionModel().selectedRows()
        if not rows or self.suite is None:
            self._show_task(None)
            return
        index = tables.item(self.tasks, rows[0].row(), 0).data(Qt.ItemDataRole.UserRole)
        self._show_task(self.suite.tasks[index])

    def _show_task(self, task: Task | None) -> None:
        if task is None:
            self.task_header.setText("Pick a task")
            for view in (self.prompt, self.reference, self.tests):
                view.clear()
            return
        self.task_header.setText(
            f"{task.id} · {task.kind} · category {task.group}"
            + (f" · split {task.split} (set in the file)" if task.split else "")
        )
        self.prompt.setPlainText(task.full_prompt())
        self.reference.setPlainText(reference_text(task))
        self.tests.setPlainText(tests_text(task))

    # -- importing -----------------------------------------------------------------

    def import_file(self, path: str | None = None, name: str | None = None) -> None:
        """Validate and import the JSONL suite at ``path`` (asked for when None) as ``name``
        (default: the name field, else the file's name), in the background. Every problem
        is listed with its line; nothing is imported unless the whole file is valid."""
        if not path:
            path, _ = QFileDialog.getOpenFileName(
                self, "Import a JSONL suite", "", "JSONL suites (*.jsonl);;All files (*)"
            )
        if not path:
            return
        name = name or self.import_name.text().strip() or Path(path).stem
        workspace, replace = self.workspace, self.replace_box.isChecked()
        self._show_errors("", [])
        self.say(f"Importing {shown_path(path)} as '{name}'…")
        self.import_button.setEnabled(False)
        self.in_background(
            f"import suite {name}",
            lambda: import_suite(path, name, workspace, replace=replace),
            self._imported,
            self._import_failed,
            context=path,
        )

    def _imported(self, _path: str, suite: Suite) -> None:
        self.import_button.setEnabled(True)
        self.import_name.clear()
        self.say(f"Imported {len(suite)} tasks as suite '{suite.name}'.")
        self.refresh(select=suite.name)
        self.import_finished.emit(True)

    def _import_failed(self, path: str, exc: Exception) -> None:
        self.import_button.setEnabled(True)
        if isinstance(exc, SuiteValidationError):
            lines = [
                f"{f'line {i.line}' if i.line else 'file'}: {f'{i.field}: ' if i.field else ''}{i.message}"
                for i in exc.issues
            ]
            self._show_errors(
                f"{len(exc.issues)} problem(s) in {shown_path(path)}; nothing was imported. Fix them and "
                "import the file again.",
                lines,
            )
            self.say("Nothing was imported.", error=True)
        else:
            self.say(f"Nothing was imported: {exc}", error=True)
        self.import_finished.emit(False)

    def _show_errors(self, title: str, lines: list[str]) -> None:
        self.errors_title.setText(title)
        self.errors.clear()
        self.errors.addItems(lines)
        self.errors_title.setVisible(bool(title))
        self.errors.setVisible(bool(lines))

    # -- lifetime ------------------------------------------------------------------
