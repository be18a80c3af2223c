"""Where Python source holds comments and string literals, without parsing it (issue 47).

`find_references` must tell a use of a name from a mention in a docstring or comment.
tree-sitter decides that exactly, but a parse costs milliseconds per file, and in
Django most files that mention `QuerySet` mention it only in docstrings. This lexer
finds, at C speed, the spans of comments and of the literal parts of strings (an
f-string's `{...}` fields stay code); a file whose every mention lies inside such a
span is dismissed without a parse, and every other file is still parsed and judged by
tree-sitter. It only ever dismisses: where it is unsure (an unterminated string, a
quote it cannot match) it says so and the file is parsed.

Only Python: other languages' literals (regex literals, raw strings, lifetimes,
template literals) make a sequential lexer unsafe, so their files are always parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_DQ3 = rb'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
_SQ3 = rb"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
_DQ = rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_SQ = rb"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
# One token at a time, in order: a comment, a whole plain string (unrolled loops, run in
# C; a backslash escapes any byte, a newline included), or an opener left to Python (an
# f-string, or a quote no plain string closes: unsure). A prefix only when not the tail
# of a name.
_TOKEN = re.compile(
    # The lookahead first: the engine then skips a position in one class test (4x).
    rb"(?=[#\"'rRbBuUfF])"
    rb"(?:(?P<c>#[^\n]*)"
    rb"|(?<![A-Za-z0-9_])(?P<s>[rRbBuU]{0,2}(?:" + b"|".join([_DQ3, _SQ3, _DQ, _SQ]) + rb"))"
    rb"|(?<![A-Za-z0-9_])(?P<o>[rRbBuUfF]{0,3})(?P<q>\"\"\"|'''|\"|')"
    # A quote right after a name no prefix explains (`return"""x"""`): skipping it
    # would pair the string's closing quotes as an opener; unsure.
    rb"|(?<=[A-Za-z0-9_])(?P<u>[\"']))",
    re.S,
)
# A string's body after its opening quote, through the closing one.
_BODY = {
    b'"""': re.compile(_DQ3[3:], re.S),
    b"'''": re.compile(_SQ3[3:], re.S),
    b'"': re.compile(_DQ[1:], re.S),
    b"'": re.compile(_SQ[1:], re.S),
}
# Inside an f-string: what ends a run of literal text.
_FSTOP = {
    quote: re.compile(
        rb"\\.|\{\{|\}\}|\{|" + re.escape(quote) + (rb"" if len(quote) == 3 else rb"|\n"), re.S
    )
    for quote in _BODY
}
# Inside a replacement field: brackets (nesting) and quotes (nested strings).
_FIELD = re.compile(rb"[{}\[\]()\"']")


class Unsure(Exception):
    """The source cannot be lexed with certainty here: parse it."""


def literal_spans(data: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) byte spans of comments and literal string text, in order, lazily
    (a caller that has its answer stops lexing); Unsure where it cannot be certain."""
    pos = 0
    while True:
        for match in _TOKEN.finditer(data, pos):
            kind = match.lastgroup
            if kind == "u":
                raise Unsure
            if kind != "q":
                yield match.span()  # a comment or a whole plain string
                continue
            if b"f" not in match.group("o").lower():
                raise Unsure  # a quote no string closes: unterminated
            found: list[tuple[int, int]] = []
            closed = _fstring(data, match.end(), match.group("q"), found)
            if closed is None:
                raise Unsure
            yield from found
            pos = closed
            break  # go on after the f-string
        else:
            return


def python_literals(data: bytes) -> list[tuple[int, int]] | None:
    """Every span of `literal_spans`, or None when unsure."""
    try:
        return list(literal_spans(data))
    except Unsure:
        return None


def _fstring(data: bytes, i: int, quote: bytes, spans: list[tuple[int, int]]) -> int | None:
    """Scan an f-string from `i`: its literal parts into `spans`, its `{...}` fields
    left as code (nested strings in them skipped); the end after the closing quote."""
    literal_start = i
    stop = _FSTOP[quote]
    while True:
        match = stop.search(data, i)
        if match is None:
            return None
        token = match.group()
        if token == quote:
            spans.append((literal_start, match.end()))
            return match.end()
        if token == b"\n":
            return None
        if token == b"{":
            spans.append((literal_start, match.start()))
            end = _field_end(data, match.end(), spans)
            if end is None:
                return None
            i = literal_start = end
            continue
        i = match.end()  # an escape, `{{` or `}}`: still literal text


def _field_end(data: bytes, i: int, spans: list[tuple[int, int]]) -> int | None:
    """After the `}` closing a replacement field whose body starts at `i` (the strings
    nested in it into `spans`)."""
    depth = 1
    while True:
        match = _FIELD.search(data, i)
        if match is None:
            return None
        c = match.group()
        if c in (b'"', b"'"):
            quote = c * 3 if data.startswith(c * 3, match.start()) else c
            body = _BODY[quote].match(data, match.start() + len(quote))
            if body is None:
                return None
            spans.append((match.start(), body.end()))
            i = body.end()
            continue
        depth += 1 if c in b"{[(" else -1
        if depth == 0:
            return match.end()
        i = match.end()


def only_in_literals(data: bytes, pattern: re.Pattern[bytes]) -> bool:
    """Whether every match of `pattern` in this Python source lies in a comment or the
    literal text of a string (False when unsure: the file must be parsed). Lexes only
    as far as it must: to the first match in code, or to the last match."""
    spans = literal_spans(data)
    span = (-1, -1)
    try:
        for match in pattern.finditer(data):
            while span[1] < match.end():
                span = next(spans, None) or (len(data) + 1, len(data) + 1)
                if span[0] > match.start():
                    return False  # the next literal starts after it: the match is code
            if span[0] > match.start():
                return False
    except Unsure:
        return False
    return True
