"""End to end on real answers: MMLU-Pro's six small models' official files imported as a
pool (a stratified sample of questions every model answered), cross-validated with the
real offline backbone (SmolLM2-135M): the coordinator trained on the routing table beside
every simple router, each model alone scored as MMLU-Pro's own extracted letters score it,
the features kept so a second run forwards nothing, and the coordinator's test episodes
stored for Replay. A few hundred questions, a few minutes of CPU."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.mmlu_pro import SMALL_SIX, mmlu_pro_file, records
from workbench.core.config import RunConfig
from workbench.core.importers.build import ImportOptions
from workbench.core.importers.mmlu_pro import import_mmlu_pro
from workbench.core.jobs.crossval import cross_validate
from workbench.core.store import Store
from workbench.core.tasks.suites import load_suite
from workbench.core.workspace import Workspace

SAMPLE = 280


@pytest.fixture()
def small_six(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    info = import_mmlu_pro(
        ws,
        [(None, mmlu_pro_file(m)) for m in SMALL_SIX],
        "small-6",
        ImportOptions(drop_mismatched=True, common_only=True, sample=SAMPLE),
    )
    assert len(info.workers) == 6
    return ws


def _config(generations: int) -> RunConfig:
    return RunConfig.from_dict(
        {
            "run": {"name": "mmlu-pro sample", "seed": 0},
            "pool": {"workers": ["recorded:small-6"]},
            "tasks": {"suite": "small-6"},
            "protocol": {"roles": ["worker"], "max_turns": 1, "temperature": 0.0},
            "budget": {"generations": generations},
            "cache": {"policy": "off"},
        }
    )


def test_the_sample_is_each_categorys_share_of_questions_every_model_answered(small_six):
    suite = load_suite("small-6", small_six)
    assert len(suite.tasks) == SAMPLE
    answered = [
        {f"mmlu-pro-{r['question_id']}" for r in records(m) if r.get("generated_text")}
        for m in SMALL_SIX
    ]
    assert all(all(t.id in ids for ids in answered) for t in suite.tasks)
    categories = {t.category for t in suite.tasks}
    assert len(categories) == 14  # every category keeps its share


def test_a_cross_validated_comparison_on_real_answers(small_six, offline_backbone):
    report = cross_validate(
        _config(generations=8), small_six, folds=3, seed=0, backbone=offline_backbone
    )
    names = [s.name for s in report.systems]
    for name in (
        "coordinator",
        "best model per category",
        "logistic regression",
        "kNN",
        "imitation",
        "random",
        "majority vote",
        "recorded oracle",
    ):
        assert name in names
    assert sum(s.kind == "single" for s in report.systems) == 6
    assert report.system("majority vote").calls == 6
    oracle = report.system("recorded oracle").accuracy
    assert all(s.accuracy <= oracle for s in report.systems)
    # each model alone, graded by the workbench, against MMLU-Pro's own extracted letters
    # on the same questions (they differ only where the two extractions read differently)
    tasks = {t.id: t for t in load_suite("small-6", small_six).tasks}
    for model in SMALL_SIX:
        pred = {f"mmlu-pro-{r['question_id']}": r["pred"] == r["answer"] for r in records(model)}
        theirs = np.mean([pred[t] for t in tasks])
        ours = report.system(f"single:recorded:small-6/{model}").accuracy
        assert abs(ours - theirs) < 0.05, (model, ours, theirs)
    with Store.open(small_six) as store:
        episodes = [e for r in report.evaluations for e in store.list_episodes(r)]
    assert sorted(e.task_id for e in episodes) == sorted(tasks)
    # every query's feature was kept: a second cross-validation forwards nothing
    forwards = offline_backbone.stats.forwards
    again = cross_validate(
        _config(generations=2), small_six, folds=3, seed=1, backbone=offline_backbone
    )
    assert offline_backbone.stats.forwards == forwards
    assert again.system("recorded oracle").accuracy == oracle
