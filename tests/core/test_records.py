"""The words runs and episodes are told in are enums of one module (records.py), whose
members are the strings stored, printed and sent as JSON: a training event read back from
``train --events`` JSON, a turn read back from its dict and a verdict parsed from a reply
come back as members, never as bare strings."""

from __future__ import annotations

import json

from workbench.core.protocol import parse_verdict
from workbench.core.records import (
    Role,
    RunStatus,
    RunStopReason,
    StopReason,
    Turn,
    Verdict,
)
from workbench.core.training.events import (
    EpisodeDone,
    RunFinished,
    event_from_json,
    event_to_json,
)


def test_training_events_round_trip_with_their_enums():
    finished = RunFinished("r1", RunStopReason.GENERATIONS, 3, 0.5)
    line = event_to_json(finished)
    assert json.loads(line)["stop_reason"] == "budget.generations"
    back = event_from_json(line)
    assert back == finished and back.stop_reason is RunStopReason.GENERATIONS
    done = EpisodeDone(
        run_id="r1",
        generation=0,
        candidate=1,
        task_id="t",
        reward=1.0,
        turns=2,
        stop_reason=StopReason.ACCEPTED,
        cost=0.0,
    )
    back = event_from_json(event_to_json(done))
    assert back == done and back.stop_reason is StopReason.ACCEPTED


def test_a_turns_role_and_verdict_come_back_as_members():
    turn = Turn(
        index=0,
        worker="w",
        role=Role.VERIFIER,
        worker_probs=(1.0,),
        role_probs=(0.0, 0.0, 1.0),
        messages=({"role": "user", "content": "check"},),
        verdict=Verdict.ACCEPT,
    )
    data = json.loads(json.dumps(turn.to_dict()))
    assert data["verdict"] == "ACCEPT" and data["role"] == "verifier"
    back = Turn.from_dict(data)
    assert back == turn and back.verdict is Verdict.ACCEPT and back.role is Role.VERIFIER
    silent = Turn.from_dict({**data, "role": "worker", "verdict": None})
    assert silent.verdict is None


def test_parse_verdict_gives_members():
    assert parse_verdict("**Accept** - fine") == (Verdict.ACCEPT, True)
    verdict, parsed = parse_verdict("I am not sure")
    assert verdict is Verdict.REVISE and parsed is False


def test_the_enums_are_the_stored_strings():
    """Comparisons with the strings stored before the enums existed still hold."""
    assert RunStatus("interrupted") is RunStatus.INTERRUPTED
    assert RunStatus.FINISHED == "finished" and f"{RunStopReason.MINUTES}" == "budget.minutes"
    assert RunStopReason("failed") is RunStopReason.ERROR  # the Playground's stored word
    assert {str(r) for r in RunStopReason} >= {"stopped", "error", "done", "shutdown"}
