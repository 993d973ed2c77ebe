"""The Playground page with the tiny backbone: a question to a steered sandbox team shows its
turns live and its answer, the episode opens in Replay, Stop ends a slow episode without
storing it, and the page's server answers the official openai client."""

from __future__ import annotations

import openai

from tests.core.test_serve import SANDBOX, steered_file
from tests.support.fault_server import MODEL
from workbench.core.store import Store
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import spec_from_options
from workbench.gui.qt import QApplication

TIMEOUT = 120_000


def test_a_question_shows_its_turns_live_then_the_answer_and_opens_in_replay(
    qtbot, make_main_window, gui_workspace, tiny_backbone, tmp_path
):
    path = steered_file(tmp_path / "team.safetensors", tiny_backbone, SANDBOX, max_turns=2)
    window = make_main_window()
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
    for row, turn in enumerate(episode.turns):
        assert page.turns.item(row, 1).text() == "worker"
        assert page.turns.item(row, 2).text() == turn.worker == "sandbox:mathlete"
        assert page.turns.item(row, 6).text() == f"{turn.tokens_in}/{turn.tokens_out}"
    assert page.answer_view.toPlainText() == episode.answer
    assert f"${episode.cost:.6f}" in page.total_label.text()
    with Store.open(gui_workspace) as store:
        assert store.get_episode(episode.id).answer == episode.answer
    page.replay_button.click()
    replay = window.pages["Replay"]
    assert window.stack.currentWidget() is replay
    qtbot.waitUntil(lambda: replay.replay is not None, timeout=TIMEOUT)
    assert replay.replay.episode.id == episode.id


def test_stop_ends_a_slow_episode_without_storing_it(
    qtbot, make_main_window, gui_workspace, tiny_backbone, tmp_path, fault_server
):
    fault_server.latency = 30.0
    Registry().add(spec_from_options("slow", "transformers", MODEL, base_url=fault_server.base_url))
    path = steered_file(tmp_path / "slow.safetensors", tiny_backbone, ["slow"], max_turns=1)
    page = make_main_window().pages["Playground"]
    page.choose_coordinator_file(path)
    page.question.setPlainText("What is 12 + 30?")
    page.ask()
    qtbot.waitUntil(lambda: page.turns.rowCount() == 1, timeout=TIMEOUT)  # the call is out
    page.stop_button.click()
    qtbot.waitUntil(lambda: not page.running, timeout=TIMEOUT)
    assert page.episode is None and page.status_label.text() == "stopped (not stored)"
    with Store.open(gui_workspace) as store:
        (run,) = store.list_runs(kind="serve")
        assert store.list_episodes(run.id) == []
    assert page.ask_button.isEnabled()


def test_the_page_serves_the_team_to_the_openai_client(
    qtbot, make_main_window, gui_workspace, tiny_backbone, tmp_path
):
    path = steered_file(tmp_path / "team.safetensors", tiny_backbone, SANDBOX, max_turns=1)
    page = make_main_window().pages["Playground"]
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
