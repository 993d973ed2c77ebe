"""How spend is shown: dollars a simulated worker (of the built-in ``sandbox`` or ``team``
pool) "costs" are simulated (its profile's price times simulated tokens), so every place
that shows them says so, and a reader never takes a sandbox run's dollars for real spend."""

from __future__ import annotations

from collections.abc import Iterable

# The built-in simulated pools (``workbench.core.workers.simulated.POOLS``): the ids
# <pool> and <pool>:<name> name simulated workers (no registered worker may take them).
SIMULATED_POOLS = ("sandbox", "team")


def is_simulated(worker_id: str) -> bool:
    """Whether a worker id names a simulated worker (of the sandbox or the team pool)."""
    return worker_id.strip().split(":", 1)[0] in SIMULATED_POOLS


def spend_kind(worker_ids: Iterable[str]) -> str:
    """``"simulated"`` when every worker of a pool is simulated, ``"partly simulated"``
    when some are, ``""`` when the spend is real."""
    flags = [is_simulated(w) for w in worker_ids]
    if flags and all(flags):
        return "simulated"
    return "partly simulated" if any(flags) else ""


def dollars(amount: float, kind: str, digits: int = 4) -> str:
    """An amount of dollars as text, labelled with ``kind`` (see ``spend_kind``) when not
    real: ``$0.0123 (simulated)``."""
    text = f"${amount:.{digits}f}"
    return f"{text} ({kind})" if kind else text
