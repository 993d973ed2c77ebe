"""The new-run form of the Runs page: every key of a ``RunConfig``, editable, built from
the config's own sections and types, each labelled in plain words with what it does in
its tooltip (``words.CONFIG_WORDS``; the key as the config file spells it is there too)."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from workbench.core.config import CHOICES, RunConfig
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
from workbench.gui.words import config_help, config_label, worker_words

# the tabs of the new-run form: the config sections each shows
FORM_TABS = (
    ("Run", ("run", "backbone", "cache")),
    ("Pool", ("pool",)),
    ("Tasks", ("tasks",)),
    ("Optimizer", ("optimizer",)),
    ("Budget", ("budget", "protocol")),
)
BACKBONES = ("offline", "Qwen/Qwen3-0.6B")


class RunForm(QTabWidget):
    """Every key of a ``RunConfig``, editable: built from the config's own sections and
    types, so the form and the TOML file (and the CLI) can never disagree. The pool is a
    checkable list in head-row order, reordered by drag and drop."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.fields: dict[str, QWidget] = {}
        self.labels: dict[str, QLabel] = {}  # each field's label, in words
        self.pool = QListWidget()
        self.pool.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.pool.setToolTip(
            config_help("pool.workers")
            + "\n\nCheck the workers of the team; drag to set their order."
        )
        hints = typing.get_type_hints(RunConfig)
        for title, sections in FORM_TABS:
            tab = QWidget()
            form = QFormLayout(tab)
            for section in sections:
                for f in dataclasses.fields(hints[section]):
                    key = f"{section}.{f.name}"
                    if key == "pool.workers":
                        label = QLabel(f"{config_label(key)} (checked ones, in order)")
                        label.setToolTip(self.pool.toolTip())
                        self.labels[key] = label
                        form.addRow(label)
                        form.addRow(self.pool)
                        continue
                    widget = self._editor(key, typing.get_type_hints(hints[section])[f.name])
                    self.fields[key] = widget
                    label = QLabel(config_label(key))
                    for w in (label, widget):
                        w.setToolTip(config_help(key))
                    self.labels[key] = label
                    form.addRow(label, widget)
            scroll = QScrollArea()  # the form's height never sets the window's
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(tab)
            self.addTab(scroll, title)
        self.set_config(RunConfig())

    @staticmethod
    def _editor(key: str, hint: Any) -> QWidget:
        if hint is bool:
            return QCheckBox()
        if hint is int:
            box = QSpinBox()
            box.setRange(-1000, 1_000_000_000)
            return box
        if hint is float:
            box = QDoubleSpinBox()
            box.setDecimals(4)
            box.setRange(0.0, 1e9)
            box.setSingleStep(0.01)
            return box
        if key in CHOICES or key in ("backbone.model", "tasks.suite"):
            combo = QComboBox()
            combo.addItems(CHOICES.get(key) or (BACKBONES if key == "backbone.model" else ()))
            combo.setEditable(key in ("backbone.model", "tasks.suite", "backbone.device"))
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
            else:
                value = widget.text().strip()
            data.setdefault(section, {})[name] = value
        return RunConfig.from_dict(data, "the new-run form")
