"""Shared fixtures: a tiny random-initialised causal LM built here (config + tokenizer),
the real offline SmolLM2 backbone, and isolated user directories for every test."""

from __future__ import annotations

import os

import pytest

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "Query: what is 12 + 30? Thinker/sandbox:mathlete: add the tens, then the units.",
    "Worker/local:smollm2: The answer is \\boxed{42}. Verifier/sandbox:scholar: ACCEPT",
    "def add(a, b):\n    return a + b\n# choice (A) (B) (C) (D) Answer: C REVISE the plan",
] * 20


@pytest.fixture()
def tiny_chat_backbone(tiny_lm):
    """The tiny backbone reading transcripts in its chat template (``input="chat"``): every
    transcript ends in the same template tokens, so one feature direction steers a head on
    any question (tests/core/test_serve.py's ``steered_file``)."""
    from workbench.core.coordinator import Backbone

    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer, input="chat")
    yield backbone
    backbone.close()


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Every test gets its own user data/config dirs; the model cache is shared per session."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv(
        "XDG_CACHE_HOME", os.environ.get("WORKBENCH_TEST_CACHE", str(_session_cache()))
    )


_CACHE = None


def _session_cache():
    # Converted GGUF models are kept in the real user cache so the conversion (~30 s)
    # happens once per machine, not once per test.
    global _CACHE
    if _CACHE is None:
        import platformdirs

        _CACHE = platformdirs.user_cache_dir().rstrip("/")
    return _CACHE


def build_tiny_lm(tie_word_embeddings: bool = True, seed: int = 0, hidden_size: int = 32):
    """A 3-layer Llama with hidden size 32 and a BPE tokenizer trained on a few lines."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=specials,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<|im_end|>",
        bos_token="<|im_start|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.requires_grad_(False)
    return model, tokenizer


@pytest.fixture(scope="session")
def tiny_lm():
    return build_tiny_lm()


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_lm, tmp_path_factory):
    """The tiny LM saved as a model folder: what a child process (a GUI run) loads."""
    model, tokenizer = tiny_lm
    path = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture()
def tiny_backbone(tiny_lm):
    from workbench.core.coordinator import Backbone

    model, tokenizer = tiny_lm
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer)
    yield backbone
    backbone.close()


@pytest.fixture(scope="session")
def offline_backbone():
    """The real offline SmolLM2-135M-Instruct backbone (converted once per machine), in
    fp32: tests compare its features with others to 1e-5 and more (the faster default on a
    CPU with native bf16, bf16-mixed, has its own fidelity test: test_precision.py)."""
    from workbench.core.coordinator import Backbone

    backbone = Backbone("offline", device="cpu", precision="fp32")
    yield backbone
    backbone.close()


# --------------------------------------------------------------------------- workers issue
# Real components for the worker tests (tests/support): a Secret Service keyring on a
# private D-Bus session, `transformers serve` with the offline model, a fault-injecting
# loopback server. Each is started by the tests and stopped by its pid.


@pytest.fixture(scope="session")
def secret_service(tmp_path_factory):
    """A private D-Bus session with an unlocked gnome-keyring-daemon (Secret Service)."""
    from tests.support.keychain import start_secret_service

    service = start_secret_service(tmp_path_factory.mktemp("secret-service"))
    yield service
    service.stop()


@pytest.fixture()
def keychain(secret_service, monkeypatch):
    """keyring pointed at the test Secret Service, emptied of workbench keys afterwards."""
    import keyring
    import keyring.backend
    import keyring.core

    from tests.support.keychain import clear_service
    from workbench.core.keychain import SERVICE

    previous = keyring.get_keyring()
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", secret_service.address)
    # keyring judges which backends are viable once per process: judge again, now that a
    # Secret Service runs, and let keyring make its own choice.
    vars(keyring.backend.get_all_keyring).pop("saved_result", None)
    keyring.core.init_backend()
    yield secret_service
    clear_service(secret_service.address, SERVICE)
    vars(keyring.backend.get_all_keyring).pop("saved_result", None)
    keyring.set_keyring(previous)


@pytest.fixture(scope="session")
def transformers_server(tmp_path_factory):
    """`transformers serve` on loopback, pinned to the offline SmolLM2 model folder."""
    from tests.support.serve import start_transformers_serve
    from workbench.core.models import local_directory

    served = start_transformers_serve(local_directory("offline"), tmp_path_factory.mktemp("serve"))
    yield served
    served.stop()


@pytest.fixture()
def fault_server():
    """A fault-injecting OpenAI-compatible server on loopback (tests/support/fault_server.py)."""
    from tests.support.fault_server import FaultServer

    with FaultServer() as server:
        yield server
