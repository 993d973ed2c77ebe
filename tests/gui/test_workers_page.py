"""The Workers page with the real components a user has: a Secret Service keyring on a
private D-Bus session (the ``keychain`` fixture) and an OpenAI-compatible server on
loopback (``fault_server``). A key typed in the dialog lands in the keychain and nowhere
else, on screen or on disk; tests and model lists run in the background and their
outcomes (or readable errors) appear in the page."""

from __future__ import annotations

import os
import time

import keyring
import pytest

from tests.support.fault_server import MODEL, Fault
from workbench.core.keychain import SERVICE, KeyStore
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import PRESETS, WorkerSpec

KEY = "sk-test-GUI-WORKERS-7f3a9c1e5b2d4f6a"
NEW_KEY = "sk-test-GUI-REPLACED-0a1b2c3d4e5f6789"


@pytest.fixture()
def workers_page(qtbot):
    """Makes Workers pages over a registry (default: the user's, isolated per test) once
    their first listing is shown; at teardown no background job of theirs still runs."""
    from workbench.gui.background import running
    from workbench.gui.qt_workers import QtWorkers

    pages = []

    def make(registry: Registry | None = None) -> QtWorkers:
        page = QtWorkers(registry)
        qtbot.addWidget(page)
        with qtbot.waitSignal(page.refreshed, timeout=20_000):
            page.show()
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.shutdown()
        assert not running(page)


def shown_texts(page) -> list[str]:
    """Every text on screen: each widget's text, placeholder, title and tooltip, and each
    table cell with its tooltip."""
    from workbench.gui.qt import QApplication

    texts = []
    for widget in QApplication.allWidgets():
        for name in (
            "text",
            "toPlainText",
            "currentText",
            "placeholderText",
            "windowTitle",
            "toolTip",
        ):
            getter = getattr(widget, name, None)
            if callable(getter):
                try:
                    value = getter()
                except TypeError:  # an overload that needs arguments
                    continue
                if isinstance(value, str):
                    texts.append(value)
    for row in range(page.table.rowCount()):
        for column in range(page.table.columnCount()):
            item = page.table.item(row, column)
            if item is not None:
                texts += [item.text(), item.toolTip()]
    return texts


def save(qtbot, page, dialog) -> None:
    from workbench.gui.qt import QDialogButtonBox

    with qtbot.waitSignals([dialog.saved, page.refreshed], timeout=20_000):
        dialog.buttons.button(QDialogButtonBox.StandardButton.Save).click()


def test_a_worker_added_in_the_dialog_keeps_its_key_in_the_keychain_only(
    keychain, fault_server, workers_page, qtbot
):
    from workbench.gui.qt import QLineEdit

    page = workers_page()
    dialog = page.open_dialog()
    dialog.worker_id.setText("loop")
    dialog.provider.setCurrentText("groq")
    assert dialog.base_url.text() == PRESETS["groq"].base_url  # a preset fills its URL
    dialog.provider.setCurrentText("vllm")
    assert dialog.base_url.text() == PRESETS["vllm"].base_url
    dialog.base_url.setText(fault_server.base_url)
    qtbot.keyClicks(dialog.key, KEY)
    assert dialog.key.echoMode() == QLineEdit.EchoMode.Password

    dialog.fetch_button.click()  # the model list comes from the server, with the key just typed
    qtbot.waitUntil(lambda: dialog.model.count() > 0, timeout=10_000)
    assert [dialog.model.itemText(i) for i in range(dialog.model.count())] == [MODEL]
    assert dialog.model.currentText() == MODEL
    listing = [r for r in fault_server.requests if r.path.endswith("/models")][-1]
    assert listing.headers["authorization"] == f"Bearer {KEY}"
    assert keyring.get_password(SERVICE, "loop") is None  # listing models stores nothing

    dialog.price_in.setValue(0.15)
    dialog.price_out.setValue(0.6)
    dialog.concurrency.setValue(3)
    save(qtbot, page, dialog)

    assert keyring.get_password(SERVICE, "loop") == KEY
    assert [
        page.cell("loop", c)
        for c in ("Provider", "Model", "$/M in", "$/M out", "Concurrency", "Key")
    ] == ["openai", MODEL, "0.15", "0.6", "3", "in keychain"]
    assert page.selected_id() == "loop"
    assert not any(KEY in text for text in shown_texts(page))
    assert KEY not in page.registry.path.read_text()
    assert not [p for p in _files(os.environ["XDG_CONFIG_HOME"]) if KEY.encode() in p.read_bytes()]


def test_a_stored_key_is_never_shown_and_can_be_replaced_then_removed_with_the_worker(
    keychain, workers_page, qtbot
):
    Registry().add(
        WorkerSpec(
            id="gpt", provider="openai", model="gpt-4o-mini", extra={"reasoning_effort": "low"}
        ),
        key=KEY,
    )
    page = workers_page()
    page.select("gpt")
    dialog = page.edit_selected()
    assert dialog.key.isHidden() and dialog.key.text() == ""  # the stored key is not even loaded
    assert not dialog.key_note.isHidden() and dialog.key_note.text() == "key stored in keychain"
    assert not any(KEY in text for text in shown_texts(page))

    dialog.replace_key_button.click()
    assert not dialog.key.isHidden() and dialog.replace_key_button.isHidden()
    qtbot.keyClicks(dialog.key, NEW_KEY)
    dialog.price_in.setValue(0.2)
    save(qtbot, page, dialog)
    assert keyring.get_password(SERVICE, "gpt") == NEW_KEY
    assert page.cell("gpt", "$/M in") == "0.2" and page.cell("gpt", "Key") == "in keychain"
    assert dict(Registry().get("gpt").extra) == {
        "reasoning_effort": "low"
    }  # fields the dialog lacks stay
    assert not any(NEW_KEY in text or KEY in text for text in shown_texts(page))

    with qtbot.waitSignal(page.refreshed, timeout=20_000):
        page.remove_selected(confirm=False)
    assert page.row_of("gpt") is None and Registry().find("gpt") is None
    assert keyring.get_password(SERVICE, "gpt") is None
    assert "Removed worker 'gpt' and its key." == page.status.text()


def test_a_connection_test_runs_in_the_background_and_shows_the_result_and_latency(
    keychain, fault_server, workers_page, qtbot
):
    from workbench.gui.qt import QTimer

    Registry().add(
        WorkerSpec(id="loop", provider="openai", model=MODEL, base_url=fault_server.base_url),
        key=KEY,
    )
    fault_server.latency = 0.6  # a slow server: the page must stay responsive meanwhile
    page = workers_page()
    page.select("loop")
    ticks = []
    timer = QTimer(page)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(20)
    started = time.perf_counter()
    page.test_button.click()
    assert time.perf_counter() - started < 0.3  # the click returns long before the reply
    assert page.cell("loop", "Last test") == "testing…" and not page.test_button.isEnabled()
    with qtbot.waitSignal(page.tested, timeout=20_000):
        pass
    timer.stop()
    assert len(ticks) >= 10  # the event loop kept turning during the 0.6 s request
    assert page.cell("loop", "Last test") == f"OK ({MODEL})"
    latency_ms = float(page.cell("loop", "Latency").removesuffix(" ms"))
    assert 600 <= latency_ms < 20_000
    assert page.reports["loop"].ok and "OK in" in page.status.text()
    assert fault_server.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    assert page.test_button.isEnabled()


def test_a_failing_connection_test_shows_a_readable_error(
    keychain, fault_server, workers_page, qtbot
):
    Registry().add(
        WorkerSpec(id="loop", provider="openai", model=MODEL, base_url=fault_server.base_url),
        key=KEY,
    )
    fault_server.script(Fault.status_code(401, f"Incorrect API key provided: {KEY}"))
    page = workers_page()
    with qtbot.waitSignal(page.tested, timeout=20_000):
        page.test("loop")
    assert page.cell("loop", "Last test") == "failed: AuthError"
    text = page.status.text()
    assert "the API key was rejected (401 Unauthorized)" in text and "workers set-key loop" in text
    assert "Traceback" not in text and KEY not in text

    fault_server.stop()  # nobody listens any more: a network error
    with qtbot.waitSignal(page.tested, timeout=30_000):
        page.test("loop")
    assert page.cell("loop", "Last test") == "failed: WorkerUnreachable"
    assert "cannot connect to http://127.0.0.1:" in page.status.text()


def test_a_bad_spec_is_named_in_the_dialog_and_nothing_is_saved(keychain, workers_page, qtbot):
    from workbench.gui.qt import QDialogButtonBox

    page = workers_page()
    dialog = page.open_dialog()
    dialog.worker_id.setText("w1")
    dialog.base_url.setText("ftp://example.com/v1")
    dialog.model.setEditText("m")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert "'base_url' must be an http:// or https:// URL" in dialog.error.text()
    dialog.base_url.setText(PRESETS["openai"].base_url)
    dialog.model.setEditText("")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert "field 'model' is empty" in dialog.error.text()
    assert dialog.isVisible() and not Registry().path.exists()


def test_without_a_keyring_the_key_is_refused_with_the_fix_and_nothing_is_saved(
    workers_page, qtbot
):
    from keyring.backends import fail

    from workbench.gui.qt import QDialogButtonBox

    registry = Registry(keys=KeyStore(fail.Keyring()))
    page = workers_page(registry)
    dialog = page.open_dialog()
    dialog.worker_id.setText("gpt")
    dialog.model.setEditText("gpt-4o-mini")
    qtbot.keyClicks(dialog.key, KEY)
    dialog.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    heights = [w.height() for w in (dialog.worker_id, dialog.model, dialog.key)]
    qtbot.waitUntil(lambda: dialog.error.text() != "", timeout=10_000)
    text = dialog.error.text()
    # one sentence: what is missing and what to do, and where the docs say how
    assert text.startswith("Worker 'gpt' was not saved: this computer has no secure keychain")
    assert "OPENAI_API_KEY" in text and "docs/guides/workers.md#no-keychain" in text
    assert "keyring.backends" not in text and "`" not in text and KEY not in text
    # the technical fix (commands, backends) behind a button, in a box of fixed height
    assert dialog.details_button.isVisible() and not dialog.details.isVisible()
    dialog.details_button.click()
    details = dialog.details.toPlainText()
    assert dialog.details.isVisible() and "gnome-keyring" in details and KEY not in details
    qtbot.wait(50)  # the dialog grows to its new minimum: the fields keep their height
    assert [w.height() for w in (dialog.worker_id, dialog.model, dialog.key)] == heights
    assert dialog.isVisible() and not registry.path.exists()


def test_models_that_cannot_be_listed_and_a_broken_registry_file_say_why(
    fault_server, workers_page, qtbot
):
    page = workers_page()
    dialog = page.open_dialog()
    dialog.provider.setCurrentText("vllm")
    dialog.base_url.setText(fault_server.base_url)
    fault_server.stop()
    dialog.fetch_button.click()
    qtbot.waitUntil(lambda: dialog.error.text() != "", timeout=30_000)
    assert dialog.error.text().startswith(
        "Cannot list models: worker 'new-worker': cannot connect to http://"
    )
    assert dialog.model.count() == 0 and dialog.fetch_button.isEnabled()

    Registry().path.parent.mkdir(parents=True, exist_ok=True)
    Registry().path.write_text("[workers.gpt\nprovider = 'openai'\n")
    with qtbot.waitSignal(page.refreshed, timeout=20_000):
        page.refresh_button.click()
    assert page.status.text().startswith("Cannot read the registered workers: worker registry ")
    assert "is not valid TOML" in page.status.text() and "Traceback" not in page.status.text()


def test_built_in_workers_are_listed_read_only(workers_page):
    page = workers_page()
    assert page.cell("local:smollm2", "Provider") == "local"
    assert page.cell("sandbox:coder", "Provider") == "sandbox" and "simulation" in page.cell(
        "sandbox:coder", "Model"
    )
    page.select("sandbox:coder")
    assert page.selected_id() == "sandbox:coder"
    assert not page.edit_button.isEnabled() and not page.remove_button.isEnabled()
    assert not page.test_button.isEnabled() and page.add_button.isEnabled()


def _files(root):
    from pathlib import Path

    return [p for p in Path(root).rglob("*") if p.is_file()]
