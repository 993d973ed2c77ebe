"""An episode as a file: the one place where a stored episode becomes the JSON a user gets
(``episodes export``, ``episodes show --json``, ``run-episode --json``, the Replay page's
Export, an episode kept when the database refused it) and where that JSON is read back.

The store counts from 0 (generation 0 is the first, turn 0 the first); a person counts
from 1, and so do the GUI, the CLI's tables and its ``--generation`` / ``--candidate``
options. An export is read by people and by their scripts beside what the GUI shows, so it
counts from 1 too: ``generation``, ``candidate``, each turn's ``index`` and the turn
numbers listed in ``grade_details`` (``thinker_role_turns``, ``worker_only_turns``) are
the stored values plus one. Only this module converts; nothing else adds or removes one.
Other outputs that carry stored numbers use its ``counted_from_1`` and ``turns_from_1``:
``runs show`` (each generation record's ``generation``, ``result.best_validation_generation``)
and the OpenAI-compatible server's ``trinity`` trace (turn ``index``, ``worker_only_turns``).

Format versions: version 2 counts from 1. Version 1 (workbenches before this numbering)
wrote the stored values, counted from 0; it is still read, as what it is.
"""

from __future__ import annotations

import json
from typing import Any

from workbench.core.errors import InvalidInput
from workbench.core.records import Episode

EPISODE_FORMAT = "trinity-workbench/episode"
EPISODE_FORMAT_VERSION = 2  # 2: counted from 1; 1: the stored values, counted from 0
READABLE_VERSIONS = (1, 2)
TURN_LISTS = ("thinker_role_turns", "worker_only_turns")  # turn numbers in grade_details
_FROM = {1: 0, 2: 1}  # what a version's first generation, candidate and turn are numbered


def _shift(value: int | None, by: int) -> int | None:
    return None if value is None else value + by


def counted_from_1(value: int | None) -> int | None:
    """A stored number (generation, candidate or turn, from 0) as outputs show it (from 1);
    None stays None."""
    return _shift(value, _FROM[EPISODE_FORMAT_VERSION])


def turns_from_1(turns: list[int]) -> list[int]:
    """A list of stored turn numbers (``grade_details``' ``TURN_LISTS``) as outputs show it."""
    return [i + _FROM[EPISODE_FORMAT_VERSION] for i in turns]


def run_result_document(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """A run's stored result (``RunRecord.result``) as outputs show it: its
    ``best_validation_generation`` counted from 1."""
    if result is None or "best_validation_generation" not in result:
        return result
    best = result["best_validation_generation"]
    return {**result, "best_validation_generation": counted_from_1(best)}


def _renumbered(doc: dict[str, Any], by: int) -> dict[str, Any]:
    """``doc`` (an ``Episode.to_dict``) with its generation, candidate, turn indices and
    grade_details' turn lists moved by ``by``."""
    out = dict(doc)
    out["generation"] = _shift(doc.get("generation"), by)
    out["candidate"] = _shift(doc.get("candidate"), by)
    out["turns"] = [{**t, "index": t["index"] + by} for t in doc["turns"]]
    details = dict(doc.get("grade_details") or {})
    for key in TURN_LISTS:
        if key in details:
            details[key] = [i + by for i in details[key]]
    out["grade_details"] = details
    return out


def episode_document(episode: Episode) -> dict[str, Any]:
    """``episode`` as an export holds it: tagged with its format and version, counted from 1."""
    return {
        "format": EPISODE_FORMAT,
        "version": EPISODE_FORMAT_VERSION,
        **_renumbered(episode.to_dict(), _FROM[EPISODE_FORMAT_VERSION]),
    }


def episode_json(episode: Episode) -> str:
    """``episode_document`` as pretty JSON (what an export file holds)."""
    return json.dumps(episode_document(episode), indent=2, ensure_ascii=False)


def parse_episode_json(text: str) -> Episode:
    """The episode an exported JSON document holds, numbered as the store numbers it
    (from 0). Reads version 2 (counted from 1) and version 1 (counted from 0, written by
    workbenches before version 2)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not a {EPISODE_FORMAT} document: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != EPISODE_FORMAT:
        raise InvalidInput(f"not a {EPISODE_FORMAT} document: export episodes with the workbench")
    version = doc.get("version")
    if version not in READABLE_VERSIONS:
        raise InvalidInput(
            f"episode file version {version!r}, this workbench reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}: use the workbench version that "
            "exported it"
        )
    body = {k: v for k, v in doc.items() if k not in ("format", "version")}
    return Episode.from_dict(_renumbered(body, -_FROM[version]))
