"""The new-run side of the Runs page: the form (every key of a ``RunConfig``, editable,
built from the config's own keys: their types, labels, help texts and bounds,
``config_schema.Key``, one source with the config check and docs/reference/config.md), the
buttons that load and save it, Start / Pause / Resume / Stop and the run's status lines
(``NewRunBox``), and the choices its pool and suite offer (``choices``, a disk read)."""

from __future__ import annotations

import logging
from typing import Any

from workbench.core.config import ConfigKey, RunConfig, config_keys
from workbench.core.workspace import Workspace
from workbench.gui.page import message_label
from workbench.gui.qt import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    Qt,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from workbench.gui.runs_model import STATE_WORDS
from workbench.gui.words import EXECUTOR_HELP, worker_words

log = logging.getLogger(__name__)

# the tabs of the new-run form: the config sections each shows
FORM_TABS = (
    ("Run", ("run", "backbone", "cache")),
    ("Pool", ("pool",)),
    ("Tasks", ("tasks",)),
    ("Optimizer", ("optimizer",)),
    ("Budget", ("budget", "protocol")),
)
BACKBONES = ("offline", "Qwen/Qwen3-0.6B")
GENERATIONS_FORMAT = "generation %v of %m"  # the progress bar's words while a run trains


# the editor of one key: what ``set_config`` writes to and ``config`` reads from
Editor = QCheckBox | QSpinBox | QDoubleSpinBox | QComboBox | QLineEdit


class RunForm(QTabWidget):
    """Every key of a ``RunConfig``, editable: built from the config's own sections and
    types, so the form and the TOML file (and the CLI) can never disagree. The pool is a
    checkable list in head-row order, reordered by drag and drop."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.fields: dict[str, Editor] = {}
        self.labels: dict[str, QLabel] = {}  # each field's label, in words
        keys = config_keys()
        self.pool = QListWidget()
        self.pool.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.pool.setToolTip(
            tooltip(next(k for k in keys if k.dotted == "pool.workers"))
            + "\n\nCheck the workers of the team; drag to set their order."
        )
        # keys that hold a list of names other than the pool (protocol.roles): a line of
        # comma-separated names
        self.lists = {k.dotted for k in keys if k.type_name == "list of strings"}
        for title, sections in FORM_TABS:
            tab = QWidget()
            form = QFormLayout(tab)
            for k in (k for section in sections for k in keys if k.section == section):
                if k.dotted == "pool.workers":
                    label = QLabel(f"{k.key.label} (checked ones, in order)")
                    label.setToolTip(self.pool.toolTip())
                    self.labels[k.dotted] = label
                    form.addRow(label)
                    form.addRow(self.pool)
                    continue
                widget = self._editor(k)
                self.fields[k.dotted] = widget
                label = QLabel(k.key.label)
                for w in (label, widget):
                    w.setToolTip(tooltip(k))
                self.labels[k.dotted] = label
                form.addRow(label, widget)
            scroll = QScrollArea()  # the form's height never sets the window's
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(tab)
            self.addTab(scroll, title)
        self.set_config(RunConfig())

    @staticmethod
    def _editor(k: ConfigKey) -> Editor:
        spec = k.key
        if k.type is bool:
            return QCheckBox()
        if k.type is int:
            box = QSpinBox()
            box.setRange(
                int(spec.low) if spec.low is not None else -1000,
                int(spec.high) if spec.high is not None else 1_000_000_000,
            )
            return box
        if k.type is float:
            double = QDoubleSpinBox()
            double.setDecimals(4)
            double.setRange(spec.low or 0.0, spec.high if spec.high is not None else 1e9)
            double.setSingleStep(0.01)
            return double
        if spec.choices or k.dotted in ("backbone.model", "tasks.suite"):
            combo = QComboBox()
            combo.addItems(spec.choices or (BACKBONES if k.dotted == "backbone.model" else ()))
            combo.setEditable(not spec.strict or k.dotted in ("backbone.model", "tasks.suite"))
            return combo
        return QLineEdit()

    def set_config(self, config: RunConfig) -> None:
        data = config.to_dict()
        for key, widget in self.fields.items():
            section, name = key.split(".")
            value = data[section][name]
            if isinstance(widget, QCheckBox):
                widget.setChecked(bool(value))
            elif isinstance(widget, QSpinBox | QDoubleSpinBox):
                widget.setValue(value)
            elif isinstance(widget, QComboBox):
                if widget.findText(str(value)) < 0:
                    widget.addItem(str(value))
                widget.setCurrentText(str(value))
            elif key in self.lists:
                widget.setText(", ".join(value))
            else:
                widget.setText(str(value))
        available = [self.pool.item(i).text() for i in range(self.pool.count())]
        self.pool.clear()
        for wid in config.pool.workers:
            self._add_worker(wid, checked=True)
        self.offer_workers(available)

    def offer_workers(self, worker_ids: list[str]) -> None:
        """Add workers the pool may use (unchecked, after the others) if not listed yet."""
        listed = {self.pool.item(i).text() for i in range(self.pool.count())}
        for wid in worker_ids:
            if wid not in listed:
                self._add_worker(wid, checked=False)
                listed.add(wid)

    def offer_suites(self, names: list[str]) -> None:
        combo = self.fields["tasks.suite"]
        assert isinstance(combo, QComboBox)  # _editor: a suite is chosen from a list
        current = combo.currentText()
        for name in names:
            if combo.findText(name) < 0:
                combo.addItem(name)
        combo.setCurrentText(current)

    def _add_worker(self, wid: str, checked: bool) -> None:
        item = QListWidgetItem(wid)
        item.setToolTip(f"{wid}: {worker_words(wid)}")
        item.setFlags(
            item.flags() | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsDragEnabled
        )
        item.setFlags(
            item.flags() & ~Qt.ItemFlag.ItemIsDropEnabled
        )  # drop between items, not onto one
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.pool.addItem(item)

    def pool_workers(self) -> list[str]:
        items = [self.pool.item(i) for i in range(self.pool.count())]
        return [i.text() for i in items if i.checkState() == Qt.CheckState.Checked]

    def config(self) -> RunConfig:
        """The form as a config; raises ``ConfigError`` naming the key that is wrong."""
        data: dict[str, dict[str, Any]] = {"pool": {"workers": self.pool_workers()}}
        for key, widget in self.fields.items():
            section, name = key.split(".")
            if isinstance(widget, QCheckBox):
                value: Any = widget.isChecked()
            elif isinstance(widget, QSpinBox | QDoubleSpinBox):
                value = widget.value()
            elif isinstance(widget, QComboBox):
                value = widget.currentText().strip()
            elif key in self.lists:  # a list of names, written comma-separated
                value = [part.strip() for part in widget.text().split(",") if part.strip()]
            else:
                value = widget.text().strip()
            data.setdefault(section, {})[name] = value
        return RunConfig.from_dict(data, "the new-run form")


def tooltip(k: ConfigKey) -> str:
    """A key's help in the form: its sentence, what it accepts, and its name in a config
    file (what the docs and error messages call it)."""
    spec = k.key
    accepts = ""
    if spec.choices:
        accepts = f"One of: {', '.join(spec.choices)}."
    elif k.type in (int, float) and (spec.low is not None or spec.high is not None):
        accepts = f"Accepts {spec.bounds(whole=k.type is int)}."
    elif spec.zero:
        accepts = f"0 means {spec.zero}."
    unit = f" In {spec.unit}." if spec.unit else ""
    return f"{spec.help}{unit} {accepts}\nIn a config file: [{k.section}] {k.name}".replace(
        "  ", " "
    )


class NewRunBox(QGroupBox):
    """The form, where its settings came from, the buttons that load and save it, and
    Start / Pause / Resume / Stop with the run's status, progress, spend and executor
    lines; the page connects the buttons and writes the lines."""

    def __init__(self) -> None:
        super().__init__("New run")
        self.form = RunForm()
        self.source_label = QLabel("defaults")
        self.source_label.setWordWrap(True)
        self.load_button = QPushButton("Open…")
        self.load_button.setToolTip("Load a run config file (TOML) into the form")
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip(
            "Save the form as a run config file (what trinity-workbench train reads)"
        )
        self.example_button = QPushButton("Sandbox example")
        self.example_button.setToolTip(
            "One turn per question on the simulated team (offline, free): it learns which "
            "simulated specialist answers which kind of question, in about 5 minutes"
        )
        self.team_example_button = QPushButton("Team example")
        self.team_example_button.setToolTip(
            "Several turns per question on the simulated team (Thinker, Worker, Verifier): "
            "slower, it learns who plans, who answers and who checks"
        )
        source_row = QFormLayout()
        source_row.addRow("Settings from", self.source_label)
        load_row = QHBoxLayout()
        for b in (
            self.load_button,
            self.save_button,
            self.example_button,
            self.team_example_button,
        ):
            load_row.addWidget(b)
        load_row.addStretch(1)
        self.start_button = QPushButton("Start")
        self.pause_button = QPushButton("Pause")
        self.resume_button = QPushButton("Resume")
        self.stop_button = QPushButton("Stop")
        control_row = QHBoxLayout()
        for b in (self.start_button, self.pause_button, self.resume_button, self.stop_button):
            control_row.addWidget(b)
        self.status_label = QLabel(STATE_WORDS["idle"])
        self.message_label = message_label()
        self.progress = QProgressBar()
        self.progress.setFormat(GENERATIONS_FORMAT)
        self.eta_label = QLabel("")
        self.spend_label = QLabel("")
        self.executor_label = QLabel("")
        self.executor_label.setToolTip(EXECUTOR_HELP)
        layout = QVBoxLayout(self)
        layout.addWidget(self.form, 1)
        layout.addLayout(source_row)
        layout.addLayout(load_row)
        layout.addLayout(control_row)
        status_row = QHBoxLayout()
        status_row.addWidget(QLabel("Status:"))
        status_row.addWidget(self.status_label, 1)
        status_row.addWidget(self.eta_label)
        layout.addLayout(status_row)
        layout.addWidget(self.progress)
        for w in (self.spend_label, self.executor_label, self.message_label):
            layout.addWidget(w)


def choices(workspace: Workspace) -> tuple[list[str], list[str]]:
    """The workers a pool may name and the suites there are (read in the background)."""
    from workbench.core.tasks.suites import list_suites
    from workbench.core.workers.pool import builtin_workers
    from workbench.core.workers.recorded import imported_pool_names
    from workbench.core.workers.registry import Registry
    from workbench.core.workers.simulated import POOLS

    # each built-in sandbox pool as a whole ("sandbox", "team"), then its single workers,
    # then the recorded pools (CHAMP's built in, those imported into the workspace)
    workers = [*POOLS, *(w.id for w in builtin_workers())]
    workers += [f"recorded:{n}" for n in ("champ", *imported_pool_names(workspace))]
    try:
        workers += [spec.id for spec in Registry.open().list()]
    except Exception:  # a broken workers.toml is the Workers page's to report
        log.warning("cannot list registered workers", exc_info=True)
    return workers, [info.name for info in list_suites(workspace)]
