"""MMLU-Pro's published model outputs as recorded pools: the pre-registered comparison of
the trained coordinator with every simple router (docs/results/mmlu-pro.md), the
development runs that chose the recorded-pool defaults, and what training costs with
and without kept features.

    # the plan as the results page quotes it, with each pool's questions counted in the files
    python tests/benchmarks/bench_mmlu_pro.py plan --out docs/results/data/mmlu-pro-plan.json
    # the recorded-pool defaults, chosen on small-6's development fold seed by validation
    # accuracy only (no test fold is read)
    python tests/benchmarks/bench_mmlu_pro.py dev --workspace WS --out docs/results/data/mmlu-pro-dev.json
    # the pre-registered comparison, both pools (tests/benchmarks/configs/mmlu-pro-preregistered.toml)
    python tests/benchmarks/bench_mmlu_pro.py compare --workspace WS --out docs/results/data/mmlu-pro.json \
        --reports REPORTS.json   # the whole reports, every question's reward (outside the repository)
    # its figures and tables computed again from the reports the file holds (its provenance
    # kept, the command and commit that computed them added as figures_by)
    python tests/benchmarks/bench_mmlu_pro.py figures --from REPORTS_OR_FULL_FILE --out docs/results/data/mmlu-pro.json
    # backbones compared on a sample of small-6 (the same folds, every router on each)
    python tests/benchmarks/bench_mmlu_pro.py backbones --workspace WS --sample 3000 \
        --backbone offline --backbone PATH/gemma-3-270m-q4_k_m.gguf --out docs/results/data/mmlu-pro-backbones.json
    # training wall time on a pool, with the query features kept and without
    python tests/benchmarks/bench_mmlu_pro.py timing --workspace WS --out docs/results/data/mmlu-pro-timing.json

WS is a workspace holding the pools, imported with
``trinity-workbench records import --format mmlu-pro --drop-mismatched --common-only``:

    python tests/benchmarks/bench_mmlu_pro.py import --workspace WS   # from ../shared/data/mmlu-pro/ or --data
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import ROOT, commit, write_results  # noqa: E402

from workbench.core.config import RunConfig  # noqa: E402
from workbench.core.coordinator.feature_store import FeatureStore, stored_features  # noqa: E402
from workbench.core.jobs.crossval import (  # noqa: E402
    FoldProgress,
    cross_validate,
    fold_suite,
    make_folds,
)
from workbench.core.jobs.shared import backbone_for, new_train_run, open_pool, train_plan  # noqa: E402
from workbench.core.protocol import EpisodeSettings, render_transcript  # noqa: E402
from workbench.core.store import Store  # noqa: E402
from workbench.core.tasks.suites import load_suite  # noqa: E402
from workbench.core.training.table import build_routing_table  # noqa: E402
from workbench.core.training.trainer import Trainer  # noqa: E402
from workbench.core.workspace import Workspace  # noqa: E402

PLAN = ROOT / "tests" / "benchmarks" / "configs" / "mmlu-pro-preregistered.toml"

# the settings the development runs compare (optimizer keys, generations)
DEV_SETTINGS: dict[str, dict[str, Any]] = {
    "paper: 16 tasks, 60 generations": {"optimizer": {"rollouts": 16}, "generations": 60},
    "1,024 tasks, 300 generations": {"optimizer": {"rollouts": 1024}, "generations": 300},
    "every task, 60 generations": {"optimizer": {"rollouts": 0}, "generations": 60},
    "every task, 200 generations": {"optimizer": {"rollouts": 0}, "generations": 200},
    "every task, projection 16, 60 generations": {
        "optimizer": {"rollouts": 0, "search_basis": "projection", "search_rank": 16},
        "generations": 60,
    },
    "every task, projection 16, 200 generations": {
        "optimizer": {"rollouts": 0, "search_basis": "projection", "search_rank": 16},
        "generations": 200,
    },
    "every task, projection 16, sigma0 0.3, 200 generations": {
        "optimizer": {
            "rollouts": 0,
            "search_basis": "projection",
            "search_rank": 16,
            "sigma0": 0.3,
        },
        "generations": 200,
    },
    "every task, projection 32, sigma0 0.3, 200 generations": {
        "optimizer": {
            "rollouts": 0,
            "search_basis": "projection",
            "search_rank": 32,
            "sigma0": 0.3,
        },
        "generations": 200,
    },
}


DATA = ROOT.parent / "shared" / "data" / "mmlu-pro"


def plan() -> dict[str, Any]:
    return tomllib.loads(PLAN.read_text(encoding="utf-8"))


def question_counts(data: Path) -> dict[str, Any]:
    """Each plan pool's questions (those every model of it answered) and each model's
    answer records, read from the official files in ``data``."""
    import zipfile

    ids: dict[str, set[int]] = {}
    for path in sorted(data.glob("model_outputs_*_5shots.zip")):
        model = path.name[len("model_outputs_") : -len("_5shots.zip")]
        with zipfile.ZipFile(path) as archive:
            (inner,) = [n for n in archive.namelist() if n.endswith(".json")]
            records = json.loads(archive.read(inner))
        ids[model] = {r["question_id"] for r in records if isinstance(r, dict)}
    counts: dict[str, Any] = {f"records/{m}": len(v) for m, v in ids.items()}
    for name, pool in plan()["pools"].items():
        counts[f"questions/{name}"] = len(set.intersection(*(ids[m] for m in pool["models"])))
        counts[f"models/{name}"] = len(pool["models"])
    return counts


def pool_config(pool: str, **sections: dict[str, Any]) -> RunConfig:
    """The run config of a pre-registered pool (its suite and recorded pool are both
    named ``pool``): the Worker role alone, one turn, the offline backbone."""
    data: dict[str, Any] = {
        "run": {"name": f"mmlu-pro {pool}", "seed": 0},
        "backbone": {"model": "offline"},
        "pool": {"workers": [f"recorded:{pool}"]},
        "tasks": {"suite": pool},
        "protocol": {"roles": ["worker"], "max_turns": 1, "temperature": 0.0},
        "cache": {"policy": "off"},
    }
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return RunConfig.from_dict(data)


def dev(workspace: Workspace, pool: str, fold_seed: int, folds: int) -> dict[str, Any]:
    """Each setting of ``DEV_SETTINGS`` trained on every fold of ``fold_seed``; what is
    read is the validation share only: the last generation's validation accuracy of the
    search's mean (unbiased for the run's final head) and the best one (what a run keeps)."""
    base = pool_config(pool)
    suite = load_suite(pool, workspace)
    backbone = backbone_for(base)
    out: dict[str, Any] = {}
    with Store.open(workspace) as store, FeatureStore(workspace.features_path) as kept:
        session = open_pool(base, store, workspace)
        settings = EpisodeSettings(suite=pool, max_turns=1, temperature=0.0, roles=("worker",))
        table = session.run(build_routing_table(session.pool, suite.tasks, settings))
        started = time.perf_counter()
        stored_features(backbone, kept, [render_transcript(t, ()) for t in suite.tasks])
        print(f"features ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        dealt = make_folds(suite.tasks, folds, fold_seed)
        for name, setting in DEV_SETTINGS.items():
            runs = []
            for index in range(folds):
                cfg = base.replace(
                    optimizer={"recorded_defaults": False, **setting["optimizer"]},
                    budget={"generations": setting["generations"]},
                    tasks={"train": 0, "validation": 0, "test": 0},
                    run={"name": f"dev {name} fold {index + 1}"},
                )
                trainer = Trainer(
                    train_plan(cfg, suite.name, session.pool),
                    store,
                    suite=fold_suite(suite, dealt, index, fold_seed),
                    pool=session.pool,
                    backbone=backbone,
                    feature_store=kept,
                    table=table,
                )
                trainer.attach(new_train_run(store, cfg))
                t0 = time.perf_counter()
                session.run(trainer.run_async())
                runs.append(
                    {
                        "last_validation": trainer.state.last_validation,
                        "best_validation": trainer.state.best_validation,
                        "seconds": time.perf_counter() - t0,
                        "search_size": trainer.n_params,
                    }
                )
            row = {
                "settings": setting,
                "folds": runs,
                "last_validation": float(np.mean([r["last_validation"] for r in runs])),
                "best_validation": float(np.mean([r["best_validation"] for r in runs])),
                "seconds": float(np.mean([r["seconds"] for r in runs])),
            }
            out[name] = row
            print(
                f"{name:58s} last {row['last_validation']:.4f} best {row['best_validation']:.4f}"
                f" ({row['seconds']:.0f} s a fold)",
                file=sys.stderr,
                flush=True,
            )
    return out


CANDIDATE_ROUTERS = ("best model per category", "logistic regression", "kNN", "imitation")


def pool_figures(name: str, report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the results page quotes of one pool's report: per system its accuracy and
    interval, its paired difference against the best single model with its interval,
    wins and losses, and its share of the oracle's gap; the best simple router (the best
    learned method other than the coordinators, chosen after the runs, as pre-registered)
    and the coordinator's paired difference against it; and the page's table."""
    from workbench.core.stats import paired

    systems = {s["name"]: s for s in report["systems"]}
    versus = {p["system"]: p for p in report["paired"]}
    best = report["best_single"]
    figures: dict[str, Any] = {f"{name}/best_single": best.split("/")[-1]}
    rows = []
    for system_name, s in systems.items():
        key = f"{name}/{system_name}"
        figures[f"{key}/accuracy"] = s["accuracy"]
        figures[f"{key}/ci_low"] = s["ci_low"]
        figures[f"{key}/ci_high"] = s["ci_high"]
        figures[f"{key}/gap_share"] = s["gap_share"]
        figures[f"{key}/calls"] = s["calls"]
        p = versus.get(system_name)
        if p is not None:
            for field in ("difference", "ci_low", "ci_high", "wins", "losses", "p_value"):
                figures[f"{key}/vs_best/{field}"] = p[field]
        rows.append(
            [
                system_name.replace("single:recorded:", "").split("/")[-1]
                if s["kind"] == "single"
                else system_name,
                f"{s['accuracy']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]",
                "(reference)"
                if p is None
                else f"{100 * p['difference']:+.1f} [{100 * p['ci_low']:+.1f}, "
                f"{100 * p['ci_high']:+.1f}]",
                "" if s["gap_share"] is None else f"{100 * s['gap_share']:.0f}%",
                f"{s['calls']:g}",
            ]
        )
    router = max(CANDIDATE_ROUTERS, key=lambda r: systems[r]["accuracy"])
    figures[f"{name}/best_router"] = router
    rewards = report["rewards"]
    ids = sorted(rewards["coordinator"])
    for coordinator in ("coordinator", "coordinator (paper settings)"):
        if coordinator not in rewards:
            continue
        p = paired(coordinator, router, rewards[coordinator], rewards[router], ids, report["seed"])
        for field in ("difference", "ci_low", "ci_high", "wins", "losses", "p_value"):
            figures[f"{name}/{coordinator}/vs_router/{field}"] = getattr(p, field)
    shown = ["coordinator", "coordinator (paper settings)", router]
    by_category = {
        "columns": ["category", "questions"]
        + [f"{n}: points vs {best.split('/')[-1]} (won / lost)" for n in shown if n in systems],
        "rows": [],
    }
    for group, pairs in sorted(report["paired_by_category"].items()):
        of = {p["system"]: p for p in pairs}
        row: list[Any] = [group, of["coordinator"]["n"]]
        for n in shown:
            if n in of:
                p = of[n]
                row.append(f"{100 * p['difference']:+.1f} ({p['wins']} / {p['losses']})")
                figures[f"{name}/by_category/{group}/{n}/difference"] = p["difference"]
                figures[f"{name}/by_category/{group}/{n}/wins"] = p["wins"]
                figures[f"{name}/by_category/{group}/{n}/losses"] = p["losses"]
        figures[f"{name}/by_category/{group}/n"] = of["coordinator"]["n"]
        by_category["rows"].append(row)
    table = {
        "columns": [
            "system",
            "accuracy [95% CI]",
            f"points vs {best.split('/')[-1]} [95% CI]",
            "share of the oracle's gap",
            "calls a question",
        ],
        "rows": rows,
    }

    def short(worker: str) -> str:
        return worker.split("/")[-1]

    routed = report["routing"]
    where = {
        "columns": ["category", "coordinator sends", "best model per category"],
        "rows": [],
    }
    for group in sorted(routed.get("coordinator", {})):
        counts = routed["coordinator"][group]
        total = sum(counts.values())
        top = sorted(counts.items(), key=lambda kv: -kv[1])[:2]
        per_category = routed.get("best model per category", {}).get(group, {})
        chosen = max(per_category.items(), key=lambda kv: kv[1])[0] if per_category else ""
        where["rows"].append(
            [
                group,
                ", ".join(f"{short(w)} {100 * n / total:.0f}%" for w, n in top),
                short(chosen),
            ]
        )
    curve = training_curve(report.get("curves", []))
    for row in curve["rows"]:
        figures[f"{name}/curve/{row[0]}/validation"] = row[3]
    return figures, {
        "systems": table,
        "by_category": by_category,
        "routing": where,
        "curve": curve,
    }


CURVE_AT = (1, 2, 5, 10, 20, 30, 40, 50, 60)


def training_curve(curves: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The coordinator's training, generation by generation, averaged over the first fold
    seed's folds: the best and the mean fitness of a generation's candidates (accuracy on
    the training split) and the validation accuracy of the search's mean."""
    rows = []
    for g in CURVE_AT:
        at = [c for c in curves if len(c["best"]) >= g]
        if not at:
            continue
        values = [[c[key][g - 1] for c in at] for key in ("best", "mean", "validation")]
        rows.append(
            [g]
            + [
                None if any(v is None for v in vs) else round(float(np.mean(vs)), 4)
                for vs in values
            ]
        )
    return {
        "columns": [
            "generation",
            "best candidate, training split",
            "candidates' mean, training split",
            "validation",
        ],
        "rows": rows,
    }


def refigure(source: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The figures and tables of a compare results file, computed again from the reports it
    holds (``pools``) with this module's ``pool_figures``; and its provenance, kept."""
    data = json.loads(source.read_text(encoding="utf-8"))
    if any("rewards" not in r for r in data["pools"].values()):
        raise SystemExit(
            f"{source}: its reports hold no per-question rewards; give the file "
            "compare's --reports wrote"
        )
    figures: dict[str, Any] = {}
    tables: dict[str, Any] = {}
    for pool, report in data["pools"].items():
        more, pool_tables = pool_figures(pool, report)
        tables.update({f"{pool}/{k}": v for k, v in pool_tables.items()})
        figures.update(more)
        figures[f"{pool}/wall_seconds"] = report["wall_seconds"]
        figures[f"{pool}/train_seconds"] = report["train_seconds"]
    kept = {k: data[k] for k in ("command", "commit", "machine", "date", "load")}
    return figures, tables, {**kept, "pools": slim(data["pools"]), "plan": data["plan"]}


def compare(workspace: Workspace, pools: Sequence[str], config_sections: dict[str, Any]) -> dict:
    """The pre-registered comparison: every pool, the plan's folds and fold seeds, the
    coordinator at the recorded-pool defaults and at the paper's settings."""
    protocol = plan()["protocol"]
    seeds = protocol["fold_seeds"]
    reports = {}
    for pool in pools:
        started = time.perf_counter()

        def said(e: FoldProgress, pool: str = pool) -> None:
            if e.stage not in ("table", "features") or e.done == e.total:
                print(
                    f"{pool}: {e.stage} repeat {e.repeat}/{e.repeats} fold {e.fold}/{e.folds}",
                    file=sys.stderr,
                    flush=True,
                )

        report = cross_validate(
            pool_config(pool, **config_sections),
            workspace,
            folds=protocol["folds"],
            seed=seeds[0],
            repeats=len(seeds),
            paper_settings=True,
            progress=said,
        )
        print(report.table())
        data = json.loads(report.to_json())
        data["wall_seconds"] = time.perf_counter() - started
        reports[pool] = data
    return reports


def timing(workspace: Workspace, pool: str, sample: int) -> dict[str, Any]:
    """One training run on a pool's first fold (recorded-pool defaults), timed three
    ways: its features computed now (a sample of the pool's questions, each category's
    share, into an empty feature store), the same run with them kept, and the full pool
    with every feature kept. The per-question feature cost is the first's."""
    import random
    import tempfile

    base = pool_config(pool)
    suite = load_suite(pool, workspace)
    rng = random.Random(0)
    picked = sorted(rng.sample(range(len(suite.tasks)), min(sample, len(suite.tasks))))
    small = dataclasses.replace(suite, tasks=tuple(suite.tasks[i] for i in picked))
    backbone = backbone_for(base)
    out: dict[str, Any] = {"sample": len(small.tasks), "questions": len(suite.tasks)}
    with Store.open(workspace) as store, tempfile.TemporaryDirectory() as scratch:
        session = open_pool(base, store, workspace)

        def run(target: Any, kept: FeatureStore) -> tuple[float, int]:
            folds = make_folds(target.tasks, 5, 0)
            cfg = base.replace(tasks={"train": 0, "validation": 0, "test": 0})
            trainer = Trainer(
                train_plan(cfg, target.name, session.pool),
                store,
                suite=fold_suite(target, folds, 0, 0),
                pool=session.pool,
                backbone=backbone,
                feature_store=kept,
            )
            trainer.attach(new_train_run(store, cfg))
            forwards = backbone.stats.forwards
            t0 = time.perf_counter()
            session.run(trainer.run_async())
            return time.perf_counter() - t0, backbone.stats.forwards - forwards

        with FeatureStore(Path(scratch) / "features.sqlite3") as empty:
            out["sample_cold_seconds"], out["sample_cold_forwards"] = run(small, empty)
            out["sample_kept_seconds"], out["sample_kept_forwards"] = run(small, empty)
        with FeatureStore(workspace.features_path) as kept:
            out["pool_kept_seconds"], out["pool_kept_forwards"] = run(suite, kept)
    # the sample's training and validation tasks are the ones whose features were computed
    out["seconds_per_feature"] = (out["sample_cold_seconds"] - out["sample_kept_seconds"]) / max(
        1, out["sample_cold_forwards"]
    )
    for key, value in out.items():
        print(f"{key:24s} {value:.3f}" if isinstance(value, float) else f"{key:24s} {value}")
    return out


def import_pools(workspace: Workspace, data: Path, pools: Sequence[str]) -> dict[str, Any]:
    """Each plan pool imported as its suite and recorded pool of the same name, on the
    questions every model answered with the same text, options and answer
    (``--drop-mismatched --common-only``): the pre-registered question sets."""
    from workbench.core.importers.build import ImportOptions
    from workbench.core.importers.mmlu_pro import import_mmlu_pro

    counts: dict[str, Any] = {}
    for name in pools:
        models = plan()["pools"][name]["models"]
        started = time.perf_counter()
        info = import_mmlu_pro(
            workspace,
            [(None, data / f"model_outputs_{m}_5shots.zip") for m in models],
            name,
            ImportOptions(drop_mismatched=True, common_only=True, replace=True),
        )
        counts[f"imported/{name}"] = info.workers[0].suite_tasks
        counts[f"import_seconds/{name}"] = time.perf_counter() - started
        print(f"{name}: {info.workers[0].suite_tasks} questions", file=sys.stderr)
    return counts


def backbones(
    workspace: Workspace, data: Path, models: Sequence[str], sample: int
) -> dict[str, Any]:
    """Backbones compared on one sample of small-6 (``sample`` questions every model
    answered alike, each category's share): the same folds, the coordinator at the
    recorded-pool setting and every router on each backbone's features; the features'
    cost a question, computed now (kept ones are read, so a re-run only trains)."""
    from workbench.core.importers.build import ImportOptions
    from workbench.core.importers.mmlu_pro import import_mmlu_pro

    name = f"small-6-{sample}"
    import_mmlu_pro(
        workspace,
        [
            (None, data / f"model_outputs_{m}_5shots.zip")
            for m in plan()["pools"]["small-6"]["models"]
        ],
        name,
        ImportOptions(drop_mismatched=True, common_only=True, sample=sample, replace=True),
    )
    out: dict[str, Any] = {"sample": sample}
    for model in models:
        config = pool_config(name, backbone={"model": model})
        backbone = backbone_for(config)
        texts = [render_transcript(t, ()) for t in load_suite(name, workspace).tasks]
        with FeatureStore(workspace.features_path) as kept:
            before = backbone.stats.forwards
            t0 = time.perf_counter()
            stored_features(backbone, kept, texts)
            computed = backbone.stats.forwards - before
        key = Path(model).name if model != "offline" else "offline"
        out[f"{key}/hidden_size"] = backbone.hidden_size
        out[f"{key}/features_computed"] = computed
        if computed:
            out[f"{key}/seconds_per_feature"] = (time.perf_counter() - t0) / computed
        report = cross_validate(config, workspace, folds=5, seed=0, backbone=backbone)
        print(report.table())
        data_ = json.loads(report.to_json())
        figures, _ = pool_figures(key, data_)
        out.update(figures)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "mode", choices=("plan", "import", "dev", "compare", "figures", "timing", "backbones")
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="figures: a compare results file whose figures to compute again",
    )
    parser.add_argument(
        "--backbone",
        action="append",
        default=None,
        help="backbones: a model source to compare (repeat; default: offline)",
    )
    parser.add_argument("--sample", type=int, default=500, help="timing: questions computed cold")
    parser.add_argument("--data", type=Path, default=DATA, help="the official zips' folder")
    parser.add_argument("--workspace", help="holds the pools (see the docstring)")
    parser.add_argument("--pools", nargs="*", default=None, help="default: the plan's pools")
    parser.add_argument("--out", help="the results file to write")
    parser.add_argument(
        "--reports",
        help="compare: also write the pools' whole reports here (every question's reward)",
    )
    args = parser.parse_args(argv)
    the_plan = plan()
    if args.mode == "plan":
        import tempfile

        p = the_plan["protocol"]
        with tempfile.TemporaryDirectory() as scratch:
            imported = import_pools(Workspace.open(scratch), args.data, list(the_plan["pools"]))
        figures = {
            **question_counts(args.data),
            **{k: v for k, v in imported.items() if k.startswith("imported/")},
            "folds": p["folds"],
            "fold_seeds": p["fold_seeds"],
            "validation_share": p["validation_share"],
            "bootstrap_resamples": p["bootstrap_resamples"],
            "dev_fold_seed": the_plan["development"]["fold_seed"],
        }
        if args.out:
            write_results(args.out, figures, plan=the_plan)
        return 0
    if args.mode == "figures":
        if not (args.source and args.out):
            parser.error("figures needs --from and --out")
        figures, tables, kept = refigure(args.source)
        data = {**kept, "figures": figures, **tables}
        data["figures_by"] = {"command": " ".join(sys.argv), "commit": commit()}
        Path(args.out).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not args.workspace:
        parser.error(f"{args.mode} needs --workspace")
    workspace = Workspace.open(args.workspace)
    if args.mode == "import":
        import_pools(workspace, args.data, args.pools or list(the_plan["pools"]))
        return 0
    if args.mode == "dev":
        d = the_plan["development"]
        rows = dev(workspace, args.pools[0] if args.pools else d["pool"], d["fold_seed"], 5)
        best = max(rows, key=lambda name: rows[name]["last_validation"])
        figures = {
            f"{name}/{key}": row[key]
            for name, row in rows.items()
            for key in ("last_validation", "best_validation", "seconds")
        }
        figures["chosen"] = best
        if args.out:
            write_results(args.out, figures, settings=rows)
    elif args.mode == "backbones":
        figures = backbones(workspace, args.data, args.backbone or ["offline"], args.sample)
        if args.out:
            write_results(args.out, figures)
    elif args.mode == "timing":
        figures = timing(workspace, args.pools[0] if args.pools else "small-6", args.sample)
        if args.out:
            write_results(args.out, figures)
    else:
        pools = args.pools or list(the_plan["pools"])
        reports = compare(workspace, pools, {})
        figures: dict[str, Any] = {}
        tables: dict[str, Any] = {}
        for pool, report in reports.items():
            more, pool_tables = pool_figures(pool, report)
            tables.update({f"{pool}/{k}": v for k, v in pool_tables.items()})
            figures.update(more)
            figures[f"{pool}/wall_seconds"] = report["wall_seconds"]
            figures[f"{pool}/train_seconds"] = report["train_seconds"]
        if args.reports:  # the same file with every question's reward
            write_results(args.reports, figures, **tables, pools=reports, plan=the_plan)
        if args.out:
            write_results(args.out, figures, **tables, pools=slim(reports), plan=the_plan)
    return 0


def slim(reports: dict[str, Any]) -> dict[str, Any]:
    """The pools' reports as the results file keeps them: without every question's reward
    per system (about 4 MB a pool; ``--reports`` writes them whole, which ``figures`` reads)."""
    return {pool: {k: v for k, v in r.items() if k != "rewards"} for pool, r in reports.items()}


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    raise SystemExit(main())
