"""The Compare page: runs side by side. Tick two or more training runs: their best, mean
and validation curves are drawn on one plot (a colour per run, a line style per curve,
a legend beside the plot naming each run and each line once), and a table lists the
settings in which their configs differ, and only those (as Weights & Biases' "diff
only").

A view over the store: the runs, their generations' stats and their configs are read in
background jobs; ``config_differences`` (no Qt) computes the table.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.config import ConfigError, ConfigKey, config_keys
from workbench.core.jobs.shared import RunSummary, list_runs
from workbench.core.records import GenerationStats
from workbench.core.store import Store
from workbench.core.workspace import Workspace
from workbench.gui import background, tables
from workbench.gui.page import Page, message_label
from workbench.gui.plots import (
    SERIES as RUN_COLOURS,
)
from workbench.gui.plots import (
    coloured_curve,
    generation_plot,
    legend_beside,
    show_generations,
)
from workbench.gui.qt import (
    QCheckBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
    pg,
    read_only_table,
)
from workbench.gui.qt_run_form import tooltip
from workbench.gui.words import SCORE_HELP, VALIDATION_HELP, plural, status_words

LEGEND_CHARS = 30  # a longer run name takes more lines in the legend
SERIES = {  # curve: (pen style, symbol)
    "best": (Qt.PenStyle.SolidLine, None),
    "mean": (Qt.PenStyle.DashLine, None),
    "validation": (Qt.PenStyle.DotLine, "o"),
}


@dataclass(frozen=True)
class ComparedRun:
    """What the page draws of one run: its name, its generations and its config's keys."""

    id: str
    name: str
    generations: list[GenerationStats]
    settings: dict[str, Any]  # "section.key" -> value


def flat_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """A config's sections flattened to ``section.key`` -> value."""
    flat: dict[str, Any] = {}
    for section, values in data.items():
        if isinstance(values, Mapping):
            for key, value in values.items():
                flat[f"{section}.{key}"] = value
        else:
            flat[section] = values
    return flat


def config_differences(settings: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    """The keys whose values are not the same in every config (a key missing from one
    counts as different), in the configs' order of keys, each with its values (None where
    missing)."""
    keys: list[str] = []
    for one in settings:
        keys += [k for k in one if k not in keys]
    differ = []
    for key in keys:
        values = [one.get(key) for one in settings]
        if any(v != values[0] for v in values[1:]) or any(key not in one for one in settings):
            differ.append((key, values))
    return differ


def read_compared(workspace: Workspace, run_ids: Sequence[str]) -> list[ComparedRun]:
    """The runs' generations and settings (a background job)."""
    found = []
    with Store.open(workspace) as store:
        for run_id in run_ids:
            record = store.get_run(run_id)
            try:
                data = record.config().to_dict()
            except ConfigError:  # a config of long ago: compared as it was stored
                data = dict(record.config_data)
            found.append(
                ComparedRun(
                    run_id, record.name, store.generation_stats(run_id), flat_settings(data)
                )
            )
    return found


def shown_names(runs: Sequence[ComparedRun]) -> dict[str, str]:
    """Each run's name in the legend and the table's header, told apart: a name two runs
    share gets each run's short id."""
    names = [r.name or r.id[:8] for r in runs]
    return {
        r.id: f"{name} ({r.id[:6]})" if names.count(name) > 1 else name
        for r, name in zip(runs, names, strict=True)
    }


def legend_name(name: str, width: int = LEGEND_CHARS) -> str:
    """A run's name in the legend: broken into lines of at most ``width`` characters (a
    cross-validation's folds are named alike and differ at the end, which a legend of one
    line cut off)."""
    return "<br>".join(html.escape(line) for line in textwrap.wrap(name, width))


def differences_note(differ: int, same: int) -> str:
    """The line over the table: how many settings differ and how many do not."""
    if not differ:
        return "Their settings are all the same."
    verb = "differs" if differ == 1 else "differ"
    return f"{plural(differ, 'setting')} {verb}; {same} are the same in every run ticked."


def _keys() -> dict[str, ConfigKey]:
    return {k.dotted: k for k in config_keys()}


def setting_cell(dotted: str, keys: Mapping[str, ConfigKey]) -> tables.Cell:
    """A setting's row head: the config key's own label and help (the run form's words),
    or the dotted name of a key this version no longer has."""
    known = keys.get(dotted)
    if known is None:
        return tables.Cell(dotted, tooltip=f"{dotted} (not a setting of this version)")
    return tables.Cell(known.key.label, tooltip=tooltip(known))


def _shown(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


class QtCompare(Page):
    """Runs side by side: curves overlaid, config differences only."""

    compared = Signal()  # the plot and the table show the runs ticked

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.runs: dict[str, RunSummary] = {}
        self.shown: list[ComparedRun] = []
        self.curves: dict[tuple[str, str], pg.PlotDataItem] = {}
        self._reads = 0
        self.message_label = message_label(error=False)

        self.run_list = QListWidget()
        self.run_list.setToolTip("Tick the runs to compare")
        # a long name wraps, never scrolled sideways nor cut: runs named alike (a
        # cross-validation's folds and systems) differ in the middle and at the end
        self.run_list.setWordWrap(True)
        self.run_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.run_list.itemChanged.connect(lambda _: self.compare())
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_runs)
        self.clear_button = QPushButton("Untick all")
        self.clear_button.clicked.connect(self.untick_all)
        buttons = QHBoxLayout()
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(self.clear_button)
        buttons.addStretch(1)
        runs_box = QGroupBox("Training runs")
        runs_layout = QVBoxLayout(runs_box)
        runs_layout.addWidget(QLabel("Tick two or more:"))
        runs_layout.addWidget(self.run_list, 1)
        runs_layout.addLayout(buttons)

        self.series_boxes = {name: QCheckBox(name) for name in SERIES}
        tips = {
            "best": "The best candidate's training score in each generation (solid line)",
            "mean": "The average candidate's training score in each generation (dashed line)",
            "validation": "The kept coordinator on the held-out validation questions (dotted, "
            "dots)",
        }
        series_row = QHBoxLayout()
        series_row.addWidget(QLabel("Curves:"))
        for name, box in self.series_boxes.items():
            box.setChecked(True)
            box.setToolTip(tips[name])
            box.toggled.connect(lambda _: self._draw())
            series_row.addWidget(box)
        series_row.addStretch(1)
        self.plot = generation_plot("Runs compared: training score and validation", "share right")
        self.plot.setToolTip(f"{SCORE_HELP}\n\n{VALIDATION_HELP}")
        self.legend = legend_beside(self.plot)
        self.diff_table = read_only_table(("Setting",))
        tables.sortable(self.diff_table)
        self.diff_note = QLabel("")
        self.diff_note.setWordWrap(True)
        diff_box = QGroupBox("Settings that differ (the others are the same)")
        diff_layout = QVBoxLayout(diff_box)
        diff_layout.addWidget(self.diff_note)
        diff_layout.addWidget(self.diff_table, 1)
        plot_box = QWidget()
        plot_layout = QVBoxLayout(plot_box)
        plot_layout.setContentsMargins(0, 0, 0, 0)
        plot_layout.addLayout(series_row)
        plot_layout.addWidget(self.plot, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(plot_box)
        right.addWidget(diff_box)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(runs_box)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([280, 780])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.message_label)
        self.refresh_runs()

    # ------------------------------------------------------------------ runs

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self.refresh_runs()  # runs trained since

    def refresh_runs(self) -> None:
        self.in_background(
            "compare runs",
            lambda: [r for r in list_runs(self.workspace) if r.kind == "train"],
            self._on_runs,
            self._on_failed,
            context="read the runs",
            latest=True,
        )

    def _on_failed(self, what: str, exc: Exception) -> None:
        self.show_error(f"Cannot {what}: {background.readable(exc)}")

    def _on_runs(self, _context: Any, runs: list[RunSummary]) -> None:
        ticked = set(self.ticked())
        self.runs = {r.id: r for r in runs}
        self.run_list.blockSignals(True)
        self.run_list.clear()
        for run in runs:
            # two lines: on one, the list scrolled sideways at 1280 px ("4 generation")
            text = (
                f"{run.name or run.id[:8]}\n{run.generations} generations · "
                f"{status_words(run.status)}"
            )
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, run.id)
            item.setToolTip(f"{text}\nrun id {run.id}")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                Qt.CheckState.Checked if run.id in ticked else Qt.CheckState.Unchecked
            )
            self.run_list.addItem(item)
        self.run_list.blockSignals(False)
        if not runs:
            self.say("No training runs yet: train one on the Runs page.")
        elif ticked - set(self.runs):
            self.compare()

    def ticked(self) -> list[str]:
        """The ids of the runs ticked, in the list's order."""
        items = [self.run_list.item(i) for i in range(self.run_list.count())]
        return [
            i.data(Qt.ItemDataRole.UserRole)
            for i in items
            if i.checkState() == Qt.CheckState.Checked
        ]

    def tick(self, run_ids: Sequence[str]) -> None:
        """Tick exactly these runs (then compare them)."""
        self.run_list.blockSignals(True)
        for i in range(self.run_list.count()):
            item = self.run_list.item(i)
            wanted = item.data(Qt.ItemDataRole.UserRole) in run_ids
            item.setCheckState(Qt.CheckState.Checked if wanted else Qt.CheckState.Unchecked)
        self.run_list.blockSignals(False)
        self.compare()

    def untick_all(self) -> None:
        self.tick([])

    # ------------------------------------------------------------------ comparing

    def compare(self) -> None:
        """Read the ticked runs in the background, then draw them."""
        run_ids = self.ticked()
        self._reads += 1
        self.in_background(
            "compare",
            lambda: read_compared(self.workspace, run_ids),
            self._on_compared,
            self._on_failed_compare,
            context=(self._reads, "read the runs to compare"),
        )

    def _on_compared(self, context: tuple[int, str], found: list[ComparedRun]) -> None:
        if context[0] != self._reads:
            return  # ticked again since
        self.shown = found
        self._draw()
        self._show_differences()
        count = len(found)
        self.say(
            "Tick one more run to compare."
            if count == 1
            else ("" if count else "Tick two or more runs to compare them.")
        )
        self.compared.emit()

    def _on_failed_compare(self, context: tuple[int, str], exc: Exception) -> None:
        self._on_failed(context[1], exc)

    def _draw(self) -> None:
        for curve in self.curves.values():
            self.plot.removeItem(curve)
        self.curves = {}
        self.legend.clear()
        last = 1
        names = shown_names(self.shown)
        for number, run in enumerate(self.shown):
            colour = RUN_COLOURS[number % len(RUN_COLOURS)]  # the theme's shade of it
            for series, (style, symbol) in SERIES.items():
                if not self.series_boxes[series].isChecked():
                    continue
                if series == "validation":
                    points = [(s.generation + 1, s.validation) for s in run.generations]
                    points = [(x, y) for x, y in points if y is not None]
                else:
                    points = [(s.generation + 1, getattr(s, series)) for s in run.generations]
                if not points:
                    continue
                x, y = zip(*points, strict=True)
                curve = coloured_curve(
                    self.plot.plot(list(x), list(y), symbol=symbol, symbolSize=6),
                    colour,
                    style=style,
                    symbols=symbol is not None,
                )
                self.curves[(run.id, series)] = curve
                last = max(last, int(x[-1]))
            if any((run.id, series) in self.curves for series in SERIES):
                key = coloured_curve(pg.PlotDataItem(), colour)
                self.legend.addItem(key, legend_name(names[run.id]))
        for series, (style, symbol) in SERIES.items():  # then each curve's line, once
            if any((run.id, series) in self.curves for run in self.shown):
                key = pg.PlotDataItem(symbol=symbol, symbolSize=6)
                self.legend.addItem(
                    coloured_curve(key, "text", style=style, symbols=symbol is not None), series
                )
        show_generations(self.plot, last)

    def _show_differences(self) -> None:
        runs = self.shown
        table = self.diff_table
        table.setColumnCount(1 + len(runs))
        names = shown_names(runs)
        table.setHorizontalHeaderLabels(["Setting", *(names[r.id] for r in runs)])
        if len(runs) < 2:
            tables.fill(table, [])
            self.diff_note.setText("Tick two or more runs: their differing settings show here.")
            return
        differences = config_differences([r.settings for r in runs])
        rows = []
        keys = _keys()
        for key, values in differences:
            label = setting_cell(key, keys)
            label.setData(Qt.ItemDataRole.UserRole, key)
            rows.append([label, *(tables.Cell(_shown(v)) for v in values)])
        tables.fill(table, rows)
        same = len(set().union(*(r.settings for r in runs))) - len(differences)
        self.diff_note.setText(differences_note(len(differences), same))

    def difference_keys(self) -> list[str]:
        """The config keys the table lists (tests read it)."""
        items = [self.diff_table.item(r, 0) for r in range(self.diff_table.rowCount())]
        return [i.data(Qt.ItemDataRole.UserRole) for i in items if i is not None]
