"""MMLU-Pro's published per-model output files, fetched from their repository: the command
line's ``records download`` and the desktop app's Download share this code.

Each model's file is ``model_outputs_<MODEL>_5shots.zip`` in the folder ``eval_results/``
of github.com/TIGER-AI-Lab/MMLU-Pro, read at the commit ``UPSTREAM_COMMIT`` (a fixed
commit: the file at that address never changes, which is what makes resuming safe).

- **Resumable.** The bytes go to ``<file>.part`` first; a download that stops (a network
  failure, a cancel) keeps them, and the next one asks only for the rest (an HTTP
  ``Range`` request; a server that answers with the whole file instead is read from the
  start).
- **Never a partial file for a whole one.** The ``.part`` file becomes the file only once
  it is complete: its length as announced, its SHA-256 equal to the one kept here for the
  models in ``KNOWN`` (shown for the others), and every member of the zip readable with
  its CRC.
- **A name that is not upstream** (a 404) is an error naming the model and where the list
  of models is.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from workbench.core.errors import BadInput, Interrupted, WorkFailed
from workbench.core.printable import shown_path

UPSTREAM_REPOSITORY = "TIGER-AI-Lab/MMLU-Pro"
UPSTREAM_COMMIT = "f418b116db00b065c2aea046518d8fcf74d39872"
BASE_URL = (
    f"https://raw.githubusercontent.com/{UPSTREAM_REPOSITORY}/{UPSTREAM_COMMIT}/eval_results/"
)
LISTING_URL = f"https://github.com/{UPSTREAM_REPOSITORY}/tree/{UPSTREAM_COMMIT}/eval_results"
# the files' SHA-256 and size at UPSTREAM_COMMIT, checked after every download of these
KNOWN: dict[str, tuple[str, int]] = {
    "Meta-Llama-3_1-70B-Instruct": (
        "26573565138fcd27358a0945c9f525a7d9a75a756689058a0d5bfcbc64fa55cb",
        3745363,
    ),
    "Meta-Llama-3_1-8B-Instruct": (
        "d5e76b2564b5baad90892c3664287a51f562a3be792a130acaec458b8560a1cf",
        3937818,
    ),
    "Mistral-7B-Instruct-v0.2": (
        "ff1c5ae8a0f6412cca52537746f192476398c24590a3fb79e8f10c300ffa8248",
        3798841,
    ),
    "Phi-3-mini-4k-instruct": (
        "7f45083108479ef586cc6c855325294c1220a9fcb614066abf22234a26d7037e",
        3696740,
    ),
    "Qwen1.5-7B-Chat": (
        "e1819661f16044ee97734d292c9a7e40f38f9be0aae274642f07943ab69a37b5",
        4054339,
    ),
    "gemini-1.5-flash-002": (
        "fed3caed9a9c1bfc7da74e5116f70ffdb9023794d1677eb2f7d48a2a4adec2e7",
        3926017,
    ),
    "gemma-7b": (
        "479a85f9f3598c5db75279e95452dd972a719f09eda983925be3595cb60767d9",
        3293512,
    ),
    "jamba-1.5-large": (
        "c4685b28a9b56fcb1270d9d2674f4989f5fc45129f3f635207d3543d67da1a15",
        2920361,
    ),
    "mathstral-7B": (
        "c5613c4778e8dfe18d53015aa5f163fd86141cde22cdb7667f235d496e025f9a",
        3596659,
    ),
}
CHUNK = 64 * 1024
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
_FILE = re.compile(r"model_outputs_(?P<model>.+)_5shots\.zip")


class DownloadError(WorkFailed):
    """A download that could not finish (the network, the server): the message says how
    far it got, that the part is kept, and how to resume."""


class DownloadCancelled(Interrupted):
    """A download stopped on request; its part is kept for the next one to resume."""


class ChecksumMismatch(WorkFailed):
    """A downloaded file whose SHA-256, size or zip members are not what they must be; the
    damaged part is deleted (the next download starts afresh)."""


class UnknownModel(BadInput, LookupError):
    """A model name MMLU-Pro's repository has no file for, or one that cannot be a name."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True, kw_only=True)
class DownloadProgress:
    """One model's file on its way: ``done`` bytes of ``total`` (None: not announced)
    on disk, ``resumed_from`` of them kept from an earlier attempt; the ``index``-th file
    (from 0) of ``count``; ``phase`` is ``downloading`` or ``checking``."""

    model: str
    done: int
    total: int | None
    resumed_from: int
    index: int
    count: int
    phase: str = "downloading"


@dataclass(frozen=True, kw_only=True)
class Downloaded:
    """A model's file, complete: where, its size and SHA-256, whether that checksum was
    checked against ``KNOWN``, how many bytes an earlier attempt had kept, and whether the
    file was there already (nothing fetched)."""

    model: str
    path: Path
    size: int
    sha256: str
    checked: bool
    resumed_from: int = 0
    already: bool = False


def model_name(text: str) -> str:
    """A model as given (``gemma-7b``, or its file's name) as the upstream name; an
    ``UnknownModel`` for what cannot be one."""
    text = text.strip()
    match = _FILE.fullmatch(Path(text).name)
    model = match.group("model") if match else text
    if not _MODEL.fullmatch(model):
        raise UnknownModel(
            f"{text!r} cannot be an MMLU-Pro model name: give it as in the file names of "
            f"{LISTING_URL} (model_outputs_<MODEL>_5shots.zip), e.g. "
            f"{next(iter(KNOWN))}"
        )
    return model


def file_name(model: str) -> str:
    """The file of ``model``'s outputs, as the repository names it."""
    return f"model_outputs_{model}_5shots.zip"


def url_of(model: str, base_url: str = BASE_URL) -> str:
    """Where ``model``'s file is (``base_url``: the repository's folder, or a mirror's)."""
    return base_url.rstrip("/") + "/" + quote(file_name(model))


def default_folder() -> Path:
    """Where the desktop app keeps downloaded files: the user's cache."""
    import platformdirs

    from workbench.core.workspace import APP_NAME

    return Path(platformdirs.user_cache_dir(APP_NAME)) / "mmlu-pro"


def download(
    models: Sequence[str],
    folder: str | os.PathLike[str],
    *,
    base_url: str = BASE_URL,
    progress: Callable[[DownloadProgress], None] | None = None,
    cancel: threading.Event | None = None,
    timeout_s: float = 30.0,
) -> list[Downloaded]:
    """Download ``models``' files into ``folder`` (each resumed where an earlier attempt
    stopped, checked, then moved in place); a file already there whole is not fetched
    again. ``cancel`` (set from another thread) stops between two chunks:
    ``DownloadCancelled``, the part kept."""
    import httpx

    names = [model_name(m) for m in models]
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    out = []
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
    with httpx.Client(follow_redirects=True, timeout=timeout) as client:
        for index, model in enumerate(names):
            fetch = _Fetch(client, model, target, base_url, index, len(names), progress, cancel)
            out.append(fetch.run())
    return out


class _Fetch:
    """One model's file: resume, stream, check, move in place."""

    def __init__(
        self,
        client,
        model: str,
        folder: Path,
        base_url: str,
        index: int,
        count: int,
        progress: Callable[[DownloadProgress], None] | None,
        cancel: threading.Event | None,
    ):
        self.client = client
        self.model = model
        self.url = url_of(model, base_url)
        self.final = folder / file_name(model)
        self.part = folder / (file_name(model) + ".part")
        self.index, self.count = index, count
        self.progress = progress
        self.cancel = cancel
        self.known = KNOWN.get(model)

    def report(self, done: int, total: int | None, resumed: int, phase: str = "downloading"):
        if self.progress is not None:
            self.progress(
                DownloadProgress(
                    model=self.model,
                    done=done,
                    total=total,
                    resumed_from=resumed,
                    index=self.index,
                    count=self.count,
                    phase=phase,
                )
            )

    def run(self) -> Downloaded:
        if self.final.is_file():
            digest, size = _sha256(self.final)
            if self.known is not None and (digest, size) != self.known:
                raise ChecksumMismatch(
                    f"{shown_path(self.final)} is there but is not {self.model}'s published "
                    f"file (SHA-256 {digest}, expected {self.known[0]}): delete it and "
                    "download again"
                )
            self.report(size, size, size, "checking")
            return self._done(size, digest, resumed=size, already=True)
        for _attempt in range(2):  # a second only when the part turned out to be wrong
            finished = self._stream()
            if finished is not None:
                return finished
        raise DownloadError(
            f"the server kept answering {self.model}'s file inconsistently ({self.url}): try "
            "again later"
        )

    def _stream(self) -> Downloaded | None:
        import httpx

        resumed = self.part.stat().st_size if self.part.is_file() else 0
        headers = {"Range": f"bytes={resumed}-"} if resumed else {}
        done, total = resumed, None
        try:
            with self.client.stream("GET", self.url, headers=headers) as response:
                status = response.status_code
                if status == 404:
                    raise UnknownModel(
                        f"MMLU-Pro's repository has no file for model '{self.model}' "
                        f"({file_name(self.model)} at {self.url} answered 404): check the name "
                        f"against {LISTING_URL} (case matters), e.g. {next(iter(KNOWN))}"
                    )
                if status == 416 and resumed:  # the part is as long as the file, or longer
                    whole = _range_total(response.headers.get("content-range", ""))
                    if whole == resumed:
                        return self._finish(resumed, resumed)
                    self.part.unlink()
                    return None
                if status == 206 and resumed:
                    start, whole = _range_start(response.headers.get("content-range", ""))
                    if start != resumed:
                        self.part.unlink()
                        return None
                    total = whole
                elif status == 200:
                    done = resumed = 0  # the whole file: the part is started again
                    length = response.headers.get("content-length")
                    total = int(length) if length and length.isdigit() else None
                else:
                    raise DownloadError(
                        f"downloading {self.model}'s file: {self.url} answered HTTP {status}; "
                        "try again later"
                    )
                self.report(done, total, resumed)
                with self.part.open("ab" if resumed else "wb") as out:
                    for chunk in response.iter_bytes(CHUNK):
                        if self.cancel is not None and self.cancel.is_set():
                            raise DownloadCancelled(
                                f"download of {self.model} cancelled at {_size(done)} of "
                                f"{_size(total)}: the part is kept, and the next download "
                                "resumes it"
                            )
                        out.write(chunk)
                        done += len(chunk)
                        self.report(done, total, resumed)
        except httpx.HTTPError as error:
            raise DownloadError(
                f"the download of {self.model} stopped at {_size(done)} of {_size(total)} "
                f"({_reason(error)}): the part is kept in {shown_path(self.part)}; run the "
                "same download again to resume it"
            ) from None
        if total is not None and done != total:
            raise DownloadError(
                f"the download of {self.model} ended at {_size(done)} of {_size(total)}: "
                "the part is kept; run the same download again to resume it"
            )
        return self._finish(done, resumed)

    def _finish(self, size: int, resumed: int) -> Downloaded:
        self.report(size, size, resumed, "checking")
        digest, size = _sha256(self.part)
        problem = None
        if self.known is not None and (digest, size) != self.known:
            problem = (
                f"its SHA-256 is {digest} ({size} bytes), the published file's is "
                f"{self.known[0]} ({self.known[1]} bytes)"
            )
        else:
            problem = _zip_problem(self.part)
        if problem is not None:
            self.part.unlink()
            raise ChecksumMismatch(
                f"the download of {self.model} is damaged: {problem}; it was deleted: "
                "download it again"
            )
        os.replace(self.part, self.final)
        return self._done(size, digest, resumed=resumed, already=False)

    def _done(self, size: int, digest: str, *, resumed: int, already: bool) -> Downloaded:
        return Downloaded(
            model=self.model,
            path=self.final,
            size=size,
            sha256=digest,
            checked=self.known is not None,
            resumed_from=resumed,
            already=already,
        )


def _sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _zip_problem(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError) as error:
        return f"it is not a readable zip file ({error})"
    return f"its member {bad} fails its CRC check" if bad else None


def _range_start(header: str) -> tuple[int | None, int | None]:
    """(first byte, whole length) of ``Content-Range: bytes START-END/TOTAL``."""
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", header.strip())
    if not match:
        return None, None
    whole = match.group(2)
    return int(match.group(1)), int(whole) if whole.isdigit() else None


def _range_total(header: str) -> int | None:
    match = re.fullmatch(r"bytes \*/(\d+)", header.strip())
    return int(match.group(1)) if match else None


def _reason(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _size(value: int | None) -> str:
    if value is None:
        return "an unknown length"
    return f"{value / 1e6:.1f} MB" if value >= 100_000 else f"{value} bytes"
