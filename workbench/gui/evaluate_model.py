"""The Evaluate page's model: what its tables say, built from core's typed objects (the
``Report`` of an evaluation, the ``StoredEvaluation``s of the workspace, an
``EvaluationSource``) and free of Qt, so that a test reads it without a window. The view
(``qt_evaluate``, ``qt_evaluate_results``) puts these cells on its widgets.

The tables that list systems side by side (usage, accuracy per category) have a column
per system, named as under the chart's bars (``tick_name``), and a row per worker and
role or per category: a pool's many workers and a suite's many categories then grow the
table down, where it scrolls, never sideways.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from workbench.core.evaluate import Report, SystemResult
from workbench.core.jobs.evaluate import EvaluationSource, StoredEvaluation, evaluation_source
from workbench.core.printable import shared_prefix, shown_path
from workbench.core.records import ROLES
from workbench.core.spend import dollars
from workbench.core.tasks.suites import list_suites
from workbench.core.workspace import Workspace
from workbench.gui.runs_model import CellText, started_text
from workbench.gui.words import plural, pool_words, role_name

SPLITS = ("test", "validation", "train")
# the accuracy table: short headers with their unit (two lines where one would make the
# table wider than its tab at 1280 px), what each means in its tooltip
COLUMNS = (
    "System",
    "Accuracy",
    "95% interval",
    "Turns\nper question",
    "$ per question",
    "Tokens\nper question",
)
COLUMN_TIPS = (
    "What answered: the trained coordinator, one worker alone, random routing or the "
    "oracle (the best any worker could do)",
    "The share of the questions answered right, from 0 to 1",
    "The accuracy's 95% confidence interval (Wilson): the true accuracy lies between these "
    "two values with 95% confidence",
    "The average number of turns (worker calls) per question",
    "The average cost of one question, in dollars",
    "The average number of tokens (in and out) per question",
)
COST_COLUMN = 4
# the stored evaluations' list
EVALUATION_COLUMNS = ("Coordinator", "Accuracy", "When")
EVALUATION_TIPS = {
    "Coordinator": "What was evaluated: the trained run (or coordinator file) by its name",
    "Accuracy": "The coordinator's share of the questions answered right",
    "When": "When the evaluation was made (on this page or with trinity-workbench eval)",
}


def result_cells(system: SystemResult) -> tuple[str, ...]:
    """One row of the accuracy table, as shown: a single worker as its check box names it
    (``baseline_words``; the whole id is the cell's tooltip). The cost column's header says
    when its dollars are simulated (``cost_header``)."""
    return (
        baseline_words(system.name),
        f"{system.accuracy:.3f}",
        f"{system.ci_low:.3f}–{system.ci_high:.3f}",
        f"{system.avg_turns:.2f}",
        dollars(system.avg_cost, "", 6),
        f"{system.avg_tokens:.0f}",
    )


def cost_header(spend: str) -> str:
    """The cost column's header: its unit, and on a second line what kind of dollars they
    are when not real (``Report.spend``: "simulated", "recorded", ...)."""
    return COLUMNS[COST_COLUMN] + (f"\n({spend})" if spend else "")


def cost_tip(spend: str) -> str:
    return COLUMN_TIPS[COST_COLUMN] + (f" ({spend}: not money spent)" if spend else "")


TICK_CHARS = 12  # a longer name under a bar is written on two or more lines


def tick_name(system: str, chars: int = TICK_CHARS) -> str:
    """A system's name under its bar and over its column: a single worker by its own name
    (``mathlete`` for ``single:sandbox:mathlete``, ``gpt-4`` for
    ``single:recorded:champ/gpt-4``), a name longer than ``chars`` wrapped after its
    hyphens or spaces (``gpt-4-turbo-`` over ``5shot``), a chart's bars as narrow as their
    spacing asks; the accuracy table has each whole."""
    name = system.rsplit(":", 1)[-1] if system.startswith("single:") else system
    name = name.rsplit("/", 1)[-1]  # a recorded pool's worker: by its model
    lines: list[str] = []
    for piece in re.findall(r"[^\s-]*-|[^\s-]+\s*", name):  # break after a hyphen or space
        if lines and len(lines[-1]) + len(piece.rstrip()) <= chars:
            lines[-1] += piece
        else:
            lines.append(piece)
    return "\n".join(line.rstrip() for line in lines) or name


def baseline_words(name: str) -> str:
    """A baseline as its check box names it: ``sandbox:mathlete alone`` for a single
    worker (``single:sandbox:mathlete``), a recorded pool's worker by its own name
    (``Meta-Llama-3_1-8B-Instruct alone`` for ``single:recorded:POOL/Meta-Llama-3_1-8B-Instruct``:
    the pool's name made the page wider than a laptop's screen), the others by their own
    names. The check box's tooltip holds the whole id."""
    if not name.startswith("single:"):
        return name
    worker = name.removeprefix("single:")
    if worker.startswith("recorded:"):
        worker = worker.rpartition("/")[2]
    return f"{worker} alone"


def usage_keys(report: Report, pool: Sequence[str]) -> list[str]:
    """Every "worker/role" some system used, in pool order and role order (a worker
    outside ``pool`` after, by name)."""
    used = {key for s in report.systems for key in s.usage}
    workers = list(pool) + sorted({k.rpartition("/")[0] for k in used} - set(pool))
    return [f"{w}/{r}" for w in workers for r in ROLES if f"{w}/{r}" in used]


def usage_rows(report: Report, pool: Sequence[str]) -> list[list[CellText]]:
    """The usage table: a row per worker and role ("sandbox:coder as Worker"; the workers'
    ``usage_prefix`` left out, said in ``usage_head``), a column per system (its turns
    there)."""
    prefix = usage_prefix(report, pool)
    rows = []
    for key in usage_keys(report, pool):
        worker, _, role = key.rpartition("/")
        text = f"{worker.removeprefix(prefix)} as {role_name(role)}"
        head = CellText(text, tooltip=f"{worker} as {role_name(role)} (the {role} role)")
        counts = [s.usage.get(key, 0) for s in report.systems]
        rows.append([head, *(CellText(str(n), n, f"{n} turns") for n in counts)])
    return rows


def usage_prefix(report: Report, pool: Sequence[str]) -> str:
    """The prefix every worker's id in the usage table shares (a recorded pool's
    ``recorded:NAME/``; empty when they share none)."""
    return shared_prefix([k.rpartition("/")[0] for k in usage_keys(report, pool)])


def usage_head(report: Report, pool: Sequence[str]) -> str:
    """The usage table's first header: "Worker and role", and under it the workers'
    ``usage_prefix`` when they share one."""
    prefix = usage_prefix(report, pool)
    return "Worker and role" + (f"\n({prefix}…)" if prefix else "")


def category_rows(report: Report) -> list[list[CellText]]:
    """The accuracy per category: a row per category and one for all, a column per
    system (its accuracy there). The number of questions is said once beside the
    category ("biology (36)") where every system answered as many, else in each cell."""
    rows = []
    for group in [*report.groups, "all"]:
        results = [
            system if group == "all" else system.by_group.get(group) for system in report.systems
        ]
        counts = {r.n for r in results if r is not None}
        once = len(counts) == 1
        cells = [CellText(f"{group} ({min(counts)})" if once else group)]
        for system, result in zip(report.systems, results, strict=True):
            if result is None:
                cells.append(CellText("", -1.0, "no question of this category"))
                continue
            cells.append(
                CellText(
                    f"{result.accuracy:.3f}" + ("" if once else f" ({result.n})"),
                    result.accuracy,
                    f"{system.name} on {group}: {result.accuracy:.3f} of {result.n} "
                    f"question{'' if result.n == 1 else 's'} right "
                    f"(95%: {result.ci_low:.3f}–{result.ci_high:.3f})",
                )
            )
        rows.append(cells)
    return rows


def system_headers(report: Report) -> list[tuple[str, str]]:
    """Each system's column header (``tick_name``) and tooltip (its whole name)."""
    return [(tick_name(s.name), f"{s.name} ({s.kind})") for s in report.systems]


def evaluation_cells(evaluation: StoredEvaluation, now: float | None = None) -> list[CellText]:
    """A stored evaluation's row of the list (``EVALUATION_COLUMNS``)."""
    accuracy = (
        CellText(f"{evaluation.accuracy:.3f}", evaluation.accuracy)
        if evaluation.accuracy is not None
        else CellText(evaluation.status, -1.0, f"it {evaluation.status}: no report")
    )
    return [
        CellText(
            evaluation.evaluated,
            tooltip=f"{evaluation.title}\non {evaluation.suite}, {evaluation.split} split\n"
            f"evaluation run {evaluation.id}",
        ),
        accuracy,
        CellText(started_text(evaluation.created_at, now), evaluation.created_at),
    ]


def source_words(source: EvaluationSource) -> str:
    """What a coordinator was trained on, in a line under its choice (a backbone that is a
    file of this computer by its name, ``core.printable.shown_path``; a pool of more than
    three workers by their count, as the baselines below list each one)."""
    c = source.config
    return (
        f"pool {pool_words(source.pool, listed=3)} · "
        f"backbone {shown_path(source.backbone_model, short=True)} · "
        f"suite {c.tasks.suite} (test {c.tasks.test or 'all'}) · "
        f"up to {plural(c.protocol.max_turns, 'turn')}"
    )


def read_source(workspace: Workspace, data: str) -> tuple[EvaluationSource, list[str]]:
    """The evaluation source ``data`` names ("run:ID" or "file:PATH") and the workspace's
    suite names: the disk reads of choosing a source, run in a background job."""
    kind, _, value = data.partition(":")
    source = evaluation_source(workspace, **{"run" if kind == "run" else "coordinator_file": value})
    return source, [info.name for info in list_suites(workspace)]
