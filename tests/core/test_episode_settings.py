"""A run's episode settings are read from its ``[protocol]`` section in one place
(``EpisodeSettings.of``) and handed down: training, evaluation, the headroom check,
cross-validation, one stored run's episode and a served team play by the same."""

import re
from pathlib import Path

from workbench.core.config import ProtocolSection, RunConfig
from workbench.core.protocol import EpisodeSettings, Prompts

ROOT = Path(__file__).resolve().parents[2]

PROTOCOL = {
    "max_turns": 4,
    "max_tokens": 333,
    "temperature": 0.7,
    "thinker_suggests_role": True,
    "roles": ["worker", "verifier"],
}


def test_every_protocol_key_reaches_the_episode_settings():
    config = RunConfig.from_dict({"pool": {"workers": ["sandbox"]}, "protocol": PROTOCOL})
    prompts = Prompts.load()
    settings = EpisodeSettings.of(config.protocol, "mixed", prompts=prompts)
    assert settings == EpisodeSettings(
        suite="mixed",
        max_turns=4,
        max_tokens=333,
        temperature=0.7,
        prompts=prompts,
        thinker_suggests_role=True,
        roles=("worker", "verifier"),
    )
    # a caller that plays fewer turns or ends on a Worker keeps every other key
    served = EpisodeSettings.of(config.protocol, "serve", max_turns=2, final_turn="worker")
    assert (served.max_turns, served.final_turn, served.roles) == (
        2,
        "worker",
        ("worker", "verifier"),
    )
    assert (served.max_tokens, served.temperature, served.thinker_suggests_role) == (333, 0.7, True)


def test_no_module_copies_the_protocol_into_episode_settings_field_by_field():
    """Only ``EpisodeSettings.of`` reads a config's protocol into settings; the one other
    construction is ``run-episode``'s, from its own command-line options (``protocol.py``
    names the default of ``run_episode``)."""
    built = {}
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        count = len(re.findall(r"\bEpisodeSettings\(", text))
        if count:
            built[path.relative_to(ROOT).as_posix()] = count
    assert built == {"workbench/core/protocol.py": 1, "workbench/core/jobs/episode.py": 1}, built


def test_an_episode_outside_a_run_plays_by_a_runs_defaults():
    """One source for the protocol's defaults: settings built without a run (an episode of
    ``run-episode --pool``, a test's) are a default run config's."""
    assert EpisodeSettings(suite="s") == EpisodeSettings.of(ProtocolSection(), "s")
    changed = ProtocolSection(max_tokens=77)
    assert EpisodeSettings(suite="s") != EpisodeSettings.of(changed, "s")
