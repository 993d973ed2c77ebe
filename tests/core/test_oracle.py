"""The exact multi-turn oracle of the simulated pools, against the real protocol."""

import asyncio
import itertools
import math

import numpy as np
import pytest

from workbench.core.oracle import PlanPolicy, Step, best_plan, expected_reward, plan_value
from workbench.core.protocol import EpisodeSettings, Prompts, run_episode
from workbench.core.records import ROLES, Role
from workbench.core.tasks.generated import mixed_suite
from workbench.core.workers.pool import build_pool
from workbench.core.workers.simulated import POOLS, PROFILES_BY_ID, oracle_worker

SANDBOX = [p.id for p in POOLS["sandbox"]]
TEAM = [p.id for p in POOLS["team"]]
CATEGORIES = ("math", "choice", "code")


@pytest.mark.parametrize("pool", [SANDBOX, TEAM])
@pytest.mark.parametrize("category", CATEGORIES)
def test_one_turn_oracle_is_the_best_single_worker(pool, category):
    plan = best_plan(pool, category, category, 1)
    best = oracle_worker(category, category, pool)
    assert plan.steps == (Step(best, Role.WORKER),)
    assert plan.expected_reward == pytest.approx(
        max(PROFILES_BY_ID[w].skill_for(category, category) for w in pool)
    )


@pytest.mark.parametrize("pool", [SANDBOX, TEAM])
def test_the_dp_equals_the_best_of_every_fixed_sequence(pool):
    # the oracle conditions on the transcript only; ACCEPT ends an episode and nothing
    # else is observable, so the best policy is a fixed sequence: brute force agrees
    steps = [Step(w, r) for r in ROLES for w in pool]
    for turns in (1, 2, 3):
        brute = max(
            plan_value(pool, "math", "math", seq) for seq in itertools.product(steps, repeat=turns)
        )
        plan = best_plan(pool, "math", "math", turns)
        assert plan.expected_reward == pytest.approx(brute, abs=1e-12)
        assert plan_value(pool, "math", "math", plan.steps) == pytest.approx(plan.expected_reward)


def test_more_turns_never_hurt_and_the_team_rewards_delegation():
    for pool in (SANDBOX, TEAM):
        values = [best_plan(pool, "code", "code", k).expected_reward for k in range(1, 6)]
        assert values == sorted(values)
    team = best_plan(TEAM, "math", "math", 5)
    roles_by_worker = {(s.worker, s.role) for s in team.steps}
    assert ("team:planner", Role.THINKER) in roles_by_worker
    assert ("team:checker", Role.VERIFIER) in roles_by_worker
    assert ("team:mathlete", Role.WORKER) in roles_by_worker
    assert team.expected_reward > best_plan(TEAM, "math", "math", 1).expected_reward + 0.2
    text = team.describe()
    assert text.startswith("math: Thinker team:planner -> Worker team:mathlete")
    assert text.startswith(
        "math: Thinker team:planner -> Worker team:mathlete -> Verifier team:checker; "
        "on REVISE: Thinker team:planner -> Worker team:mathlete"
    )


def test_the_oracle_refuses_pools_it_cannot_simulate():
    with pytest.raises(ValueError, match="local:smollm2 is not one"):
        best_plan(["team:checker", "local:smollm2"], "math", "math", 2)


def _monte_carlo(pool_ids, tasks, max_turns, repeats):
    pool = build_pool(pool_ids)
    prompts = Prompts.load()
    plans = {t.category: best_plan(pool_ids, t.category, t.kind, max_turns) for t in tasks}

    async def go():
        episodes = []
        for r in range(repeats):
            episodes += await asyncio.gather(
                *(
                    run_episode(
                        PlanPolicy(pool_ids, plans[t.category].steps),
                        pool,
                        t,
                        EpisodeSettings(max_turns=max_turns, prompts=prompts),
                        seed=1000 * r + j,
                    )
                    for j, t in enumerate(tasks)
                )
            )
        return episodes

    return asyncio.run(go())


@pytest.mark.parametrize("pool_ids", [SANDBOX, TEAM], ids=["sandbox", "team"])
def test_monte_carlo_of_the_real_protocol_matches_the_dp(pool_ids):
    # every category; few code tasks (grading costs a subprocess per distinct program)
    suite = mixed_suite().tasks
    tasks = [t for t in suite if t.category != "code"][::4] + [
        t for t in suite if t.category == "code"
    ][:6]
    episodes = _monte_carlo(pool_ids, tasks, 5, repeats=40)
    rewards = [e.reward for e in episodes]
    mean = sum(rewards) / len(rewards)
    dp = expected_reward(pool_ids, tasks, 5)
    se = math.sqrt(dp * (1 - dp) / len(rewards))
    assert abs(mean - dp) < 3 * se, (mean, dp, se, len(rewards))
    # the plan was followed turn by turn until the first ACCEPT
    plan = best_plan(pool_ids, "math", "math", 5).steps
    for episode in episodes[:50]:
        if episode.task_id.startswith("mixed-math"):
            taken = [Step(t.worker, t.role) for t in episode.turns]
            assert taken == list(plan[: len(taken)])


def test_evaluate_reports_the_multi_turn_oracle_next_to_the_one_turn_one():
    from workbench.core.evaluate import baseline_names, evaluate

    assert baseline_names(TEAM) == [*(f"single:{w}" for w in TEAM), "random", "oracle"]
    assert baseline_names(TEAM, 5)[-2:] == ["oracle", "multi-turn oracle"]
    assert "multi-turn oracle" not in baseline_names(["team:coder", "local:smollm2"], 5)
    tasks = [t for t in mixed_suite().tasks if t.category != "code"][::2]
    report, episodes = asyncio.run(
        evaluate(
            None,
            build_pool(TEAM),
            tasks,
            EpisodeSettings(suite="mixed", max_turns=5),
            baselines=["oracle", "multi-turn oracle"],
        )
    )
    one, multi = report.systems
    assert (one.name, one.kind, multi.name, multi.kind) == (
        "oracle",
        "oracle",
        "multi-turn oracle",
        "oracle",
    )
    assert multi.ci_low <= expected_reward(TEAM, tasks, 5) <= multi.ci_high
    assert multi.accuracy > one.ci_high and 1 < multi.avg_turns <= 5
    assert '"kind": "oracle"' in report.to_json()


def test_random_routing_value_matches_the_random_baseline_on_the_real_protocol():
    from workbench.core.oracle import random_routing_value
    from workbench.core.policies import RandomPolicy

    tasks = [t for t in mixed_suite().tasks if t.category != "code"][::5]
    pool = build_pool(TEAM)

    async def go():
        return await asyncio.gather(
            *(
                run_episode(
                    RandomPolicy(len(TEAM)),
                    pool,
                    t,
                    EpisodeSettings(max_turns=3),
                    rng=np.random.default_rng([r, j]),
                    seed=1000 * r + j,
                )
                for r in range(40)
                for j, t in enumerate(tasks)
            )
        )

    rewards = [e.reward for e in asyncio.run(go())]
    exact = float(np.mean([random_routing_value(TEAM, t.category, t.kind, 3) for t in tasks]))
    se = math.sqrt(exact * (1 - exact) / len(rewards))
    assert abs(np.mean(rewards) - exact) < 3 * se, (np.mean(rewards), exact)
