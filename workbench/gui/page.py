"""What every page of the window shares, written once: its background jobs (started with the
page as their owner, so that closing the page cancels and waits for them), whether any is in
flight, shutdown when the window or the page closes, and the page's messages: a plain status
on the page's message line, an error in a banner at the top of the page (where the eye is),
logged as well as shown.

A page subclasses ``Page`` and keeps only its own layout and logic; a page with more to stop
on close (a server, a training child) extends ``shutdown`` and calls ``super().shutdown()``.

The window reads every page through this contract only: ``running`` (long work a close must
ask about) and ``stop_and_wait`` (stop it and wait), ``install_banner`` and ``shutdown``;
``failed`` is the failure handler of a job whose context says what it was doing.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

import shiboken6

from workbench.gui import background
from workbench.gui.plots import plot_palette
from workbench.gui.qt import (
    QBoxLayout,
    QCloseEvent,
    QEvent,
    QFrame,
    QHBoxLayout,
    QLabel,
    QObject,
    QPushButton,
    QScrollArea,
    Qt,
    QVBoxLayout,
    QWidget,
    application,
)

log = logging.getLogger(__name__)

BANNER_STYLE = (
    "QFrame#banner { background: #fdecea; border: 1px solid #e0a39c; border-radius: 4px; }"
    " QFrame#banner QLabel { color: #5f1a14; }"
)


class ErrorLabel(QLabel):
    """An error's text beside what it is about (a dialog's field, a list of bad lines) in
    the theme's error colour (``plots.plot_palette``'s "error": readable on the light and
    the dark theme), recoloured when the theme changes."""

    def __init__(self, text: str = ""):
        super().__init__(text)
        _ErrorColours.follow(self)
        self.recolour()

    def colour(self) -> str:
        """The error colour of the active theme."""
        return plot_palette().colour("error")

    def recolour(self) -> None:
        style = f"color: {self.colour()}"
        if self.styleSheet() != style:
            self.setStyleSheet(style)


class _ErrorColours(QObject):
    """Recolours every ``ErrorLabel`` when the application's palette changes: a label with
    a style sheet inside a window hears of no palette change itself (the application
    object does)."""

    labels: weakref.WeakSet[ErrorLabel] = weakref.WeakSet()
    _installed: _ErrorColours | None = None

    @classmethod
    def follow(cls, label: ErrorLabel) -> None:
        cls.labels.add(label)
        app = application()
        if app is not None and (cls._installed is None or cls._installed.parent() is not app):
            cls._installed = cls(app)
            app.installEventFilter(cls._installed)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.parent() and event.type() == QEvent.Type.ApplicationPaletteChange:
            for label in list(self.labels):
                if shiboken6.isValid(label):
                    label.recolour()
                else:
                    self.labels.discard(label)
        return False


class Banner(QFrame):
    """An error across the top of a page: the sentence (what happened and the fix), and a
    button that puts it away. Hidden while there is nothing to say."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setStyleSheet(BANNER_STYLE)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.setToolTip("Hide this message")
        self.dismiss_button.clicked.connect(self.clear)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(QLabel("⚠"))
        row.addWidget(self.label, 1)
        row.addWidget(self.dismiss_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def show_text(self, text: str) -> None:
        self.label.setText(text)
        self.setVisible(bool(text))
        if text:  # a page scrolled down (a small screen) brings its banner into view
            parent = self.parentWidget()
            while parent is not None and not isinstance(parent, QScrollArea):
                parent = parent.parentWidget()
            if parent is not None:
                parent.ensureWidgetVisible(self)

    def clear(self) -> None:
        self.label.clear()
        self.hide()


class MessageLine(QLabel):
    """A page's message line: a status shows where the page placed it; an error (a line
    made with ``error=True``, or ``say(..., error=True)``) shows in the page's banner
    instead, the line itself hidden. ``text()`` is the message either way."""

    def __init__(self, text: str = "", *, error: bool = True):
        super().__init__()
        self.setWordWrap(True)
        self.error = error
        self.banner: Banner | None = None  # set when the page installs its banner
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        if self.banner is None:
            self.setVisible(True)
            return
        to_banner = self.error and bool(text)
        self.banner.show_text(text if to_banner else "")
        self.setVisible(not to_banner)

    def clear(self) -> None:
        self.setText("")


def combo_over_buttons(combo: QWidget, *buttons: QPushButton) -> QVBoxLayout:
    """A choice on a line of its own with its buttons below it (Evaluate's and the
    Playground's coordinator): beside the buttons a long entry was cut ("run 2802" of
    "run 28026460  sandbox sample (finished)") and made the side too wide at 1280 px."""
    row = QHBoxLayout()
    for button in buttons:
        row.addWidget(button)
    row.addStretch(1)
    column = QVBoxLayout()
    column.addWidget(combo)
    column.addLayout(row)
    return column


def message_label(text: str = "", *, error: bool = True) -> MessageLine:
    """A page's message line (``MessageLine``): errors go to the banner at the page's top."""
    return MessageLine(text, error=error)


class Page(QWidget):
    """A page: background jobs, busy state, shutdown, and a message line.

    ``message_label`` is the line ``show_error`` and ``say`` write to; a page makes it with
    ``message_label()`` (or names its own status label) while it builds its layout."""

    message_label: QLabel

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._latest: dict[str, int] = {}  # per kind of read: the latest one asked for
        self._pending = 0  # jobs started whose outcome has not yet reached the page
        self.banner = Banner(self)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        """No: the window's scroll area would size the page to its preferred height (tall
        with wrapped text) rather than to the window, and scroll where nothing needs it.
        The page fits the window down to its minimum size; the scroll area serves below."""
        return False

    def heightForWidth(self, _width: int) -> int:  # noqa: N802 (Qt's name)
        return -1  # as hasHeightForWidth: the scroll area asks the layout, then this

    # ------------------------------------------------------------------ background jobs

    def in_background(
        self,
        name: str,
        call: Callable[[], Any],
        on_success: Callable[[Any, Any], None],
        on_failure: Callable[[Any, Exception], None],
        context: Any = None,
        *,
        latest: bool = False,
    ) -> background.Job | None:
        """Run ``call`` in a job owned by this page; ``on_success(context, result)`` or
        ``on_failure(context, exception)`` (methods of the page) run in the GUI thread.
        ``latest``: a read asked for again and again (a listing): only the outcome of the
        latest job called ``name`` reaches the page, older ones are dropped. Nothing starts
        once the page is shutting down (returns None)."""
        if latest:
            number = self._latest[name] = self._latest.get(name, 0) + 1
            context = (name, number, context, on_success, on_failure)
            on_success, on_failure = self._latest_succeeded, self._latest_failed
        # counted before the job starts, and its end heard from the start: by the time
        # _job_ended runs, on_success or on_failure has run in the GUI thread
        self._pending += 1
        job = background.start(
            self, name, call, on_success, on_failure, context, on_finished=self._job_ended
        )
        if job is None:
            self._pending -= 1
        return job

    def _job_ended(self) -> None:
        self._pending -= 1

    def _latest_succeeded(self, latest: tuple[str, int, Any, Any, Any], result: Any) -> None:
        name, number, context, on_success, _ = latest
        if number == self._latest[name]:
            on_success(context, result)

    def _latest_failed(self, latest: tuple[str, int, Any, Any, Any], exc: Exception) -> None:
        name, number, context, _, on_failure = latest
        if number == self._latest[name]:
            on_failure(context, exc)

    @property
    def running(self) -> bool:
        """Long work of the page is in progress (a training run, an evaluation, an
        episode): the window asks before it closes, then calls ``stop_and_wait``. A page
        with such work overrides this; by default there is none."""
        return False

    def stop_and_wait(self, timeout_ms: int = 120_000) -> bool:
        """Stop the page's long work and wait for it to end (the window is closing);
        returns whether it ended within ``timeout_ms``. By default: cancel the page's jobs
        and wait for them (``shutdown``)."""
        self.shutdown()
        return True

    @property
    def jobs_running(self) -> bool:
        """A background job of this page is in flight, or its outcome has not yet reached
        the page (a finished thread's result is still queued for the GUI thread)."""
        return self._pending > 0

    def shutdown(self) -> None:
        """Cancel the page's network jobs and wait for all of its jobs (the window or the
        page is closing); no job starts for the page afterwards."""
        background.shutdown(self)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        self.shutdown()
        super().closeEvent(event)

    # ------------------------------------------------------------------ messages

    def install_banner(self) -> None:
        """Put the banner at the top of the page's layout (once the page has built it) and
        point the message line at it; the window does this, and so does the first show."""
        if self.banner.property("installed"):
            return
        layout = self.layout()
        if isinstance(layout, QBoxLayout):
            layout.insertWidget(0, self.banner)
            self.banner.setProperty("installed", True)
        line = getattr(self, "message_label", None)
        if isinstance(line, MessageLine):
            line.banner = self.banner
            line.setText(line.text())  # an error said before the banner was placed

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self.install_banner()
        super().showEvent(event)

    def say(self, text: str, *, error: bool = False) -> None:
        """Show ``text``: an error in the banner at the top, a status on the message line."""
        self.install_banner()
        line = self.message_label
        if isinstance(line, MessageLine):
            line.error = error
        line.setText(text)

    def show_error(self, message: str) -> None:
        """Show an error in the banner at the top of the page and log it (no traceback: the
        message is the sentence the user reads)."""
        self.say(message, error=True)
        log.warning("%s", message)

    def failed(self, what: str, exc: Exception) -> None:
        """The failure handler of a background job whose context is what it was doing
        (``self.in_background(name, call, on_success, self.failed, "read the runs")``):
        ``Cannot <what>: <the exception as a sentence>`` in the banner, logged."""
        self.show_error(self.failure(what, exc))

    @staticmethod
    def failure(what: str, exc: BaseException) -> str:
        """``Cannot <what>: <the exception as a sentence>``."""
        return f"Cannot {what}: {background.readable(exc)}"
