"""Hypothesis strategies shared by the fuzz tests (tests/core/test_config_fuzz.py,
tests/core/workers/test_spec_fuzz.py): any text, any scalar a TOML or JSON reader can
produce (huge integers and non-finite floats among them), and nested tables and lists."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def any_text(max_size: int) -> st.SearchStrategy[str]:
    """Text of any code points, surrogates and NUL included."""
    return st.text(
        st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=max_size
    )


def scalar_values(text: st.SearchStrategy[str], samples: list[str]) -> st.SearchStrategy:
    """Any scalar a reader can produce, ``samples`` (values it would meet) among them."""
    return (
        st.none()
        | st.booleans()
        | st.integers()
        | st.integers(min_value=2**63, max_value=10**5000)  # too long for float() and repr()
        | st.floats()
        | text
        | st.sampled_from(samples)
    )


def nested_values(text: st.SearchStrategy[str], scalars: st.SearchStrategy) -> st.SearchStrategy:
    """``scalars`` in tables (keys drawn from ``text``) and lists, a few levels deep."""
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=10,
    )
