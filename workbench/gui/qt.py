"""The one door for Qt: every GUI module imports PySide6 and pyqtgraph names from here
(docs/CONVENTIONS.md, Shape). Nothing else in the project imports PySide6 or pyqtgraph."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import __version__ as PYSIDE_VERSION
from PySide6.QtCore import (
    QByteArray,
    QEvent,
    QModelIndex,
    QObject,
    QSettings,
    QSize,
    Qt,
    QThread,
    QTimer,
    QUrl,
    Signal,
    Slot,
)
from PySide6.QtCore import qVersion as _qVersion
from PySide6.QtGui import (
    QAction,
    QBrush,
    QCloseEvent,
    QColor,
    QDesktopServices,
    QFont,
    QFontMetrics,
    QIcon,
    QImage,
    QKeySequence,
    QPainter,
    QPalette,
    QPen,
    QResizeEvent,
    QShortcut,
)
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

QT_VERSION = _qVersion()


def application() -> QApplication | None:
    """The running ``QApplication`` (a widgets application), or None before one exists."""
    app = QApplication.instance()
    return app if isinstance(app, QApplication) else None


def text_view() -> QPlainTextEdit:
    """A read-only monospace text area (code and math stay readable)."""
    view = QPlainTextEdit()
    view.setReadOnly(True)
    view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    font = view.font()
    font.setFamily("monospace")
    view.setFont(font)
    return view


def read_only_table(headers: tuple[str, ...] | list[str]) -> QTableWidget:
    """A table of rows to look at and select one by one, not to edit."""
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(list(headers))
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    return table


__all__ = [
    "QAbstractButton",
    "QBrush",
    "QFontMetrics",
    "QPainter",
    "QPen",
    "QResizeEvent",
    "QStyledItemDelegate",
    "QStyleOptionViewItem",
    "QBoxLayout",
    "QFrame",
    "QLayout",
    "QScrollArea",
    "QSizePolicy",
    "QToolButton",
    "QStyle",
    "QByteArray",
    "QSettings",
    "QSize",
    "PYSIDE_VERSION",
    "QAbstractItemView",
    "QAction",
    "QApplication",
    "application",
    "QCheckBox",
    "QCloseEvent",
    "QColor",
    "QEvent",
    "QComboBox",
    "QDialog",
    "QDialogButtonBox",
    "QDesktopServices",
    "QDoubleSpinBox",
    "QFileDialog",
    "QFont",
    "QFormLayout",
    "QGridLayout",
    "QGroupBox",
    "QHBoxLayout",
    "QHeaderView",
    "QIcon",
    "QImage",
    "QKeySequence",
    "QShortcut",
    "QLabel",
    "QLineEdit",
    "QListWidget",
    "QListWidgetItem",
    "QMainWindow",
    "QMessageBox",
    "QModelIndex",
    "QObject",
    "QPalette",
    "QPlainTextEdit",
    "QProgressBar",
    "QPushButton",
    "QSlider",
    "QSpinBox",
    "QSplitter",
    "QStackedWidget",
    "QT_VERSION",
    "QTabWidget",
    "QTableWidget",
    "QTableWidgetItem",
    "QTextBrowser",
    "QThread",
    "QTimer",
    "QUrl",
    "QVBoxLayout",
    "QWidget",
    "Qt",
    "Signal",
    "Slot",
    "pg",
    "read_only_table",
    "text_view",
]
