"""Simulated spend is labelled: a sandbox worker's dollars are its profile's price times
simulated tokens, never real money."""

from __future__ import annotations

from workbench.core.evaluate import Report, SystemResult
from workbench.core.spend import dollars, is_simulated, spend_kind


def test_sandbox_workers_are_simulated_and_registered_ones_real():
    assert is_simulated("sandbox") and is_simulated("sandbox:coder")
    assert not is_simulated("gpt-4o") and not is_simulated("local:smollm2")
    assert spend_kind(["sandbox:coder", "sandbox:scholar"]) == "simulated"
    assert spend_kind(["sandbox:coder", "gpt-4o"]) == "partly simulated"
    assert spend_kind(["gpt-4o"]) == "" and spend_kind([]) == ""
    assert spend_kind(["recorded:champ/gpt-4", "recorded:mine/a"]) == "recorded"
    assert spend_kind(["recorded:champ/gpt-4", "gpt-4o"]) == "partly recorded"
    assert spend_kind(["recorded:champ/gpt-4", "sandbox:coder"]) == "simulated or recorded"
    assert spend_kind(["recorded:x/a", "sandbox:coder", "gpt-4o"]) == "partly simulated or recorded"


def test_every_simulated_pool_and_its_workers_read_simulated():
    """The team pool's workers are priced like the sandbox's (the Team example's dollars):
    simulated too, whichever built-in simulated pool is added."""
    from workbench.core.spend import SIMULATED_POOLS
    from workbench.core.workers.simulated import POOLS

    assert set(SIMULATED_POOLS) == set(POOLS)
    for pool, profiles in POOLS.items():
        assert is_simulated(pool) and spend_kind([pool]) == "simulated"
        assert all(is_simulated(p.id) for p in profiles) and any(p.price_out for p in profiles)
    assert spend_kind(["team:planner", "team:checker"]) == "simulated"
    assert spend_kind(["team", "gpt-4o"]) == "partly simulated"
    assert not is_simulated("teammate") and not is_simulated("sandboxed")


def test_dollars_say_when_they_are_simulated():
    assert dollars(0.012345, "simulated") == "$0.0123 (simulated)"
    assert dollars(0.5, "", 2) == "$0.50"


def test_a_simulated_report_labels_its_cost_column_in_every_format():
    system = SystemResult(
        name="coordinator",
        kind="coordinator",
        accuracy=0.5,
        ci_low=0.2,
        ci_high=0.8,
        n=4,
        avg_turns=2.0,
        avg_tokens=100.0,
        avg_cost=0.001,
        usage={},
    )
    simulated = Report(suite="mixed", split="test", systems=(system,), spend="simulated")
    real = Report(suite="mixed", split="test", systems=(system,))
    assert "| $ / query (simulated) |" in simulated.to_markdown()
    assert "$ / query (simulated)" in simulated.table().splitlines()[0]
    assert simulated.to_csv().splitlines()[1].endswith(",simulated")
    assert '"spend": "simulated"' in simulated.to_json()
    assert "| $ / query |" in real.to_markdown() and real.to_csv().splitlines()[1].endswith(",real")


def test_recorded_spend_is_never_less_than_any_record_of_it():
    """A run killed mid-generation: its result still holds what it wrote when it started
    (nothing), its last stored generation's totals count the calibration calls that store
    no episode, its stored episodes may hold more than those totals (validation calls),
    and what it recorded while running covers the generation in flight."""
    from workbench.core.spend import recorded_spend

    generations = [
        {"totals": {"episodes": 448, "calls": 300, "dollars": 0.04, "minutes": 0.1}},
        {"totals": {"episodes": 896, "calls": 590, "dollars": 0.09, "minutes": 0.2}},
    ]
    stored = {"episodes": 896, "calls": 650, "dollars": 0.095}
    started = {"episodes": 0, "calls": 0, "dollars": 0.0, "minutes": 0.0}
    assert recorded_spend(generations, stored, started) == {
        "episodes": 896,
        "calls": 650,
        "dollars": 0.095,
        "minutes": 0.2,
    }
    in_flight = {"episodes": 1100, "calls": 800, "dollars": 0.12, "minutes": 0.3}
    assert recorded_spend(generations, stored, in_flight) == in_flight
    assert recorded_spend([], {"episodes": 0, "calls": 0, "dollars": 0.0}, None) == started
