"""The Workers page's recorded pools: the built-in CHAMP pool and the pools imported into the
workspace (``trinity-workbench records import``), each worker with its model, its answers
and its coverage of a suite (the pool's own, or one chosen). A pool is used in a run as
``recorded:NAME``, which the Runs page's pool list offers. Import… and Download… open the
dialogs of ``qt_import_dialog`` (MMLU-Pro's published outputs, lm-evaluation-harness
samples).

A view over ``workbench.core.recordings``: the listing is read in a background job of the
page that holds the box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.core.importers.download import BASE_URL
from workbench.core.recordings import PoolInfo, list_pools
from workbench.core.tasks.suites import list_suites
from workbench.core.workspace import Workspace
from workbench.gui import background
from workbench.gui.page import Page
from workbench.gui.qt import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    Qt,
    QTableWidgetItem,
    QVBoxLayout,
    Signal,
    read_only_table,
)
from workbench.gui.qt_import_dialog import DownloadDialog, ImportDialog

COLUMNS = ("Worker", "Model", "Answers", "Covers")
OWN_SUITE = "each pool's own suite"


def read_pools(workspace: Workspace, suite: str | None) -> tuple[list[PoolInfo], list[str]]:
    """The recorded pools with their coverage of ``suite`` (None: each pool's own) and the
    suites there are (a job: CHAMP's recordings take a moment to read the first time)."""
    return list_pools(workspace, suite), [s.name for s in list_suites(workspace)]


class RecordedPoolsBox(QGroupBox):
    """The recorded pools of ``workspace``, read in ``page``'s background jobs."""

    listed = Signal(int)  # the table shows the pools as just read: how many workers

    def __init__(self, workspace: Workspace, page: Page):
        super().__init__("Recorded pools: real models' answers, no calls (recorded:NAME in a pool)")
        self.workspace = workspace
        self.page = page
        self.pools: list[PoolInfo] = []
        self.table = read_only_table(COLUMNS)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.suite_combo = QComboBox()
        self.suite_combo.addItem(OWN_SUITE)
        self.suite_combo.setToolTip("The suite whose tasks the coverage counts")
        self.refresh_button = QPushButton("Refresh pools")
        self.import_button = QPushButton("Import…")
        self.import_button.setToolTip(
            "MMLU-Pro's published outputs or lm-evaluation-harness samples: one worker per "
            "model, and the suite of their questions"
        )
        self.download_button = QPushButton("Download…")
        self.download_button.setToolTip("MMLU-Pro's published outputs of the models you choose")
        self.dialogs: list[ImportDialog | DownloadDialog] = []  # open ones, stopped on close
        self.note = QLabel(
            "Import… reads MMLU-Pro's or lm-evaluation-harness's per-model outputs; a JSONL "
            "of answers: trinity-workbench records import FILE.jsonl --name NAME --suite SUITE "
            "(or --from-cache, --from-run RUN). A task without a recorded answer is a miss the "
            "run records; the coordinator's choice avoids it."
        )
        self.note.setWordWrap(True)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(QLabel("Coverage of"))
        row.addWidget(self.suite_combo, 1)
        row.addWidget(self.refresh_button)
        row.addWidget(self.import_button)
        row.addWidget(self.download_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)
        layout.addWidget(self.error_label)
        self.refresh_button.clicked.connect(self.refresh)
        self.import_button.clicked.connect(lambda: self.open_import())
        self.download_button.clicked.connect(lambda: self.open_download())
        self.suite_combo.activated.connect(lambda _index: self.refresh())
        self.refresh()

    def open_import(self, files: list[Path] | None = None) -> ImportDialog:
        """The import dialog (``files`` listed already: downloaded ones, of MMLU-Pro)."""
        dialog = ImportDialog(self.workspace, self.page, self, files=files)
        if files:
            dialog.set_format("mmlu-pro")
        dialog.imported.connect(self._imported)
        self._keep(dialog)
        dialog.open()
        return dialog

    def open_download(self, base_url: str | None = None) -> DownloadDialog:
        """The download dialog (``base_url``: a mirror of the repository's folder)."""
        dialog = DownloadDialog(self.page, self, base_url=base_url or BASE_URL)
        dialog.import_requested.connect(lambda files: self.open_import(files))
        self._keep(dialog)
        dialog.open()
        return dialog

    def _keep(self, dialog: ImportDialog | DownloadDialog) -> None:
        self.dialogs.append(dialog)
        dialog.finished.connect(lambda _result: self.dialogs.remove(dialog))

    def _imported(self, info: PoolInfo) -> None:
        self.page.say(f"Imported recorded pool '{info.name}' and suite '{info.suite}'.")
        self.refresh()

    def stop_downloads(self) -> None:
        """Ask every download in flight to stop at its next chunk (the page is closing)."""
        for dialog in self.dialogs:
            if isinstance(dialog, DownloadDialog):
                dialog.cancel_event.set()

    @property
    def chosen_suite(self) -> str | None:
        text = self.suite_combo.currentText()
        return None if text == OWN_SUITE or not text else text

    def refresh(self) -> None:
        """Read the pools again (in the background)."""
        workspace, suite = self.workspace, self.chosen_suite
        self.page.in_background(
            "read recorded pools",
            lambda: read_pools(workspace, suite),
            self._show,
            self._failed,
            latest=True,
        )

    def _show(self, _context: Any, read: tuple[list[PoolInfo], list[str]]) -> None:
        pools, suites = read
        self.pools = pools
        chosen = self.suite_combo.currentText()
        self.suite_combo.clear()
        self.suite_combo.addItems([OWN_SUITE, *suites])
        self.suite_combo.setCurrentText(chosen or OWN_SUITE)
        rows = [(p, w) for p in pools for w in p.workers]
        self.table.setRowCount(len(rows))
        for index, (pool, worker) in enumerate(rows):
            cover = (
                f"{worker.covered}/{worker.suite_tasks} of {pool.suite} ({worker.share:.0%})"
                if worker.suite_tasks
                else f"none of {pool.suite}"
            )
            for column, text in enumerate(
                (worker.worker_id, worker.model, str(worker.answers), cover)
            ):
                item = QTableWidgetItem(text)
                item.setToolTip(
                    f"recorded:{pool.name}, from {pool.source}"
                    + "".join(f"\n{note}" for note in pool.notes)
                )
                if column in (2, 3):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.table.setItem(index, column, item)
        self.table.resizeColumnsToContents()
        self.error_label.clear()
        self.listed.emit(len(rows))

    def _failed(self, _context: Any, exc: Exception) -> None:
        self.error_label.setText(f"Cannot read the recorded pools: {background.readable(exc)}")
        self.listed.emit(-1)

    def cell(self, worker_id: str, column: str) -> str:
        """The text shown for ``worker_id`` in ``column`` (one of COLUMNS)."""
        for index in range(self.table.rowCount()):
            item = self.table.item(index, 0)
            if item is not None and item.text() == worker_id:
                cell = self.table.item(index, COLUMNS.index(column))
                return cell.text() if cell is not None else ""
        raise KeyError(worker_id)
