"""The contract every page keeps with the window (``gui/page.py``'s ``Page``): ``running``
and ``stop_and_wait`` (what a close asks about and stops), and ``failed``, the failure
handler of a job whose context says what it was doing. The window reads its pages through
it only (app.py asks no page with hasattr)."""

from __future__ import annotations

import threading

from workbench.gui import background
from workbench.gui.page import Page, message_label
from workbench.gui.qt import QVBoxLayout


class _Page(Page):
    def __init__(self):
        super().__init__()
        self.message_label = message_label()
        layout = QVBoxLayout(self)
        layout.addWidget(self.message_label)


def _fails() -> None:
    raise FileNotFoundError(2, "No such file or directory", "/nowhere/runs.db")


def test_a_job_that_only_reports_its_failure_shows_it_in_the_banner(qtbot):
    page = _Page()
    qtbot.addWidget(page)
    page.show()
    page.in_background("read", _fails, lambda _c, _r: None, page.failed, "read the runs")
    qtbot.waitUntil(lambda: not page.jobs_running, timeout=10_000)
    assert page.banner.isVisible()
    text = page.banner.text()
    assert text.startswith("Cannot read the runs: ") and "/nowhere/runs.db" in text
    assert "Traceback" not in text


def test_a_page_without_long_work_is_not_running_and_stops_its_jobs_on_request(qtbot):
    page = _Page()
    qtbot.addWidget(page)
    release = threading.Event()
    page.in_background("wait", lambda: release.wait(10), lambda _c, _r: None, page.failed, "wait")
    assert page.jobs_running and not page.running  # a short job is not long work
    release.set()
    assert page.stop_and_wait() is True  # by default: the page's jobs end and are waited for
    assert background.running(page) == []
    qtbot.waitUntil(lambda: not page.jobs_running, timeout=10_000)


def test_every_page_of_the_window_keeps_the_contract(make_main_window):
    window = make_main_window()
    for title, page in window.pages.items():
        assert isinstance(page, Page), title
        assert page.running is False, title  # nothing started yet
    assert window.running_pages() == []
