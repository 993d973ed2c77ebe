"""The Workers page: registered workers (and the built-in ones, read-only) with their
model, prices, concurrency, where the key comes from and the last connection test; Add,
Edit, Remove and Test connection; below them, the workspace's recorded pools
(``qt_recorded``).

The page is a view over ``workbench.core.workers.registry.Registry``: specs, key statuses,
storing keys in the keychain, tests and model lists all come from core. Every registry,
keychain and network call runs in a background ``Job``; results come back by signal.
A key goes from the masked field straight to the keychain and is never shown again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from workbench.core.keychain import KeyStatus
from workbench.core.printable import shown_path
from workbench.core.workers.checks import ConnectionReport, test_worker
from workbench.core.workers.pool import builtin_workers
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import WorkerSpec
from workbench.core.workspace import Workspace
from workbench.gui import background, tables
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
    QColor,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    Qt,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
    Signal,
    read_only_table,
)
from workbench.gui.qt_recorded import RecordedPoolsBox
from workbench.gui.qt_worker_dialog import WorkerDialog
from workbench.gui.words import worker_words

log = logging.getLogger(__name__)

COLUMNS = (
    "Worker",
    "Provider",
    "Model",
    "$/M in",
    "$/M out",
    "Concurrency",
    "Key",
    "Last test",
    "Latency",
)


NUMBER_COLUMNS = (3, 4, 5, 8)  # prices, concurrency, latency: right-aligned
HEADER_TIPS = {
    "$/M in": "Price in dollars per million tokens sent to the model",
    "$/M out": "Price in dollars per million tokens the model writes",
    "Concurrency": "How many calls to this worker may run at once",
    "Key": "Where the API key comes from (the OS keychain or an environment variable)",
    "Last test": "The outcome of the last Test connection",
}


@dataclass(frozen=True, kw_only=True)
class WorkerRow:
    """One line of the table: a registered worker (``spec`` and ``key``) or a built-in one."""

    id: str
    provider: str
    model: str
    spec: WorkerSpec | None = None
    key: KeyStatus | None = None

    @property
    def builtin(self) -> bool:
        return self.spec is None


def read_rows(registry: Registry) -> list[WorkerRow]:
    """The registered workers with their key status, then the built-in ones (a job: the
    keychain may take a while to answer)."""
    rows = [
        WorkerRow(id=s.id, provider=s.provider, model=s.model, spec=s, key=registry.key_status(s))
        for s in registry.list()
    ]
    return rows + [
        WorkerRow(id=w.id, provider=w.provider, model=w.model) for w in builtin_workers()
    ]


class QtWorkers(Page):
    """The Workers page over ``registry`` (default: the user's workers.toml and keychain)."""

    refreshed = Signal()  # the table shows the registry as just read
    tested = Signal(str)  # a connection test of this worker ended (its row shows the outcome)

    def __init__(
        self,
        registry: Registry | None = None,
        parent: QWidget | None = None,
        workspace: Workspace | None = None,
    ):
        super().__init__(parent)
        self.registry = registry or Registry.open()
        self.rows: list[WorkerRow] = []
        self.reports: dict[str, ConnectionReport] = {}  # the last test of each worker
        self.test_errors: dict[str, str] = {}  # tests that could not even be made
        self._testing: set[str] = set()
        self._select_next: str | None = None  # a worker just saved: selected once listed

        self.status = self.message_label = message_label(error=False)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = read_only_table(COLUMNS)
        for column, name in enumerate(COLUMNS):
            if name in HEADER_TIPS:
                header = self.table.horizontalHeaderItem(column)
                if header is not None:
                    header.setToolTip(HEADER_TIPS[name])
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.add_button = QPushButton("Add…")
        self.edit_button = QPushButton("Edit…")
        self.remove_button = QPushButton("Remove")
        self.test_button = QPushButton("Test connection")
        self.refresh_button = QPushButton("Refresh")
        buttons = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button, self.test_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        note = QLabel(
            "Workers are the models that answer. Built-in ones (grey) need nothing: "
            "'sandbox' and 'team' are simulated teams (offline, free, answering only the "
            "bundled suites' questions), 'local:' ones run a real model on this computer. "
            f"Add a real model with Add…: it is listed in {shown_path(self.registry.path, short=True)}, "
            "its key kept in the OS keychain, never in that file."
        )
        note.setToolTip(str(self.registry.path))
        note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        # the workspace's recorded pools (answers, not endpoints: nothing to edit or test)
        self.recorded: RecordedPoolsBox | None = None
        if workspace is not None:
            self.recorded = RecordedPoolsBox(workspace, self)
            layout.addWidget(self.recorded, 1)

        self.add_button.clicked.connect(lambda: self.open_dialog())
        self.edit_button.clicked.connect(self.edit_selected)
        self.remove_button.clicked.connect(lambda: self.remove_selected())
        self.test_button.clicked.connect(self.test_selected)
        self.refresh_button.clicked.connect(self.refresh)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda _: self.edit_selected())
        self._update_buttons()
        self.refresh()

    # -- reading -------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the registry and the key statuses again (in the background)."""
        registry = self.registry
        self.in_background(
            "read workers",
            lambda: read_rows(registry),
            self._show_rows,
            self._refresh_failed,
            latest=True,
        )

    def _show_rows(self, _context: object, rows: list[WorkerRow]) -> None:
        selected, self._select_next = self._select_next or self.selected_id(), None
        self.rows = rows
        self.table.setRowCount(len(rows))
        for index, row in enumerate(rows):
            spec = row.spec
            cells = [
                row.id,
                row.provider,
                row.model,
                f"{spec.price_in:g}" if spec else "",
                f"{spec.price_out:g}" if spec else "",
                str(spec.concurrency) if spec and spec.provider != "local" else "",
                row.key.label if row.key else "not needed",
                "",
                "",
            ]
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)  # the whole value where the column elides it
                if column in NUMBER_COLUMNS:
                    item.setTextAlignment(tables.NUMBER)
                if row.builtin:
                    item.setForeground(QColor("gray"))
                    item.setToolTip(f"{text}\n\nbuilt-in: {worker_words(row.id)}")
                elif column == 1 and spec is not None and spec.base_url:
                    item.setToolTip(spec.base_url)
                self.table.setItem(index, column, item)
            self._show_test(index)
        tables.fit(self.table)
        if selected is not None:
            self.select(selected)
        self._update_buttons()
        self.refreshed.emit()

    def _refresh_failed(self, _context: object, exc: Exception) -> None:
        self.say(f"Cannot read the registered workers: {background.readable(exc)}", error=True)
        self.refreshed.emit()

    def _show_test(self, index: int) -> None:
        worker_id = self.rows[index].id
        report = self.reports.get(worker_id)
        if worker_id in self._testing:
            outcome, latency, tip = "testing…", "", ""
        elif worker_id in self.test_errors:
            outcome, latency, tip = "not tested (error)", "", self.test_errors[worker_id]
        elif report is None:
            outcome, latency, tip = "", "", ""
        else:
            outcome = f"OK ({report.model})" if report.ok else f"failed: {report.error_kind}"
            latency, tip = f"{report.latency_s * 1000:.0f} ms", report.error or report.reply
        for column, text in ((7, outcome), (8, latency)):
            item = QTableWidgetItem(text)
            item.setToolTip(tip or text)
            if column in NUMBER_COLUMNS:
                item.setTextAlignment(tables.NUMBER)
            self.table.setItem(index, column, item)

    def row_of(self, worker_id: str) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r.id == worker_id), None)

    def cell(self, worker_id: str, column: str) -> str:
        """The text shown for ``worker_id`` in ``column`` (one of COLUMNS)."""
        index = self.row_of(worker_id)
        if index is None:
            raise KeyError(worker_id)
        item = self.table.item(index, COLUMNS.index(column))
        return item.text() if item is not None else ""

    # -- selection -----------------------------------------------------------------

    def select(self, worker_id: str) -> None:
        index = self.row_of(worker_id)
        if index is not None:
            self.table.selectRow(index)

    def selected_id(self) -> str | None:
        indexes = self.table.selectionModel().selectedRows()
        if not indexes or indexes[0].row() >= len(self.rows):
            return None
        return self.rows[indexes[0].row()].id

    def _selected_row(self) -> WorkerRow | None:
        index = self.row_of(self.selected_id() or "")
        return None if index is None else self.rows[index]

    def _update_buttons(self) -> None:
        row = self._selected_row()
        registered = row is not None and not row.builtin
        for button in (self.edit_button, self.remove_button):
            button.setEnabled(registered)
        self.test_button.setEnabled(registered and row is not None and row.id not in self._testing)

    # -- changing ------------------------------------------------------------------

    def open_dialog(self, worker_id: str | None = None) -> WorkerDialog:
        """Open the add dialog, or the edit dialog of registered worker ``worker_id``."""
        index = None if worker_id is None else self.row_of(worker_id)
        row = None if index is None else self.rows[index]
        dialog = WorkerDialog(
            self.registry, row.spec if row else None, row.key if row else None, parent=self
        )
        dialog.saved.connect(self._saved)
        dialog.open()
        return dialog

    def edit_selected(self) -> WorkerDialog | None:
        row = self._selected_row()
        if row is None or row.builtin:
            return None
        return self.open_dialog(row.id)

    def _saved(self, worker_id: str) -> None:
        self.say(f"Saved worker '{worker_id}'.")
        self.reports.pop(worker_id, None)  # the last test was of the old settings
        self.test_errors.pop(worker_id, None)
        self._select_next = worker_id
        self.refresh()

    def remove_selected(self, confirm: bool = True) -> None:
        """Unregister the selected worker and delete its key (asks first unless ``confirm``
        is False)."""
        row = self._selected_row()
        if row is None or row.builtin:
            return
        if (
            confirm
            and QMessageBox.question(
                self,
                "Remove worker",
                f"Remove worker '{row.id}' and delete its key from the keychain?",
            )
            != QMessageBox.StandardButton.Yes
        ):
            return
        registry = self.registry
        self.in_background(
            f"remove worker {row.id}",
            lambda: registry.remove(row.id),
            self._removed,
            self._remove_failed,
            context=row.id,
        )

    def _removed(self, worker_id: str, deleted_key: bool) -> None:
        self.reports.pop(worker_id, None)
        self.test_errors.pop(worker_id, None)
        self.say(f"Removed worker '{worker_id}'" + (" and its key." if deleted_key else "."))
        self.refresh()

    def _remove_failed(self, worker_id: str, exc: Exception) -> None:
        self.say(f"Cannot remove worker '{worker_id}': {background.readable(exc)}", error=True)
        self.refresh()

    # -- testing -------------------------------------------------------------------

    def test_selected(self) -> None:
        row = self._selected_row()
        if row is not None and not row.builtin:
            self.test(row.id)

    def test(self, worker_id: str) -> None:
        """Send one tiny request to ``worker_id`` in the background; the row shows the
        outcome and latency when it comes back (signal ``tested``)."""
        if worker_id in self._testing:
            return
        self._testing.add(worker_id)
        registry = self.registry

        async def call() -> ConnectionReport:
            return await test_worker(worker_id, registry=registry)

        self.in_background(
            f"test worker {worker_id}",
            call,
            self._tested,
            self._test_failed,
            context=worker_id,
        )
        self.say(f"Testing worker '{worker_id}'…")
        self._after_test(worker_id)

    def _tested(self, worker_id: str, report: ConnectionReport) -> None:
        self._testing.discard(worker_id)
        self.test_errors.pop(worker_id, None)
        self.reports[worker_id] = report
        if report.ok:
            self.say(
                f"Worker '{worker_id}': OK in {report.latency_s * 1000:.0f} ms; model {report.model}."
            )
        else:
            self.say(
                f"Test of worker '{worker_id}' failed after {report.latency_s * 1000:.0f} ms: {report.error}",
                error=True,
            )
        self._after_test(worker_id)
        self.tested.emit(worker_id)

    def _test_failed(self, worker_id: str, exc: Exception) -> None:
        self._testing.discard(worker_id)
        self.test_errors[worker_id] = background.readable(exc)
        self.say(f"Cannot test worker '{worker_id}': {background.readable(exc)}", error=True)
        self._after_test(worker_id)
        self.tested.emit(worker_id)

    def _after_test(self, worker_id: str) -> None:
        index = self.row_of(worker_id)
        if index is not None:
            self._show_test(index)
        self._update_buttons()

    # -- lifetime ------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the downloads in flight (at their next chunk, their parts kept), then cancel
        and wait for the page's jobs."""
        if self.recorded is not None:
            self.recorded.stop_downloads()
        super().shutdown()
