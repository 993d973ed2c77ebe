"""Light and dark themes: the palette follows the Settings' choice or, for "system", the
system's colour scheme (QStyleHints.colorScheme, now and when it changes), and every plot
of every page follows the palette: its background, axes, axis labels, title and legend."""

from __future__ import annotations

import pytest

from workbench.gui.qt import QApplication, Qt, pg


@pytest.fixture()
def system_theme_after():
    yield
    from workbench.gui.qt_settings import apply_theme

    apply_theme("system")  # the application palette outlives the test


def lightness(name: str) -> int:
    from workbench.gui.qt import QColor

    return QColor(name).lightness()


def plot_colours(plot) -> dict[str, int]:
    """The lightness of a plot's background and of each of its texts."""
    item = plot.getPlotItem()
    found = {"background": plot.backgroundBrush().color().lightness()}
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        found[f"{name} ticks"] = axis.textPen().color().lightness()
        found[f"{name} label"] = lightness(axis.labelStyle.get("color", "#000000"))
    if item.titleLabel.text:
        found["title"] = pg.mkColor(item.titleLabel.opts.get("color") or "#000000").lightness()
    for thing in plot.scene().items():
        if isinstance(thing, pg.LegendItem):
            found["legend"] = pg.mkColor(thing.opts["labelTextColor"]).lightness()
    return found


def every_plot(window) -> list:
    plots = [p for page in window.pages.values() for p in page.findChildren(pg.PlotWidget)]
    assert len(plots) >= 7  # Runs (3), Compare, Evaluate (2), its headroom panel
    return plots


def assert_theme(window, dark: bool) -> None:
    """The palette and every plot in ``dark`` or light colours (the plots restyle when
    their palette-change event arrives: a waitUntil condition)."""
    from workbench.gui.qt_settings import is_dark

    assert is_dark(QApplication.instance().palette()) == dark
    for plot in every_plot(window):
        colours = plot_colours(plot)
        background = colours.pop("background")
        title = plot.getPlotItem().titleLabel.text
        assert (background < 80) if dark else (background > 200), (title, background)
        for what, value in colours.items():  # text that reads on that background
            assert (value > 180) if dark else (value < 80), (plot, what, value)


def test_every_plot_follows_the_dark_and_light_themes(make_main_window, qtbot, system_theme_after):
    from workbench.gui.qt_settings import apply_theme

    window = make_main_window()
    compare = window.pages["Compare"]
    compare.legend.addItem(compare.plot.plot([1, 2], [0.1, 0.2]), "a run: best")
    apply_theme("light")
    qtbot.waitUntil(lambda: assert_theme(window, dark=False), timeout=5_000)
    apply_theme("dark")
    qtbot.waitUntil(lambda: assert_theme(window, dark=True), timeout=5_000)
    # a legend entry added in the dark is written in the dark theme's text colour too
    compare.legend.addItem(compare.plot.plot([1, 2], [0.3, 0.4]), "another run: best")
    for _, label in compare.legend.items:
        assert pg.mkColor(label.opts["color"]).lightness() > 180, label.text
    apply_theme("light")
    qtbot.waitUntil(lambda: assert_theme(window, dark=False), timeout=5_000)


def test_the_system_theme_follows_the_systems_colour_scheme_as_it_changes(
    make_main_window, qtbot, system_theme_after
):
    """With "system", a dark system scheme gives a dark window and dark plots even where
    the platform keeps a light palette, and a change of scheme while the app runs (the
    colorSchemeChanged signal) is followed."""
    from workbench.gui.qt_settings import _on_system_scheme, apply_theme

    window = make_main_window()
    apply_theme("system", Qt.ColorScheme.Dark)
    qtbot.waitUntil(lambda: assert_theme(window, dark=True), timeout=5_000)
    _on_system_scheme(Qt.ColorScheme.Light)  # the user switched the desktop to light
    qtbot.waitUntil(lambda: assert_theme(window, dark=False), timeout=5_000)
    _on_system_scheme(Qt.ColorScheme.Dark)
    qtbot.waitUntil(lambda: assert_theme(window, dark=True), timeout=5_000)
    apply_theme("light")  # a theme chosen in the Settings is kept, whatever the system does
    _on_system_scheme(Qt.ColorScheme.Dark)
    qtbot.waitUntil(lambda: assert_theme(window, dark=False), timeout=5_000)


def pen_colour(item) -> str:
    return pg.mkPen(item.opts["pen"]).color().name()


def test_curves_bars_and_lines_take_the_light_or_dark_themes_colours(
    make_main_window, qtbot, gui_workspace, system_theme_after
):
    """Every curve, bar and line of the Runs, Compare and Evaluate plots is drawn in the
    active theme's colours (``plots.plot_palette``): switching to dark redraws them in the
    dark palette's lighter shades on a dark background, and back."""
    from tests.gui.test_evaluate_page import figures_report
    from tests.gui.test_start_page import stored_run
    from workbench.gui.plots import DARK_COLOURS, LIGHT_COLOURS, SERIES
    from workbench.gui.qt_run_plots import CURVE_COLOURS
    from workbench.gui.qt_settings import apply_theme

    older = stored_run(gui_workspace, "older", 2, "finished")
    latest = stored_run(gui_workspace, "latest", 3, "stopped")
    window = make_main_window()
    runs = window.pages["Runs"]
    qtbot.waitUntil(lambda: runs.opened == latest, timeout=10_000)
    runs.redraw()
    compare = window.pages["Compare"]
    qtbot.waitUntil(lambda: len(compare.runs) >= 2 and not compare.jobs_running, timeout=10_000)
    compare.tick([older, latest])
    qtbot.waitUntil(lambda: len(compare.shown) == 2 and not compare.jobs_running, timeout=10_000)
    evaluate = window.pages["Evaluate"]
    evaluate.show_report(figures_report(["coordinator", "single:sandbox:coder", "random"], ""))
    zero_line = next(
        i for i in evaluate.paired_chart.getPlotItem().items if isinstance(i, pg.InfiniteLine)
    )

    def drawn() -> dict[str, object]:
        return {
            **{name: pen_colour(curve) for name, curve in runs.curves.items()},
            "validation": pen_colour(runs.validation_points),
            "validation points": pg.mkBrush(runs.validation_points.opts["symbolBrush"])
            .color()
            .name(),
            "compare": sorted({pen_colour(c) for c in compare.curves.values()}),
            # the legend's keys, drawn in the legend alone: a run's colour, a curve's line
            "compare legend": sorted({pen_colour(key.item) for key, _ in compare.legend.items}),
            "bars": pg.mkBrush(evaluate.bars.opts["brush"]).color().name(),
            "intervals": pen_colour(evaluate.error_bars),
            "zero line": zero_line.pen.color().name(),
        }

    def expected(colours: dict[str, str], text: str) -> dict[str, object]:
        return {
            **{name: colours[CURVE_COLOURS[name]] for name in (*runs.plots.CURVES, "sigma")},
            "validation": colours[CURVE_COLOURS["validation"]],
            "validation points": colours[CURVE_COLOURS["validation"]],
            "compare": sorted({colours[SERIES[0]], colours[SERIES[1]]}),  # a colour per run
            "compare legend": sorted({colours[SERIES[0]], colours[SERIES[1]], text}),
            "bars": colours["bar"],
            "intervals": text,
            "zero line": colours["grey"],
        }

    def background_lightness() -> int:
        return runs.plots.fitness_plot.backgroundBrush().color().lightness()

    text = {}
    for theme, colours in (("light", LIGHT_COLOURS), ("dark", DARK_COLOURS)):
        apply_theme(theme)
        dark = theme == "dark"
        qtbot.waitUntil(lambda dark=dark: assert_theme(window, dark=dark), timeout=5_000)
        text[theme] = QApplication.instance().palette().text().color().name()
        want = expected(colours, text[theme])
        qtbot.waitUntil(lambda want=want: drawn() == want, timeout=5_000)
        assert (background_lightness() < 80) if dark else (background_lightness() > 200)
    assert text["light"] != text["dark"]
    assert LIGHT_COLOURS["blue"] != DARK_COLOURS["blue"]
    # each dark shade is lighter than its light one: it reads on the dark background
    for name, light in LIGHT_COLOURS.items():
        if name not in ("grey", "bar"):
            assert pg.mkColor(DARK_COLOURS[name]).lightness() > pg.mkColor(light).lightness()
    apply_theme("light")
    qtbot.waitUntil(lambda: drawn() == expected(LIGHT_COLOURS, text["light"]), timeout=5_000)


def test_the_replay_cards_borders_follow_the_theme(qtbot, system_theme_after):
    """A Replay card's border (its role's colour; orange when current) is the theme's
    shade of it, redrawn when the theme changes."""
    from workbench.gui.plots import DARK_COLOURS, LIGHT_COLOURS
    from workbench.gui.qt_replay_cards import Card
    from workbench.gui.qt_settings import apply_theme

    apply_theme("light")
    card = Card("purple")
    qtbot.addWidget(card)
    card.show()
    assert LIGHT_COLOURS["purple"] in card.styleSheet()
    apply_theme("dark")
    qtbot.waitUntil(lambda: DARK_COLOURS["purple"] in card.styleSheet(), timeout=5_000)
    card.set_current(True)
    assert DARK_COLOURS["orange"] in card.styleSheet() and "3px" in card.styleSheet()
    apply_theme("light")
    qtbot.waitUntil(lambda: LIGHT_COLOURS["orange"] in card.styleSheet(), timeout=5_000)


def relative_luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of a hex colour (sRGB channels linearised)."""
    from workbench.gui.qt import QColor

    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

    c = QColor(colour)
    return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF())


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours, from 1 to 21."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_is_the_wcag_ratio():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # WCAG's example
    assert contrast("#b00020", "#2b2b2b") < 4.5  # the old fixed error red on the dark window


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_error_text_reads_on_the_light_and_dark_themes(
    make_main_window, qtbot, system_theme_after, theme
):
    """An error's text (the Tasks page's list of bad lines, the worker dialog's error) takes
    the theme's error colour, with a WCAG contrast of at least 4.5 against the window and
    the text fields' background of that theme, and changes colour with the theme."""
    from workbench.gui.qt import QPalette
    from workbench.gui.qt_settings import apply_theme, is_dark
    from workbench.gui.qt_worker_dialog import WorkerDialog

    window = make_main_window()
    window.go("Tasks")
    page = window.pages["Tasks"]
    other = "dark" if theme == "light" else "light"
    apply_theme(other)
    apply_theme(theme)
    palette = QApplication.instance().palette()
    assert is_dark(palette) == (theme == "dark")
    page._show_errors("2 lines could not be read:", ["line 3: no 'question'", "line 9: not JSON"])
    label = page.errors_title
    qtbot.waitUntil(label.isVisible, timeout=5_000)
    dialog = WorkerDialog(window.pages["Workers"].registry, parent=window)
    qtbot.addWidget(dialog)
    dialog.show()
    for error in (label, dialog.error):
        qtbot.waitUntil(lambda e=error: e.styleSheet() == f"color: {e.colour()}", timeout=5_000)
        for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base):
            background = palette.color(role).name()
            assert contrast(error.colour(), background) >= 4.5, (theme, role, error.colour())
    shown = label.colour()
    apply_theme(other)  # a theme changed while the error shows: its colour follows
    qtbot.waitUntil(lambda: label.styleSheet() == f"color: {label.colour()}", timeout=5_000)
    assert label.colour() != shown
