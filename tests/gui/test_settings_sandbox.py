"""The Settings page says which isolation generated code gets here, and says plainly when
there is none (real probe of bubblewrap; a PATH without it for the other case)."""

from __future__ import annotations

import pytest

from workbench.core.tasks.sandbox import UNISOLATED_ENV, detect_isolation


@pytest.fixture()
def fresh_probe():
    detect_isolation.cache_clear()
    yield
    detect_isolation.cache_clear()


def test_settings_page_shows_the_isolation(make_main_window, qtbot, fresh_probe) -> None:
    window = make_main_window()
    window.show()
    page = window.pages["Settings"]
    window.nav.setCurrentRow(list(window.pages).index("Settings"))  # as a user opens it
    qtbot.waitUntil(lambda: page.isolation_label.text() != "checking…")
    text = page.isolation_label.text()  # in plain words, the details in its tooltip
    assert text.startswith("Programs written for code questions run in a sandbox"), text
    assert "cut off from the network and from your files" in text and "/" not in text
    details = page.isolation_label.toolTip()
    assert details.startswith("Generated programs run isolated: bubblewrap"), details
    assert "no network" in details


def test_without_bubblewrap_the_page_says_not_isolated(monkeypatch, fresh_probe) -> None:
    from workbench.gui.qt_settings import isolation_text

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv(UNISOLATED_ENV, raising=False)
    text, _details = isolation_text()
    assert text.startswith("NOT ISOLATED: bubblewrap (bwrap) is not installed")
    assert f"{UNISOLATED_ENV}=1" in text and "refused" in text
    monkeypatch.setenv(UNISOLATED_ENV, "1")
    assert "Code tasks run anyway" in isolation_text()[0]
