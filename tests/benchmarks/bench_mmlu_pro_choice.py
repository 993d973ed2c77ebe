"""The choice grader against MMLU-Pro's own answer extraction, on the published outputs.

    python tests/benchmarks/bench_mmlu_pro_choice.py [--data DIR] [--step N] \
        [--out docs/results/data/mmlu-pro-choice.json]

Every record of the official per-model files (``../shared/data/mmlu-pro/*.zip`` beside the
repository: one JSON list per zip) is read as a choice task (its options, its answer
letter) and its chain of thought (``generated_text``, or ``model_outputs``) graded by
``extract_choice``. Each letter we read is compared with the file's ``pred`` (the letter
MMLU-Pro's extraction read, or null) and with MMLU-Pro's three patterns re-run on the same
text (the first ``answer is \\(?([A-J])\\)?``, then ``.*[aA]nswer:\\s*([A-J])``, then the
last lone capital A-J), which separates "our rule differs" from "the file's pred is not
read from this text". Every disagreement where ``pred`` is a letter gets a kind (``kind``
below) and an example; the kinds that are defects of ``pred`` (a stand-in letter, a
pronoun read as an option, a letter of an unanswered text) are counted apart.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from workbench.core.tasks.graders import extract_choice
from workbench.core.tasks.model import Task

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write_results  # noqa: E402  (at import: it notes the commit the run starts on)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "mmlu-pro"

_FIRST = re.compile(r"answer is \(?([A-J])\)?")
_SECOND = re.compile(r".*[aA]nswer:\s*([A-J])")
_LAST = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)

# kinds that are defects of the file's pred, not a reading of a stated answer
PRED_DEFECTS = (
    "stand-in letter",
    "pronoun or article read as an option",
    "last lone letter of a text that states no answer",
    "pred not read from this text",
)


def mmlu_pro_extraction(text: str) -> tuple[str | None, str]:
    """MMLU-Pro's own extraction (its three patterns, in order), and which one read it."""
    for name, pattern in (("first", _FIRST), ("second", _SECOND)):
        match = pattern.search(text)
        if match:
            return match.group(1), name
    match = _LAST.search(text)
    return (match.group(0), "last") if match else (None, "none")


def records(path: Path) -> Iterator[tuple[dict, str, tuple[str, ...]]]:
    """(record, response, options) of every record in one official zip."""
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read(archive.namelist()[0]))
    for record in data:
        if not isinstance(record, dict):
            continue
        text = record.get("generated_text") or record.get("model_outputs") or ""
        options = record.get("options") or []
        if isinstance(options, str):
            options = ast.literal_eval(options)
        yield record, str(text), tuple(str(o) for o in options)


def model_of(path: Path) -> str:
    return path.name.removeprefix("model_outputs_").removesuffix("_5shots.zip")


def kind(text: str, pred: str, ours: str | None, how: str) -> str:
    """Why our letter differs from ``pred`` (a letter)."""
    if not re.search(rf"\b{pred}\b", text):
        return "stand-in letter"
    rerun, by = mmlu_pro_extraction(text)
    if rerun != pred:
        return "pred not read from this text"
    if how.startswith("hedge"):
        return "hedge"
    if how.startswith("several answers"):
        return "several stated answers"
    if by == "last":
        match = _LAST.search(text)
        assert match is not None
        if re.match(r"[AI]\s+[a-z]", text[match.start() : match.start() + 12]):
            return "pronoun or article read as an option"
        if ours is None:
            return "last lone letter of a text that states no answer"
    if ours is None:
        return "no letter read: " + (how or "none found")
    return "another letter read: " + how


def excerpt(text: str, pred: str) -> str:
    """The part of ``text`` that shows the disagreement: around its last stated answer,
    else its end."""
    marks = list(re.finditer(r"answer is|[aA]nswer:", text))
    at = marks[-1].start() if marks else len(text)
    return " ".join(text[max(0, at - 160) : at + 140].split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the official zips")
    parser.add_argument("--step", type=int, default=1, help="grade every N-th record")
    parser.add_argument("--out", type=Path, help="write the results file here")
    args = parser.parse_args()
    zips = sorted(args.data.glob("model_outputs_*_5shots.zip"))
    if not zips:
        raise SystemExit(f"no model_outputs_*_5shots.zip in {args.data}")
    figures: dict = {}
    examples: dict[str, dict] = {}
    totals: Counter = Counter()
    kinds_all: Counter = Counter()
    models: list[dict] = []
    started = time.monotonic()
    for path in zips:
        model = model_of(path)
        count: Counter = Counter(dict.fromkeys((
            "n", "rerun_letters", "rerun_agree", "pred_null", "pred_null_ours_letter",
            "pred_null_ours_right", "pred_letters", "agree"), 0))  # fmt: skip
        kinds: Counter = Counter()
        for index, (record, text, options) in enumerate(records(path)):
            if index % args.step:
                continue
            task = Task(
                id=str(record.get("question_id")), kind="choice", prompt=str(record["question"]),
                answer=str(record["answer"]), choices=options,
            )  # fmt: skip
            ours, how = extract_choice(text, task)
            pred = record.get("pred")
            rerun, _ = mmlu_pro_extraction(text)
            count["n"] += 1
            count["rerun_letters"] += rerun is not None
            count["rerun_agree"] += rerun is not None and ours == rerun
            if not pred:
                count["pred_null"] += 1
                count["pred_null_ours_letter"] += ours is not None
                count["pred_null_ours_right"] += ours is not None and ours == record["answer"]
                continue
            count["pred_letters"] += 1
            if ours == pred:
                count["agree"] += 1
                continue
            why = kind(text, pred, ours, how)
            kinds[why] += 1
            examples.setdefault(why, {
                "model": model, "question_id": record.get("question_id"), "pred": pred,
                "ours": ours, "how": how, "excerpt": excerpt(text, pred),
            })  # fmt: skip
        defects = sum(kinds[k] for k in PRED_DEFECTS)
        row = {
            **count,
            "agreement": round(count["agree"] / max(1, count["pred_letters"]), 4),
            "rerun_agreement": round(count["rerun_agree"] / max(1, count["rerun_letters"]), 4),
            "pred_defects": defects,
            "agreement_without_pred_defects": round(
                count["agree"] / max(1, count["pred_letters"] - defects), 4
            ),
        }
        for key, value in row.items():
            figures[f"{model}/{key}"] = value
        models.append({"model": model, **{k: row.get(k, 0) for k in (
            "pred_letters", "agree", "agreement", "pred_defects",
            "agreement_without_pred_defects", "rerun_agreement", "pred_null",
            "pred_null_ours_letter")}})  # fmt: skip
        for key, value in kinds.items():
            figures[f"{model}/kind/{key}"] = value
        totals.update(count)
        kinds_all.update(kinds)
        print(f"{model:30s} {row['agree']}/{row['pred_letters']} = {row['agreement']:.2%} "
              f"(without pred's defects {row['agreement_without_pred_defects']:.2%}); "
              f"re-run {row['rerun_agreement']:.2%}; null pred {count['pred_null']} "
              f"(we read a letter in {count['pred_null_ours_letter']})", flush=True)  # fmt: skip
    defects = sum(kinds_all[k] for k in PRED_DEFECTS)
    overall = {
        "records": totals["n"],
        "pred_letters": totals["pred_letters"],
        "agree": totals["agree"],
        "agreement": round(totals["agree"] / totals["pred_letters"], 4),
        "pred_defects": defects,
        "agreement_without_pred_defects": round(
            totals["agree"] / (totals["pred_letters"] - defects), 4
        ),
        "rerun_agreement": round(totals["rerun_agree"] / totals["rerun_letters"], 4),
        "pred_null": totals["pred_null"],
        "pred_null_ours_letter": totals["pred_null_ours_letter"],
        "pred_null_ours_right": totals["pred_null_ours_right"],
        "grading_seconds": round(time.monotonic() - started, 1),
        "step": args.step,
    }
    figures.update({f"all/{key}": value for key, value in overall.items()})
    figures.update({f"all/kind/{key}": value for key, value in kinds_all.items()})
    print(json.dumps(overall, indent=1))
    for why, n in kinds_all.most_common():
        print(f"{n:6d}  {why}: {examples[why]['model']} q{examples[why]['question_id']} "
              f"pred {examples[why]['pred']}, ours {examples[why]['ours']}")  # fmt: skip
    if args.out:
        write_results(
            args.out, figures, models=models,
            kinds=[{"kind": k, "count": n, "pred_defect": k in PRED_DEFECTS, **examples[k]}
                   for k, n in kinds_all.most_common()],
        )  # fmt: skip


if __name__ == "__main__":
    main()
