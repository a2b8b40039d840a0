"""Text for a terminal: characters that could steer it are escaped.

Block ids, texts and referent names come from the session being compacted, so anything
printed for a person (tables, explanations, error messages) passes through ``printable``:
an ANSI or OSC escape sequence, a bidi override or a carriage return in an id then shows as
``\\x1b[31m``, ``\\u202e``, ``\\r`` instead of acting on the terminal.  JSON output is left
exact (``json.dumps`` escapes control characters itself).
"""

from __future__ import annotations

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def printable(text: str) -> str:
    """``text`` with each character ``str.isprintable`` rejects written as an escape.

    Rejected are the C0 and C1 controls and DEL, format characters (bidi overrides and
    isolates, zero-width joiners), line and paragraph separators, spaces other than U+0020,
    surrogates, private-use and unassigned code points.  They become ``\\t \\n \\r`` or
    ``\\xNN``, ``\\uNNNN``, ``\\UNNNNNNNN`` as in Python string literals.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
