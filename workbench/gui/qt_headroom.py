"""The Evaluate page's "Headroom and cost" panel: the headroom check of a run config (before
training: is a coordinator worth it on this pool?) and the stored cost-quality frontiers
(after it: accuracy against dollars per task, every point with its intervals and its
details on hover, the Pareto front marked).

A view only: the check is ``workbench.core.jobs.headroom.check_headroom``, run in the
page's background jobs; a new frontier study (``workbench.core.jobs.frontier.study_frontier``:
a training run and an evaluation per cost penalty) runs in a child process
(``study_thread.StudyThread``) with its progress and a Stop; stored studies
(``workbench.core.jobs.frontier_report``) are read in background jobs. Nothing runs on the
GUI thread. docs/guides/headroom-and-cost.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.core.jobs.frontier import check_penalties
from workbench.core.jobs.frontier_report import (
    Frontier,
    list_frontiers,
    load_frontier,
    point_details,
)
from workbench.core.jobs.headroom import DEFAULT_SAMPLE, HeadroomReport
from workbench.core.printable import shown_path
from workbench.core.workspace import Workspace
from workbench.gui.plots import PlotPalette, coloured_curve, painted, text_item, themed
from workbench.gui.qt import (
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    Qt,
    QVBoxLayout,
    pg,
    text_view,
)
from workbench.gui.runs_model import started_text
from workbench.gui.study_thread import StudyThread

# each kind of point's colour, by name (``plots.plot_palette`` gives its light or dark
# shade; the frontier's SVG file, on white, has core.frontier.COLOURS)
KIND_COLOURS = {"coordinator": "blue", "single": "orange", "random": "grey", "oracle": "green"}
PENALTIES = "0,500,2000"  # per dollar: where the sandbox's routing trades accuracy for price
NO_FRONTIER = (
    "No frontier study yet: choose a run config above and press Study the frontier (a "
    "training run and an evaluation per cost penalty, in the background)."
)


def parse_penalties(text: str) -> tuple[float, ...]:
    """``0,500,2000`` as cost penalties (``ValueError`` naming a word that is none)."""
    values = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            values.append(float(part))
        except ValueError:
            raise ValueError(
                f"'{part}' is not a number: give cost penalties per dollar separated by "
                "commas, e.g. 0,500,2000"
            ) from None
    return check_penalties(values)


def kind_colour(palette: PlotPalette, kind: str) -> str:
    return palette.colour(KIND_COLOURS.get(kind, "text"))


def interval_of(point: Any) -> pg.ErrorBarItem:
    """A frontier point's two intervals (accuracy and dollars) in its kind's colour."""
    errors = pg.ErrorBarItem(
        x=[point.dollars],
        y=[point.accuracy],
        top=[point.ci_high - point.accuracy],
        bottom=[point.accuracy - point.ci_low],
        left=[point.dollars - point.dollars_low],
        right=[point.dollars_high - point.dollars],
    )

    def paint(palette: PlotPalette) -> None:
        errors.setData(pen=pg.mkPen(kind_colour(palette, point.kind)))

    return painted(errors, paint)


def run_check(workspace: Workspace, config_path: str, sample: int) -> HeadroomReport:
    """The headroom check of the config file at ``config_path`` (a background job)."""
    from workbench.core.config import RunConfig
    from workbench.core.jobs.headroom import check_headroom

    return check_headroom(RunConfig.load(config_path), workspace, sample=sample)


class HeadroomPanel(QGroupBox):
    """The panel; ``page`` (a ``Page``) runs its jobs and shows its messages."""

    def __init__(self, page: Any, workspace: Workspace):
        super().__init__("Headroom and cost")
        self.page = page
        self.workspace = workspace
        self.config_path: str | None = None
        self.report: HeadroomReport | None = None
        self.frontier: Frontier | None = None
        self.checking = False
        self.listing = False
        self.loading = False

        self.config_label = QLabel("no run config chosen")
        self.config_label.setWordWrap(True)
        self.config_button = QPushButton("Run config…")
        self.config_button.clicked.connect(self._choose_config)
        self.sample_box = QSpinBox()
        self.sample_box.setRange(0, 1_000_000)
        self.sample_box.setValue(DEFAULT_SAMPLE)
        self.sample_box.setSpecialValueText("all")
        self.sample_box.setToolTip(
            "training tasks to check (0: all), plus every one already cached or recorded"
        )
        self.check_button = QPushButton("Check headroom")
        self.check_button.clicked.connect(self.check)
        row = QHBoxLayout()
        row.addWidget(self.config_button)
        row.addWidget(QLabel("tasks"))
        row.addWidget(self.sample_box)
        row.addWidget(self.check_button)
        row.addStretch(1)
        self.sentence_label = QLabel("")
        self.sentence_label.setWordWrap(True)
        self.report_view = text_view()

        self.frontier_combo = QComboBox()
        self.frontier_combo.currentIndexChanged.connect(lambda _: self._on_frontier_chosen())
        self.frontier_refresh = QPushButton("Refresh")
        self.frontier_refresh.clicked.connect(self.refresh_frontiers)
        frontier_row = QHBoxLayout()
        frontier_row.addWidget(QLabel("Frontier"))
        frontier_row.addWidget(self.frontier_combo, 1)
        frontier_row.addWidget(self.frontier_refresh)
        # a new study of the chosen config, in the background
        self.study: StudyThread | None = None
        self.penalties_edit = QLineEdit(PENALTIES)
        self.penalties_edit.setToolTip(
            "Cost penalties per dollar, comma-separated: one coordinator is trained and "
            "evaluated for each (its training score minus the penalty times its dollars)"
        )
        self.study_button = QPushButton("Study the frontier")
        self.study_button.setToolTip(
            "Train and evaluate a coordinator of the chosen run config at each cost penalty, "
            "in the background; the runs it makes are stored as any other"
        )
        self.study_button.clicked.connect(self.start_study)
        self.stop_study_button = QPushButton("Stop")
        self.stop_study_button.clicked.connect(self.stop_study)
        self.study_progress = QProgressBar()
        self.study_progress.setFormat("%v of %m penalties done")
        self.study_progress.setTextVisible(False)  # until a study says how many
        self.study_progress.setValue(0)
        study_row = QHBoxLayout()
        study_row.addWidget(QLabel("Penalties"))
        study_row.addWidget(self.penalties_edit, 1)
        study_row.addWidget(self.study_button)
        study_row.addWidget(self.stop_study_button)
        self.plot = themed(pg.PlotWidget(title="Accuracy against dollars per task (95% intervals)"))
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("left", "accuracy")
        self.plot.setLabel("bottom", "$ / task")
        self.scatter: Any = None
        self.frontier_label = QLabel(NO_FRONTIER)
        self.frontier_label.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.config_label)
        layout.addWidget(self.sentence_label)
        layout.addWidget(self.report_view, 1)
        layout.addLayout(frontier_row)
        layout.addLayout(study_row)
        layout.addWidget(self.study_progress)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.frontier_label)
        self._update()

    # ------------------------------------------------------------------ the check

    def _choose_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a run config", str(Path.home()), "Run config (*.toml)"
        )
        if path:
            self.choose_config(path)

    def choose_config(self, path: str | Path) -> None:
        self.config_path = str(path)
        self.config_label.setText(
            f"run config: {shown_path(self.config_path, self.workspace.root, short=True)}"
        )
        self.config_label.setToolTip(str(self.config_path))
        self._update()

    def check(self) -> None:
        """Start the headroom check of the chosen config in the background."""
        if self.config_path is None or self.checking:
            return
        self.checking = True
        path, sample = self.config_path, self.sample_box.value()
        self.sentence_label.setText("checking: every worker answers every task once …")
        self._update()
        job = self.page.in_background(
            "headroom check",
            lambda: run_check(self.workspace, path, sample),
            self._on_checked,
            self._on_check_failed,
        )
        if job is None:
            self.checking = False

    def _on_checked(self, _context: Any, report: HeadroomReport) -> None:
        self.checking = False
        self.show_report(report)

    def _on_check_failed(self, _context: Any, exc: Exception) -> None:
        self.checking = False
        self.sentence_label.setText("")
        self.page.show_error(self.page.failure("check the headroom", exc))
        self._update()

    def show_report(self, report: HeadroomReport) -> None:
        self.report = report
        self.sentence_label.setText(f"{report.sentence}\n{report.cost_line()}")
        self.report_view.setPlainText(report.table())
        self._update()

    # ------------------------------------------------------------------ the frontier

    def refresh_frontiers(self) -> None:
        """List the workspace's stored frontier studies in the background."""
        self.listing = True
        self.page.in_background(
            "frontier studies",
            lambda: list_frontiers(self.workspace),
            self._on_frontiers,
            self._on_frontiers_failed,
            latest=True,
        )

    def _on_frontiers(self, _context: Any, studies: list[Any]) -> None:
        self.listing = False
        chosen = self.frontier.run_id if self.frontier is not None else None
        chosen = chosen or self.frontier_combo.currentData()
        self.frontier_combo.blockSignals(True)
        self.frontier_combo.clear()
        for s in studies:
            self.frontier_combo.addItem(f"{s.name} · {started_text(s.created_at)}", s.run_id)
        index = self.frontier_combo.findData(chosen) if chosen is not None else 0
        self.frontier_combo.setCurrentIndex(max(index, 0))
        self.frontier_combo.blockSignals(False)
        if studies and (self.frontier is None or self.frontier.run_id != chosen):
            self._on_frontier_chosen()

    def _on_frontiers_failed(self, _context: Any, exc: Exception) -> None:
        self.listing = False
        self.page.show_error(self.page.failure("list the frontier studies", exc))

    def _on_frontier_chosen(self) -> None:
        run_id = self.frontier_combo.currentData()
        if run_id is None:
            return
        self.loading = True
        self.page.in_background(
            "frontier",
            lambda: load_frontier(self.workspace, run_id),
            self._on_frontier_loaded,
            self._on_frontier_failed,
            latest=True,
        )

    def _on_frontier_loaded(self, _context: Any, frontier: Frontier) -> None:
        self.loading = False
        self.show_frontier(frontier)

    def _on_frontier_failed(self, _context: Any, exc: Exception) -> None:
        self.loading = False
        self.page.show_error(self.page.failure("read the frontier study", exc))

    def show_frontier(self, frontier: Frontier) -> None:
        """Draw ``frontier``: every point with both intervals, the front as a dashed line
        through its points, each point's details on hover."""
        self.frontier = frontier
        self.plot.clear()
        self.plot.setLabel("bottom", frontier.dollars_label)
        points = frontier.points
        for p in points:
            self.plot.addItem(interval_of(p))
        front = sorted((p for p in points if p.pareto), key=lambda p: p.dollars)
        if len(front) > 1:
            coloured_curve(
                self.plot.plot([p.dollars for p in front], [p.accuracy for p in front]),
                "text",
                width=1,
                style=Qt.PenStyle.DashLine,
            )
        scatter = self.scatter = pg.ScatterPlotItem(
            hoverable=True,
            tip=lambda x, y, data: data,
            hoverSize=14,
        )
        scatter.addPoints(
            [
                {
                    "pos": (p.dollars, p.accuracy),
                    "data": point_details(p, frontier.spend),
                    "symbol": "s" if p.pareto else "o",
                    "size": 10,
                }
                for p in points
            ]
        )
        kinds = [p.kind for p in points]
        painted(
            scatter,
            lambda palette: scatter.setBrush(
                [pg.mkBrush(kind_colour(palette, kind)) for kind in kinds]
            ),
        )
        self.plot.addItem(self.scatter)
        for p in points:
            label = text_item(p.name, anchor=(0, 1))
            label.setPos(p.dollars, p.accuracy)
            self.plot.addItem(label)
        self.frontier_label.setText(
            f"{frontier.cheapest_within_one_point}\n{frontier.best_at_best_single_cost}"
        )

    def hover_texts(self) -> list[str]:
        """The hover text of every point drawn (what a pointer over each shows)."""
        if self.scatter is None:
            return []
        return [spot.data() for spot in self.scatter.points()]

    # ------------------------------------------------------------------ a new study

    @property
    def studying(self) -> bool:
        return self.study is not None

    def start_study(self) -> None:
        """Study the frontier of the chosen config at the penalties given, in a child
        process; a bad list of penalties is said on the page and nothing starts."""
        if self.config_path is None or self.study is not None:
            return
        try:
            penalties = parse_penalties(self.penalties_edit.text())
        except ValueError as exc:
            self.page.show_error(f"Cannot study the frontier: penalties {exc}")
            return
        self.study = StudyThread(self.workspace, self.config_path, penalties, parent=self)
        self.study.penalty_finished.connect(self._on_penalty)
        self.study.finished_study.connect(self._on_studied)
        self.study.failed.connect(self._on_study_failed)
        self.study.finished.connect(self._on_study_ended)
        self.study_progress.setRange(0, len(penalties))
        self.study_progress.setValue(0)
        self.study_progress.setTextVisible(True)
        self.frontier_label.setText(
            f"Studying {len(penalties)} cost penalties: training and evaluating a "
            "coordinator for each (the first loads the language model)…"
        )
        self.study.start()
        self._update()

    def stop_study(self) -> None:
        if self.study is not None:
            self.study.stop()

    def stop_and_wait(self, timeout_ms: int) -> bool:
        """Stop a study in progress and wait for its thread (the window is closing)."""
        if self.study is None:
            return True
        self.study.stop()
        return bool(self.study.wait(timeout_ms))

    def _on_penalty(self, done: int, line: str) -> None:
        self.study_progress.setValue(done)
        self.frontier_label.setText(f"Done: {line}")

    def _on_studied(self, frontier: Frontier) -> None:
        self.show_frontier(frontier)
        self.refresh_frontiers()

    def _on_study_failed(self, message: str) -> None:
        self.frontier_label.setText("")
        self.page.show_error(f"The frontier study ended early: {message}")

    def _on_study_ended(self) -> None:
        study, self.study = self.study, None
        if study is not None:
            study.deleteLater()
        self._update()

    def _update(self) -> None:
        self.check_button.setEnabled(self.config_path is not None and not self.checking)
        ready = self.config_path is not None and self.study is None
        self.study_button.setEnabled(ready)
        self.penalties_edit.setEnabled(self.study is None)
        self.stop_study_button.setEnabled(self.study is not None)
