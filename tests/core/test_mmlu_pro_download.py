"""Downloading MMLU-Pro's files from a real loopback HTTP server that serves the official
files as the code host does (Range requests answered 206): progress, the SHA-256 checked
against the one the project keeps, a download cut mid-file resumed with a Range request,
a cancel, a server that ignores Range, a damaged part deleted, an unknown model named
with the fix, and the command line."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import threading

import pytest

from tests.support.mmlu_pro import mmlu_pro_file
from tests.support.range_server import RangeServer
from workbench.core.importers.download import (
    KNOWN,
    ChecksumMismatch,
    DownloadCancelled,
    DownloadError,
    UnknownModel,
    download,
    file_name,
    model_name,
)

MODELS = ("gemma-7b", "jamba-1.5-large")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """A folder of the official files as the repository serves them, plus a model whose
    checksum the workbench does not know (a copy under another name) and a broken one."""
    folder = tmp_path_factory.mktemp("upstream")
    for model in MODELS:
        shutil.copy(mmlu_pro_file(model), folder / file_name(model))
    shutil.copy(mmlu_pro_file("gemma-7b"), folder / file_name("my-own-model"))
    (folder / file_name("broken-model")).write_bytes(b"PK\x03\x04" + b"x" * 5000)
    return folder


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_files_download_with_progress_and_their_published_checksum(upstream, tmp_path):
    events = []
    with RangeServer(upstream) as server:
        done = download(MODELS, tmp_path, base_url=server.base_url, progress=events.append)
        again = download(MODELS, tmp_path, base_url=server.base_url)
    for item, model in zip(done, MODELS, strict=True):
        assert item.path == tmp_path / file_name(model) and item.checked
        assert (
            (item.sha256, item.size) == KNOWN[model] == (_sha(item.path), item.path.stat().st_size)
        )
        assert not item.already and item.resumed_from == 0
        ours = [e for e in events if e.model == model and e.phase == "downloading"]
        assert [e.done for e in ours] == sorted(e.done for e in ours)  # only forward
        assert ours[-1].done == ours[-1].total == KNOWN[model][1]
        assert any(e.phase == "checking" and e.model == model for e in events)
    assert all(item.already for item in again)  # nothing fetched a second time
    assert [r[0] for r in server.requests] == [file_name(m) for m in MODELS]
    assert not list(tmp_path.glob("*.part"))


def test_a_download_cut_mid_file_resumes_with_a_range_request(upstream, tmp_path):
    name, size = file_name("gemma-7b"), KNOWN["gemma-7b"][1]
    with RangeServer(upstream) as server:
        server.cut(name, 1_000_000)
        with pytest.raises(
            DownloadError, match="stopped at .* of 3.3 MB .*run the same download again"
        ):
            download(["gemma-7b"], tmp_path, base_url=server.base_url)
        part = tmp_path / (name + ".part")
        kept = part.stat().st_size
        assert 0 < kept <= 1_000_000 and not (tmp_path / name).exists()
        (item,) = download(["gemma-7b"], tmp_path, base_url=server.base_url)
    assert server.requests[-1] == (name, f"bytes={kept}-", 206)
    assert item.resumed_from == kept and item.checked and item.size == size
    assert _sha(item.path) == KNOWN["gemma-7b"][0] and not part.exists()


def test_a_cancelled_download_keeps_its_part_and_the_next_one_finishes_it(upstream, tmp_path):
    cancel = threading.Event()

    def stop_midway(event):
        if event.done > 500_000:
            cancel.set()

    with RangeServer(upstream) as server:
        with pytest.raises(DownloadCancelled, match="the part is kept"):
            download(
                ["jamba-1.5-large"],
                tmp_path,
                base_url=server.base_url,
                progress=stop_midway,
                cancel=cancel,
            )
        kept = (tmp_path / (file_name("jamba-1.5-large") + ".part")).stat().st_size
        (item,) = download(["jamba-1.5-large"], tmp_path, base_url=server.base_url)
    assert 500_000 < kept < KNOWN["jamba-1.5-large"][1] and item.resumed_from == kept
    assert item.sha256 == KNOWN["jamba-1.5-large"][0]


def test_a_server_that_ignores_range_is_read_from_the_start(upstream, tmp_path):
    part = tmp_path / (file_name("gemma-7b") + ".part")
    part.write_bytes(mmlu_pro_file("gemma-7b").read_bytes()[:700_000])
    with RangeServer(upstream, ignore_range=True) as server:
        (item,) = download(["gemma-7b"], tmp_path, base_url=server.base_url)
    assert server.requests == [(file_name("gemma-7b"), "bytes=700000-", 200)]
    assert item.resumed_from == 0 and item.sha256 == KNOWN["gemma-7b"][0]


def test_a_damaged_part_fails_its_checksum_and_is_deleted(upstream, tmp_path):
    part = tmp_path / (file_name("gemma-7b") + ".part")
    part.write_bytes(b"\0" * 100_000)  # not the file's first bytes
    with RangeServer(upstream) as server:
        with pytest.raises(ChecksumMismatch, match="damaged.*SHA-256.*deleted"):
            download(["gemma-7b"], tmp_path, base_url=server.base_url)
        assert not part.exists() and not (tmp_path / file_name("gemma-7b")).exists()
        (item,) = download(["gemma-7b"], tmp_path, base_url=server.base_url)
    assert item.resumed_from == 0 and item.sha256 == KNOWN["gemma-7b"][0]


def test_other_models_are_shown_their_checksum_and_checked_as_zips(upstream, tmp_path):
    with RangeServer(upstream) as server:
        (item,) = download(["my-own-model"], tmp_path, base_url=server.base_url)
        assert not item.checked and item.sha256 == _sha(item.path)
        with pytest.raises(ChecksumMismatch, match="not a readable zip file"):
            download(["broken-model"], tmp_path, base_url=server.base_url)
        assert not list(tmp_path.glob("*broken*"))
        with pytest.raises(UnknownModel) as unknown:
            download(["Llama-9-Giant"], tmp_path, base_url=server.base_url)
    text = str(unknown.value)
    assert "no file for model 'Llama-9-Giant'" in text and "eval_results" in text
    assert "answered 404" in text and "e.g. Meta-Llama-3_1-70B-Instruct" in text
    assert model_name("model_outputs_gemma-7b_5shots.zip") == "gemma-7b"
    with pytest.raises(UnknownModel, match="cannot be an MMLU-Pro model name"):
        model_name("../etc/passwd")


def test_the_download_command(upstream, tmp_path):
    with RangeServer(upstream) as server:
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "records", "download", "gemma-7b", "--dir"]
            + [str(tmp_path), "--base-url", server.base_url],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert "downloading gemma-7b" in done.stderr  # a plain line off a terminal
        assert f"SHA-256 {KNOWN['gemma-7b'][0]} (matches the published checksum)" in done.stdout
        assert "records import --format mmlu-pro" in done.stdout
        missing = subprocess.run(
            [sys.executable, "-m", "workbench", "records", "download", "Nope-1B", "--dir"]
            + [str(tmp_path), "--base-url", server.base_url],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert missing.returncode == 2 and "no file for model 'Nope-1B'" in missing.stderr
    assert "Traceback" not in missing.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "workbench", "records", "download", "--list"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert all(model in listed.stdout for model in KNOWN)
