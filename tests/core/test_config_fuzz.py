"""Fuzzing the run-config loader (issue 18): whatever a config table or a config file
holds, ``RunConfig.from_dict`` and ``RunConfig.load`` answer with a ``ConfigError`` naming
the file, or a config that round-trips; never a traceback.

Hypothesis generates the inputs; examples are bounded so that the module runs in seconds.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.config import ConfigError, RunConfig

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

text = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=40)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=10**5000)  # too long for float() and repr()
    | st.floats()
    | text
    | st.sampled_from(["auto", "cpu", "cuda:0", "sep-cma-es", "sandbox", "offline", "off"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=10,
)
_known = RunConfig().to_dict()
keys = st.sampled_from([k for section in _known.values() for k in section]) | text
sections = st.sampled_from(list(_known)) | text
tables = st.dictionaries(sections, st.dictionaries(keys, values, max_size=6) | values, max_size=6)


@FUZZ
@given(tables)
def test_fuzz_from_dict_answers_with_a_config_or_a_config_error(data):
    try:
        config = RunConfig.from_dict(data, "fuzz.toml")
    except ConfigError as exc:
        assert exc.problems and all(p.startswith("fuzz.toml") for p in exc.problems)
        assert all(len(p) < 2000 for p in exc.problems)  # a huge value is not echoed whole
        return
    assert RunConfig.from_dict(config.to_dict()) == config  # what loads, round-trips


def _toml_text(data) -> str:
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError):  # None, a surrogate, a huge number: not TOML
        return "[run]\nname = 'x'\n[broken"


@FUZZ
@given(tables | st.binary(max_size=200).map(bytes.hex), st.binary(max_size=60))
def test_fuzz_load_answers_with_a_config_or_a_config_error(data, tail):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        body = data if isinstance(data, str) else _toml_text(data)
        path.write_bytes(body.encode("utf-8", "surrogatepass") + tail)
        try:
            RunConfig.load(path)
        except ConfigError as exc:
            assert str(path) in str(exc)
