"""The study's result (``Study``, ``StudyRow``): each optimizer's rewards over seeds as a
mean with a 95% t-interval (``workbench.core.stats.mean_ci``), as a table and as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.core.power import PowerEstimate


@dataclass(frozen=True, kw_only=True)
class StudyRow:
    optimizer: str
    validation: tuple[float, float, float]  # mean, ci_low, ci_high over seeds
    test: tuple[float, float, float]
    runs: tuple[str, ...]
    episodes: int  # training episodes per run (the shared budget)
    # test reward per category (suite, benchmark) over seeds: name -> mean, ci_low, ci_high
    test_by_group: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    tests: tuple[float, ...] = ()  # each seed's test reward


@dataclass(frozen=True, kw_only=True)
class Study:
    """Each optimizer's final validation and test reward over seeds, with the test reward of
    the references a reader needs to judge them, measured on the same test tasks and seeds
    (``references``: name -> mean, ci_low, ci_high): the best single worker, chosen per
    seed on the VALIDATION split (``best_single``: the chosen worker of each seed) and
    reported on test, and, on a simulated pool, the one-turn oracle ("oracle") and, over
    more than one turn, the multi-turn oracle."""

    rows: tuple[StudyRow, ...]
    seeds: int
    budget: dict[str, Any]
    references: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    best_single: tuple[str, ...] = ()
    # the references' test reward per category: reference -> category -> interval
    reference_groups: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)
    power: PowerEstimate | None = None  # seeds and test tasks needed for a margin
    # what a paper-faithful study (``paper=True``) set for every optimizer: "section.key" -> value
    paper_settings: dict[str, Any] = field(default_factory=dict)

    def group_rows(self) -> list[tuple[str, str, tuple[float, float, float]]]:
        """(optimizer or reference, category, test interval): one row per category and
        the total ("all"); empty when the test tasks have a single category."""
        named = [(r.optimizer, r.test_by_group, r.test) for r in self.rows]
        named += [
            (name, self.reference_groups.get(name, {}), ci) for name, ci in self.references.items()
        ]
        groups = sorted({g for _, by, _ in named for g in by})
        if len(groups) < 2:
            return []
        rows = []
        for name, by, total in named:
            rows += [(name, g, by[g]) for g in groups if g in by]
            rows.append((name, "all", total))
        return rows

    def to_dict(self) -> dict[str, Any]:
        interval = ("mean", "ci_low", "ci_high")
        return {
            "seeds": self.seeds,
            "budget": self.budget,
            "optimizers": [
                {
                    "optimizer": r.optimizer,
                    "validation": dict(zip(interval, r.validation, strict=True)),
                    "test": dict(zip(interval, r.test, strict=True)),
                    "runs": list(r.runs),
                    "episodes": r.episodes,
                    "test_by_group": {
                        g: dict(zip(interval, ci, strict=True)) for g, ci in r.test_by_group.items()
                    },
                }
                for r in self.rows
            ],
            "references": {
                name: {
                    "test": dict(zip(interval, ci, strict=True)),
                    "test_by_group": {
                        g: dict(zip(interval, c, strict=True))
                        for g, c in self.reference_groups.get(name, {}).items()
                    },
                }
                for name, ci in self.references.items()
            },
            "best_single_chosen_on_validation": list(self.best_single),
            "power": None if self.power is None else self.power.to_dict(),
            "paper": bool(self.paper_settings),
            "paper_settings": dict(self.paper_settings),
        }

    def table(self) -> str:
        lines = [f"{self.seeds} seeds each; budget {self.budget}"]
        if self.paper_settings:
            same = ", ".join(f"{k} = {v}" for k, v in self.paper_settings.items())
            lines.append(f"paper-faithful: for every optimizer {same}")
        lines += [
            "",
            f"{'optimizer':17s} {'validation (95% CI)':26s} {'test (95% CI)':26s} episodes/run",
        ]
        for r in self.rows:
            v, t = r.validation, r.test
            lines.append(
                f"{r.optimizer:17s} {v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]      "
                f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]      {r.episodes}"
            )
        for name, t in self.references.items():
            lines.append(f"{name:17s} {'':26s} {t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]")
        if self.best_single:
            chosen = ", ".join(dict.fromkeys(self.best_single))
            lines.append(f"(best single: chosen on validation, per seed: {chosen})")
        if self.group_rows():
            lines += ["", f"{'test per category':17s} {'category':12s} test (95% CI)"]
            for name, g, t in self.group_rows():
                lines.append(f"{name:17s} {g:12s} {t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]")
        if self.power is not None:
            lines += ["", self.power.text()]
        return "\n".join(lines)
