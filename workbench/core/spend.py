"""How spend is shown: dollars a simulated worker (of the built-in ``sandbox`` or ``team``
pool) "costs" are simulated (its profile's price times simulated tokens), and a recorded
worker's are those of calls made before (or priced at the recording's list prices), so
every place that shows them says so, and a reader never takes a sandbox or recorded run's
dollars for real spend."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The built-in simulated pools (``workbench.core.workers.simulated.POOLS``): the ids
# <pool> and <pool>:<name> name simulated workers (no registered worker may take them).
SIMULATED_POOLS = ("sandbox", "team")


def is_simulated(worker_id: str) -> bool:
    """Whether a worker id names a simulated worker (of the sandbox or the team pool)."""
    return worker_id.strip().split(":", 1)[0] in SIMULATED_POOLS


def is_recorded(worker_id: str) -> bool:
    """Whether a worker id names a recorded worker (``recorded:...``): its dollars are what
    its recorded calls cost, or would have at the recording's list prices, not spent now."""
    return worker_id.strip().split(":", 1)[0] == "recorded"


def spend_kind(worker_ids: Iterable[str]) -> str:
    """``"simulated"`` when every worker of a pool is simulated, ``"recorded"`` when every
    one answers from a recording (``"simulated or recorded"`` for a mix of the two),
    ``"partly ..."`` when only some are, ``""`` when the spend is real."""
    kinds = [
        "simulated" if is_simulated(w) else "recorded" if is_recorded(w) else "" for w in worker_ids
    ]
    unreal = sorted({k for k in kinds if k}, reverse=True)  # simulated before recorded
    if not unreal:
        return ""
    label = " or ".join(unreal)
    return label if all(kinds) else f"partly {label}"


def dollars(amount: float, kind: str, digits: int = 4) -> str:
    """An amount of dollars as text, labelled with ``kind`` (see ``spend_kind``) when not
    real: ``$0.0123 (simulated)``."""
    text = f"${amount:.{digits}f}"
    return f"{text} ({kind})" if kind else text


SPEND_KEYS = ("episodes", "calls", "dollars", "minutes")


def recorded_spend(
    generations: Sequence[Mapping[str, Any]],
    stored: Mapping[str, float],
    reported: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """A run's spend from what is stored, never less than any record of it: per quantity
    the largest of the last stored generation's running totals (``generations``, as
    ``Store.generations`` gives them: they include the search basis's calibration calls,
    which store no episode), the sums over its stored episodes (``stored``,
    ``Store.stored_spend``) and what the run last reported (``reported``, its result's
    spend, which a killed run wrote when it started). A generation in flight when a run
    was killed stored nothing: its calls are in no record (docs/guides/resume.md)."""
    totals = dict(generations[-1].get("totals") or {}) if generations else {}
    out: dict[str, float] = {}
    for key in SPEND_KEYS:
        values = [float(totals.get(key, 0.0)), float(stored.get(key, 0.0))]
        if reported:
            values.append(float(reported.get(key, 0.0)))
        out[key] = max(values)
    return out


def _count(number: int, word: str) -> str:
    return f"{number:,} {word}{'' if number == 1 else 's'}"


@dataclass(frozen=True)
class Spend:
    """What a run used so far: episodes, worker calls, dollars and minutes of training
    (a generation's running ``totals``, or ``recorded_spend``'s figures), typed."""

    episodes: int = 0
    calls: int = 0
    dollars: float = 0.0
    minutes: float = 0.0

    @classmethod
    def of(cls, totals: Mapping[str, float] | None) -> Spend:
        """The spend in a mapping of ``SPEND_KEYS`` (a missing key is nothing spent)."""
        totals = totals or {}
        return cls(
            episodes=int(totals.get("episodes", 0)),
            calls=int(totals.get("calls", 0)),
            dollars=float(totals.get("dollars", 0.0)),
            minutes=float(totals.get("minutes", 0.0)),
        )

    def words(self, kind: str) -> str:
        """``12 episodes, 30 calls, $0.0012 (simulated), 1.5 min``: ``kind`` labels the
        dollars (``spend_kind``)."""
        return (
            f"{_count(self.episodes, 'episode')}, {_count(self.calls, 'call')}, "
            f"{dollars(self.dollars, kind)}, {self.minutes:.1f} min"
        )
