"""What every page of the window shares, written once: its background jobs (started with the
page as their owner, so that closing the page cancels and waits for them), whether any is in
flight, shutdown when the window or the page closes, and the page's message line (an error
in red, or a plain status), logged as well as shown.

A page subclasses ``Page`` and keeps only its own layout and logic; a page with more to stop
on close (a server, a training child) extends ``shutdown`` and calls ``super().shutdown()``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from workbench.gui import background
from workbench.gui.qt import ERROR_STYLE, QCloseEvent, QLabel, QWidget

log = logging.getLogger(__name__)


def message_label(text: str = "", *, error: bool = True) -> QLabel:
    """A word-wrapped line for a page's messages (red when ``error``)."""
    label = QLabel(text)
    label.setWordWrap(True)
    if error:
        label.setStyleSheet(ERROR_STYLE)
    return label


class Page(QWidget):
    """A page: background jobs, busy state, shutdown, and a message line.

    ``message_label`` is the line ``show_error`` and ``say`` write to; a page makes it with
    ``message_label()`` (or names its own status label) while it builds its layout."""

    message_label: QLabel

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._latest: dict[str, int] = {}  # per kind of read: the latest one asked for
        self._pending = 0  # jobs started whose outcome has not yet reached the page

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

    def say(self, text: str, *, error: bool = False) -> None:
        """Show ``text`` on the message line, red when ``error``."""
        self.message_label.setStyleSheet(ERROR_STYLE if error else "")
        self.message_label.setText(text)

    def show_error(self, message: str) -> None:
        """Show an error on the message line and log it."""
        self.message_label.setText(message)
        log.warning("%s", message)

    @staticmethod
    def failure(what: str, exc: BaseException) -> str:
        """``Cannot <what>: <the exception as a sentence>``."""
        return f"Cannot {what}: {background.readable(exc)}"
