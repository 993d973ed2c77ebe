"""The released run's options, off by default (issue 15): fitness shaping (a diversity
bonus, a turn bonus) and the Thinker's suggested-role override, against a real
OpenAI-compatible server on loopback and real training runs on the sandbox pool."""

import asyncio

import pytest

from tests.core.test_training import config
from tests.support.fault_server import FaultServer, default_reply
from workbench.core.config import ConfigError, RunConfig
from workbench.core.jobs.shared import train_plan
from workbench.core.jobs.train import train
from workbench.core.oracle import PlanPolicy, Step
from workbench.core.protocol import SUGGEST_ROLE_INSTRUCTION, EpisodeSettings, run_episode
from workbench.core.records import Episode, Role, StopReason, Turn
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.workspace import Workspace


def _episode(workers, reward=1.0):
    turns = tuple(
        Turn(
            index=i,
            worker=w,
            role=Role.WORKER,
            worker_probs=(1.0,),
            role_probs=(0.0, 1.0, 0.0),
            messages=({"role": "user", "content": "q"},),
        )
        for i, w in enumerate(workers)
    )
    return Episode(
        id="e",
        suite="s",
        task_id="t",
        pool=("a", "b"),
        max_turns=5,
        turns=turns,
        answer="x",
        reward=reward,
        stop_reason=StopReason.MAX_TURNS,
    )


def fitness_score(cfg, episode):
    """``episode``'s fitness in a run of ``cfg`` (its plan's rule)."""
    return train_plan(cfg, "s", ()).fitness(episode)


def test_shaping_is_off_by_default_and_adds_the_released_runs_bonuses_when_set():
    assert RunConfig().optimizer.diversity_bonus == 0.0 and RunConfig().optimizer.turn_bonus == 0.0
    assert RunConfig().protocol.thinker_suggests_role is False
    plain = config()
    shaped = config(optimizer={"diversity_bonus": 0.15, "turn_bonus": 0.10})
    one, two = _episode(["a", "a", "a"]), _episode(["a", "b"], reward=0.0)
    assert fitness_score(plain, one) == 1.0 and fitness_score(plain, two) == 0.0
    assert fitness_score(shaped, one) == pytest.approx(1.0 + 3 * 0.10)  # one worker: no bonus
    assert fitness_score(shaped, two) == pytest.approx(0.15 + 2 * 0.10)


def test_a_turn_bonus_only_through_its_named_option():
    with pytest.raises(ConfigError, match="turn_penalty: must not be negative.*turn_bonus"):
        config(optimizer={"turn_penalty": -0.1})
    with pytest.raises(ConfigError, match="set at most one of them"):
        config(optimizer={"turn_penalty": 0.1, "turn_bonus": 0.1})
    with pytest.raises(ConfigError, match="optimizer.diversity_bonus: .*from 0 to 1"):
        config(optimizer={"diversity_bonus": -0.15})
    with pytest.raises(ConfigError, match="protocol.thinker_suggests_role: expected true or false"):
        config(protocol={"thinker_suggests_role": "yes"})


def test_shaped_fitness_is_recorded_and_is_what_the_optimizer_sees(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    shaping = {"diversity_bonus": 0.15, "turn_bonus": 0.10}
    plain = train(config(budget={"generations": 1}), ws, backbone=tiny_backbone)
    shaped = train(config(optimizer=shaping, budget={"generations": 1}), ws, backbone=tiny_backbone)
    with Store.open(ws) as store:
        recorded = store.get_run(shaped).config().optimizer
        a, b = store.generations(plain)[0], store.generations(shaped)[0]
        episodes = [
            store.get_episode(e.id)
            for e in store.list_episodes(shaped, generation=0)
            if e.candidate is not None
        ]
    assert (recorded.diversity_bonus, recorded.turn_bonus) == (0.15, 0.10)
    # the same seeds play the same first generation; only the fitness differs, by the bonus
    diverse = sum(len({t.worker for t in e.turns if t.messages}) >= 2 for e in episodes)
    turns = sum(len(e.turns) for e in episodes)
    bonus = (0.15 * diverse + 0.10 * turns) / len(episodes)
    assert diverse > 0
    assert b["mean"] == pytest.approx(a["mean"] + bonus)


def _thinker_names_worker(request):
    text = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    if "Next role: Verifier" in text:  # the Thinker was asked to name the next role
        return "Split the sum into tens and units.\nNext role: Worker"
    return default_reply(request)


def thinker_override_episode(option: bool = True) -> Episode:
    """A real episode on a loopback server whose Thinker names the next role: with the
    option on, turn 1's role is the Thinker's pick."""
    from tests.core.workers.test_http_faults import make_worker

    task = Task(id="add", kind="math", prompt="What is 12 + 30?", answer="42")
    plan = [Step("loop", Role.THINKER)] * 3  # the coordinator always picks Thinker
    with FaultServer(reply=_thinker_names_worker) as server:
        worker = make_worker(server)
        episode = asyncio.run(
            run_episode(
                PlanPolicy(["loop"], plan),
                [worker],
                task,
                EpisodeSettings(max_turns=3, thinker_suggests_role=option),
            )
        )
        asyncio.run(worker.aclose())
    return episode


def test_replays_mark_the_role_the_thinker_picked():
    import io

    from workbench.cli.episodes import print_episode
    from workbench.core.replay import role_label

    episode = thinker_override_episode()
    assert [role_label(episode, i) for i in range(3)] == [
        "thinker",
        "worker (Thinker's pick)",
        "thinker",
    ]
    out = io.StringIO()
    print_episode(episode, file=out)
    assert "worker (Thinker's pick)" in out.getvalue()
    # the note wraps at the terminal's width: read it as one line
    assert "the coordinator's choice overridden" in " ".join(out.getvalue().split())
    plain = thinker_override_episode(option=False)
    assert "Thinker's pick" not in " ".join(role_label(plain, i) for i in range(3))


@pytest.mark.parametrize("option", [False, True])
def test_the_thinkers_suggested_role_replaces_the_next_role_only_when_the_option_is_on(option):
    episode = thinker_override_episode(option)
    roles = [t.role for t in episode.turns]
    thinker_prompt = episode.turns[0].messages[0]["content"]
    if option:
        assert roles == [Role.THINKER, Role.WORKER, Role.THINKER]
        assert thinker_prompt.endswith(SUGGEST_ROLE_INSTRUCTION.strip().splitlines()[-1])
        assert episode.grade_details["thinker_role_turns"] == [1]
        assert episode.turns[1].role_probs == (1.0, 0.0, 0.0)  # the coordinator's, kept
        assert episode.answer is not None
    else:
        assert roles == [Role.THINKER] * 3 and "Next role" not in thinker_prompt
        assert "thinker_role_turns" not in episode.grade_details and episode.answer is None
