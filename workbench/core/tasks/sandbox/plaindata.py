"""Plain data over a pipe: builtin values (recursively) to JSON text and back.

The candidate process and the checker process of a HumanEval-style grade exchange
arguments and return values only in this form. Decoding accepts nothing but builtin
types, built fresh on the reader's side, so a value whose class rigs ``__eq__``,
``__hash__`` or ``__bool__`` (or subclasses ``int``, ``str``, ``list`` ...) cannot reach
the comparison that decides a grade: the sender can only say *which* plain value it means.

This file runs inside the sandbox too (``python -I -S``), so it imports only the stdlib;
and it runs in every fresh sandboxed interpreter, so it uses the C parts of ``json``
(``_json``: its scanner, strict, and its string quoting) without importing the ``json``
package (which pulls in ``re`` and costs milliseconds per interpreter start).
"""

from _json import encode_basestring_ascii as _quote
from _json import make_scanner as _make_scanner

MAX_DEPTH = 100
_SCALARS = (type(None), bool, int, float, str)
_TAGS = ("list", "tuple", "dict", "set", "frozenset", "bytes", "complex")
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_SPACE = " \t\n\r"


class NotPlainData(TypeError):
    """A value that is not plain data (a builtin type, recursively)."""


class _Context:
    """What ``_json.make_scanner`` reads off a decoder: strict strings, plain dicts,
    builtin numbers, and JSON's NaN/Infinity (which ``encode`` writes for such floats)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_scan = _make_scanner(_Context())  # type: ignore[arg-type]  # duck-typed: what it reads


def encode(value: object) -> str:
    """JSON text for ``value``; raises ``NotPlainData`` for anything but builtin types
    (exact types, not subclasses) nested at most ``MAX_DEPTH`` deep."""
    parts: list[str] = []
    _tag(value, 0, parts)
    return "".join(parts)


def decode(text: str | bytes) -> object:
    """The plain value that ``encode`` wrote; raises ``NotPlainData`` (or ``ValueError``
    for broken JSON) for anything else."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        node, end = _scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"not JSON at character {stop.value}") from None
    if text[end:].strip(_SPACE):
        raise ValueError(f"extra data after the value at character {end}")
    return _untag(node, 0)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _tag(value: object, depth: int, out: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if type(value) is str:  # exact types (no subclass); written so mypy narrows
        out.append(_quote(value))
    elif value is None:
        out.append("null")
    elif type(value) is bool:
        out.append("true" if value else "false")
    elif type(value) is int:
        out.append(int.__repr__(value))
    elif type(value) is float:
        out.append(_float(value))
    elif (
        type(value) is list
        or type(value) is tuple
        or type(value) is set
        or type(value) is frozenset
    ):
        out.append(f'{{"{kind.__name__}":[')
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _tag(item, depth + 1, out)
        out.append("]}")
    elif type(value) is dict:
        out.append('{"dict":[')
        for index, (key, item) in enumerate(value.items()):
            out.append(",[" if index else "[")
            _tag(key, depth + 1, out)
            out.append(",")
            _tag(item, depth + 1, out)
            out.append("]")
        out.append("]}")
    elif type(value) is bytes:
        out.append(f'{{"bytes":"{value.hex()}"}}')
    elif type(value) is complex:
        out.append(f'{{"complex":[{_float(value.real)},{_float(value.imag)}]}}')
    else:
        raise NotPlainData(f"a value of type {kind.__qualname__} is not plain data")


def _untag(node: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    if type(node) in _SCALARS:
        return node
    if type(node) is not dict or len(node) != 1:
        raise NotPlainData("not a tagged plain value")
    ((tag, body),) = node.items()
    if tag not in _TAGS:
        raise NotPlainData(f"unknown tag {tag!r}")
    if tag == "bytes":
        if type(body) is not str:
            raise NotPlainData("bytes must be hex text")
        return bytes.fromhex(body)
    if type(body) is not list:
        raise NotPlainData(f"{tag} must hold a list")
    if tag == "complex":
        if len(body) != 2 or any(type(x) not in (int, float) for x in body):
            raise NotPlainData("complex must hold two numbers")
        return complex(body[0], body[1])
    if tag == "dict":
        pairs = []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise NotPlainData("dict must hold [key, value] pairs")
            pairs.append((_untag(pair[0], depth + 1), _untag(pair[1], depth + 1)))
        return dict(pairs)
    items = [_untag(item, depth + 1) for item in body]
    return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
