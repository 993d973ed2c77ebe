"""What every plot of the GUI shares: colours from the application's palette (light or
dark, following the system), an x axis of whole generations (1, 2, 3: no 0.5, no -30..30
for a single generation), axis labels, and a legend in its own column right of the plot
so that it never covers a curve."""

from __future__ import annotations

import math

from workbench.gui.qt import QPalette, application, pg


def palette_colors() -> tuple[str, str]:
    """(background, foreground) of the application's palette, as hex colours."""
    app = application()
    palette = app.palette() if app is not None else QPalette()
    return (
        palette.color(QPalette.ColorRole.Base).name(),
        palette.color(QPalette.ColorRole.Text).name(),
    )


def style_plot(plot: pg.PlotWidget) -> None:
    """Colour ``plot`` as the rest of the window: the palette's base and text colours."""
    background, foreground = palette_colors()
    plot.setBackground(background)
    item = plot.getPlotItem()
    for name in ("left", "bottom", "right", "top"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(foreground))
        axis.setTextPen(pg.mkPen(foreground))
    title = item.titleLabel
    if title.text:
        title.setText(title.text, color=foreground)


class GenerationAxis(pg.AxisItem):
    """An x axis of whole numbers: ticks at integers only, written without decimals."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph's names)
        levels = []
        for spacing, values in super().tickValues(minVal, maxVal, size):
            if spacing >= 1:
                levels.append((spacing, [v for v in values if float(v).is_integer()]))
        if not levels:  # zoomed in below one generation: every whole one in view
            levels = [(1.0, [float(v) for v in range(math.ceil(minVal), math.floor(maxVal) + 1)])]
        return levels

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph's name)
        return [str(int(round(v * scale))) for v in values]


def generation_plot(title: str, y_label: str) -> pg.PlotWidget:
    """A plot over generations (numbered from 1) with its axes labelled."""
    axis = GenerationAxis("bottom")
    axis.enableAutoSIPrefix(False)
    plot = pg.PlotWidget(title=title, axisItems={"bottom": axis})
    plot.setLabel("bottom", "generation")
    if y_label:
        plot.setLabel("left", y_label)
    plot.showGrid(x=False, y=True, alpha=0.2)
    plot.setMinimumHeight(120)
    show_generations(plot, 1)  # empty: generations 1 and 2, not -0.5..0.5
    style_plot(plot)
    return plot


def legend_beside(plot: pg.PlotWidget) -> pg.LegendItem:
    """A legend in a column of its own right of the plot (never over the curves); items
    are added with ``legend.addItem(curve, name)``."""
    _, foreground = palette_colors()
    legend = pg.LegendItem(labelTextColor=foreground)
    item = plot.getPlotItem()
    item.layout.addItem(legend, 2, 3)
    return legend


def show_generations(plot: pg.PlotWidget, last: int) -> None:
    """Show generations 1..``last`` on the x axis (at least 1..2, so that one generation
    is a point in a plot, not the middle of -30..30)."""
    plot.setXRange(0.5, max(last, 2) + 0.5, padding=0.02)
