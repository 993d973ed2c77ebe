"""The Runs page's live plots: the training score per generation (with the validation
points), the search's step size, and who answered (turns per worker and role, a heatmap
with its colour scale). Generations are numbered from 1 on every axis, with whole-number
ticks; the method's terms ("fitness", "sigma") are named in the tooltips, the axes speak
plain words. Plot items are created once and redrawn from a timer with ``setData`` on
preallocated arrays that grow by doubling (docs: pyqtgraph's scrolling plots are the
model)."""

from __future__ import annotations

import numpy as np

from workbench.core.printable import shared_prefix
from workbench.core.records import ROLES, GenerationStats
from workbench.gui.plots import (
    coloured_curve,
    generation_plot,
    legend_beside,
    show_generations,
    themed_colour_bar,
)
from workbench.gui.qt import QLabel, Qt, QVBoxLayout, QWidget, pg
from workbench.gui.words import (
    ROLE_NAMES,
    SCORE_HELP,
    SCORES_CAPTION,
    STEP_SIZE_HELP,
    VALIDATION_HELP,
)


class Series:
    """A growing float array: preallocated, doubled when full; ``view`` is the filled part."""

    def __init__(self, capacity: int = 64):
        self._data = np.full(capacity, np.nan)
        self.size = 0

    def append(self, value: float) -> None:
        if self.size == len(self._data):
            grown = np.full(2 * len(self._data), np.nan)
            grown[: self.size] = self._data
            self._data = grown
        self._data[self.size] = value
        self.size += 1

    def clear(self) -> None:
        self.size = 0

    @property
    def view(self) -> np.ndarray:
        return self._data[: self.size]


class UsageGrid:
    """Turns per (worker, role) row and generation column; rows come in threes per worker
    (thinker, worker, verifier) in order of first appearance. Grows by doubling."""

    def __init__(self, rows: int = 6, cols: int = 64):
        self._data = np.zeros((rows, cols))
        self.workers: list[str] = []
        self.cols = 0

    def clear(self) -> None:
        self._data[:] = 0
        self.workers = []
        self.cols = 0

    def add(self, column: int, usage: dict[str, int]) -> None:
        for key, turns in usage.items():
            worker, _, role = key.rpartition("/")
            if worker not in self.workers:
                self.workers.append(worker)
            row = 3 * self.workers.index(worker) + [str(r) for r in ROLES].index(role)
            self._grow(row + 1, column + 1)
            self._data[row, column] += turns
        self._grow(3 * len(self.workers), column + 1)
        self.cols = max(self.cols, column + 1)

    def _grow(self, rows: int, cols: int) -> None:
        r, c = self._data.shape
        if rows <= r and cols <= c:
            return
        while r < rows:
            r *= 2
        while c < cols:
            c *= 2
        grown = np.zeros((r, c))
        grown[: self._data.shape[0], : self._data.shape[1]] = self._data
        self._data = grown

    @property
    def _used(self) -> np.ndarray:
        """Which (worker, role) rows have a turn in some generation: a role no worker
        played (a one-turn routing table's Thinker and Verifier) gets no row."""
        return self._data[: 3 * len(self.workers), : self.cols].sum(axis=1) > 0

    @property
    def view(self) -> np.ndarray:
        return self._data[: 3 * len(self.workers), : self.cols][self._used]

    @property
    def prefix(self) -> str:
        """The workers' ``shared_prefix``, said once beside the rows."""
        return shared_prefix(self.workers)

    @property
    def labels(self) -> list[str]:
        """Each row's label, ``worker as Role``, the workers' shared ``prefix`` left out."""
        short = len(self.prefix)
        rows = [f"{w[short:]} as {ROLE_NAMES[str(r)]}" for w in self.workers for r in ROLES]
        return [label for label, used in zip(rows, self._used, strict=True) if used]


# each curve's colour, by name (``plots.plot_palette`` gives its light or dark shade)
CURVE_COLOURS = {
    "best": "green",
    "mean": "blue",
    "median": "purple",
    "worst": "red",
    "validation": "orange",
    "sigma": "slate",
}


class RunPlots:
    """The three plots of a run and the buffers behind them."""

    CURVES = ("best", "mean", "median", "worst")

    def __init__(self) -> None:
        self.x = Series()
        self.series = {name: Series() for name in (*self.CURVES, "sigma")}
        self.validation_x = Series()
        self.validation = Series()
        self.usage = UsageGrid()
        self._dirty = False
        self.fitness_plot = generation_plot("Training score and validation", "share right")
        self.fitness_plot.setToolTip(
            "Each generation tries a population of candidate coordinators on a few training "
            f"questions: the best, mean, median and worst candidate's score.\n\n{SCORE_HELP}"
            f"\n\n{VALIDATION_HELP}"
        )
        self.legend = legend_beside(self.fitness_plot)
        self.curves = {}
        for name in self.CURVES:
            curve = coloured_curve(self.fitness_plot.plot(), CURVE_COLOURS[name])
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
            self.curves[name] = curve
            self.legend.addItem(curve, name)
        self.validation_points = coloured_curve(
            self.fitness_plot.plot(symbol="o", symbolSize=7),
            CURVE_COLOURS["validation"],
            style=Qt.PenStyle.DashLine,
            symbols=True,
        )
        self.legend.addItem(self.validation_points, "validation")
        # why the best training score reads higher than validation, in a line under it
        self.caption = QLabel(SCORES_CAPTION)
        self.caption.setWordWrap(True)
        self.caption.setToolTip(f"{SCORE_HELP}\n\n{VALIDATION_HELP}")
        self.scores = QWidget()
        column = QVBoxLayout(self.scores)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.fitness_plot, 1)
        column.addWidget(self.caption)
        self.sigma_plot = generation_plot("How widely the search still looks", "step size")
        self.sigma_plot.setToolTip(STEP_SIZE_HELP)
        self.curves["sigma"] = coloured_curve(self.sigma_plot.plot(), CURVE_COLOURS["sigma"])
        self.curves["sigma"].setDownsampling(auto=True, method="peak")
        self.curves["sigma"].setClipToView(True)
        self.usage_plot = generation_plot("Who answered: turns per worker and role", "")
        self.usage_plot.setToolTip(
            "Brighter: more turns given to that worker in that role in that generation "
            "(the scale on the right counts the turns)"
        )
        self.usage_plot.invertY(True)
        self.usage_plot.setYRange(0, 3)
        self.heatmap = pg.ImageItem(axisOrder="row-major")
        colours = pg.colormap.get("viridis")
        self.heatmap.setColorMap(colours)
        self.usage_plot.addItem(self.heatmap)
        self.colour_bar = themed_colour_bar(self.usage_plot, self.heatmap, colours, "turns")

    @property
    def widgets(self) -> tuple[QWidget, ...]:
        """The three plots as the page lays them out (the scores with their caption)."""
        return (self.scores, self.sigma_plot, self.usage_plot)

    def add_stats(self, stats: GenerationStats) -> None:
        """Add a generation's figures (stored or live)."""
        self.add_generation(
            stats.generation,
            stats.best,
            stats.mean,
            stats.median,
            stats.worst,
            stats.sigma,
            stats.validation,
            stats.usage,
        )

    def clear(self) -> None:
        self.x.clear()
        for s in self.series.values():
            s.clear()
        self.validation_x.clear()
        self.validation.clear()
        self.usage.clear()
        self._dirty = True

    def add_generation(
        self,
        g: int,
        best: float,
        mean: float,
        median: float,
        worst: float,
        sigma: float,
        validation: float | None,
        usage: dict[str, int],
    ) -> None:
        """Add stored generation ``g`` (counted from 0 as the store keeps it); the plots
        number it ``g + 1``."""
        self.x.append(g + 1)
        for name, value in zip(
            (*self.CURVES, "sigma"), (best, mean, median, worst, sigma), strict=True
        ):
            self.series[name].append(value)
        if validation is not None:
            self.validation_x.append(g + 1)
            self.validation.append(validation)
        self.usage.add(g, usage)
        self._dirty = True

    def redraw(self) -> None:
        """Push the buffers to the plot items (from the timer, not per event)."""
        if not self._dirty:
            return
        self._dirty = False
        x = self.x.view
        for name, curve in self.curves.items():
            curve.setData(x, self.series[name].view)
        self.validation_points.setData(self.validation_x.view, self.validation.view)
        if x.size:
            for plot in (self.fitness_plot, self.sigma_plot, self.usage_plot):
                show_generations(plot, int(x[-1]))
        grid = self.usage.view
        if grid.size:
            self.heatmap.setImage(grid, autoLevels=False)
            self.colour_bar.setLevels((0.0, max(1.0, float(grid.max()))))
            self.heatmap.setRect(0.5, 0, grid.shape[1], grid.shape[0])  # column c: generation c+1
            # every row in view, each labelled (a pool of two once showed only the first's)
            self.usage_plot.setYRange(0, grid.shape[0], padding=0)
            axis = self.usage_plot.getAxis("left")
            axis.setTicks([[(i + 0.5, label) for i, label in enumerate(self.usage.labels)]])
            prefix = self.usage.prefix
            axis.setLabel(prefix) if prefix else axis.showLabel(False)
        else:
            self.heatmap.clear()
