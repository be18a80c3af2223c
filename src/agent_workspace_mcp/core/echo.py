"""Caller input quoted back in an answer, bounded (issue 19).

An error that repeats what was sent must not grow with it: a 1 MB workspace name would
otherwise come back as a 1 MB error in the model's context. Every message that quotes
input or lists what exists goes through these two functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .limits import ECHO_CHARS, ECHO_LISTED, ERROR_MAX_CHARS

_LONG_WORD = re.compile(rf"\S{{{ECHO_CHARS + 1},}}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def wire_safe(text: str) -> str:
    """`text` with every lone surrogate escaped, so JSON on the wire can carry it.

    A file name that is not UTF-8 reaches Python as surrogates (`surrogateescape`: byte
    0xff becomes U+DCFF); an answer holding one cannot be serialized, and the SDK then
    drops the reply. The raw byte is shown as `\\xff`, any other surrogate as `\\udXXX`.
    """
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """`text` for a terminal: control characters (ESC, BEL, C1, DEL: a terminal runs
    escape sequences, OSC 52 sets the clipboard) and lone surrogates escaped; tabs and
    newlines kept."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\t\n" else _char_escape(c) for c in text)


def _char_escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a non-UTF-8 byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100 and not (0x20 <= code < 0x7F or code >= 0xA0):
        return f"\\x{code:02x}"
    return char if char.isprintable() else f"\\u{code:04x}"


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """`value` as one short line: non-printable characters escaped, anything past
    `limit` characters replaced by its length."""
    text = value if isinstance(value, str) else repr(value)
    head = text[:limit]
    if not head.isprintable():
        head = "".join(c if c.isprintable() else repr(c)[1:-1] for c in head)
    if len(text) > limit:
        return f"{head}… ({len(text):,} characters)"
    return head


def listing(items: Iterable[object], limit: int = ECHO_LISTED) -> str:
    """The first `limit` items, comma-separated, then how many more ("none" if empty)."""
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < limit:
            shown.append(echo(item))
        else:
            more += 1
    text = ", ".join(shown) if shown else "none"
    return f"{text} and {more:,} more" if more else text


def bounded(message: str, limit: int = ERROR_MAX_CHARS) -> str:
    """A message held to `limit` characters: over-long words (a deep path, a pasted
    value) are clipped like `echo` first, then the end if it is still too long."""
    if len(message) <= limit:
        return message
    message = _LONG_WORD.sub(lambda m: echo(m.group()), message)
    return message if len(message) <= limit else message[: limit - 1] + "…"
