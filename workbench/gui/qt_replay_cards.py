"""The cards of the Replay page's conversation: the question, one card per turn (its
number, role and worker, the coordinator's probabilities as small labelled bars, what the
worker was asked and what it answered, the grade), and the outcome. Views only: they show
a stored ``Turn`` / ``Episode`` and hold nothing else."""

from __future__ import annotations

import json

from workbench.core.records import ROLES, Episode
from workbench.core.replay import Outcome, turn_cost
from workbench.gui.plots import plot_palette
from workbench.gui.qt import (
    QEvent,
    QFrame,
    QLabel,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)
from workbench.gui.qt_probabilities import BarList, SideBySide
from workbench.gui.replay_model import reply_heading, turn_words
from workbench.gui.words import ROLE_SENTENCES, role_name

# each card's border by name, in the theme's shade (``plots.plot_palette``): the same
# colours as the plots', lighter on dark
ROLE_COLORS = {"thinker": "purple", "worker": "blue", "verifier": "green"}
CARD_STYLE = "QFrame#card {{ border: {width}px solid {color}; border-radius: 6px; }}"
TEXT_CHARS = 4000  # a longer prompt or answer is cut on the card (the export has all)


def _text(value: str, chars: int = TEXT_CHARS) -> str:
    return value if len(value) <= chars else value[:chars] + f"… ({len(value) - chars} more)"


def text_label(text: str = "") -> QLabel:
    """Wrapped, selectable plain text (it takes no keyboard focus: arrows stay the page's)."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    return label


def _toggle(title: str, body: QWidget) -> QPushButton:
    """A flat button that shows and hides ``body`` (hidden at first)."""
    button = QPushButton(f"▸ {title}")
    button.setFlat(True)
    button.setCheckable(True)
    button.setStyleSheet("text-align: left; padding: 0")
    body.hide()

    def flip(shown: bool) -> None:
        body.setVisible(shown)
        button.setText(f"{'▾' if shown else '▸'} {title}")

    button.toggled.connect(flip)
    return button


class Card(QFrame):
    """A framed card, its border in the theme's colour called ``color`` (redrawn when the
    theme changes); ``set_current`` draws the current one's border thicker, in orange."""

    def __init__(self, color: str = "grey"):
        super().__init__()
        self.setObjectName("card")
        self.color = color
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(10, 8, 10, 8)
        self.set_current(False)

    def set_current(self, current: bool) -> None:
        self.current = current
        width, name = (3, "orange") if current else (1, self.color)
        style = CARD_STYLE.format(width=width, color=plot_palette().colour(name))
        if style != self.styleSheet():  # a palette change re-applies only what differs
            self.setStyleSheet(style)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.set_current(self.current)  # the light or dark theme's shade


class TurnCard(Card):
    """One turn: who and in which role, the coordinator's probabilities, what the worker
    was asked (shown on request) and answered, and the grade."""

    def __init__(self, episode: Episode, index: int, role_text: str):
        turn = episode.turns[index]
        role = str(turn.role)
        super().__init__(ROLE_COLORS.get(role, "grey"))
        self.index = index
        self.title = QLabel(
            f"<b>Turn {index + 1}</b> · <b>{role_name(role)}</b> · {turn.worker}"
            + (f" · <i>{role_text.partition('(')[2].rstrip(')')}</i>" if "(" in role_text else "")
        )
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.title.setToolTip(f"{ROLE_SENTENCES.get(role, role)}\nrole id: {role}")
        roles = [str(r) for r in ROLES]
        self.worker_bars = BarList(
            "Which worker",
            episode.pool,
            turn.worker_probs,
            episode.pool.index(turn.worker) if turn.worker in episode.pool else -1,
        )
        self.role_bars = BarList(
            "Which role", [role_name(r) for r in roles], turn.role_probs, roles.index(role)
        )
        self.charts = SideBySide(self.worker_bars, self.role_bars)
        charts_note = QLabel("The coordinator's probabilities:")
        charts_note.setStyleSheet("color: gray")
        self.prompt = text_label(_text(turn.prompt_text()) or "(not called)")
        self.prompt_button = _toggle("What it was asked", self.prompt)
        self.answer_heading = QLabel(reply_heading(turn))
        self.answer_heading.setStyleSheet("color: gray")
        self.answer = text_label(_text(turn.response or turn.error or "(no reply)"))
        self.grade = QLabel(turn_words(turn))
        self.grade.setStyleSheet("font-weight: bold")
        self.grade.setWordWrap(True)
        cost = turn_cost(turn)
        self.figures = QLabel(
            f"{turn.tokens_in} tokens in, {turn.tokens_out} out · {turn.latency_s:.2f} s · {cost}"
        )
        self.figures.setStyleSheet("color: gray")
        widget: QWidget
        for widget in (
            self.title,
            charts_note,
            self.charts,
            self.prompt_button,
            self.prompt,
            self.answer_heading,
            self.answer,
            self.grade,
            self.figures,
        ):
            self.layout_.addWidget(widget)


class QuestionCard(Card):
    """The question the episode answered."""

    def __init__(self, episode: Episode, prompt: str | None):
        super().__init__("slate")
        title = QLabel(f"<b>Question</b> · {episode.task_id} ({episode.suite})")
        title.setTextFormat(Qt.TextFormat.RichText)
        self.text = text_label(_text(prompt) if prompt else "(the question's suite is not here)")
        self.layout_.addWidget(title)
        self.layout_.addWidget(self.text)


class OutcomeCard(Card):
    """The end: right or not, how it ended, the final answer and the reference; the
    grader's details on request."""

    def __init__(self, outcome: Outcome, ending: str):
        super().__init__("green" if outcome.right else "red")
        verdict = (
            "Right answer"
            if outcome.right
            else ("Partly right" if outcome.reward > 0 else "Wrong answer")
        )
        self.title = QLabel(
            f"<b>{'✓' if outcome.right else '✗'} {verdict}</b> (reward {outcome.reward:g}) · "
            f"{ending}"
        )
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.title.setToolTip(f"stop reason: {outcome.stop_reason}")
        self.answer = text_label(f"Final answer:\n{_text(outcome.answer or '(none)')}")
        self.reference = text_label(f"Reference:\n{_text(outcome.reference or '(unknown)')}")
        self.details = text_label(json.dumps(outcome.grader, indent=2, default=str))
        details_button = _toggle("How it was graded", self.details)
        for widget in (self.title, self.answer, self.reference, details_button, self.details):
            self.layout_.addWidget(widget)
