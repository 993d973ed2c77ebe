"""The Workers page's Import… and Download… (offscreen, waiting on signals): files become a
suite and a recorded pool in a background job with progress, every problem is listed and
nothing imported; MMLU-Pro's official files download from a real loopback HTTP server
(Range-capable) with progress and their checksum, a download cut mid-file or cancelled
resumes, and "Import these…" imports what was downloaded. Every read, write and network
call runs off the GUI thread."""

from __future__ import annotations

import json
import threading
import zipfile

import pytest

from tests.support.mmlu_pro import mmlu_pro_file
from tests.support.range_server import RangeServer
from workbench.core.importers.download import KNOWN, file_name

TIMEOUT = 60_000


def _item(qid, letter="B"):
    return {
        "question_id": qid,
        "question": f"Question {qid}?",
        "options": ["one", "two", "three", "four"],
        "answer": "B",
        "answer_index": 1,
        "category": "math" if qid % 2 else "law",
        "pred": letter,
        "generated_text": f"The answer is ({letter}).",
    }


def _zip(path, items):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(path.stem + ".json", json.dumps(items))
    return path


@pytest.fixture()
def box(qtbot, gui_workspace):
    """The recorded pools box of a Workers page, its first listing shown; at teardown the
    page's jobs are over."""
    from workbench.gui.background import running
    from workbench.gui.qt_workers import QtWorkers

    page = QtWorkers(workspace=gui_workspace)
    qtbot.addWidget(page)
    assert page.recorded is not None
    with qtbot.waitSignal(page.recorded.listed, timeout=TIMEOUT):
        page.show()
    yield page.recorded
    page.shutdown()
    assert not running(page)


@pytest.fixture()
def threads(monkeypatch):
    """The threads the dialogs' core calls ran on."""
    from workbench.gui import qt_import_dialog

    seen: list[threading.Thread] = []
    for name in ("import_mmlu_pro", "import_lm_eval", "download"):
        real = getattr(qt_import_dialog, name)

        def wrapped(*args, _real=real, **kwargs):
            seen.append(threading.current_thread())
            return _real(*args, **kwargs)

        monkeypatch.setattr(qt_import_dialog, name, wrapped)
    return seen


def test_import_makes_a_suite_and_a_pool_in_the_background(qtbot, box, tmp_path, threads):
    files = [
        _zip(tmp_path / "model_outputs_alpha_5shots.zip", [_item(1), _item(2, "C")]),
        _zip(tmp_path / "model_outputs_beta_5shots.zip", [_item(1, "D"), _item(2)]),
    ]
    dialog = box.open_import()
    dialog.add_files(files)
    dialog.name.setText("gui")
    events = []
    dialog.progress.connect(events.append)
    with qtbot.waitSignal(dialog.imported, timeout=TIMEOUT) as imported:
        dialog.import_button.click()
    info = imported.args[0]
    assert (info.name, info.suite, info.answers) == ("gui", "gui", 4)
    assert "Imported 4 answers of 2 workers to 2 questions" in dialog.stage.text()
    assert {e.stage for e in events} >= {"read", "write"}
    assert threads and all(t is not threading.main_thread() for t in threads)
    qtbot.waitUntil(lambda: box.pools and any(p.name == "gui" for p in box.pools), timeout=TIMEOUT)
    assert box.cell("recorded:gui/alpha", "Answers") == "2"
    assert box.cell("recorded:gui/beta", "Covers") == "2/2 of gui (100%)"


def test_import_lists_every_problem_and_imports_nothing(qtbot, box, gui_workspace, tmp_path):
    broken = tmp_path / "model_outputs_cut_5shots.zip"
    broken.write_bytes(b"PK\x03\x04 half a zip")
    bad = _zip(tmp_path / "model_outputs_bad_5shots.zip", [{**_item(1), "answer": "AB"}])
    dialog = box.open_import(files=[broken, bad])
    dialog.name.setText("bad")
    with qtbot.waitSignal(dialog.failed, timeout=TIMEOUT):
        dialog.import_button.click()
    assert "2 problem(s) in 2 file(s)" in dialog.error.text()
    listed = dialog.problems.toPlainText().splitlines()
    assert listed[0].startswith("model_outputs_cut_5shots.zip: is not a complete zip file")
    assert listed[1].startswith("model_outputs_bad_5shots.zip, item 1: answer: must be an option")
    assert not (gui_workspace.records_dir / "bad.json").exists()
    assert dialog.import_button.isEnabled()


def test_download_resumes_a_cut_file_then_imports_it(qtbot, box, tmp_path, threads):
    name = file_name("gemma-7b")
    folder = mmlu_pro_file("gemma-7b").parent  # the shared folder, or the download cache
    with RangeServer(folder) as server:
        server.cut(name, 1_200_000)
        dialog = box.open_download(base_url=server.base_url)
        dialog.folder = tmp_path
        dialog.choose("gemma-7b")
        with qtbot.waitSignal(dialog.failed, timeout=TIMEOUT) as failed:
            dialog.download_button.click()
        assert "stopped at" in failed.args[0] and "resume" in failed.args[0]
        assert (tmp_path / (name + ".part")).is_file() and not (tmp_path / name).exists()
        with qtbot.waitSignal(dialog.downloaded, timeout=TIMEOUT) as done:
            dialog.download_button.click()
    (item,) = done.args[0]
    assert item.resumed_from > 0 and item.sha256 == KNOWN["gemma-7b"][0]
    assert server.requests[-1][1] == f"bytes={item.resumed_from}-"
    report = dialog.report.toPlainText()
    assert f"SHA-256 {KNOWN['gemma-7b'][0]} (matches the published checksum)" in report
    assert "resumed at" in report
    assert all(t is not threading.main_thread() for t in threads)
    dialog.import_button.click()
    importer = box.dialogs[-1]
    assert importer.paths() == [tmp_path / name] and importer.format_name == "mmlu-pro"
    importer.name.setText("gemma")
    with qtbot.waitSignal(importer.imported, timeout=TIMEOUT):
        importer.import_button.click()
    qtbot.waitUntil(lambda: any(p.name == "gemma" for p in box.pools), timeout=TIMEOUT)
    # 12,032 questions, 5 of them with their options cut to one in this file: left out
    assert box.cell("recorded:gemma/gemma-7b", "Answers") == "12027"


def test_a_cancelled_download_keeps_its_part_and_a_closing_page_stops_it(qtbot, box, tmp_path):
    name = file_name("jamba-1.5-large")
    folder = mmlu_pro_file("jamba-1.5-large").parent
    with RangeServer(folder, throttle_s=0.02) as server:
        dialog = box.open_download(base_url=server.base_url)
        dialog.folder = tmp_path
        dialog.choose("jamba-1.5-large")
        dialog.download_button.click()
        part = tmp_path / (name + ".part")
        qtbot.waitUntil(lambda: part.is_file() and part.stat().st_size > 0, timeout=TIMEOUT)
        assert "downloading jamba-1.5-large (1 of 1)" in dialog.stage.text()
        with qtbot.waitSignal(dialog.failed, timeout=TIMEOUT) as failed:
            dialog.cancel_button.click()
        assert "cancelled" in failed.args[0] and "the part is kept" in failed.args[0]
        kept = part.stat().st_size
        assert 0 < kept < KNOWN["jamba-1.5-large"][1]
        dialog.download_button.click()  # resumes; the page closes while it runs
        # (once the resumed download has added to the part: "resumed at" is said before
        # its first chunk arrives, and a page closed then stopped it with nothing added)
        qtbot.waitUntil(
            lambda: "resumed at" in dialog.stage.text() and part.stat().st_size > kept,
            timeout=TIMEOUT,
        )
        box.page.shutdown()  # returns once the download stopped at its next chunk
    assert kept < part.stat().st_size < KNOWN["jamba-1.5-large"][1]
    assert not (tmp_path / name).exists()


def test_import_reads_a_folder_of_lm_evaluation_harness_samples(qtbot, box, tmp_path):
    folder = tmp_path / "results" / "EleutherAI__pythia-160m"
    folder.mkdir(parents=True)
    sample = {
        "doc_id": 0,
        "doc": {"question": "2 + 2 = ?", "answer": "#### 4"},
        "target": "#### 4",
        "arguments": {"gen_args_0": {"arg_0": "Question: 2 + 2 = ?\nAnswer:", "arg_1": {}}},
        "resps": [["2 + 2 = 4. The answer is 4."]],
        "filtered_resps": ["4"],
        "filter": "strict-match",
        "metrics": ["exact_match"],
        "exact_match": 1.0,
    }
    path = folder / "samples_gsm8k_2024-06-01T12-00-00.123456.jsonl"
    path.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    dialog = box.open_import()
    dialog.set_format("lm-eval")
    dialog.add_files([tmp_path / "results"])
    dialog.name.setText("harness")
    with qtbot.waitSignal(dialog.imported, timeout=TIMEOUT) as imported:
        dialog.import_button.click()
    assert [w.worker_id for w in imported.args[0].workers] == [
        "recorded:harness/EleutherAI__pythia-160m"
    ]
