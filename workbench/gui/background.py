"""Short background jobs for pages: one core call (a function, or a coroutine function for
network work) run in a ``Job`` thread, its outcome handed back by signal, so that the GUI
thread never waits on the network, the keychain or the disk.

A page starts jobs with itself as the parent and connects the signals to its own methods
(queued into the GUI thread). ``shutdown(page)`` cancels the coroutines still waiting on
the network and waits for every job: no thread outlives its page.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

from workbench.gui.qt import QObject, QThread, Signal

log = logging.getLogger(__name__)
CLOSED = "workbenchJobsClosed"  # a page property set by shutdown()


class Job(QThread):
    """Runs ``call()`` once; emits ``succeeded(context, result)`` or ``failed(context,
    exception)``, ``context`` being what the page said the job is about (a worker id, a
    file). Details of a failure go to the log; the page shows the exception's message."""

    succeeded = Signal(object, object)
    failed = Signal(object, object)

    def __init__(self, name: str, call: Callable[[], Any], parent: QObject, context: Any = None):
        super().__init__(parent)
        self.setObjectName(name)
        self.context = context
        self._call = call
        self._lock = threading.Lock()
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self.finished.connect(self.deleteLater)  # queued to the GUI thread, after the outcome

    def run(self) -> None:  # runs in the job's thread
        try:
            if inspect.iscoroutinefunction(self._call):
                result = asyncio.run(self._cancellable())
            else:
                result = self._call()
        except asyncio.CancelledError:
            log.info("%s: cancelled", self.objectName())
            return
        except Exception as exc:  # handed to the page as a readable message
            log.warning("%s failed", self.objectName(), exc_info=True)
            self.failed.emit(self.context, exc)
            return
        self.succeeded.emit(self.context, result)

    async def _cancellable(self) -> Any:
        with self._lock:
            if self._cancelled:
                raise asyncio.CancelledError
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        try:
            return await self._call()
        finally:  # asyncio.run closes the loop next: cancel() must not reach a closed loop
            with self._lock:
                self._loop = self._task = None

    def cancel(self) -> None:
        """Cancel a coroutine that is still waiting (thread-safe). A plain function cannot
        be interrupted: it runs to its end."""
        with self._lock:
            self._cancelled = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)


def readable(exc: BaseException) -> str:
    """A failure as a sentence for a page, the same the command line prints
    (``workbench.core.errors.sentence``): the error tree's own sentence, an OS failure's
    path and fix; anything else is named, the details being in the log."""
    from workbench.core.errors import WorkbenchError, sentence

    if isinstance(exc, WorkbenchError | OSError | ValueError | LookupError):
        return sentence(exc)
    text = str(exc).strip()
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"unexpected error ({detail}); details are in the log"


def start(
    parent: QObject,
    name: str,
    call: Callable[[], Any],
    on_success: Callable[[Any, Any], None],
    on_failure: Callable[[Any, Exception], None],
    context: Any = None,
    on_finished: Callable[[], None] | None = None,
) -> Job | None:
    """Start ``call`` in a new ``Job`` owned by ``parent``. ``on_success(context, result)``
    and ``on_failure(context, exception)`` must be methods of ``parent``: Qt then queues
    them into the GUI thread. ``on_finished()`` (a method of ``parent`` too) runs after the
    outcome, once the job's thread has ended. Every slot is connected before the job
    starts: a quick job cannot end unheard."""
    if parent.property(CLOSED):  # the page is shutting down: start nothing that could outlive it
        log.info("%s: not started, the page is closing", name)
        return None
    job = Job(name, call, parent, context)
    job.succeeded.connect(on_success)
    job.failed.connect(on_failure)
    if on_finished is not None:
        # queued after the job's outcome (both leave the job's thread in order)
        job.finished.connect(on_finished)
    job.start()
    return job


def running(parent: QObject) -> list[Job]:
    return [job for job in parent.findChildren(Job) if job.isRunning()]


def shutdown(parent: QObject) -> None:
    """Cancel the network jobs of ``parent`` and wait for all of its jobs to end; no new
    job starts for ``parent`` afterwards (outcomes still queued would start more)."""
    parent.setProperty(CLOSED, True)
    jobs = parent.findChildren(Job)
    for job in jobs:
        job.cancel()
    for job in jobs:
        job.wait()
