"""The Playground page with the tiny backbone: a question to a steered sandbox team shows its
turns (both probabilities as bars) and its answer, the episode opens in Replay; with a slow
loopback worker each turn shows while the episode still runs, and Stop ends it without
storing it; the page's server answers the official openai client, with the stored server
key when there is one."""

from __future__ import annotations

import openai
import pytest

from tests.core.test_serve import SANDBOX, steered_file
from tests.support.fault_server import MODEL
from workbench.core.records import ROLES
from workbench.core.serving.server import set_server_key
from workbench.core.store import Store
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import spec_from_options
from workbench.gui.qt import QApplication
from workbench.gui.qt_playground import COST, P_ROLE, P_WORKER, REPLY, waiting_text
from workbench.gui.qt_probabilities import ProbabilityCell

TIMEOUT = 120_000
LOCAL_MODEL_TIMEOUT = 240_000  # loading SmolLM2 and 8 tokens on a loaded 2-core CPU


# First in the file, as in tests/core/test_serve.py: the test Secret Service (a session
# fixture) could not create its collection when first started after a slow-worker test.


def test_the_page_server_requires_the_stored_server_key(
    qtbot, make_main_window, tiny_chat_backbone, tmp_path, keychain, monkeypatch
):
    """As `serve` on loopback: a stored server key is required, and the snippet reads it
    from an environment variable instead of holding it."""
    set_server_key("team-key-42")
    path = steered_file(tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, max_turns=1)
    page = make_main_window(backbone=tiny_chat_backbone).pages["Playground"]
    page.choose_coordinator_file(path)
    page.serve_button.click()
    qtbot.waitUntil(lambda: page.server is not None, timeout=TIMEOUT)
    url, snippet = page.url_label.text(), page.snippet.toPlainText()
    assert 'os.environ["TRINITY_SERVER_KEY"]' in snippet and "team-key-42" not in snippet
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=url, api_key="wrong", max_retries=0).models.list()
    client = openai.OpenAI(base_url=url, api_key="team-key-42", max_retries=0, timeout=60)
    assert client.models.list().data[0].id == "trinity-team"
    monkeypatch.setenv("TRINITY_SERVER_KEY", "team-key-42")
    namespace: dict = {}
    exec(compile(snippet.replace("print(", "answer = ("), "snippet", "exec"), namespace)
    assert namespace["answer"]  # the snippet, with the key in its variable, gets the answer
    page.serve_button.click()
    qtbot.waitUntil(lambda: page.url_label.text() == "not serving", timeout=TIMEOUT)


def test_a_question_shows_its_turns_live_then_the_answer_and_opens_in_replay(
    qtbot, make_main_window, gui_workspace, tiny_chat_backbone, tmp_path
):
    path = steered_file(tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, max_turns=2)
    window = make_main_window(backbone=tiny_chat_backbone)
    page = window.pages["Playground"]
    page.choose_coordinator_file(path)
    page.question.setPlainText("What is 12 + 30?")
    heard = []
    page._events.turn.connect(heard.append)
    page.ask_button.click()
    assert page.running and page.stop_button.isEnabled() and not page.ask_button.isEnabled()
    qtbot.waitUntil(lambda: page.episode is not None and not page.running, timeout=TIMEOUT)
    episode = page.episode
    assert [type(e).__name__ for e in heard] == ["TurnDecided", "TurnReplied"] * 2
    assert page.turns.rowCount() == 2
    assert f"pool: {', '.join(SANDBOX)}" in page.pool_label.text()
    for row, turn in enumerate(episode.turns):
        assert page.turns.item(row, 0).text() == str(row + 1)
        assert page.turns.item(row, 1).text() == "Worker"  # the role, in words
        assert page.turns.item(row, 2).text() == turn.worker == "sandbox:mathlete"
        # both probabilities of the choice as bars, each with its value written on it
        p_worker = turn.worker_probs[SANDBOX.index(turn.worker)]
        p_role = turn.role_probs[ROLES.index(turn.role)]
        for column, p in ((P_WORKER, p_worker), (P_ROLE, p_role)):
            bar = page.turns.cellWidget(row, column)
            assert isinstance(bar, ProbabilityCell)
            assert bar.probability == pytest.approx(p) and bar.text() == f"{p:.2f}"
            assert bar.value() == round(p * bar.maximum())
        tip = page.turns.item(row, REPLY).toolTip()
        assert f"tokens in/out {turn.tokens_in}/{turn.tokens_out}" in tip
        assert page.turns.item(row, COST).text() == f"${turn.cost:.6f}"
        assert page.turns.item(row, COST).toolTip() == f"${turn.cost:.6f} (simulated)"
        assert page.turns.item(row, REPLY).text() == " ".join(turn.response.split())[:300]
    # selecting a turn shows both whole distributions and its whole reply
    page.turns.selectRow(0)
    first = episode.turns[0]
    assert page.worker_bars.probs == pytest.approx(first.worker_probs)
    assert page.worker_bars.chosen == 0 and page.role_bars.chosen == ROLES.index(first.role)
    assert page.role_bars.probs == pytest.approx(first.role_probs)
    assert page.reply_view.toPlainText() == first.response
    assert page.answer_view.toPlainText() == episode.answer
    assert f"${episode.cost:.6f} (simulated)" in page.total_label.text()
    # the cost column's header says the dollars are simulated, once, not on every cell
    assert page.turns.horizontalHeaderItem(COST).text() == "Cost\n(simulated)"
    with Store.open(gui_workspace) as store:
        assert store.get_episode(episode.id).answer == episode.answer
    page.replay_button.click()
    replay = window.pages["Replay"]
    assert window.current_page() is replay
    qtbot.waitUntil(lambda: replay.replay is not None, timeout=TIMEOUT)
    assert replay.replay.episode.id == episode.id


def test_choosing_a_coordinator_shows_its_pool_or_why_it_cannot(
    qtbot, make_main_window, tiny_chat_backbone, tmp_path
):
    path = steered_file(tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, max_turns=2)
    page = make_main_window(backbone=tiny_chat_backbone).pages["Playground"]
    page.choose_coordinator_file(path)
    qtbot.waitUntil(lambda: page.pool_label.text().startswith("pool: "), timeout=TIMEOUT)
    assert page.pool_label.text() == f"pool: {', '.join(SANDBOX)} · backbone tiny · up to 2 turns"
    broken = tmp_path / "broken.safetensors"
    broken.write_text("not a coordinator")
    page.choose_coordinator_file(broken)
    qtbot.waitUntil(lambda: page.message_label.text() != "", timeout=TIMEOUT)
    assert page.message_label.text().startswith("Cannot read the coordinator: ")
    assert "broken.safetensors" in page.message_label.text()
    assert "Traceback" not in page.message_label.text() and page.pool_label.text() == ""


def test_a_simulated_team_says_so_and_the_offline_model_can_answer_in_its_place(
    qtbot, make_main_window, gui_workspace, tiny_chat_backbone, tmp_path
):
    """The sandbox team answers only suite questions ("I am not sure." to 12 + 30): the
    page says which workers are simulated; ticked, the real offline model (SmolLM2, a
    local GGUF model) writes each reply, and the turns and the stored episode name it."""
    from workbench.core.workers.local import SMOLLM2_ID

    # one turn, a short reply: SmolLM2 on a CPU writes 8 tokens in seconds
    path = steered_file(
        tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, max_turns=1, max_tokens=8
    )
    window = make_main_window(backbone=tiny_chat_backbone)
    page = window.pages["Playground"]
    page.choose_coordinator_file(path)
    qtbot.waitUntil(lambda: not page.local_box.isHidden(), timeout=TIMEOUT)
    note = page.simulated_label.text()
    assert note.startswith("Every worker of this team is simulated")
    assert "only the bundled suites' questions" in note and "I am not sure." in note

    page.question.setPlainText("What is 12 + 30?")
    page.ask_button.click()
    qtbot.waitUntil(lambda: page.episode is not None and not page.running, timeout=TIMEOUT)
    simulated = page.episode
    assert simulated.turns[0].worker in SANDBOX and "I am not sure." in simulated.answer

    page.local_box.setChecked(True)
    page.ask_button.click()
    qtbot.waitUntil(
        lambda: page.episode is not None and page.episode.id != simulated.id and not page.running,
        timeout=LOCAL_MODEL_TIMEOUT,
    )
    episode = page.episode
    (turn,) = episode.turns
    chosen_row = SANDBOX[turn.worker_probs.index(max(turn.worker_probs))]
    assert turn.worker == f"{SMOLLM2_ID} as {chosen_row}"  # the row it chose, who answered
    assert episode.pool == tuple(f"{SMOLLM2_ID} as {w}" for w in SANDBOX)
    assert turn.response.strip() and "I am not sure." not in turn.response  # a real reply
    assert page.turns.item(0, REPLY).text() == " ".join(turn.response.split())[:300]
    assert "(simulated)" not in page.total_label.text()
    with Store.open(gui_workspace) as store:
        assert store.get_episode(episode.id).turns[0].worker == turn.worker


def test_a_recorded_team_says_it_holds_no_answer_to_your_question_and_the_offline_model_can(
    qtbot, make_main_window, gui_workspace, tiny_chat_backbone, tmp_path, tiny_model_dir
):
    """A team trained on a recorded pool (CHAMP's answers) has no answer to a question of
    your own: the page says so where it once said "Every worker of this team is a real
    model", asked as is the turn fails with the recording's own words, and ticked, the
    offline model answers in the chosen row's place."""
    from workbench.core.workers.local import SMOLLM2_ID

    recorded = ("recorded:champ/gpt-4-turbo", "recorded:champ/gpt-3.5")
    path = steered_file(
        tmp_path / "recorded.safetensors",
        tiny_chat_backbone,
        recorded,
        max_turns=1,
        max_tokens=8,
        roles=["worker"],
        optimizer={"rollouts": 0},
        source=str(tiny_model_dir),  # a backbone from a folder of this computer
    )
    window = make_main_window(backbone=tiny_chat_backbone)
    page = window.pages["Playground"]
    page.choose_coordinator_file(path)
    # (the runs listed meanwhile may have the file read again: its line says so till then)
    qtbot.waitUntil(
        lambda: not page.local_box.isHidden() and page.pool_label.text().startswith("pool: "),
        timeout=TIMEOUT,
    )
    # the backbone by its folder's name, never the machine's path (whole in the tooltip)
    assert f"backbone …/{tiny_model_dir.name} · " in page.pool_label.text()
    assert str(tiny_model_dir.parent) not in page.pool_label.text()
    assert page.pool_label.toolTip() == (f"pool: {', '.join(recorded)}\nbackbone: {tiny_model_dir}")
    # the pool's shared name once, then its models; one turn in the singular
    assert page.pool_label.text().startswith("pool: recorded:champ/ (gpt-4-turbo, gpt-3.5) · ")
    assert page.pool_label.text().endswith(" · up to 1 turn")
    note = page.simulated_label.text()
    assert note.startswith("Every worker of this team is recorded")
    assert "a question of your own has none" in note and "real model." not in note

    page.question.setPlainText("What is 12 + 30?")
    page.ask_button.click()
    qtbot.waitUntil(lambda: page.episode is not None and not page.running, timeout=TIMEOUT)
    (failed,) = page.episode.turns
    assert failed.worker == recorded[0] and "no recorded answer" in (failed.error or "")

    page.local_box.setChecked(True)
    page.ask_button.click()
    qtbot.waitUntil(
        lambda: page.episode is not None and page.episode.turns != (failed,) and not page.running,
        timeout=LOCAL_MODEL_TIMEOUT,
    )
    (turn,) = page.episode.turns
    assert turn.worker == f"{SMOLLM2_ID} as {recorded[0]}" and turn.error is None
    assert turn.response.strip()  # a real reply, written by the offline model
    # served, the team would answer no request: the server is refused in a sentence
    page.serve_button.click()
    qtbot.waitUntil(lambda: "all recorded" in page.message_label.text(), timeout=TIMEOUT)
    assert page.server is None and page.url_label.text() == "not serving"


def test_each_turn_shows_while_the_episode_runs(
    qtbot, make_main_window, gui_workspace, tiny_chat_backbone, tmp_path, fault_server
):
    """A loopback worker that answers after 4 s: a turn's row (with its bars) appears as
    soon as the coordinator decides, its reply when the worker answers, and the next turn
    before the episode ends; the answer comes last."""
    fault_server.latency = 4.0
    Registry().add(spec_from_options("slow", "transformers", MODEL, base_url=fault_server.base_url))
    path = steered_file(tmp_path / "slow.safetensors", tiny_chat_backbone, ["slow"], max_turns=2)
    page = make_main_window(backbone=tiny_chat_backbone).pages["Playground"]
    page.choose_coordinator_file(path)
    page.question.setPlainText("What is 12 + 30?")
    page.ask()

    def first_turn_waits() -> None:
        assert page.running and page.turns.rowCount() == 1
        assert page.turns.item(0, REPLY).text() == waiting_text("slow")
        assert isinstance(page.turns.cellWidget(0, P_WORKER), ProbabilityCell)
        assert page.worker_bars.probs and page.role_bars.probs  # the newest turn, shown below

    qtbot.waitUntil(first_turn_waits, timeout=TIMEOUT)
    assert "waiting for the reply" in page.status_label.text()

    def second_turn_waits() -> None:
        assert page.running and page.turns.rowCount() == 2
        assert page.turns.item(0, REPLY).text() != waiting_text("slow")
        assert " s" in page.turns.item(0, REPLY).toolTip().rpartition("latency ")[2]
        assert page.turns.item(1, REPLY).text() == waiting_text("slow")
        assert page.episode is None and not page.answer_view.toPlainText()

    qtbot.waitUntil(second_turn_waits, timeout=TIMEOUT)
    qtbot.waitUntil(lambda: page.episode is not None and not page.running, timeout=TIMEOUT)
    assert page.turns.item(1, REPLY).text() == " ".join(page.episode.turns[1].response.split())
    assert page.answer_view.toPlainText() == page.episode.answer
    # a real worker's spend is real: no "simulated" label
    assert page.turns.item(0, COST).text() == f"${page.episode.turns[0].cost:.6f}"
    assert page.turns.horizontalHeaderItem(COST).text() == "Cost"


def test_stop_ends_a_slow_episode_without_storing_it(
    qtbot, make_main_window, gui_workspace, tiny_chat_backbone, tmp_path, fault_server
):
    fault_server.latency = 30.0
    Registry().add(spec_from_options("slow", "transformers", MODEL, base_url=fault_server.base_url))
    path = steered_file(tmp_path / "slow.safetensors", tiny_chat_backbone, ["slow"], max_turns=1)
    page = make_main_window(backbone=tiny_chat_backbone).pages["Playground"]
    page.choose_coordinator_file(path)
    page.question.setPlainText("What is 12 + 30?")
    page.ask()
    qtbot.waitUntil(lambda: page.turns.rowCount() == 1, timeout=TIMEOUT)  # the call is out
    page.stop_button.click()
    qtbot.waitUntil(lambda: not page.running, timeout=TIMEOUT)
    assert page.episode is None and page.status_label.text() == "Stopped (not stored)"
    with Store.open(gui_workspace) as store:
        (run,) = store.list_runs(kind="serve")
        assert store.list_episodes(run.id) == []
        assert run.status == "stopped" and run.stop_reason == "stopped"
    assert page.ask_button.isEnabled()


def test_the_page_serves_the_team_to_the_openai_client(
    qtbot, make_main_window, gui_workspace, tiny_chat_backbone, tmp_path
):
    path = steered_file(tmp_path / "team.safetensors", tiny_chat_backbone, SANDBOX, max_turns=1)
    page = make_main_window(backbone=tiny_chat_backbone).pages["Playground"]
    page.choose_coordinator_file(path)
    page.serve_button.click()
    qtbot.waitUntil(lambda: page.server is not None, timeout=TIMEOUT)
    url = page.url_label.text()
    assert url.startswith("http://127.0.0.1:") and page.serve_button.text() == "Stop server"
    page.copy_button.click()
    snippet = QApplication.clipboard().text()
    assert snippet == page.snippet.toPlainText() and url in snippet
    namespace: dict = {}
    exec(compile(snippet.replace("print(", "answer = ("), "snippet", "exec"), namespace)
    assert namespace["answer"]  # the copied snippet, run as is, gets the team's answer
    page.serve_button.click()
    qtbot.waitUntil(lambda: page.url_label.text() == "not serving", timeout=TIMEOUT)
    with Store.open(gui_workspace) as store:
        (run,) = store.list_runs(kind="serve")
        assert run.status == "finished" and len(store.list_episodes(run.id)) == 1
    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=5)
    try:
        client.models.list()
        raise AssertionError("the server still answers after Stop server")
    except openai.APIConnectionError:
        pass


def test_the_turns_table_fits_1280_by_800_with_several_turns(
    qtbot, make_main_window, tiny_chat_backbone, tmp_path
):
    """A simulated team chosen (its note and the offline model's checkbox shown), then five
    turns with a long verdict, an error and long replies: the turns table fits its side of
    the page without scrolling sideways, the verdict and the reply elided at worst, whole
    in their tooltips."""
    from tests.gui.fitting import assert_fits_sideways
    from workbench.core.records import Role
    from workbench.core.serving.team import TurnDecided, TurnReplied
    from workbench.gui.qt_playground import VERDICT

    window = make_main_window(backbone=tiny_chat_backbone)
    window.resize(1280, 800)
    window.go("Playground")
    page = window.pages["Playground"]
    page.choose_coordinator_file(
        steered_file(tmp_path / "t.safetensors", tiny_chat_backbone, SANDBOX)
    )
    qtbot.waitUntil(lambda: page.local_box.isVisible(), timeout=TIMEOUT)
    qtbot.waitUntil(lambda: page.turns.isVisible(), timeout=5_000)
    roles = (Role.THINKER, Role.WORKER, Role.VERIFIER, Role.WORKER, Role.VERIFIER)
    for index, role in enumerate(roles):
        worker = SANDBOX[index % len(SANDBOX)]
        page.show_event(
            TurnDecided(
                index=index,
                worker=worker,
                role=role,
                worker_probs=(0.61, 0.27, 0.12),
                role_probs=(0.2, 0.5, 0.3),
                pool=tuple(SANDBOX),
            )
        )
        page.show_event(
            TurnReplied(
                index=index,
                worker=worker,
                role=role,
                text="Let me work through this step by step. " * 12,
                verdict="rejected: the answer does not follow from the working" if index else None,
                tokens_in=12345,
                tokens_out=2048,
                cost=0.012345,
                latency_s=12.34,
                error="timed out after 60 s waiting for the worker's reply" if index == 3 else None,
            )
        )
    assert page.turns.rowCount() == len(roles)
    assert (window.width(), window.height()) == (1280, 800)
    assert_fits_sideways(page.turns, stretched=[VERDICT, REPLY])
