"""The application: QApplication set-up and the main window, a navigation list on the
left over a stack of pages. ``PAGES`` is the ordered list of (title, factory) pages; a
factory takes the window's context (workspace, backbone) and returns the page widget."""

from __future__ import annotations

import logging
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.core.models import describe_device
from workbench.core.settings import load_settings_or_defaults
from workbench.core.workspace import Workspace, resources_dir
from workbench.gui.qt import (
    PYSIDE_VERSION,
    QT_VERSION,
    QAction,
    QApplication,
    QCloseEvent,
    QDesktopServices,
    QHBoxLayout,
    QIcon,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QTimer,
    QUrl,
    QWidget,
)

log = logging.getLogger(__name__)

APP_NAME = "Trinity Workbench"


@dataclass(frozen=True)
class PageContext:
    """What a page factory gets: the workspace and an optional pre-built backbone (tests)."""

    workspace: Workspace
    backbone: Any = None


def _workers_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_workers import QtWorkers

    # workers are per user (workers.toml and the keychain); recorded pools per workspace
    return QtWorkers(workspace=context.workspace)


def _tasks_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_tasks import QtTasks

    return QtTasks(context.workspace)


def _runs_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_runs import QtRuns

    return QtRuns(context.workspace)


def _replay_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_replay import QtReplay

    return QtReplay(context.workspace)


def _evaluate_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_evaluate import QtEvaluate

    return QtEvaluate(context.workspace, backbone=context.backbone)


def _playground_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_playground import QtPlayground

    return QtPlayground(context.workspace, backbone=context.backbone)


def _settings_page(context: PageContext) -> QWidget:
    from workbench.gui.qt_settings import QtSettings

    return QtSettings(context.workspace)


PageFactory = Callable[[PageContext], QWidget]
PAGES: list[tuple[str, PageFactory]] = [
    ("Workers", _workers_page),
    ("Tasks", _tasks_page),
    ("Runs", _runs_page),
    ("Replay", _replay_page),
    ("Evaluate", _evaluate_page),
    ("Playground", _playground_page),
    ("Settings", _settings_page),
]


def _open_path(path: Path) -> bool:
    """Open a file or folder with the desktop's default application."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def about_text() -> str:
    """The versions shown by Help > About (read from package metadata: nothing heavy imported)."""
    return (
        f"{APP_NAME} {__version__}\n\n"
        f"Python {platform.python_version()}\n"
        f"torch {_version('torch')}\n"
        f"transformers {_version('transformers')}\n"
        f"Qt {QT_VERSION} (PySide6 {PYSIDE_VERSION})\n"
        f"device: {describe_device()}"
    )


class MainWindow(QMainWindow):
    def __init__(
        self,
        workspace: Workspace,
        *,
        backbone: Any = None,
        pages: Sequence[tuple[str, PageFactory]] | None = None,
    ):
        super().__init__()
        self.workspace = workspace
        self.setWindowTitle(f"{APP_NAME} — {workspace.root}")
        self.resize(1280, 800)
        self.nav = QListWidget()
        self.nav.setFixedWidth(150)
        self.stack = QStackedWidget()
        self.pages: dict[str, QWidget] = {}
        context = PageContext(workspace, backbone)
        for title, factory in PAGES if pages is None else pages:
            page = factory(context)
            self.pages[title] = page
            self.nav.addItem(title)
            self.stack.addWidget(page)
        self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.nav.setCurrentRow(0)
        self._runs_listed = False
        runs_page = self.pages.get("Runs")
        if runs_page is not None and hasattr(runs_page, "runs_listed"):
            runs_page.runs_listed.connect(self._open_on_runs)
        if "Playground" in self.pages and "Replay" in self.pages:
            self.pages["Playground"].open_in_replay.connect(self.open_in_replay)
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.addWidget(self.nav)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        help_menu = self.menuBar().addMenu("&Help")
        for text, slot in (
            ("&About", self.show_about),
            ("Open &log", self.open_log),
            ("Open &workspace folder", self.open_workspace_folder),
        ):
            action = QAction(text, self)
            action.triggered.connect(slot)
            help_menu.addAction(action)

    def _open_on_runs(self, count: int) -> None:
        """On the first runs-list read, show the Runs page (which opens the latest run) if
        there are runs and the user has not moved yet; with none, Workers stays first."""
        first, self._runs_listed = not self._runs_listed, True
        if first and count and self.nav.currentRow() == 0:
            self.nav.setCurrentRow(list(self.pages).index("Runs"))

    def open_in_replay(self, episode_id: str) -> None:
        """Show an episode on the Replay page."""
        self.nav.setCurrentRow(list(self.pages).index("Replay"))
        self.pages["Replay"].open_episode(episode_id)

    def open_log(self) -> bool:
        """Open ``logs/gui.log`` of the workspace in the system's viewer (created if the
        app has not logged anything yet)."""
        path = self.workspace.log_dir / "gui.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
        return _open_path(path)

    def open_workspace_folder(self) -> bool:
        return _open_path(self.workspace.root)

    def show_about(self) -> None:
        QMessageBox.about(self, f"About {APP_NAME}", about_text())

    def running_pages(self) -> list[QWidget]:
        return [p for p in self.pages.values() if getattr(p, "running", False)]

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        running = self.running_pages()
        if running:
            names = {"Runs": "A training run", "Evaluate": "An evaluation"}
            jobs = " and ".join(names.get(t, t) for t, p in self.pages.items() if p in running)
            answer = QMessageBox.question(
                self,
                "Work in progress",
                f"{jobs} is in progress. Stop it (a training run keeps a checkpoint you can resume) and close?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
            for page in running:
                page.stop_and_wait()
        for page in self.pages.values():  # no thread outlives the window
            if hasattr(page, "shutdown"):
                page.shutdown()
        event.accept()


def _log_to_workspace(workspace: Workspace) -> None:
    """Details (tracebacks included) go to ``logs/gui.log`` in the workspace; the user sees
    readable messages in the page where the error happened."""
    workspace.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    handler = logging.FileHandler(workspace.log_dir / "gui.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger("workbench")
    root.addHandler(handler)
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)


def main(
    workspace: str | None = None,
    quit_after_ms: int | None = None,
    argv: Sequence[str] | None = None,
) -> int:
    """Start the GUI on ``workspace`` (default: the user's); ``quit_after_ms`` closes the
    window after that many milliseconds (a smoke test)."""
    app = QApplication.instance() or QApplication(list(argv) if argv is not None else sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setApplicationVersion(__version__)
    app.setWindowIcon(QIcon(str(resources_dir() / "icons" / "trinity-workbench.png")))
    from workbench.gui.qt_settings import apply_theme

    settings, settings_problem = load_settings_or_defaults()  # the Settings page shows it too
    apply_theme(settings.theme)
    ws = Workspace.open(workspace if workspace is not None else settings.workspace)
    _log_to_workspace(ws)
    if settings_problem:
        log.warning("%s", settings_problem)
    window = MainWindow(ws)
    window.show()
    if quit_after_ms is not None:
        QTimer.singleShot(quit_after_ms, window.close)
    return app.exec()
