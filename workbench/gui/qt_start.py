"""The Start page: the first-run guide. Five steps, each a sentence and a button that goes
where the step is done: choose who answers (the simulated team, offline and free, or a
real model), pick the questions, check whether a team can gain anything (the headroom
check), train, replay (docs/guides/desktop.md says the same five). The window opens here on a workspace
without runs; once runs exist it opens on the Runs page, and this page says how many.
"""

from __future__ import annotations

from workbench.core.workspace import Workspace
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)
from workbench.gui.words import plural

WELCOME = (
    "Trinity Workbench trains a small <b>coordinator</b>: for each question it decides, "
    "turn by turn, which AI model (a <b>worker</b>) answers and in which role: a "
    "<b>Thinker</b> plans, a <b>Worker</b> answers, a <b>Verifier</b> checks. "
    "Everything can be tried first on this computer, offline and free, with a simulated "
    "team."
)
# (heading, explanation, buttons: (label, where the window goes, tooltip))
STEPS: tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "Choose who answers",
        "The simulated team runs here, offline and free: three made-up specialists, good "
        "at maths, at knowledge questions or at code. A real model needs its provider's "
        "API key.",
        (
            (
                "Use the simulated team",
                "Runs:sandbox",
                "Fill the new-run form with the sandbox example (simulated team, offline)",
            ),
            ("Add a worker…", "Workers:add", "Register a real model with its API key"),
        ),
    ),
    (
        "Pick the questions",
        "A suite is a set of questions with known answers, split into training, "
        "validation and test questions. The suite 'mixed' has maths, knowledge and code.",
        (("Look at the suites", "Tasks", "Open the Tasks page"),),
    ),
    (
        "Is a team worth it?",
        "With real models, check first: the headroom check asks each worker a sample of "
        "the training questions once and says how much a coordinator could gain over the "
        "best of them (nothing, when the best is right whenever any worker is).",
        (
            (
                "Check the headroom",
                "Evaluate:headroom",
                "Open the Headroom and cost tab of the Evaluate page",
            ),
        ),
    ),
    (
        "Train",
        "Training tries many coordinators and keeps the ones that answer best. The first "
        "start loads the language model the coordinator reads with (about a minute, once). "
        "The sandbox example takes a few minutes on an idle laptop processor, several "
        "times longer on a busy one.",
        (("Go to training", "Runs", "Open the Runs page: press Start there"),),
    ),
    (
        "Replay",
        "Read any question's episode as a conversation: who was asked, what they "
        "answered, and whether the final answer was right.",
        (("Open Replay", "Replay", "Open the Replay page"),),
    ),
)


class QtStart(Page):
    """The first-run guide; ``go(where)`` asks the window to show a page (``"Runs"``) or
    to do one thing there (``"Runs:sandbox"``, ``"Workers:add"``)."""

    go = Signal(str)

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.message_label = message_label(error=False)
        self.buttons: dict[str, QPushButton] = {}  # by where they go
        title = QLabel("Welcome")
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        title.setFont(font)
        welcome = QLabel(WELCOME)
        welcome.setWordWrap(True)
        welcome.setTextFormat(Qt.TextFormat.RichText)
        steps = QGridLayout()
        steps.setColumnStretch(1, 1)
        steps.setVerticalSpacing(14)
        for row, (heading, text, buttons) in enumerate(STEPS):
            number = QLabel(str(row + 1))
            number.setAlignment(Qt.AlignmentFlag.AlignCenter)
            number.setFixedSize(34, 34)
            number.setStyleSheet(
                "border-radius: 17px; background: #3874d8; color: white; font-weight: bold;"
            )
            body = QLabel(f"<b>{heading}</b><br>{text}")
            body.setWordWrap(True)
            body.setTextFormat(Qt.TextFormat.RichText)
            row_buttons = QHBoxLayout()
            for label, where, tip in buttons:
                button = QPushButton(label)
                button.setToolTip(tip)
                button.clicked.connect(lambda _=False, where=where: self.go.emit(where))
                self.buttons[where] = button
                row_buttons.addWidget(button)
            row_buttons.addStretch(1)
            cell = QVBoxLayout()
            cell.addWidget(body)
            cell.addLayout(row_buttons)
            steps.addWidget(number, row, 0, Qt.AlignmentFlag.AlignTop)
            steps.addLayout(cell, row, 1)
        self.runs_note = QLabel("")
        self.runs_note.setWordWrap(True)
        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 16, 24, 16)
        layout.addWidget(title)
        layout.addWidget(welcome)
        layout.addWidget(line)
        layout.addLayout(steps)
        layout.addWidget(self.runs_note)
        layout.addWidget(self.message_label)
        layout.addStretch(1)

    def runs_listed(self, count: int) -> None:
        """The Runs page read the workspace's runs: say how many there are."""
        self.runs_note.setText(
            ""
            if not count
            else f"This workspace has {plural(count, 'run')}: the Runs page "
            "shows them, with their plots."
        )

    def steps_text(self) -> str:
        """Every word of the guide (tests read it)."""
        return " ".join([WELCOME, *(f"{h} {t}" for h, t, _ in STEPS)])
