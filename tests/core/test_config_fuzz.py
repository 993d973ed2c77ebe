"""Fuzzing the run-config loader (issue 18): whatever a config table or a config file
holds, ``RunConfig.from_dict`` and ``RunConfig.load`` answer with a ``ConfigError`` naming
the file, or a config that round-trips; never a traceback.

Hypothesis generates the inputs; examples are bounded so that the module runs in seconds.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import tomli_w
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import FUZZ, any_text, nested_values, scalar_values
from workbench.core.config import ConfigError, RunConfig

text = any_text(40)
scalars = scalar_values(text, ["auto", "cpu", "cuda:0", "sep-cma-es", "sandbox", "offline", "off"])
values = nested_values(text, scalars)
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
