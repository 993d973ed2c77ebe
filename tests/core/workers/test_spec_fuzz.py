"""Fuzzing the worker spec validator and key masking (issue 18): whatever a
``[workers.ID]`` table holds, ``WorkerSpec.from_toml`` answers with a ``SpecError`` (never
repeating a key) or a spec that round-trips; never a traceback. ``Secret.redact`` leaves
no copy of a key, in any letter case, in any text around it.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import FUZZ, any_text, nested_values, scalar_values
from workbench.core.keychain import Secret
from workbench.core.workers.spec import RegistryError, WorkerSpec

KEY = "sk-test-ECHO-0123456789abcdefXYZ"
text = any_text(30)
scalars = scalar_values(
    text, ["openai", "local", "vllm", "http://127.0.0.1:8000/v1", KEY, "Bearer x"]
)
values = nested_values(text, scalars)
spec_fields = st.sampled_from(
    [
        "provider",
        "model",
        "base_url",
        "temperature",
        "max_tokens",
        "extra",
        "price_in",
        "price_out",
        "context_window",
        "concurrency",
        "rpm",
        "timeouts",
        "key_env",
    ]
)
tables = st.dictionaries(spec_fields | text, values, max_size=8) | st.fixed_dictionaries(
    {"provider": st.sampled_from(["openai", "anthropic", "gemini", "local"]), "model": text},
    optional={
        "base_url": text | st.just("http://127.0.0.1:8000/v1"),
        "extra": st.dictionaries(text, values, max_size=4),
        "timeouts": st.dictionaries(st.sampled_from(["connect", "read", "total"]), scalars),
        "temperature": scalars,
        "concurrency": scalars,
        "rpm": scalars,
        "key_env": text,
    },
)


@FUZZ
@given(text | st.sampled_from(["w", "gpt-4o", "local", KEY]), tables | values)
def test_fuzz_the_spec_validator_answers_with_a_spec_or_a_spec_error(worker_id, table):
    try:
        spec = WorkerSpec.from_toml(worker_id, table)
    except RegistryError as exc:  # SpecError and its parent
        assert KEY not in str(exc)
        return
    assert WorkerSpec.from_toml(spec.id, spec.to_toml()) == spec  # what loads, round-trips
    assert KEY not in json.dumps(spec.to_dict())


@FUZZ
@given(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=20, max_size=80), text)
def test_fuzz_redact_never_leaves_the_key_in_any_case(key, around):
    secret = Secret(key)
    masked = secret.redact(f"{around}{key.upper()}{around}{key}{around}")
    assert key.lower() not in masked.lower()
