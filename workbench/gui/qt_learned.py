"""The "What it learned" panel of the Runs and Evaluate pages: per category, the
role/worker sequences the coordinator played most often, with their share and reward,
and the exact oracle's plan beside them for simulated pools (``workbench.core.learned``).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.learned import CategoryLearned, describe_learned
from workbench.gui.qt import QPlainTextEdit


class LearnedView(QPlainTextEdit):
    """Read-only text: a heading, then ``describe_learned``'s lines."""

    def __init__(self, empty: str) -> None:
        super().__init__()
        self.empty = empty  # shown while there is nothing to show
        self.setReadOnly(True)
        self.setPlainText(empty)

    def clear_learned(self) -> None:
        """Back to the empty text (a new run starts, another run is opened)."""
        self.setPlainText(self.empty)

    def show_learned(
        self, learned: Sequence[CategoryLearned], heading: str, empty: str | None = None
    ) -> None:
        """``heading`` and the lines of ``learned``; with nothing learned, ``empty`` (why,
        when it is known), else the view's own empty text."""
        if not learned:
            self.setPlainText(empty or self.empty)
            return
        self.setPlainText("\n".join([heading, *describe_learned(learned)]))
