"""Plain data over a pipe: builtin values (recursively) to JSON text and back.

The candidate process and the checker process of a HumanEval-style grade exchange
arguments and return values only in this form. Decoding accepts nothing but builtin
types, built fresh on the reader's side, so a value whose class rigs ``__eq__``,
``__hash__`` or ``__bool__`` (or subclasses ``int``, ``str``, ``list`` ...) cannot reach
the comparison that decides a grade: the sender can only say *which* plain value it means.

This file runs inside the sandbox too (``python -I -S``), so it imports only the stdlib.
"""

import json

MAX_DEPTH = 100
_SCALARS = (type(None), bool, int, float, str)
_TAGS = ("list", "tuple", "dict", "set", "frozenset", "bytes", "complex")


class NotPlainData(TypeError):
    """A value that is not plain data (a builtin type, recursively)."""


def encode(value: object) -> str:
    """JSON text for ``value``; raises ``NotPlainData`` for anything but builtin types
    (exact types, not subclasses) nested at most ``MAX_DEPTH`` deep."""
    return json.dumps(_tag(value, 0), allow_nan=True, separators=(",", ":"))


def decode(text: str | bytes) -> object:
    """The plain value that ``encode`` wrote; raises ``NotPlainData`` (or ``ValueError``
    for broken JSON) for anything else."""
    return _untag(json.loads(text), 0)


def _tag(value: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return {kind.__name__: [_tag(item, depth + 1) for item in value]}
    if kind is dict:
        return {"dict": [[_tag(k, depth + 1), _tag(v, depth + 1)] for k, v in value.items()]}
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [value.real, value.imag]}
    raise NotPlainData(f"a value of type {kind.__qualname__} is not plain data")


def _untag(node: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(node)
    if kind in _SCALARS:
        return node
    if kind is not dict or len(node) != 1:
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
