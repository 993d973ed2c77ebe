"""Text from untrusted programs, made safe to show: control characters removed.

A program's output is data. Before it reaches a terminal, the GUI or the store, escape
sequences (ESC, CSI), other C0/C1 control characters, DEL and the bidirectional overrides
that make text read differently than it runs are dropped; line feeds and tabs stay.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` without control characters (``\\n`` and ``\\t`` kept; ``\\r\\n`` becomes
    ``\\n``), for showing or storing what an untrusted program wrote."""
    return _CONTROL.sub("", text.replace("\r\n", "\n"))
