"""The new-run form of the Runs page: every key of a ``RunConfig``, editable, built from
the config's own keys: their types, labels, help texts and bounds (``config_schema.Key``, one
source with the config check and docs/reference/config.md)."""

from __future__ import annotations

from typing import Any

from workbench.core.config import ConfigKey, RunConfig, config_keys
from workbench.gui.qt import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QSpinBox,
    Qt,
    QTabWidget,
    QWidget,
)
from workbench.gui.words import worker_words

# the tabs of the new-run form: the config sections each shows
FORM_TABS = (
    ("Run", ("run", "backbone", "cache")),
    ("Pool", ("pool",)),
    ("Tasks", ("tasks",)),
    ("Optimizer", ("optimizer",)),
    ("Budget", ("budget", "protocol")),
)
BACKBONES = ("offline", "Qwen/Qwen3-0.6B")


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
