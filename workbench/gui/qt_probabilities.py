"""How the coordinator's choice looks on a page: a probability distribution as bars with
the chosen one highlighted (``ProbabilityBars``, Replay and Playground), and one
probability as a bar in a table cell (``ProbabilityCell``, the Playground's turns)."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.gui.qt import QProgressBar, pg

CHOSEN = (230, 120, 30)
OTHER = (120, 140, 170)
CELL_STEPS = 1000  # a cell's bar resolution: 0.001


class ProbabilityBars(pg.PlotWidget):
    """One probability distribution as bars, the chosen one highlighted."""

    def __init__(self, title: str):
        super().__init__()
        self.setTitle(title)
        self.setYRange(0, 1)
        self.setMouseEnabled(x=False, y=False)
        self.setMenuEnabled(False)
        self.bars: pg.BarGraphItem | None = None
        self.probs: tuple[float, ...] = ()  # what is drawn, for tests and tooltips
        self.chosen = -1

    def show_distribution(self, labels: Sequence[str], probs: Sequence[float], chosen: int) -> None:
        self.clear_distribution()
        brushes = [pg.mkBrush(*(CHOSEN if i == chosen else OTHER)) for i in range(len(probs))]
        self.bars = pg.BarGraphItem(
            x=list(range(len(probs))), height=list(probs), width=0.6, brushes=brushes
        )
        self.addItem(self.bars)
        self.getAxis("bottom").setTicks([list(enumerate(labels))])
        self.probs = tuple(probs)
        self.chosen = chosen

    def clear_distribution(self) -> None:
        if self.bars is not None:
            self.removeItem(self.bars)
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
