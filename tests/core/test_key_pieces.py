"""Keys masked in any piece (docs/guides/key-masking.md): whatever a provider or a proxy
does to a key before echoing it (splits it among other words, changes its letter case,
spaces it out, encodes it in base64 or hex), no piece of it of 8 or more characters past
its provider's public prefix survives ``Secret.redact``, for keys of every provider's
shape. Property-based (Hypothesis)."""

import base64

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.keychain import PIECE, PieceMasker, Secret, public_prefix

EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
# (prefix, alphabet, length of the secret part): the shapes providers issue
SHAPES = {
    "openai project": ("sk-proj-", URLSAFE, 156),  # 164 characters in all
    "openai legacy": ("sk-", ALNUM, 48),
    "openai service account": ("sk-svcacct-", URLSAFE, 120),
    "anthropic": ("sk-ant-api03-", URLSAFE, 95),
    "gemini": ("AIza", URLSAFE, 35),
    "openrouter": ("sk-or-v1-", HEX, 64),
    "groq": ("gsk_", ALNUM, 52),
    "hugging face": ("hf_", ALNUM, 34),
    "a local server's own": ("", ALNUM + "-", 24),
}
IGNORED = set(" \t\r\n\"'`+,.|;:\\/*_-\u200b\u2060\ufeff")
FILLER = st.sampled_from(
    ["", " ", "\n", " and then ", '", "', " the server said: ", "...", "\\n", "%20"]
)


@st.composite
def keys(draw) -> str:
    shape = draw(st.sampled_from(sorted(SHAPES)))
    prefix, alphabet, length = SHAPES[shape]
    return prefix + "".join(
        draw(st.lists(st.sampled_from(alphabet), min_size=length, max_size=length))
    )


def _flat(text: str) -> str:
    return "".join(c for c in text if c not in IGNORED).lower()


def secret_forms(key: str) -> list[str]:
    """What must not survive in pieces of PIECE or more: the key past its public prefix
    (as written and with separators left out), its hex and its base64 in every
    alignment (past the prefix's own encoding)."""
    secret = key[len(public_prefix(key)) :]
    raw = key.encode()
    forms = [secret.lower(), _flat(secret), raw[len(public_prefix(key)) :].hex()]
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode().rstrip("=")
        skip = (offset + len(public_prefix(key))) * 4 // 3 + 1
        core = encoded[skip:-1]
        forms += [core.lower(), core.replace("+", "-").replace("/", "_").lower()]
    return [f for f in forms if f]


def longest_piece(output: str, key: str) -> int:
    """The longest run of ``output`` (outside masks, letter case ignored, as written or
    with separators left out) that is also a run of one of the key's secret forms."""
    forms = secret_forms(key)
    best = 0
    for part in output.split("****"):
        for view in (part.lower(), _flat(part)):
            for i in range(len(view)):
                n = best + 1
                while i + n <= len(view) and any(view[i : i + n] in f for f in forms):
                    best, n = n, n + 1
    return best


def _split(draw, text: str, pieces: int) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=pieces - 1)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@st.composite
def echoes(draw) -> tuple[str, str]:
    """A key and a text that echoes it, transformed as a provider or proxy might."""
    key = draw(keys())
    how = draw(st.sampled_from(["split", "case", "spaced", "base64", "hex", "all pieces"]))
    if how == "split":  # in pieces among other words
        parts = _split(draw, key, draw(st.integers(2, 5)))
        echo = "".join(p + draw(FILLER) for p in parts)
    elif how == "case":
        echo = "".join(c.upper() if draw(st.booleans()) else c.lower() for c in key)
    elif how == "spaced":
        sep = draw(st.sampled_from([" ", "  ", "-", "\u200b", ". ", "\n"]))
        echo = sep.join(key) if draw(st.booleans()) else sep.join(_split(draw, key, 6))
    elif how == "base64":
        before = draw(st.binary(max_size=5))
        encode = draw(st.sampled_from([base64.b64encode, base64.urlsafe_b64encode]))
        echo = encode(before + key.encode() + draw(st.binary(max_size=5))).decode()
    elif how == "hex":
        echo = key.encode().hex()
        echo = echo.upper() if draw(st.booleans()) else echo
    else:  # several pieces, each transformed on its own
        echo = ""
        for part in _split(draw, key, 4):
            form = draw(st.sampled_from(["as is", "upper", "spaced", "hex"]))
            piece = {
                "as is": part,
                "upper": part.upper(),
                "spaced": " ".join(part),
                "hex": part.encode().hex(),
            }[form]
            echo += piece + draw(FILLER)
    return key, f"error 401: {echo} (request id 42)"


@EXAMPLES
@given(echoes())
def test_no_piece_of_a_key_of_8_or_more_characters_survives_redaction(case):
    key, text = case
    masked = Secret(key).redact(text)
    assert longest_piece(masked, key) < PIECE, masked


@EXAMPLES
@given(st.lists(keys(), min_size=2, max_size=4), st.data())
def test_every_key_of_a_pool_is_masked_in_one_text(pool, data):
    """A reply that echoes several keys of the pool (a proxy that logs every header)."""
    text = " | ".join(k[: len(k) // 2] + data.draw(FILLER) + k[len(k) // 2 :].upper() for k in pool)
    masked = PieceMasker(pool).mask(text)
    assert all(longest_piece(masked, k) < PIECE for k in pool), masked


def test_the_issue_case_a_164_character_key_echoed_in_three_pieces():
    """Issue #40: a 164-character project key echoed in three pieces once left 106 of its
    characters in the store; nothing of 8 or more is left."""
    key = "sk-proj-" + (ALNUM * 3)[:156]
    text = f"bad key: {key[:50]} ... {key[50:110]} ... {key[110:]}"
    assert longest_piece(Secret(key).redact(text), key) < PIECE


def test_ordinary_text_and_the_provider_prefix_alone_are_kept():
    key = "sk-proj-" + (ALNUM * 3)[:156]
    text = "Use a key that starts with sk-proj- from the dashboard; the answer is 42."
    assert Secret(key).redact(text) == text
