"""How the coordinator's choice looks on a page: a probability distribution as a small
labelled bar chart, one row per option with its name, a bar and its value, the chosen one
in bold and marked (``BarList``; ``ProbabilityBars`` holds the one shown, Playground; two
side by side where they fit, else stacked: ``SideBySide``, Replay's cards), and one
probability as a bar in a table cell (``ProbabilityCell``, the Playground's turns).
Every bar has its label beside it: none is dropped for lack of room, as an axis drops
tick labels."""

from __future__ import annotations

import html
from collections.abc import Sequence

from workbench.core.printable import shared_prefix
from workbench.gui.qt import (
    QBoxLayout,
    QGridLayout,
    QLabel,
    QLayout,
    QProgressBar,
    QResizeEvent,
    QSize,
    Qt,
    QVBoxLayout,
    QWidget,
)

BAR_STEPS = 1000
CELL_STEPS = 1000  # a cell's bar resolution: 0.001


class BarList(QWidget):
    """A small labelled bar chart: one row per option (its name, a bar, the value); the
    chosen option in bold and marked. ``values`` and ``chosen`` are what is drawn. Names
    that share a ``printable.shared_prefix`` (a recorded pool's ``recorded:NAME/``) say it
    once, under the title, and each row the rest (the bar's tooltip has the whole name)."""

    def __init__(self, title: str, names: Sequence[str], values: Sequence[float], chosen: int):
        super().__init__()
        self.names, self.values, self.chosen = tuple(names), tuple(values), chosen
        self.prefix = shared_prefix(names)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(1)
        heading = QLabel(f"<b>{html.escape(title)}</b>")
        if self.prefix:
            heading.setText(f"{heading.text()}<br>{html.escape(self.prefix)}…")
            heading.setToolTip(f"every one of them starts with {self.prefix}")
        grid.addWidget(heading, 0, 0, 1, 3)
        self.bars: list[QProgressBar] = []
        self.labels: list[QLabel] = []
        for row, (name, value) in enumerate(zip(names, values, strict=True), start=1):
            mark = " ◀ chosen" if row - 1 == chosen else ""
            label = QLabel(name.removeprefix(self.prefix))
            self.labels.append(label)
            bar = QProgressBar()
            bar.setRange(0, BAR_STEPS)
            bar.setValue(round(max(0.0, min(1.0, value)) * BAR_STEPS))
            bar.setTextVisible(False)
            bar.setFixedHeight(10)
            bar.setMinimumWidth(36)  # narrow enough for a Replay card beside the list at 1280 px
            number = QLabel(f"{value:.0%}{mark}")
            if mark:
                for w in (label, number):
                    w.setStyleSheet("font-weight: bold")
            bar.setToolTip(f"{name}: probability {value:.3f}")
            grid.addWidget(label, row, 0)
            grid.addWidget(bar, row, 1)
            grid.addWidget(number, row, 2)
            self.bars.append(bar)
        grid.setColumnStretch(1, 1)


class SideBySide(QWidget):
    """Two widgets side by side (sharing the width ``stretch``) where the width allows
    both their smallest widths, else one above the other: a card never wider than its
    view, whatever the workers' names."""

    SPACING = 16

    def __init__(self, first: QWidget, second: QWidget, stretch: tuple[int, int] = (3, 2)):
        super().__init__()
        self.first, self.second = first, second
        self.box = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(self.SPACING)
        self.box.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)
        self.box.addWidget(first, stretch[0], Qt.AlignmentFlag.AlignTop)
        self.box.addWidget(second, stretch[1], Qt.AlignmentFlag.AlignTop)

    def side_by_side_width(self) -> int:
        hints = (self.first.minimumSizeHint(), self.second.minimumSizeHint())
        return hints[0].width() + self.SPACING + hints[1].width()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """As narrow as the wider of the two: narrower than both side by side, they stack."""
        hints = (self.first.minimumSizeHint(), self.second.minimumSizeHint())
        return QSize(max(h.width() for h in hints), max(h.height() for h in hints))

    def stacked(self) -> bool:
        return self.box.direction() == QBoxLayout.Direction.TopToBottom

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        wide = event.size().width() >= self.side_by_side_width()
        direction = QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom
        if direction != self.box.direction():
            self.box.setDirection(direction)
            self.updateGeometry()  # its height changes with the direction
        super().resizeEvent(event)


class ProbabilityBars(QWidget):
    """The distribution shown now, as a ``BarList`` (replaced at each ``show_distribution``);
    ``probs`` and ``chosen`` are what is drawn."""

    def __init__(self, title: str):
        super().__init__()
        self.title = title
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        self.bars: BarList | None = None
        self.probs: tuple[float, ...] = ()
        self.chosen = -1

    def show_distribution(self, labels: Sequence[str], probs: Sequence[float], chosen: int) -> None:
        self.clear_distribution()
        self.bars = BarList(self.title, labels, probs, chosen)
        self.layout_.addWidget(self.bars)
        self.probs, self.chosen = tuple(probs), chosen

    def clear_distribution(self) -> None:
        if self.bars is not None:
            self.layout_.removeWidget(self.bars)
            self.bars.hide()  # at once: deleted later, it was drawn under the new one
            self.bars.deleteLater()
            self.bars = None
        self.probs, self.chosen = (), -1


class ProbabilityCell(QProgressBar):
    """One probability as a horizontal bar with its value written on it (``0.83``)."""

    def __init__(self, probability: float):
        super().__init__()
        self.setRange(0, CELL_STEPS)
        self.setValue(round(max(0.0, min(1.0, probability)) * CELL_STEPS))
        self.setFormat(f"{probability:.2f}")
        self.setTextVisible(True)
        self.probability = probability
