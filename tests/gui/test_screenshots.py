"""``--screenshot``: every page rendered with a sample run, evaluation and episode, and a
question answered in the Playground, in a 1280 x 800 window: with that content, every
button of every page is inside the window (nothing grew it past a laptop's screen)."""

from __future__ import annotations

from tests.core.test_training import config
from workbench.gui.app import PAGES


def test_every_page_is_rendered_with_sample_content(qtbot, tmp_path, tiny_backbone):
    from tests.gui.test_window import in_view, visible_buttons
    from workbench.core.store import Store
    from workbench.core.workspace import Workspace
    from workbench.gui.qt import QImage
    from workbench.gui.screenshots import VIEWS, file_name, take

    checked = {}

    def fits(window, title):
        page, scroll = window.pages[title], window.scrolls[title]
        assert window.width() == 1280 and window.height() == 800, title
        assert window.minimumSizeHint().height() <= 800, title
        # nothing to scroll, down or across
        assert page.height() <= scroll.viewport().height(), title
        assert page.width() <= scroll.viewport().width(), title
        buttons = visible_buttons(page)
        for button in buttons:
            assert in_view(button, page, scroll.viewport()), f"{title}: {button.text()!r} cut off"
        checked[title] = len(buttons)

    ws = tmp_path / "ws"
    files = take(
        tmp_path / "shots",
        ws,
        backbone=tiny_backbone,
        config=config(budget={"generations": 2}),
        on_page=fits,
    )
    # a picture per page, then one per further view of a page (the Headroom and cost tab)
    assert [f.name for f in files] == [file_name(title) for title, _ in PAGES] + [
        f"{name}.png" for name, _, _ in VIEWS
    ]
    assert files[0].name == "start.png" and set(checked) == {t for t, _ in PAGES}
    assert all(checked.values())
    for f in files:
        image = QImage(str(f))
        assert (image.width(), image.height()) == (1280, 800)
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
    assert kinds == [
        "eval",
        "headroom",  # the Headroom and cost tab's check of the sample's config
        "serve",
        "train",
        "train",
    ]  # two runs to compare  # the Playground's question is a serve run
    assert len(answered) == 1  # ... answered, so its page shows an episode


def test_no_page_shows_the_home_folder_or_the_workspace_path(
    qtbot, tmp_path, tiny_backbone, monkeypatch
):
    """Every page's screenshot, read back with tesseract-ocr: paths under the home folder
    are shown as ~/..., so neither the user's home nor the workspace's full path is on
    the screen (or in the docs' screenshots)."""
    import shutil
    import subprocess

    from workbench.gui.screenshots import take

    home = tmp_path / "home-of-someone"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    ws = home / "workbench-space"
    files = take(
        tmp_path / "shots", ws, backbone=tiny_backbone, config=config(budget={"generations": 2})
    )
    tesseract = shutil.which("tesseract")
    assert tesseract, "tesseract-ocr is a test dependency (scripts/system-packages.sh)"
    seen = {}
    for f in files:
        text = subprocess.run(
            [tesseract, str(f), "-"], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        seen[f.name] = text
        assert "home-of-someone" not in text, (f.name, text)
        assert str(tmp_path) not in text, (f.name, text)
    # the check reads paths where they are shown: the settings file and the workspace, as ~/
    assert "~/.config/trinity-workbench/settings" in seen["settings.png"].replace(" ", "")
    assert "~/workbench-space" in seen["settings.png"].replace(" ", "")
