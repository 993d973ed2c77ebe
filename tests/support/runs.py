"""What every ended run's record carries (``store/lifecycle.py``), checked in one place."""

from __future__ import annotations

import time
from typing import Any


def ended_as(result: dict[str, Any] | None) -> dict[str, Any]:
    """The job's own figures of an ended run's ``result``, after checking the end block
    every run has: its ``spend`` (minutes at least, never negative), ``ended_at`` (a unix
    time of the last hour) and no process named any more (``pid``, ``host``)."""
    assert result is not None, "an ended run has a result"
    figures = dict(result)
    spend, ended_at = figures.pop("spend"), figures.pop("ended_at")
    assert spend["minutes"] >= 0 and all(v >= 0 for v in spend.values()), spend
    assert time.time() - 3600 < ended_at <= time.time(), ended_at
    assert "pid" not in figures and "host" not in figures, figures
    return figures
