"""The Replay page over a real stored sandbox run: the shown worker, role and
probabilities are the stored ones, stepping works by buttons and arrow keys, and an
episode exports as JSON."""

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from tests.core.test_training import config  # noqa: E402
from workbench.core.runs import train  # noqa: E402
from workbench.core.store import Store  # noqa: E402
from workbench.core.workspace import Workspace  # noqa: E402


@pytest.fixture()
def trained(tmp_path, tiny_backbone):
    ws = Workspace.open(tmp_path / "ws")
    run_id = train(config(budget={"generations": 1}), ws, backbone=tiny_backbone)
    return ws, run_id


def test_replay_page_shows_the_stored_decisions(qtbot, trained, tmp_path):
    from workbench.gui.qt import Qt
    from workbench.gui.qt_replay import QtReplay

    ws, run_id = trained
    page = QtReplay(ws)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.runs.findData(run_id) >= 0)
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    qtbot.waitUntil(lambda: not page.loading)
    assert page.episodes.count() == 12 + 6  # 4 candidates x 3 tasks, and the validation
    with Store.open(ws) as store:
        ids = [
            page.episodes.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(page.episodes.count())
        ]
        episode = max((store.get_episode(i) for i in ids), key=lambda e: len(e.turns))
    page.open_episode(episode.id)
    qtbot.waitUntil(lambda: page.replay is not None)
    for index, turn in enumerate(episode.turns):
        assert page.replay.index == index
        assert page.worker_bars.probs == turn.worker_probs
        assert episode.pool[page.worker_bars.chosen] == turn.worker
        assert page.role_bars.probs == turn.role_probs
        assert str(turn.role) in page.meta.text() and turn.worker in page.meta.text()
        assert f"cost ${turn.cost:.6f} (simulated)" in page.meta.text()  # sandbox dollars
        assert page.response.toPlainText() == (turn.response or turn.error or "")
        qtbot.keyClick(page, Qt.Key.Key_Right)
    assert page.replay.at_end and "final answer" in page.outcome.toPlainText()
    page.first_button.click()
    assert page.replay.index == 0 and page.slider.value() == 0
    out = tmp_path / "episode.json"
    page.export_episode(str(out))
    qtbot.waitUntil(lambda: page.exported == str(out))
    assert json.loads(out.read_text())["id"] == episode.id
    page.shutdown()


def test_filters_narrow_the_episode_list(qtbot, trained):
    from workbench.gui.qt_replay import QtReplay

    ws, run_id = trained
    page = QtReplay(ws)
    qtbot.addWidget(page)

    def settled():
        qtbot.waitUntil(lambda: not page.loading)
        return page.episodes.count()

    qtbot.waitUntil(lambda: page.runs.findData(run_id) >= 0)
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    everything = settled()
    page.reward_filter.setCurrentText("reward 1")
    winners = settled()
    page.reward_filter.setCurrentText("reward 0")
    assert winners + settled() == everything and everything == 18
    page.reward_filter.setCurrentText("any reward")
    page.task_filter.setText("no-such-task")
    page.task_filter.editingFinished.emit()
    assert settled() == 0
    page.shutdown()


def test_the_timeline_lists_every_turn_and_a_click_jumps_to_it(qtbot, trained):
    from workbench.core.records import ROLES
    from workbench.gui.qt import Qt
    from workbench.gui.qt_replay import TIMELINE, QtReplay

    ws, run_id = trained
    page = QtReplay(ws)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.runs.findData(run_id) >= 0)
    page.runs.setCurrentIndex(page.runs.findData(run_id))
    qtbot.waitUntil(lambda: not page.loading and page.episodes.count() > 0)
    with Store.open(ws) as store:
        ids = [
            page.episodes.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(page.episodes.count())
        ]
        episode = max((store.get_episode(i) for i in ids), key=lambda e: len(e.turns))
    assert len(episode.turns) >= 2  # something to jump between
    page.open_episode(episode.id)
    qtbot.waitUntil(lambda: page.replay is not None and page.replay.episode.id == episode.id)

    table = page.timeline
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert tuple(headers) == TIMELINE
    assert table.rowCount() == len(episode.turns)
    for row, turn in enumerate(episode.turns):
        cells = {h: table.item(row, c).text() for c, h in enumerate(headers)}
        assert cells["Turn"] == str(row + 1)
        assert cells["Role"] == str(turn.role) and cells["Worker"] == turn.worker
        chosen = turn.worker_probs[episode.pool.index(turn.worker)]
        assert cells["p(worker)"] == f"{chosen:.2f}"
        role_p = turn.role_probs[[str(r) for r in ROLES].index(str(turn.role))]
        assert cells["p(role)"] == f"{role_p:.2f}"
        assert cells["Tokens in/out"] == f"{turn.tokens_in}/{turn.tokens_out}"
        assert cells["Cost"] == f"${turn.cost:.6f} (simulated)"
        if turn.verdict and turn.verdict_parsed:
            assert cells["Verdict"] == str(turn.verdict)
    assert table.selectionModel().selectedRows()[0].row() == 0

    # a click on the last turn's row shows that turn; stepping moves the selection back
    last = len(episode.turns) - 1
    rect = table.visualItemRect(table.item(last, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert page.replay.index == last and page.slider.value() == last
    assert page.position.text() == f"turn {last + 1} / {last + 1}"
    assert "final answer" in page.outcome.toPlainText()
    qtbot.keyClick(page, Qt.Key.Key_Left)
    assert table.selectionModel().selectedRows()[0].row() == last - 1
    page.shutdown()


def test_the_timeline_marks_a_role_the_thinker_picked():
    from tests.core.test_shaping import thinker_override_episode
    from workbench.core.replay import TIMELINE, timeline_rows

    rows = timeline_rows(thinker_override_episode())
    roles = [row[TIMELINE.index("Role")] for row in rows]
    assert roles == ["thinker", "worker (Thinker's pick)", "thinker"]
