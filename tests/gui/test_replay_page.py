"""The Replay page over a real stored sandbox run: an episode reads as a conversation of
cards (the shown worker, role and probabilities are the stored ones), the keyboard steps
between turns and episodes, the filters narrow the list, the best candidate's episodes
come first, and an episode exports as JSON."""

import json
import os
import re

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from tests.core.test_training import config  # noqa: E402
from workbench.core.jobs.train import train  # noqa: E402
from workbench.core.store import EpisodeSummary, Store  # noqa: E402
from workbench.core.workspace import Workspace  # noqa: E402


@pytest.fixture()
def trained(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    run_id = train(config(budget={"generations": 2}), ws, backbone=tiny_backbone)
    return ws, run_id


def replay_page(qtbot, ws, run_id):
    from workbench.gui.qt_replay import QtReplay

    page = QtReplay(ws)
    qtbot.addWidget(page)
    page.resize(1100, 760)
    page.show()
    qtbot.waitExposed(page)
    qtbot.waitUntil(lambda: page.runs.findData(run_id) >= 0)
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    settle(qtbot, page)
    return page


def settle(qtbot, page) -> int:
    qtbot.waitUntil(lambda: not page.loading, timeout=20_000)
    return page.episodes.rowCount()


def longest(ws, page):
    with Store.open(ws) as store:
        return max((store.get_episode(i) for i in page.episode_ids()), key=lambda e: len(e.turns))


def test_an_episode_reads_as_cards_of_its_stored_turns(qtbot, trained, tmp_path):
    from workbench.gui.qt import Qt
    from workbench.gui.words import role_name

    ws, run_id = trained
    page = replay_page(qtbot, ws, run_id)
    with Store.open(ws) as store:
        assert settle(qtbot, page) == len(store.list_episodes(run_id)) == 2 * 12 + 6
    episode = longest(ws, page)
    assert len(episode.turns) >= 2
    page.open_episode(episode.id)
    qtbot.waitUntil(lambda: page.replay is not None and page.replay.episode.id == episode.id)
    assert len(page.cards) == len(episode.turns)
    for card, turn in zip(page.cards, episode.turns, strict=True):
        assert card.worker_bars.values == turn.worker_probs
        assert card.worker_bars.names == episode.pool
        assert episode.pool[card.worker_bars.chosen] == turn.worker
        assert card.role_bars.values == turn.role_probs
        assert card.role_bars.names[card.role_bars.chosen] == role_name(str(turn.role))
        title = card.title.text()
        assert f"Turn {card.index + 1}" in title and role_name(str(turn.role)) in title
        assert turn.worker in title and str(turn.role) in card.title.toolTip()
        assert card.answer.text() == (turn.response or turn.error or "(no reply)")[:4000]
        assert card.grade.text()  # every turn says what became of it
        assert len(card.worker_bars.bars) == len(episode.pool)  # one labelled bar each
    assert "Question" in page.conversation.findChildren(type(page.header))[0].text()
    assert "Final answer:" in page.outcome_card.answer.text()
    assert str(episode.stop_reason) in page.outcome_card.title.toolTip()

    # the keyboard: Right / Left step turns, End / Home jump, the current card is marked
    assert page.current_card() is page.cards[0]
    qtbot.keyClick(page, Qt.Key.Key_Right)
    assert page.replay.index == 1 and page.current_card() is page.cards[1]
    qtbot.keyClick(page, Qt.Key.Key_Left)
    assert page.replay.index == 0
    qtbot.keyClick(page, Qt.Key.Key_End)
    assert page.replay.at_end and page.position.text().startswith(f"turn {len(episode.turns)}")
    qtbot.keyClick(page, Qt.Key.Key_Home)
    assert page.replay.index == 0
    # ... and the same keys reach the page from a child with the focus (the list)
    page.episodes.setFocus()
    qtbot.keyClick(page.episodes, Qt.Key.Key_Right)
    assert page.replay.index == 1

    out = tmp_path / "episode.json"
    page.export_episode(str(out))
    qtbot.waitUntil(lambda: page.exported == str(out))
    doc = json.loads(out.read_text())
    assert doc["id"] == episode.id
    # the file counts as the page does: "generation G · candidate C" and "Turn 1" from 1
    assert episode.generation is not None  # a training run's: every episode has one
    header = page.header.text()
    assert f"generation {doc['generation']}" in header
    assert doc["generation"] == episode.generation + 1 >= 1
    if episode.candidate is None:  # a validation episode
        assert doc["candidate"] is None and "candidate" not in header
    else:
        assert f"candidate {doc['candidate']}" in header
        assert doc["candidate"] == episode.candidate + 1 >= 1
    assert [t["index"] for t in doc["turns"]] == [c.index + 1 for c in page.cards]
    assert doc["turns"][0]["index"] == 1
    page.shutdown()


def test_page_down_and_up_step_through_the_episodes_of_the_list(qtbot, trained):
    from workbench.gui.qt import Qt

    ws, run_id = trained
    page = replay_page(qtbot, ws, run_id)
    ids = page.episode_ids()
    # the run just chosen shows its first (best) episode at once
    qtbot.waitUntil(lambda: page.replay is not None and page.replay.episode.id == ids[0])
    qtbot.keyClick(page, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: page.replay.episode.id == ids[1])
    qtbot.keyClick(page, Qt.Key.Key_PageUp)
    qtbot.waitUntil(lambda: page.replay.episode.id == ids[0])
    qtbot.keyClick(page, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: page.replay.episode.id == ids[1])
    page.next_episode_button.click()
    qtbot.waitUntil(lambda: page.replay.episode.id == ids[2])
    qtbot.keyClick(page, Qt.Key.Key_PageUp)
    qtbot.waitUntil(lambda: page.replay.episode.id == ids[1])
    page.shutdown()


def test_filters_narrow_the_list_by_outcome_worker_generation_candidate_and_question(
    qtbot, trained
):
    ws, run_id = trained
    page = replay_page(qtbot, ws, run_id)
    everything = settle(qtbot, page)
    with Store.open(ws) as store:
        stored = store.list_episodes(run_id)
    assert everything == len(stored) == 2 * 12 + 6  # 4 candidates x 3 tasks, a validation

    page.outcome_filter.setCurrentText("right")
    right = settle(qtbot, page)
    assert right == sum(e.reward >= 1 for e in stored)
    page.outcome_filter.setCurrentText("not right")
    assert right + settle(qtbot, page) == everything
    page.outcome_filter.setCurrentText("any result")
    settle(qtbot, page)

    # generations and candidates numbered from 1, as everywhere in the GUI
    generations = [
        page.generation_filter.itemText(i) for i in range(page.generation_filter.count())
    ]
    assert generations == ["any", "1", "2"]
    page.generation_filter.setCurrentIndex(2)
    assert settle(qtbot, page) == sum(e.generation == 1 for e in stored)
    candidates = [page.candidate_filter.itemText(i) for i in range(page.candidate_filter.count())]
    assert candidates == ["any", "candidate 1", "candidate 2", "candidate 3", "candidate 4"]
    page.candidate_filter.setCurrentIndex(3)  # candidate 3 (stored as 2)
    assert settle(qtbot, page) == sum(e.generation == 1 and e.candidate == 2 for e in stored) == 3
    assert {page.episodes.item(r, 4).text() for r in range(3)} == {"3"}
    assert {page.episodes.item(r, 4).toolTip() for r in range(3)} == {"candidate 3"}
    assert {page.episodes.item(r, 3).text() for r in range(3)} == {"2"}
    page.generation_filter.setCurrentIndex(0)
    page.candidate_filter.setCurrentIndex(0)
    settle(qtbot, page)

    workers = [page.worker_filter.itemText(i) for i in range(1, page.worker_filter.count())]
    assert workers and all(w.startswith("sandbox:") for w in workers)
    page.worker_filter.setCurrentIndex(1)
    with Store.open(ws) as store:
        expected = len(store.list_episodes(run_id, worker=workers[0]))
    assert settle(qtbot, page) == expected
    page.worker_filter.setCurrentIndex(0)
    settle(qtbot, page)

    page.task_filter.setText("no-such-task")
    page.task_filter.editingFinished.emit()
    assert settle(qtbot, page) == 0
    page.shutdown()


def test_the_best_candidates_episodes_come_first(qtbot, trained):
    from workbench.gui.qt_replay import best_first

    ws, run_id = trained
    page = replay_page(qtbot, ws, run_id)
    with Store.open(ws) as store:
        stored = store.list_episodes(run_id)
    groups = {}
    for e in stored:
        groups.setdefault((e.generation, e.candidate), []).append(e.reward)
    best_share = max(sum(r) / len(r) for r in groups.values())
    first = page.episode_ids()[0]
    (top,) = [e for e in stored if e.id == first]
    rewards = groups[(top.generation, top.candidate)]
    assert sum(rewards) / len(rewards) == best_share
    assert "Best first: generation" in page.list_note.text()
    ordered, best, share = best_first(stored)
    assert [e.id for e in ordered] == page.episode_ids() and share == best_share
    page.shutdown()


def summary(generation, candidate, reward, task="t") -> EpisodeSummary:
    return EpisodeSummary(
        id=f"{generation}-{candidate}-{task}-{reward}",
        run_id="r",
        generation=generation,
        candidate=candidate,
        suite="s",
        task_id=task,
        reward=reward,
        stop_reason="accepted",
        n_turns=1,
        cost=0.0,
        tokens_in=0,
        tokens_out=0,
        created_at=0.0,
    )


def listing(episodes):
    """What the page's background read hands it: ``episodes``, all matched, no filters."""
    from workbench.gui.qt_replay import EpisodeList

    return EpisodeList(
        episodes=episodes,
        matched=len(episodes),
        best=None,
        best_share=0.0,
        generations=[],
        candidates=[],
        workers=[],
    )


def test_best_first_orders_candidates_by_their_share_right_later_generations_first():
    from workbench.gui.qt_replay import best_first

    episodes = [
        summary(0, 0, 1.0, "a"),
        summary(0, 0, 1.0, "b"),  # generation 1, candidate 1: 100%
        summary(0, 1, 0.0, "a"),
        summary(0, 1, 1.0, "b"),  # 50%
        summary(2, 3, 1.0, "b"),
        summary(2, 3, 1.0, "a"),  # generation 3, candidate 4: 100%, later: first
        summary(1, None, 0.0, "a"),  # a validation: 0%
    ]
    ordered, best, share = best_first(episodes)
    assert best == (2, 3) and share == 1.0
    assert [(e.generation, e.candidate, e.task_id) for e in ordered] == [
        (2, 3, "a"),
        (2, 3, "b"),
        (0, 0, "a"),
        (0, 0, "b"),
        (0, 1, "a"),
        (0, 1, "b"),
        (1, None, "a"),
    ]
    assert best_first([]) == ([], None, 0.0)


def test_the_episode_list_fits_1280_by_800_with_long_stop_reasons(make_main_window, qtbot):
    """Every stop reason (the longest sentences), long question ids and two-digit
    generations and candidates: the list fits its side of the page without scrolling
    sideways, the question and the reason elided at worst, whole in their tooltips."""
    from dataclasses import replace

    from tests.gui.fitting import assert_fits_sideways
    from workbench.gui.qt_replay import EPISODE_COLUMNS, EPISODE_STOPS

    window = make_main_window()
    window.resize(1280, 800)
    window.go("Replay")
    page = window.pages["Replay"]
    qtbot.waitUntil(lambda: page.episodes.isVisible() and not page.loading, timeout=20_000)
    episodes = [
        replace(
            summary(10 + i, 11 + i, i / 5, task=f"champ/number-theory-{i:04d}"),
            stop_reason=reason,
            n_turns=5,
        )
        for i, reason in enumerate((*EPISODE_STOPS, "cancelled"))
    ]
    page._on_episodes(None, listing(episodes))
    assert page.episodes.rowCount() == len(EPISODE_STOPS) + 1
    assert (window.width(), window.height()) == (1280, 800)
    why = EPISODE_COLUMNS.index("How it ended")
    assert_fits_sideways(page.episodes, stretched=[0, why])


def test_a_training_runs_episodes_show_whole_in_the_list_at_1280_by_800(
    make_main_window, qtbot, trained
):
    """The ids the bundled suites give their questions, every way an episode ends, the
    generations and candidates of the sandbox example (60 generations of 28): nothing in
    the list is elided at 1280 x 800, the question and why it ended included (elision is
    for a value that is long, such as a CHAMP id, above)."""
    from dataclasses import replace

    from tests.gui.fitting import assert_fits_sideways
    from workbench.gui.qt import QApplication
    from workbench.gui.qt_replay import EPISODE_COLUMNS, EPISODE_STOPS
    from workbench.gui.replay_model import ending_word

    ws, run_id = trained
    window = make_main_window(workspace=ws)
    window.resize(1280, 800)
    window.go("Replay")
    page = window.pages["Replay"]
    qtbot.waitUntil(lambda: page.runs.findData(run_id) >= 0)
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    qtbot.waitUntil(lambda: page.episodes.isVisible() and not page.loading, timeout=20_000)
    # the conversation beside the list: an episode's cards do not scroll sideways either
    first = page.episode_ids()[0]
    page.open_episode(first)
    qtbot.waitUntil(lambda: page.replay is not None and page.replay.episode.id == first)
    qtbot.waitUntil(lambda: bool(page.cards))
    QApplication.processEvents()
    bar = page.conversation_scroll.horizontalScrollBar()
    assert bar.maximum() == 0 and not bar.isVisible(), page.conversation_scroll.viewport().width()
    tasks = ("mixed-choice-095", "mixed-math-012", "mixed-code-007", "mixed-choice-100")
    # a run's list is long (the sample's has 120): its vertical scrollbar takes its width
    episodes = [
        replace(
            summary(59 - i % 60, 27 - i % 28, i % 5 / 4, task=tasks[i % 4]),
            stop_reason=EPISODE_STOPS[i % 4],
            n_turns=5,
        )
        for i in range(120)
    ]
    page._on_episodes(None, listing(episodes))
    why = EPISODE_COLUMNS.index("How it ended")
    assert_fits_sideways(page.episodes, stretched=[0, why])
    table = page.episodes
    for c in (0, why):  # each as wide as its content: whole, not elided
        widths = [table.columnWidth(k) for k in range(table.columnCount())]
        assert table.columnWidth(c) >= table.sizeHintForColumn(c), (
            c,
            widths,
            table.viewport().width(),
        )
    assert table.verticalScrollBar().isVisible()
    shown = {table.item(r, why).text() for r in range(table.rowCount())}
    assert shown == {ending_word(r, None) for r in EPISODE_STOPS}
    assert all("stop reason: " in table.item(r, why).toolTip() for r in range(table.rowCount()))


def test_the_page_opens_on_the_newest_run_and_follows_the_run_chosen(
    make_main_window, qtbot, trained, tiny_backbone
):
    """A newcomer who trained, evaluated and ran a single episode opens Replay: the newest
    run with episodes is chosen (not "single episodes", nor a newer run with none, which
    the line under the list counts), every run is listed by its name, kind and date
    (an evaluation by what it evaluated, never a stored dict), its best episode shows; and
    another run chosen replaces the whole right side with that run's episode."""
    from dataclasses import replace

    from workbench.core.jobs.evaluate import evaluate_run
    from workbench.gui.qt_replay_cards import TurnCard
    from workbench.gui.replay_model import LOOSE

    ws, run_id = trained
    with Store.open(ws) as store:  # an episode outside any run (run-episode stores one)
        some = store.get_episode(store.list_episodes(run_id)[0].id)
        store.add_episode(replace(some, id="loose-episode", run_id=None, generation=None))
    result = evaluate_run(ws, run=run_id, backbone=tiny_backbone)
    with Store.open(ws) as store:  # the newest: a run with no episode (on a routing table)
        store.create_run("on a table", "train", {})
    window = make_main_window(workspace=ws)
    window.resize(1280, 800)
    window.go("Replay")
    page = window.pages["Replay"]
    qtbot.waitUntil(lambda: page.replay is not None, timeout=30_000)
    assert page.runs.currentData() == result.run_id != LOOSE
    assert page.runs_note.isVisible()
    assert page.runs_note.text().startswith("Not listed: 1 run without episodes")
    labels = [page.runs.itemText(i) for i in range(page.runs.count())]
    with Store.open(ws) as store:
        name = store.get_run(run_id).name
    assert name.startswith("t, ")  # the config's name and the day: runs told apart
    assert labels[0].startswith(f"evaluation of '{name}' · evaluation · today ")
    # its name carries the day: the list adds the time alone
    assert re.fullmatch(rf"{re.escape(name)} · training · \d\d:\d\d", labels[1]), labels[1]
    assert labels[-1] == "single episodes (not in a run)"
    assert not any("{" in label for label in labels)
    assert page.replay.episode.run_id == result.run_id
    assert page.replay.episode.id == page.episode_ids()[0]  # the list's first: the best
    # another run: its best episode, and none of the evaluation's cards left in view
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    qtbot.waitUntil(
        lambda: page.replay is not None and page.replay.episode.run_id == run_id,
        timeout=30_000,
    )
    assert page.replay.episode.id == page.episode_ids()[0]

    def shown() -> list:
        return [card for card in page.conversation.findChildren(TurnCard) if card.isVisible()]

    # the new cards show once the event loop has laid them out (later on a busy machine)
    qtbot.waitUntil(lambda: shown() == page.cards, timeout=10_000)
    assert len(shown()) == len(page.replay.episode.turns)
    assert f"question {page.replay.episode.task_id}" in page.header.text()
    # the list's words: how each episode ended, with the right plural under it
    words = {page.episodes.item(r, 5).text() for r in range(page.episodes.rowCount())}
    assert words <= {"accepted", "answered", "out of turns", "Verifier too early", "calls failed"}
    assert page.list_note.text().startswith(f"{page.episodes.rowCount()} episodes")


def test_a_recorded_pools_turn_names_each_model_once_and_fits_beside_the_list(
    make_main_window, qtbot, gui_workspace
):
    """A turn of a six-model recorded pool at 1280 x 800: the card fits beside the list
    without scrolling sideways (its worker and role charts stack when they do not fit side
    by side; the card was 31 pixels wider than its view, the chosen role's mark and the
    failed call's message cut), the pool's shared ``recorded:NAME/`` is said once under
    the chart's title and each row names its model, whole; a sandbox pool's charts still
    stand side by side."""
    from dataclasses import replace

    from tests.core.test_store import make_episode
    from tests.support.mmlu_pro import SMALL_SIX
    from workbench.core.records import Role
    from workbench.gui.qt import QApplication

    pool = tuple(f"recorded:small-6-3000/{model}" for model in SMALL_SIX)
    failed = (
        f"worker '{pool[2]}': no recorded answer for task 'serve-6392dce17ab26c6d': this "
        "pool covers 3000 tasks; use a suite the recording covers or add a live worker"
    )
    with Store.open(gui_workspace) as store:
        run_id = store.create_run("mmlu-pro small-6-3000 (coordinator, cv 1/5)", "evaluate", {})
        played = make_episode("recorded-pool", run_id=run_id, workers=(pool[2],))
        turn = replace(
            played.turns[0],
            role=Role.WORKER,
            worker_probs=(0.39, 0.0, 0.56, 0.05, 0.0, 0.0),
            role_probs=(0.0, 1.0, 0.0),
            response="",
            error=failed,
        )
        store.add_episode(replace(played, pool=pool, turns=(turn,)))
        sandbox = make_episode("sandbox-pool", run_id=run_id, workers=("gpt", "claude"))
        store.add_episode(replace(sandbox, created_at=played.created_at - 1))
    window = make_main_window()
    window.resize(1280, 800)
    window.go("Replay")
    page = window.pages["Replay"]
    qtbot.waitUntil(lambda: page.runs.findData(run_id) >= 0, timeout=20_000)
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    settle(qtbot, page)
    page.open_episode("recorded-pool")
    qtbot.waitUntil(lambda: page.replay is not None and bool(page.cards), timeout=20_000)
    qtbot.waitUntil(lambda: page.replay.episode.id == "recorded-pool")
    bar = page.conversation_scroll.horizontalScrollBar()
    (card,) = page.cards
    bars = card.worker_bars
    assert bars.prefix == "recorded:small-6-3000/"
    assert [label.text() for label in bars.labels] == list(SMALL_SIX)

    def laid_out() -> None:  # once the card has its width
        QApplication.processEvents()
        assert bar.maximum() == 0, (bar.maximum(), page.conversation_scroll.viewport().width())
        for label in [*bars.labels, *card.role_bars.labels]:
            assert label.width() >= label.sizeHint().width(), label.text()  # whole
        assert card.charts.stacked()
        assert card.grade.height() > 2 * card.grade.fontMetrics().height()  # wrapped

    qtbot.waitUntil(laid_out, timeout=5_000)
    # a pool of short names: the two charts side by side, no prefix to say
    page.open_episode("sandbox-pool")
    qtbot.waitUntil(lambda: page.replay.episode.id == "sandbox-pool")
    assert page.cards[0].worker_bars.prefix == ""

    def side_by_side() -> None:
        QApplication.processEvents()
        assert not page.cards[0].charts.stacked() and bar.maximum() == 0

    qtbot.waitUntil(side_by_side, timeout=5_000)
