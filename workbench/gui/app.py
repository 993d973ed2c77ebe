"""The application: QApplication set-up and the main window, a navigation list on the
left (an icon, the page's name and a short description) over a stack of pages, each in a
scroll area so that every control stays reachable on a small screen or at 200% scaling,
and a status strip at the bottom (the current run: running, generation, best fitness,
spend). ``PAGES`` is the ordered list of (title, factory) pages; a factory takes the
window's context (workspace, backbone) and returns the page widget. The window's size,
its splitters and the page shown are remembered between starts (``window.ini`` beside
the settings file)."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.core.models import describe_device
from workbench.core.printable import shown_path
from workbench.core.settings import load_settings_or_defaults, settings_path
from workbench.core.workspace import Workspace, resources_dir
from workbench.gui import background, startup
from workbench.gui.help import (
    APP_NAME,
    NO_DOCUMENTATION,
    Documentation,
    find_documentation,
)
from workbench.gui.help import about_text as help_about_text
from workbench.gui.page import Page
from workbench.gui.qt import (
    PYSIDE_VERSION,
    QT_VERSION,
    QAction,
    QApplication,
    QCloseEvent,
    QDesktopServices,
    QFont,
    QFontMetrics,
    QFrame,
    QHBoxLayout,
    QIcon,
    QKeySequence,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QPainter,
    QScrollArea,
    QSettings,
    QSize,
    QSplitter,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    Qt,
    QTimer,
    QUrl,
    QWidget,
)
from workbench.gui.qt_evaluate import QtEvaluate
from workbench.gui.qt_playground import QtPlayground
from workbench.gui.qt_replay import QtReplay
from workbench.gui.qt_runs import QtRuns
from workbench.gui.qt_settings import QtSettings
from workbench.gui.qt_start import QtStart
from workbench.gui.qt_tasks import QtTasks
from workbench.gui.qt_workers import QtWorkers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageContext:
    """What a page factory gets: the workspace and an optional pre-built backbone (tests)."""

    workspace: Workspace
    backbone: Any = None


def _start_page(context: PageContext) -> Page:
    return QtStart(context.workspace)


def _workers_page(context: PageContext) -> Page:
    # workers are per user (workers.toml and the keychain); recorded pools per workspace
    return QtWorkers(workspace=context.workspace)


def _tasks_page(context: PageContext) -> Page:
    return QtTasks(context.workspace)


def _runs_page(context: PageContext) -> Page:
    return QtRuns(context.workspace)


def _compare_page(context: PageContext) -> Page:
    from workbench.gui.qt_compare import QtCompare

    return QtCompare(context.workspace)


def _replay_page(context: PageContext) -> Page:
    return QtReplay(context.workspace)


def _evaluate_page(context: PageContext) -> Page:
    return QtEvaluate(context.workspace, backbone=context.backbone)


def _playground_page(context: PageContext) -> Page:
    return QtPlayground(context.workspace, backbone=context.backbone)


def _settings_page(context: PageContext) -> Page:
    return QtSettings(context.workspace)


PageFactory = Callable[[PageContext], Page]
PAGES: list[tuple[str, PageFactory]] = [
    ("Start", _start_page),
    ("Workers", _workers_page),
    ("Tasks", _tasks_page),
    ("Runs", _runs_page),
    ("Compare", _compare_page),
    ("Replay", _replay_page),
    ("Evaluate", _evaluate_page),
    ("Playground", _playground_page),
    ("Settings", _settings_page),
]


# each page's line under its name in the navigation, and its icon (Qt's standard icons)
PAGE_INFO: dict[str, tuple[str, str]] = {
    "Start": ("First steps, one button each", "SP_ArrowRight"),
    "Workers": ("The models that answer", "SP_ComputerIcon"),
    "Tasks": ("The questions to learn on", "SP_FileDialogDetailedView"),
    "Runs": ("Train a coordinator", "SP_MediaPlay"),
    "Compare": ("Two or more runs side by side", "SP_FileDialogContentsView"),
    "Replay": ("Read an episode turn by turn", "SP_MediaSeekForward"),
    "Evaluate": ("Score it against each worker", "SP_DialogApplyButton"),
    "Playground": ("Ask the team a question", "SP_MessageBoxQuestion"),
    "Settings": ("Workspace, device, theme", "SP_FileDialogInfoView"),
}
DESCRIPTION = Qt.ItemDataRole.UserRole + 1
WINDOW_STATE = "window.ini"  # beside settings.toml: window size, splitters, the page shown
NO_DISPLAY = (
    "no display to open the window on ({why}): start the workbench in a desktop session, "
    "or use it without a window: trinity-workbench --help for the commands, "
    "trinity-workbench --screenshot DIR to render the pages to PNG files"
)


def display_problem(
    environ: dict[str, str] | None = None, platform_name: str | None = None
) -> str | None:
    """Why no window can open here, as a sentence, or None. On Linux without a display Qt
    aborts the process with a hint about reinstalling libraries: say it first, plainly.
    A platform chosen explicitly (``QT_QPA_PLATFORM``, e.g. offscreen) is the user's."""
    env = os.environ if environ is None else environ
    name = sys.platform if platform_name is None else platform_name
    if not name.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    display, wayland = env.get("DISPLAY", ""), env.get("WAYLAND_DISPLAY", "")
    if wayland:
        return None
    if not display:
        return NO_DISPLAY.format(why="DISPLAY and WAYLAND_DISPLAY are not set")
    local = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
    if local and not Path(f"/tmp/.X11-unix/X{local.group(1)}").exists():
        return NO_DISPLAY.format(why=f"no X server is running on display {display}")
    return None


class NavDelegate(QStyledItemDelegate):
    """A navigation entry: the icon, the page's name in bold and its description below."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        description = index.data(DESCRIPTION) or ""
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        title = opt.text
        opt.text = ""
        style = opt.widget.style() if opt.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        rect = opt.rect.adjusted(8 + opt.decorationSize.width() + 8, 4, -4, -4)
        icon_rect = opt.rect.adjusted(8, 0, 0, 0)
        icon_rect.setSize(opt.decorationSize)
        icon_rect.moveTop(opt.rect.top() + (opt.rect.height() - opt.decorationSize.height()) // 2)
        opt.icon.paint(painter, icon_rect)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = opt.palette.ColorRole.HighlightedText if selected else opt.palette.ColorRole.Text
        painter.save()
        painter.setPen(opt.palette.color(role))
        bold = QFont(opt.font)
        bold.setBold(True)
        painter.setFont(bold)
        line = QFontMetrics(bold).height()
        painter.drawText(rect.adjusted(0, 0, 0, -line), Qt.AlignmentFlag.AlignLeft, title)
        small = QFont(opt.font)
        small.setPointSizeF(max(opt.font.pointSizeF() * 0.85, 6.0))
        painter.setFont(small)
        text = QFontMetrics(small).elidedText(
            description, Qt.TextElideMode.ElideRight, rect.width()
        )
        painter.drawText(rect.adjusted(0, line, 0, 0), Qt.AlignmentFlag.AlignLeft, text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:  # noqa: N802 (Qt's name)
        line = QFontMetrics(option.font).height()
        return QSize(180, max(2 * line + 10, 36))


def _open_path(path: Path) -> bool:
    """Open a file or folder with the desktop's default application."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


def about_text(workspace: Workspace | None = None, device: str | None = None) -> str:
    """What Help > About says (``help.about_text``); ``device`` None: read here (it imports
    torch: the window reads it in a background job)."""
    return help_about_text(
        workspace, QT_VERSION, PYSIDE_VERSION, describe_device() if device is None else device
    )


class MainWindow(QMainWindow):
    """The window: the navigation over the stack of pages, the run strip, the Help menu;
    built in named steps, each page linked to the others through its signals."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        backbone: Any = None,
        pages: Sequence[tuple[str, PageFactory]] | None = None,
        remember_layout: bool = True,
    ):
        """``remember_layout``: restore the last session's size and splitters and save
        them on close; without it (``--screenshot``: what a new user sees, whatever this
        machine's user dragged) the window opens at a first start's size and keeps nothing."""
        super().__init__()
        self.workspace = workspace
        self.setWindowTitle(f"{APP_NAME} — {shown_path(workspace.root, short=True)}")
        self._runs_listed = False
        self._build_navigation()
        self._add_pages(PageContext(workspace, backbone), PAGES if pages is None else pages)
        self._build_central()
        self._build_run_strip()
        self._link_pages()
        self._build_help_menu()
        self._state = (
            QSettings(str(settings_path().parent / WINDOW_STATE), QSettings.Format.IniFormat)
            if remember_layout
            else None
        )
        self.restore_layout()

    def _build_navigation(self) -> None:
        """The list of pages on the left and the stack it switches."""
        self.nav = QListWidget()
        self.nav.setItemDelegate(NavDelegate(self.nav))
        self.nav.setIconSize(QSize(22, 22))
        self.nav.setFixedWidth(200)
        self.nav.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.stack = QStackedWidget()
        self.pages: dict[str, Page] = {}
        self.scrolls: dict[str, QScrollArea] = {}  # each page in its scroll area

    def _add_pages(self, context: PageContext, pages: Sequence[tuple[str, PageFactory]]) -> None:
        """Each page built by its factory, listed in the navigation (icon, name, line) and
        stacked in its scroll area with its banner in place; the first page shown."""
        for title, factory in pages:
            page = factory(context)
            self.pages[title] = page
            description, icon = PAGE_INFO.get(title, ("", "SP_FileIcon"))
            item = QListWidgetItem(
                self.style().standardIcon(getattr(QStyle.StandardPixmap, icon)), title
            )
            item.setData(DESCRIPTION, description)
            item.setToolTip(f"{title}: {description}" if description else title)
            self.nav.addItem(item)
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(page)
            page.install_banner()
            self.scrolls[title] = scroll
            self.stack.addWidget(scroll)
        self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.nav.setCurrentRow(0)

    def _build_central(self) -> None:
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 0)
        layout.addWidget(self.nav)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)

    def _build_run_strip(self) -> None:
        """The status strip: the current run (running, generation, best fitness, spend)."""
        self.run_strip = QLabel("No run in progress")
        self.run_strip.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statusBar().addWidget(self.run_strip, 1)

    def _link_pages(self) -> None:
        """The pages' signals that reach the window or another page: the Runs page's first
        listing and its strip, the Start page's buttons, the Playground opening Replay."""
        runs, start, playground = (self.pages.get(t) for t in ("Runs", "Start", "Playground"))
        if isinstance(runs, QtRuns):
            runs.runs_listed.connect(self._open_on_runs)
            runs.strip_changed.connect(self.run_strip.setText)
            if isinstance(start, QtStart):
                runs.runs_listed.connect(start.runs_listed)
        if isinstance(playground, QtPlayground) and isinstance(self.pages.get("Replay"), QtReplay):
            playground.open_in_replay.connect(self.open_in_replay)
        if isinstance(start, QtStart):
            start.go.connect(self.go)

    def _build_help_menu(self) -> None:
        """File > Quit (Ctrl+Q); Help > Documentation (F1), About, the log, the workspace."""
        file_menu = self.menuBar().addMenu("&File")
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))  # every platform's (Cmd+Q on a Mac)
        quit_action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        self.quit_action = quit_action
        help_menu = self.menuBar().addMenu("&Help")
        self.help_actions: dict[str, QAction] = {}
        for name, text, slot, keys in (
            ("documentation", "&Documentation", self.open_documentation, QKeySequence("F1")),
            ("about", "&About", self.show_about, None),
            ("log", "Open &log", self.open_log, None),
            ("workspace", "Open &workspace folder", self.open_workspace_folder, None),
        ):
            action = QAction(text, self)
            if keys is not None:
                action.setShortcut(keys)
            action.triggered.connect(slot)
            help_menu.addAction(action)
            self.help_actions[name] = action

    # ------------------------------------------------------------------ size and splitters

    def splitters(self) -> dict[str, QSplitter]:
        """Every splitter of every page, named by its page and its place in the page."""
        found = {}
        for title, page in self.pages.items():
            for number, splitter in enumerate(page.findChildren(QSplitter)):
                found[f"{title}/{number}"] = splitter
        return found

    def restore_layout(self) -> None:
        """The size, splitters and page of the last session; a first start fits the screen
        (at most 1280 x 800)."""
        state = self._state
        geometry = state.value("window/geometry") if state is not None else None
        if geometry is None or not self.restoreGeometry(geometry):
            screen = self.screen().availableGeometry() if self.screen() else None
            width, height = 1280, 800
            if screen is not None:
                width, height = min(width, screen.width()), min(height, screen.height())
            self.resize(width, height)
        if state is None:
            return
        for name, splitter in self.splitters().items():
            saved = state.value(f"splitters/{name}")
            if saved is not None:
                splitter.restoreState(saved)

    def save_layout(self) -> None:
        if self._state is None:
            return
        self._state.setValue("window/geometry", self.saveGeometry())
        for name, splitter in self.splitters().items():
            self._state.setValue(f"splitters/{name}", splitter.saveState())
        self._state.sync()

    # ------------------------------------------------------------------ navigation

    def current_page(self) -> Page:
        """The page shown (the stack holds each page in its scroll area, in order)."""
        return list(self.pages.values())[self.stack.currentIndex()]

    def go(self, where: str) -> None:
        """Show a page: ``"Title"``, or ``"Title:action"`` to also do one thing there (the
        first-run guide's buttons): ``Workers:add`` opens the Add worker dialog,
        ``Runs:sandbox`` loads the sandbox example into the new-run form,
        ``Evaluate:headroom`` shows the headroom check."""
        title, _, action = where.partition(":")
        if title not in self.pages:
            return
        self.nav.setCurrentRow(list(self.pages).index(title))
        page = self.pages[title]
        if action == "add" and isinstance(page, QtWorkers):
            page.open_dialog()
        elif action == "sandbox" and isinstance(page, QtRuns):
            page.load_example()
        elif action == "headroom" and hasattr(page, "show_headroom"):
            page.show_headroom()

    def _open_on_runs(self, count: int) -> None:
        """On the first runs-list read, show the Runs page (which opens the latest run) if
        there are runs and the user has not moved yet; with none, the first page (the
        first-run guide) stays."""
        first, self._runs_listed = not self._runs_listed, True
        if first and count and self.nav.currentRow() == 0:
            self.nav.setCurrentRow(list(self.pages).index("Runs"))

    def open_in_replay(self, episode_id: str) -> None:
        """Show an episode on the Replay page."""
        replay = self.pages["Replay"]
        assert isinstance(replay, QtReplay)  # connected only when the Replay page is one
        self.nav.setCurrentRow(list(self.pages).index("Replay"))
        replay.open_episode(episode_id)

    def open_log(self) -> bool:
        """Open ``logs/gui.log`` of the workspace in the system's viewer (created if the
        app has not logged anything yet)."""
        path = self.workspace.log_dir / "gui.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
        return _open_path(path)

    def open_workspace_folder(self) -> bool:
        return _open_path(self.workspace.root)

    def open_documentation(self) -> Documentation | None:
        """Open the documentation in the system's browser, from this computer (no
        network): the site bundled with the app, or a source checkout's Markdown pages
        (saying how to build the site). Returns what was opened (None: none here)."""
        found = find_documentation()
        if found is None:
            QMessageBox.information(self, "Documentation", NO_DOCUMENTATION)
            return None
        if found.note:
            self.statusBar().showMessage(found.note, 15_000)
            log.info("%s", found.note)
        if not _open_path(found.path):
            QMessageBox.information(
                self,
                "Documentation",
                f"No application opened the documentation; it is at {found.path}"
                + (f"\n\n{found.note}" if found.note else ""),
            )
        return found

    def show_about(self) -> QMessageBox:
        """Help > About: the version, the licence and the workspace at once; the device
        (which needs torch) filled in from a background job."""
        box = QMessageBox(
            QMessageBox.Icon.Information,
            f"About {APP_NAME}",
            about_text(self.workspace, device="checking…"),
            QMessageBox.StandardButton.Ok,
            self,
        )
        box.setObjectName("about")
        self.about_box = box
        box.open()
        background.start(
            self,
            "describe the device",
            describe_device,
            self._on_device,
            self._on_device_failed,
        )
        return box

    def _on_device(self, _context: Any, device: str) -> None:
        box = getattr(self, "about_box", None)
        if box is not None and box.isVisible():
            box.setText(about_text(self.workspace, device=device))

    def _on_device_failed(self, _context: Any, exc: Exception) -> None:
        self._on_device(None, f"unknown ({background.readable(exc)})")

    def check_keychain(self, registry: Any = None) -> None:
        """Say in a dialog, beside the window, when registered workers' keys cannot be
        read for want of a keychain (read in a background job: the keychain may be slow)."""
        background.start(
            self,
            "check the keychain",
            lambda: startup.keychain_problem(registry),
            self._on_keychain,
            self._on_keychain_failed,
        )

    def _on_keychain(self, _context: Any, problem: str | None) -> None:
        if problem is not None and self.isVisible():
            self.keychain_box = startup.show_problem(
                startup.KEYCHAIN_TITLE, problem, self, modal=False
            )

    def _on_keychain_failed(self, _context: Any, exc: Exception) -> None:
        log.info("keychain check failed: %s", exc)  # the Workers page says what is wrong

    def running_pages(self) -> list[Page]:
        return [p for p in self.pages.values() if p.running]

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
        self.save_layout()
        for page in self.pages.values():  # no thread outlives the window
            page.shutdown()
        background.shutdown(self)  # the window's own jobs (About's device, the keychain)
        for box in self.findChildren(QMessageBox):  # a dialog beside it goes with it
            box.close()
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


class _WithoutTraceback(logging.Formatter):
    """The terminal's lines without tracebacks: a handled error is its sentence (shown on
    the page too); the traceback is in the workspace's logs/gui.log."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text
        record.exc_info = record.exc_text = None
        try:
            return super().format(record)
        finally:
            record.exc_info, record.exc_text = saved


def _quiet_terminal() -> None:
    """Tracebacks of handled errors stay out of the terminal unless -v was given."""
    root = logging.getLogger()
    if root.getEffectiveLevel() <= logging.INFO:
        return
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(
            handler, logging.FileHandler
        ):
            handler.setFormatter(_WithoutTraceback("%(levelname)s %(name)s: %(message)s"))


def main(
    workspace: str | None = None,
    quit_after_ms: int | None = None,
    argv: Sequence[str] | None = None,
) -> int:
    """Start the GUI on ``workspace`` (default: the user's); ``quit_after_ms`` closes the
    window (and any start-up dialog) after that many milliseconds (a smoke test). Returns
    the exit code: 1 with one sentence on stderr when there is no display, 2 when the
    workspace cannot be used (said in a dialog, and on stderr)."""
    problem = display_problem()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(list(argv) if argv is not None else sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setApplicationVersion(__version__)
    QApplication.setWindowIcon(QIcon(str(resources_dir() / "icons" / "trinity-workbench.png")))
    settings, settings_problem = load_settings_or_defaults()  # the Settings page shows it too
    path = workspace if workspace is not None else settings.workspace
    try:
        ws = startup.open_workspace(path)
    except Exception as exc:  # a bad folder: said in a dialog, nothing else starts
        startup.show_problem(
            startup.WORKSPACE_TITLE,
            startup.workspace_problem(exc, path),
            close_after_ms=quit_after_ms,
        )
        return 2
    _quiet_terminal()
    from workbench.gui.qt_settings import apply_theme

    apply_theme(settings.theme)
    _log_to_workspace(ws)
    if settings_problem:
        log.warning("%s", settings_problem)
    window = MainWindow(ws)
    window.show()
    window.check_keychain()
    if quit_after_ms is not None:
        QTimer.singleShot(quit_after_ms, window.close)
    return app.exec()
