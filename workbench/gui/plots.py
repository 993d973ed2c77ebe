"""What every plot of the GUI shares: colours from the active theme (``plot_palette``: the
one place that maps the light or dark theme to a plot's background, text and curve
colours; every plot is recoloured when the palette changes), an x axis of whole
generations (1, 2, 3: no 0.5, no -30..30 for a single generation), axis labels, and a
legend in its own column right of the plot so that it never covers a curve."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.gui.qt import (
    QApplication,
    QColor,
    QEvent,
    QObject,
    QPalette,
    QSizePolicy,
    Qt,
    QTimer,
    application,
    pg,
)

# the curve colours of each theme, by name: strong (800) shades on a light background,
# light (200-300) ones on a dark background, so that a curve reads on either; "error" is
# the colour of an error's text (page.ErrorLabel), WCAG contrast >= 4.5 on either window
LIGHT_COLOURS = {
    "blue": "#1565c0",
    "red": "#c62828",
    "green": "#2e7d32",
    "orange": "#ef6c00",
    "purple": "#6a1b9a",
    "teal": "#00838f",
    "brown": "#5d4037",
    "slate": "#455a64",
    "grey": "#909090",
    "bar": "#5a8cc8",
    "error": "#b00020",  # an error's text (ErrorLabel): 6.5:1 on the light window
}
DARK_COLOURS = {
    "blue": "#64b5f6",
    "red": "#ef9a9a",
    "green": "#81c784",
    "orange": "#ffb74d",
    "purple": "#ce93d8",
    "teal": "#4dd0e1",
    "brown": "#bcaaa4",
    "slate": "#b0bec5",
    "grey": "#8c8c8c",
    "bar": "#4f86c6",
    "error": "#ff8a80",  # an error's text: 6.2:1 on the dark window (#b00020 would be 1.9:1)
}
# a colour per run or system, in this order (Compare's runs)
SERIES = ("blue", "red", "green", "orange", "purple", "teal", "brown")
TITLE_HEIGHT = 30  # pixels: pyqtgraph's row for a title of one line


@dataclass(frozen=True)
class PlotPalette:
    """The colours of a plot in one theme: its background and text (the application
    palette's base and text), and its curves' colours by name (``colour``)."""

    dark: bool
    background: str
    foreground: str
    colours: Mapping[str, str]

    def colour(self, name: str) -> str:
        """The colour called ``name`` (a key of ``LIGHT_COLOURS``) in this theme;
        ``"text"`` is the foreground."""
        return self.foreground if name == "text" else self.colours[name]

    def series(self, number: int) -> str:
        """The colour of the ``number``-th run or system (from 0), cycling."""
        return self.colours[SERIES[number % len(SERIES)]]


def palette_colors() -> tuple[str, str]:
    """(background, foreground) of the application's palette, as hex colours."""
    app = application()
    palette = app.palette() if app is not None else QPalette()
    return (
        palette.color(QPalette.ColorRole.Base).name(),
        palette.color(QPalette.ColorRole.Text).name(),
    )


def plot_palette() -> PlotPalette:
    """The plots' colours in the active theme (light or dark, read from the application's
    palette)."""
    background, foreground = palette_colors()
    dark = QColor(background).lightness() < 128
    return PlotPalette(dark, background, foreground, DARK_COLOURS if dark else LIGHT_COLOURS)


def painted(item: Any, paint: Callable[[PlotPalette], None]) -> Any:
    """``item`` (a curve, bars, a line, points) coloured by ``paint(palette)`` now and again
    whenever the theme changes (``style_plot`` calls it); returns ``item``."""
    item.paint_with_theme = paint
    paint(plot_palette())
    return item


def coloured_curve(
    curve: pg.PlotDataItem,
    colour: str,
    *,
    width: int = 2,
    style: Qt.PenStyle = Qt.PenStyle.SolidLine,
    symbols: bool = False,
) -> pg.PlotDataItem:
    """``curve`` drawn in the theme's ``colour`` (a name: ``"blue"``), its symbols too when
    ``symbols``; recoloured when the theme changes."""

    def paint(palette: PlotPalette) -> None:
        value = palette.colour(colour)
        curve.setPen(pg.mkPen(value, width=width, style=style))
        if symbols:
            curve.setSymbolBrush(value)
            curve.setSymbolPen(value)

    return painted(curve, paint)


def style_plot(plot: pg.PlotWidget) -> None:
    """Colour ``plot`` as the rest of the window: the palette's base and text colours for
    its background, axes, axis labels, title, legends and the texts made by ``text_item``.
    Its curves, bars and lines made with ``painted`` take their colours from the theme.
    Called again whenever the palette changes (``follow_palette``)."""
    palette = plot_palette()
    background, foreground = palette.background, palette.foreground
    plot.setBackground(background)
    item = plot.getPlotItem()
    for name in ("left", "bottom", "right", "top"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(foreground))
        axis.setTextPen(pg.mkPen(foreground))  # the tick numbers and the axis label
    title = item.titleLabel
    if title.text:
        title.setText(title.text, color=foreground)
    for thing in plot.scene().items():
        if isinstance(thing, pg.LegendItem):
            thing.setLabelTextColor(foreground)
            for sample, label in thing.items:
                label.setText(label.text)  # redrawn in the colour just set
                repaint = getattr(sample.item, "paint_with_theme", None)
                if repaint is not None:  # a key drawn in the legend alone
                    repaint(palette)
                    sample.update()
        elif isinstance(thing, pg.TextItem) and getattr(thing, "themed", False):
            thing.setColor(foreground)
        paint = getattr(thing, "paint_with_theme", None)
        if paint is not None:  # a curve, bars, a line: its colours in this theme
            paint(palette)


def text_item(text: str, **options: Any) -> pg.TextItem:
    """A text in a plot in the palette's text colour (and recoloured with the palette)."""
    _, foreground = palette_colors()
    item = pg.TextItem(text, color=foreground, **options)
    item.themed = True
    return item


class _PaletteFollower(QObject):
    """Restyles each plot when its palette changes: a light or dark theme chosen in the
    Settings, or the system's colour scheme switched while the app runs."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if (
            event.type() == QEvent.Type.PaletteChange
            and isinstance(watched, pg.PlotWidget)
            and getattr(watched, "plotItem", None) is not None  # not while being built
        ):
            style_plot(watched)
        return False


_follower: _PaletteFollower | None = None


def follow_palette() -> None:
    """Make every plot of the application follow the palette (once per application)."""
    global _follower
    app = QApplication.instance()
    if app is None or _follower is not None and _follower.parent() is app:
        return
    _follower = _PaletteFollower(app)
    app.installEventFilter(_follower)


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
    plot.getAxis("left").enableAutoSIPrefix(False)  # 0.6, not "600 (x0.001)"
    plot.showGrid(x=False, y=True, alpha=0.2)
    plot.setMinimumHeight(120)
    show_generations(plot, 1)  # empty: generations 1 and 2, not -0.5..0.5
    themed(plot)
    return plot


def themed(plot: pg.PlotWidget) -> pg.PlotWidget:
    """``plot`` coloured by the palette now and whenever it changes, its title over the
    whole plot (``title_across``)."""
    style_plot(plot)
    follow_palette()
    title_across(plot)
    return plot


def title_across(plot: pg.PlotWidget) -> None:
    """Centre the plot's title over its axes and view together, not over the view alone
    (pyqtgraph's place for it): beside wide axis labels (the Runs heatmap's "worker as
    role" rows) the view is narrow, and a title over it alone was cut at its right end."""
    item = plot.getPlotItem()
    layout, title = item.layout, item.titleLabel
    layout.removeItem(title)
    layout.addItem(title, 0, 0, 1, layout.columnCount())


def set_title(plot: pg.PlotWidget, text: str, **options: Any) -> None:
    """Give ``plot`` the title ``text`` (``<br>`` between its lines), its row as tall as
    those lines: pyqtgraph keeps a title's row one line (30 pixels) tall, and a second
    line was drawn above the plot's top edge."""
    item = plot.getPlotItem()
    item.setTitle(text, **options)
    title = item.titleLabel
    height = max(TITLE_HEIGHT, math.ceil(title.item.boundingRect().height()) + 4)
    title.setMaximumHeight(height)
    item.layout.setRowFixedHeight(0, height)


def themed_colour_bar(
    plot: pg.PlotWidget, image: pg.ImageItem, colours: pg.ColorMap, label: str
) -> pg.ColorBarItem:
    """The colour scale of a heatmap, right of ``plot``: ``colours`` from low to high
    with its axis (``label``, the unit the colours count) in the theme's text colour.
    Its levels, and the image's, are set with ``setLevels``."""
    bar = pg.ColorBarItem(colorMap=colours, interactive=False, label=label, width=12)
    bar.setImageItem(image, insert_in=plot.getPlotItem())

    def paint(palette: PlotPalette) -> None:
        bar.axis.setPen(pg.mkPen(palette.foreground))
        bar.axis.setTextPen(pg.mkPen(palette.foreground))

    return painted(bar, paint)


class BesideLegend(pg.LegendItem):
    """A legend right of a plot's view that keeps every entry in sight: it takes as few
    columns as let its rows fit beside the view in the plot's height (one column while
    they fit), measured again when an entry is added and when the plot is resized. One
    column too tall for a short plot would make the plot taller than its widget and cut
    the last entries and the x axis."""

    def __init__(self, plot: pg.PlotWidget, **options: Any) -> None:
        super().__init__(**options)
        self.layout.setContentsMargins(4, 0, 4, 0)  # pyqtgraph's 9 pixels each way: a row
        self._plot = plot
        plot.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self._plot and event.type() == QEvent.Type.Resize:
            # once the plot has laid itself out in its new size: the view's height is read
            QTimer.singleShot(0, self, self.fit_height)
        return False

    def addItem(self, item: Any, name: str) -> None:  # noqa: N802 (pyqtgraph's name)
        super().addItem(item, name)
        self.fit_height()

    def clear(self) -> None:
        super().clear()
        self.setColumnCount(1)

    def fit_height(self) -> None:
        """Take as few columns as let the entries fit the plot's height beside the view
        (the plot's height less its title and x axis)."""
        plot = self._plot.getPlotItem()
        room = self._plot.height() - (plot.size().height() - plot.vb.size().height())
        _, top, _, bottom = self.layout.getContentsMargins()
        room -= top + bottom
        if not self.items or room <= 0:
            return
        heights = [max(s.minimumHeight(), t.minimumHeight()) for s, t in self.items]
        spacing = self.layout.verticalSpacing()
        columns = 1
        while columns < len(heights):
            rows = [max(heights[i : i + columns]) for i in range(0, len(heights), columns)]
            if sum(rows) + spacing * (len(rows) - 1) <= room:
                break
            columns += 1
        if columns != self.columnCount:
            self.setColumnCount(columns)
            QTimer.singleShot(0, self._plot, lambda: plot.setGeometry(self._plot.range))


def legend_beside(plot: pg.PlotWidget) -> BesideLegend:
    """A legend in a column of its own right of the plot (never over the curves), in
    more columns where the plot is too short for one (``BesideLegend``); items are added
    with ``legend.addItem(curve, name)``."""
    _, foreground = palette_colors()
    legend = BesideLegend(plot, labelTextColor=foreground)
    # as tall as its entries, at the top: stretched to the view's height, a name of two
    # lines stood above its key
    legend.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
    layout = plot.getPlotItem().layout
    layout.addItem(legend, 2, 3)
    layout.setAlignment(legend, Qt.AlignmentFlag.AlignTop)
    return legend


def show_generations(plot: pg.PlotWidget, last: int) -> None:
    """Show generations 1..``last`` on the x axis (at least 1..2, so that one generation
    is a point in a plot, not the middle of -30..30)."""
    plot.setXRange(0.5, max(last, 2) + 0.5, padding=0.02)
