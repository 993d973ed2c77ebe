"""``--screenshot``: every page rendered with a sample run, evaluation and episode, and a
question answered in the Playground."""

from __future__ import annotations

from tests.core.test_training import config
from workbench.gui.app import PAGES


def test_every_page_is_rendered_with_sample_content(qtbot, tmp_path, tiny_backbone):
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace
    from workbench.gui.qt import QImage
    from workbench.gui.screenshots import file_name, take

    ws = tmp_path / "ws"
    files = take(
        tmp_path / "shots", ws, backbone=tiny_backbone, config=config(budget={"generations": 2})
    )
    assert [f.name for f in files] == [file_name(title) for title, _ in PAGES]
    assert files[0].name == "workers.png"
    for f in files:
        image = QImage(str(f))
        assert image.width() >= 1200 and image.height() >= 800
        # not a blank page: many distinct colours
        colours = {
            image.pixel(x, y)
            for x in range(0, image.width(), 37)
            for y in range(0, image.height(), 29)
        }
        assert len(colours) > 8, f.name
    with Store.open(Workspace.open(ws)) as store:  # the sample was made in the given workspace
        kinds = sorted(r.kind for r in store.list_runs())
        (serve,) = store.list_runs(kind="serve")
        answered = store.list_episodes(serve.id)
    assert kinds == ["eval", "serve", "train"]  # the Playground's question is a serve run
    assert len(answered) == 1  # ... answered, so its page shows an episode
