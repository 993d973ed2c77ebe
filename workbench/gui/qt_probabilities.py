"""How the coordinator's choice looks on a page: a probability distribution as a small
labelled bar chart, one row per option with its name, a bar and its value, the chosen one
in bold and marked (``BarList``; ``ProbabilityBars`` holds the one shown, Playground), and
one probability as a bar in a table cell (``ProbabilityCell``, the Playground's turns).
Every bar has its label beside it: none is dropped for lack of room, as an axis drops
tick labels."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.gui.qt import QGridLayout, QLabel, QProgressBar, QVBoxLayout, QWidget

BAR_STEPS = 1000
CELL_STEPS = 1000  # a cell's bar resolution: 0.001


class BarList(QWidget):
    """A small labelled bar chart: one row per option (its name, a bar, the value); the
    chosen option in bold and marked. ``values`` and ``chosen`` are what is drawn."""

    def __init__(self, title: str, names: Sequence[str], values: Sequence[float], chosen: int):
        super().__init__()
        self.names, self.values, self.chosen = tuple(names), tuple(values), chosen
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(1)
        heading = QLabel(title)
        heading.setStyleSheet("font-weight: bold")
        grid.addWidget(heading, 0, 0, 1, 3)
        self.bars: list[QProgressBar] = []
        for row, (name, value) in enumerate(zip(names, values, strict=True), start=1):
            mark = " ◀ chosen" if row - 1 == chosen else ""
            label = QLabel(name)
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
