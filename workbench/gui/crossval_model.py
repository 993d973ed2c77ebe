"""The Evaluate page's cross-validations, as its tables say them: the stored
cross-validations (``crossval.list_crossvals``) and one of them (``CrossValReport``): each
system's accuracy with its 95% interval, its paired difference from the best single model
with that difference's interval and the questions it won and lost, and the same per
category for one system. Built from core's typed objects and free of Qt, so that a test
reads it without a window; the view is ``qt_crossval``.
"""

from __future__ import annotations

from workbench.core.jobs.crossval_report import CrossValReport, CVSystem, StoredCrossVal
from workbench.core.stats import Paired
from workbench.gui.evaluate_model import baseline_words
from workbench.gui.runs_model import CellText, started_text

LIST_COLUMNS = ("Cross-validation", "When")
LIST_TIPS = {
    "Cross-validation": "What was cross-validated (trinity-workbench crossval): the run "
    "config's name",
    "When": "When the cross-validation was made",
}
# the systems' table: short headers, what each means in its tooltip
SYSTEM_COLUMNS = ("System", "Accuracy", "95% interval", "vs best model", "Won / lost")
SYSTEM_TIPS = (
    "What answered: the trained coordinator, a router (a simple learned rule that picks one "
    "model per question), one model alone, random choice, a vote, or the oracle (right "
    "whenever any model was right: the most routing could reach)",
    "The share of the questions answered right, each question tested in the one fold that "
    "held it out of training",
    "The accuracy's 95% confidence interval: the true accuracy lies between these two "
    "values with 95% confidence",
    "The accuracy minus the best single model's, question by question, with its 95% "
    "interval (bootstrap): an interval that holds 0 is no clear difference",
    "Questions this system got right and the best single model wrong (won), and the "
    "other way round (lost)",
)
CATEGORY_COLUMNS = ("Category", "Questions", "vs best model", "Won / lost")
KIND_WORDS = {
    "coordinator": "the trained coordinator",
    "router": "a router: a simple learned rule picking one model per question",
    "single": "one model alone",
    "random": "a model chosen at random for each question",
    "vote": "every model asked, the most common answer kept",
    "oracle": "right whenever any model was right: the most routing could reach",
}


def system_name(name: str) -> str:
    """A system as a table names it: a single model by its own name, as the Evaluate
    page's baselines are (``evaluate_model.baseline_words``), the others by theirs."""
    return baseline_words(name)


def kind_words(system: CVSystem) -> str:
    return KIND_WORDS.get(system.kind, system.kind)


def crossval_cells(stored: StoredCrossVal, now: float | None = None) -> list[CellText]:
    """A stored cross-validation's row of the list (``LIST_COLUMNS``)."""
    return [
        CellText(stored.name, tooltip=f"{stored.name}\ncross-validation run {stored.run_id}"),
        CellText(started_text(stored.created_at, now), stored.created_at),
    ]


def summary_line(report: CrossValReport) -> str:
    """What was cross-validated, in a line over the tables."""
    seeds = report.seeds or (report.seed,)
    n = report.systems[0].n if report.systems else 0
    repeats = f", repeated with {len(seeds)} seeds" if len(seeds) > 1 else ""
    left_out = (
        f"; {report.paired_left_out} left out of the comparisons (a recorded model has no "
        "answer for them)"
        if report.paired_left_out
        else ""
    )
    return (
        f"{report.folds}-fold cross-validation on the suite '{report.suite}'{repeats}: "
        f"{n} question{'' if n == 1 else 's'}, each tested once by a coordinator trained "
        f"without it. Best single model: {system_name(report.best_single)}{left_out}."
    )


def _difference(pair: Paired | None) -> CellText:
    if pair is None:
        return CellText("reference", 0.0, "the best single model: the others are compared to it")
    return CellText(
        f"{pair.difference:+.3f} ({pair.ci_low:+.3f} to {pair.ci_high:+.3f})",
        pair.difference,
        f"{system_name(pair.system)} minus {system_name(pair.against)}: "
        f"{pair.difference:+.3f}, 95% interval {pair.ci_low:+.3f} to {pair.ci_high:+.3f}, "
        f"on {pair.n} question{'' if pair.n == 1 else 's'}"
        + ("" if pair.significant else " (no clear difference)"),
    )


def _won_lost(pair: Paired | None) -> CellText:
    if pair is None:
        return CellText("–", -1)
    return CellText(
        f"{pair.wins} / {pair.losses}",
        pair.wins - pair.losses,
        f"won {pair.wins}, lost {pair.losses} (sign test p = {pair.p_value:.3g})",
    )


def system_rows(report: CrossValReport) -> list[list[CellText]]:
    """The systems' table (``SYSTEM_COLUMNS``), in the report's order."""
    pairs = {p.system: p for p in report.paired}
    rows = []
    for s in report.systems:
        pair = pairs.get(s.name)
        rows.append(
            [
                CellText(
                    system_name(s.name),
                    tooltip=f"{system_name(s.name)} ({s.name}): {kind_words(s)}",
                ),
                CellText(f"{s.accuracy:.3f}", s.accuracy, f"{s.accuracy:.3f} of {s.n}"),
                CellText(f"{s.ci_low:.3f}–{s.ci_high:.3f}", s.ci_low),
                _difference(pair),
                _won_lost(pair),
            ]
        )
    return rows


def category_title(report: CrossValReport, system: str) -> str:
    return (
        f"Per category: {system_name(system)} against {system_name(report.best_single)}, "
        "question by question"
    )


def category_rows(report: CrossValReport, system: str) -> list[list[CellText]]:
    """``system`` against the best single model in each category (``CATEGORY_COLUMNS``);
    empty for the best single model itself."""
    rows = []
    for group in report.groups:
        pair = next((p for p in report.paired_by_group[group] if p.system == system), None)
        if pair is None:
            continue
        rows.append(
            [
                CellText(group),
                CellText(str(pair.n), pair.n),
                _difference(pair),
                _won_lost(pair),
            ]
        )
    return rows
