"""The Workers page's import and download dialogs for recorded pools.

- ``ImportDialog``: files of MMLU-Pro's published outputs or lm-evaluation-harness
  samples (a format, the files, a name) become the suite and the recorded pool of that
  name, through ``workbench.core.importers``, with progress; every problem of every file
  is listed, and nothing is imported when there is one.
- ``DownloadDialog``: MMLU-Pro's files of the models chosen (the nine whose checksums the
  workbench keeps, and any other named) fetched from the repository with
  ``importers.download``: progress, the SHA-256 shown and checked where known, resumed
  after a cancel or a broken connection; then "Import these…".

Both work in background jobs owned by the page (``gui/background.py``): the GUI thread
never reads a file or waits on the network; progress comes back by signal.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from workbench.core.importers.build import ImportOptions
from workbench.core.importers.download import (
    BASE_URL,
    KNOWN,
    Downloaded,
    DownloadProgress,
    default_folder,
    download,
)
from workbench.core.importers.lm_eval import import_lm_eval
from workbench.core.importers.mmlu_pro import import_mmlu_pro
from workbench.core.printable import shown_path
from workbench.core.recordings import PoolInfo
from workbench.core.tasks.jsonl import SuiteValidationError
from workbench.core.workspace import Workspace
from workbench.gui import background
from workbench.gui.page import ErrorLabel
from workbench.gui.qt import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QObject,
    QProgressBar,
    QPushButton,
    QSpinBox,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
    text_view,
)

FORMATS = {
    "MMLU-Pro outputs (model_outputs_<MODEL>_5shots.zip)": "mmlu-pro",
    "lm-evaluation-harness samples (--log_samples)": "lm-eval",
}
STAGES = {
    "read": "Reading",
    "check": "Checking every question and answer",
    "write": "Writing the answers",
    "suite": "Writing the suite",
}


class ImportDialog(QDialog):
    """Import files as a suite and a recorded pool of one name, in a job of ``owner``."""

    progress = Signal(object)  # ImportProgress, from the job's thread
    imported = Signal(object)  # PoolInfo, once the pool and the suite are written
    failed = Signal(str)  # what went wrong, as shown

    def __init__(
        self,
        workspace: Workspace,
        owner: QObject,
        parent: QWidget | None = None,
        files: list[Path] | None = None,
    ):
        super().__init__(parent)
        self.workspace = workspace
        self._owner = owner  # jobs belong to the page, which outlives the dialog
        self.setWindowTitle("Import recorded answers")
        self.setMinimumWidth(620)
        self.format = QComboBox()
        self.format.addItems(list(FORMATS))
        self.files = QListWidget()
        self.files.setToolTip(
            "One file per model, or a folder of them (lm-evaluation-harness: the folder "
            "--output_path wrote, a folder per model)"
        )
        self.add_files_button = QPushButton("Add files…")
        self.add_folder_button = QPushButton("Add folder…")
        self.remove_button = QPushButton("Remove")
        self.name = QLineEdit()
        self.name.setPlaceholderText("the suite's and the pool's name (letters, digits, - and _)")
        self.drop_mismatched = QCheckBox(
            "Leave out questions that differ between the files (else they are errors)"
        )
        self.split_seed = QSpinBox()
        self.split_seed.setRange(0, 2**31 - 1)
        self.split_seed.setToolTip("The seed of the suite's 60/20/20 split in each category")
        self.replace = QCheckBox("Replace a suite and pool of this name")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.stage = QLabel("")
        self.error = ErrorLabel()
        self.error.setWordWrap(True)
        self.problems = text_view()
        self.problems.setFixedHeight(160)
        self.problems.hide()
        self.import_button = QPushButton("Import")
        self.import_button.setDefault(True)
        self.close_button = QPushButton("Close")

        file_buttons = QHBoxLayout()
        for button in (self.add_files_button, self.add_folder_button, self.remove_button):
            file_buttons.addWidget(button)
        file_buttons.addStretch(1)
        form = QFormLayout()
        form.addRow("Format", self.format)
        form.addRow("Files", self.files)
        form.addRow("", file_buttons)
        form.addRow("Name", self.name)
        form.addRow("Split seed", self.split_seed)
        form.addRow("", self.drop_mismatched)
        form.addRow("", self.replace)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.import_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.stage)
        layout.addWidget(self.bar)
        layout.addWidget(self.error)
        layout.addWidget(self.problems)
        layout.addLayout(buttons)

        self.add_files_button.clicked.connect(self.choose_files)
        self.add_folder_button.clicked.connect(self.choose_folder)
        self.remove_button.clicked.connect(self._remove_selected)
        self.import_button.clicked.connect(self.start)
        self.close_button.clicked.connect(self.reject)
        self.progress.connect(self._on_progress)
        self.running = False
        self.add_files(files or [])

    # -- the form ------------------------------------------------------------------

    def add_files(self, paths: list[Path]) -> None:
        """Add files (or folders) to import, once each."""
        have = {
            self.files.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.files.count())
        }
        for path in paths:
            if str(path) in have:
                continue
            item = QListWidgetItem(shown_path(path))
            item.setData(Qt.ItemDataRole.UserRole, str(path))
            item.setToolTip(str(path))
            self.files.addItem(item)

    def paths(self) -> list[Path]:
        return [
            Path(self.files.item(i).data(Qt.ItemDataRole.UserRole))
            for i in range(self.files.count())
        ]

    def choose_files(self) -> None:
        chosen, _ = QFileDialog.getOpenFileNames(
            self, "Files to import", "", "Outputs (*.zip *.json *.jsonl);;All files (*)"
        )
        self.add_files([Path(p) for p in chosen])

    def choose_folder(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "A folder of samples files")
        if chosen:
            self.add_files([Path(chosen)])

    def _remove_selected(self) -> None:
        for item in self.files.selectedItems():
            self.files.takeItem(self.files.row(item))

    @property
    def format_name(self) -> str:
        return FORMATS[self.format.currentText()]

    def set_format(self, name: str) -> None:
        self.format.setCurrentText(next(k for k, v in FORMATS.items() if v == name))

    # -- importing -----------------------------------------------------------------

    def start(self) -> None:
        """Import in a job of the page; ``imported`` or ``failed`` tells the end."""
        if self.running:
            return
        name, paths = self.name.text().strip(), self.paths()
        if not paths or not name:
            self._show_failure("Add the files to import and give the pool a name.", [])
            return
        run = import_mmlu_pro if self.format_name == "mmlu-pro" else import_lm_eval
        workspace, emit = self.workspace, self.progress.emit
        options = ImportOptions(
            drop_mismatched=self.drop_mismatched.isChecked(),
            split_seed=self.split_seed.value(),
            replace=self.replace.isChecked(),
        )

        def call() -> PoolInfo:
            return run(workspace, [(None, p) for p in paths], name, options, progress=emit)

        self.running = True
        self.error.clear()
        self.problems.hide()
        self.import_button.setEnabled(False)
        self.stage.setText("Starting…")
        self.bar.setRange(0, 0)
        background.start(self._owner, f"import {name}", call, self._done, self._failed, name)

    def _on_progress(self, event: Any) -> None:
        what = f"{STAGES.get(event.stage, event.stage)} {event.item}".strip()
        self.stage.setText(f"{what} ({event.done} of {event.total})")
        self.bar.setRange(0, max(event.total, 1))
        self.bar.setValue(event.done)

    def _done(self, _name: str, info: PoolInfo) -> None:
        self.running = False
        self.import_button.setEnabled(True)
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        tasks = info.workers[0].suite_tasks if info.workers else 0
        self.stage.setText(
            f"Imported {info.answers} answers of {len(info.workers)} workers to {tasks} "
            f"questions: suite '{info.suite}', workers recorded:{info.name}"
        )
        self.imported.emit(info)

    def _failed(self, _name: str, exc: Exception) -> None:
        self.running = False
        self.import_button.setEnabled(True)
        issues = [str(i) for i in exc.issues] if isinstance(exc, SuiteValidationError) else []
        summary = exc.summary if isinstance(exc, SuiteValidationError) else None
        self._show_failure(summary or background.readable(exc), issues)

    def _show_failure(self, text: str, issues: list[str]) -> None:
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.stage.setText("")
        self.error.setText(text)
        self.problems.setPlainText("\n".join(issues))
        self.problems.setVisible(bool(issues))
        self.failed.emit(text)

    def reject(self) -> None:
        if self.running:  # an import cannot stop midway; it writes nothing until its end
            self.stage.setText("The import finishes first (it writes nothing until its end).")
            return
        super().reject()


class DownloadDialog(QDialog):
    """Download MMLU-Pro's files of chosen models, in a job of ``owner``."""

    progress = Signal(object)  # DownloadProgress, from the job's thread
    downloaded = Signal(object)  # list[Downloaded]
    failed = Signal(str)  # the error, as shown (a cancel too)
    import_requested = Signal(object)  # list[Path]: "Import these…"

    def __init__(
        self,
        owner: QObject,
        parent: QWidget | None = None,
        *,
        folder: Path | None = None,
        base_url: str = BASE_URL,
    ):
        super().__init__(parent)
        self._owner = owner
        self.base_url = base_url
        self.folder = folder or default_folder()
        self.cancel_event = threading.Event()
        self.results: list[Downloaded] = []
        self.running = False
        self.setWindowTitle("Download MMLU-Pro's published outputs")
        self.setMinimumWidth(620)
        self.models = QListWidget()
        for model, (_digest, size) in KNOWN.items():
            item = QListWidgetItem(f"{model}  ({size / 1e6:.1f} MB, checksum known)")
            item.setData(Qt.ItemDataRole.UserRole, model)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.models.addItem(item)
        self.others = QLineEdit()
        self.others.setPlaceholderText(
            "other models, as named in the repository's eval_results/ (spaces between)"
        )
        self.folder_label = QLabel(shown_path(self.folder))
        self.folder_label.setToolTip(str(self.folder))
        self.folder_button = QPushButton("Change…")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.stage = QLabel("")
        self.stage.setWordWrap(True)
        self.error = ErrorLabel()
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.report = text_view()
        self.report.setFixedHeight(110)
        self.report.hide()
        self.download_button = QPushButton("Download")
        self.download_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.setEnabled(False)
        self.import_button = QPushButton("Import these…")
        self.import_button.setEnabled(False)
        self.close_button = QPushButton("Close")

        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder_label, 1)
        folder_row.addWidget(self.folder_button)
        form = QFormLayout()
        form.addRow("Models", self.models)
        form.addRow("Others", self.others)
        form.addRow("Into", folder_row)
        buttons = QHBoxLayout()
        buttons.addWidget(self.download_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        buttons.addWidget(self.import_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        note = QLabel(
            "From github.com/TIGER-AI-Lab/MMLU-Pro (eval_results/, at a fixed commit). A "
            "stopped download resumes where it stopped; a file becomes whole only once "
            "its checksum (or for other models, its zip) checks."
        )
        note.setWordWrap(True)
        layout.addWidget(note)
        layout.addLayout(form)
        layout.addWidget(self.stage)
        layout.addWidget(self.bar)
        layout.addWidget(self.error)
        layout.addWidget(self.report)
        layout.addLayout(buttons)

        self.folder_button.clicked.connect(self.choose_folder)
        self.download_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.import_button.clicked.connect(
            lambda: self.import_requested.emit([r.path for r in self.results])
        )
        self.close_button.clicked.connect(self.reject)
        self.progress.connect(self._on_progress)

    def choose(self, *models: str) -> None:
        """Tick these models (the known ones) and name the others in the text field."""
        others = []
        for model in models:
            found = False
            for i in range(self.models.count()):
                item = self.models.item(i)
                if item.data(Qt.ItemDataRole.UserRole) == model:
                    item.setCheckState(Qt.CheckState.Checked)
                    found = True
            if not found:
                others.append(model)
        self.others.setText(" ".join(others))

    def chosen(self) -> list[str]:
        ticked = [
            self.models.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.models.count())
            if self.models.item(i).checkState() == Qt.CheckState.Checked
        ]
        return ticked + self.others.text().replace(",", " ").split()

    def choose_folder(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Download into", str(self.folder))
        if chosen:
            self.folder = Path(chosen)
            self.folder_label.setText(shown_path(self.folder))
            self.folder_label.setToolTip(chosen)

    def start(self) -> None:
        """Download the chosen models in a job of the page (``downloaded`` or ``failed``)."""
        models = self.chosen()
        if self.running or not models:
            if not models:
                self.error.setText("Tick a model, or name one under Others.")
            return
        self.cancel_event = cancel = threading.Event()
        folder, base_url, emit = self.folder, self.base_url, self.progress.emit

        def call() -> list[Downloaded]:
            return download(models, folder, base_url=base_url, progress=emit, cancel=cancel)

        self.running = True
        self.error.clear()
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.import_button.setEnabled(False)
        self.stage.setText("Connecting…")
        self.bar.setRange(0, 0)
        background.start(self._owner, "download mmlu-pro", call, self._done, self._failed, models)

    def cancel(self) -> None:
        """Stop the download after the chunk in flight; its part is kept to resume."""
        self.cancel_event.set()
        self.stage.setText("Cancelling…")

    def _on_progress(self, event: DownloadProgress) -> None:
        if not self.running:
            return
        done = f"{event.done / 1e6:.1f}"
        total = f" of {event.total / 1e6:.1f} MB" if event.total else " MB"
        resumed = f", resumed at {event.resumed_from / 1e6:.1f} MB" if event.resumed_from else ""
        phase = "checking" if event.phase == "checking" else "downloading"
        self.stage.setText(
            f"{phase} {event.model} ({event.index + 1} of {event.count}): {done}{total}{resumed}"
        )
        if event.total:
            self.bar.setRange(0, event.total)
            self.bar.setValue(event.done)
        else:
            self.bar.setRange(0, 0)  # busy: the server announced no length

    def _done(self, _models: list[str], results: list[Downloaded]) -> None:
        self._stopped()
        self.results = results
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.stage.setText(f"{len(results)} file(s) ready in {shown_path(self.folder)}")
        lines = []
        for r in results:
            how = "already there" if r.already else "downloaded"
            if r.resumed_from and not r.already:
                how = f"resumed at {r.resumed_from / 1e6:.1f} MB"
            check = "matches the published checksum" if r.checked else "not known, not checked"
            lines.append(f"{r.model}: {how}; SHA-256 {r.sha256} ({check})")
        self.report.setPlainText("\n".join(lines))
        self.report.show()
        self.import_button.setEnabled(bool(results))
        self.downloaded.emit(results)

    def _failed(self, _models: list[str], exc: Exception) -> None:
        self._stopped()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        text = background.readable(exc)
        self.stage.setText("")
        self.error.setText(text)
        self.failed.emit(text)

    def _stopped(self) -> None:
        self.running = False
        self.download_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def reject(self) -> None:
        self.cancel_event.set()  # a download in flight stops at its next chunk, part kept
        super().reject()
