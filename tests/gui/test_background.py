"""Background jobs: a page's shutdown cancels what still waits on the network and waits for
the rest, whatever moment it comes at."""

from __future__ import annotations

import asyncio

from workbench.gui import background
from workbench.gui.qt import QObject


class Page(QObject):
    def __init__(self):
        super().__init__()
        self.outcomes = []

    def done(self, context, result):
        self.outcomes.append(("done", context, result))

    def failed(self, context, exc):
        self.outcomes.append(("failed", context, exc))


def test_shutting_down_after_a_network_job_finished_its_loop_is_harmless(qtbot):
    """asyncio.run closes the job's event loop before the thread ends: a shutdown in that
    window (a page closed right after a connection test) once raised 'Event loop is closed'."""
    page = Page()

    async def probe():
        return "ok"

    job = background.start(page, "probe", probe, page.done, page.failed, context="w1")
    assert job.wait(10_000)
    background.shutdown(page)  # cancels a job whose loop is already closed
    qtbot.waitUntil(lambda: page.outcomes == [("done", "w1", "ok")])
    assert background.start(page, "late", probe, page.done, page.failed) is None


def test_shutdown_cancels_a_network_job_still_waiting(qtbot):
    page = Page()

    async def waits_forever():
        await asyncio.sleep(3600)

    job = background.start(page, "slow", waits_forever, page.done, page.failed)
    qtbot.waitUntil(lambda: job._task is not None)  # it is waiting on its loop now
    background.shutdown(page)  # returns only when the thread ended
    assert not job.isRunning()
    qtbot.wait(50)
    assert page.outcomes == []  # cancelled: neither success nor failure reaches the page


def test_a_page_hears_the_end_of_every_job_even_an_instant_one(qtbot):
    """``Page.jobs_running`` goes back to False once every job's outcome has reached the
    page, also for jobs that end before ``in_background`` returns (a settings file that is
    not there yet): their end was once lost, and the page read busy for ever."""
    from workbench.gui.page import Page as GuiPage

    class Counting(GuiPage):
        def __init__(self):
            super().__init__()
            self.outcomes = 0

        def done(self, _context, _result):
            self.outcomes += 1

    page = Counting()
    qtbot.addWidget(page)
    for i in range(60):
        assert page.in_background(f"instant {i}", lambda: None, page.done, page.done) is not None
    assert page.jobs_running
    qtbot.waitUntil(lambda: not page.jobs_running, timeout=30_000)
    assert page.outcomes == 60
    page.shutdown()
    assert page.in_background("after shutdown", lambda: None, page.done, page.done) is None
    assert not page.jobs_running
