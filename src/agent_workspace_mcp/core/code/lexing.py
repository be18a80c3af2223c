"""Where Python source holds comments and string literals, without parsing it (issue 47).

`find_references` must tell a use of a name from a mention in a docstring or comment.
tree-sitter decides that exactly, but a parse costs milliseconds per file, and in
Django most files that mention `QuerySet` mention it only in docstrings. This lexer
finds, at C speed, the spans of comments and of the literal parts of strings (an
f-string's `{...}` fields stay code); a file whose every mention lies inside such a
span is dismissed without a parse, and in every other file tree-sitter still judges
each mention, parsing only the top-level statements that hold one in code (a third
of the bytes for `QuerySet` in Django). It only ever dismisses: where it is unsure (an
unterminated string, a quote it cannot match) it says so and the file is parsed whole.

Only Python: other languages' literals (regex literals, raw strings, lifetimes,
template literals) make a sequential lexer unsafe, so their files are always parsed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

_DQ3 = rb'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
_SQ3 = rb"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
_DQ = rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_SQ = rb"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
# One token at a time, in order: a comment, a whole quoted string (unrolled loops, run in
# C; a backslash escapes any byte, a newline included), or a quote no string closes.
# Every alternative starts with a fixed byte, so the engine skips to the next `#`, `"`
# or `'` at C speed (twice as fast as starting at a prefix letter: letters are most of
# code); a string's prefix is read back from its quote.
_TOKEN = re.compile(rb"#[^\n]*|" + b"|".join([_DQ3, _SQ3, _DQ, _SQ]) + rb"|\"|'", re.S)
_PREFIX = frozenset(b"rRbBuUfF")
_HASH, _AT = ord("#"), ord("@")
_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
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
            start, end = match.span()
            if data[start] == _HASH:
                yield start, end  # a comment
                continue
            if not (start and data[start - 1] in _NAME):  # no prefix: most strings
                if end - start == 1:
                    raise Unsure  # a quote no string closes: unterminated
                yield start, end
                continue
            prefix = start  # up to three prefix letters, not the tail of a name
            while prefix > 0 and start - prefix < 3 and data[prefix - 1] in _PREFIX:
                prefix -= 1
            if prefix > 0 and data[prefix - 1] in _NAME:
                # A quote right after a name no prefix explains (`return"""x"""`): skipping
                # it would pair the string's closing quotes as an opener.
                raise Unsure
            letters = data[prefix:start].lower()
            if b"f" not in letters:
                if end - start == 1 or len(letters) > 2:
                    raise Unsure  # a quote no string closes (unterminated), or no prefix
                yield prefix, end  # a whole plain string
                continue
            triple = data[start : start + 3]
            quote = triple if triple in (b'"""', b"'''") else data[start : start + 1]
            found: list[tuple[int, int]] = []
            closed = _fstring(data, start + len(quote), quote, found)
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


# A line that can only begin a top-level statement: a definition or a decorator at column
# 0. Outside strings the one exception is `@` continuing a bracketed or backslashed
# expression (matrix product); cut there, both pieces fail to parse and the file is
# parsed whole (navigate.references_in).
_TOP = re.compile(rb"^(?:@|def[ \t]|class[ \t]|async[ \t]+def[ \t])", re.M)


def code_chunks(
    data: bytes, pattern: re.Pattern[bytes], deadline: float | None = None
) -> list[tuple[int, int]] | None:
    """Where this Python source holds `pattern` in code, as byte ranges of whole top-level
    statements (adjacent ones merged), so only they need parsing: [] when every match
    lies in a comment or the literal text of a string (no parse at all), None when
    unsure or past `deadline` (parse the whole file). One pass over the matches and the
    statement starts together, lexing no further than the last range's end."""
    spans = literal_spans(data)
    far = len(data) + 1
    span = (-1, -1)

    def literal(start: int, end: int) -> bool:  # positions only ever increase
        nonlocal span
        while span[1] < end:
            span = next(spans, None) or (far, far)
        return span[0] <= start

    tops = _TOP.finditer(data)
    top = next(tops, None)
    ranges: list[tuple[int, int]] = []
    run: int | None = None  # the start of the needed chunks not yet closed
    chunk, needed, decorating = 0, False, False

    def starts_statement(at: int) -> bool:
        """Whether the candidate line at `at` begins a statement of its own: not literal
        text, not a definition under its decorator."""
        nonlocal decorating
        if literal(at, at + 1):
            return False
        starts = not decorating
        decorating = data[at] == _AT
        return starts

    def cut(at: int) -> None:
        """A statement starts at `at`: the chunk before it ends there."""
        nonlocal run, chunk, needed
        if needed and run is None:
            run = chunk
        elif not needed and run is not None:
            ranges.append((run, chunk))
            run = None
        chunk, needed = at, False

    try:
        for count, match in enumerate(pattern.finditer(data)):
            if count % 4096 == 4095 and deadline is not None and time.monotonic() > deadline:
                return None
            while top is not None and top.start() <= match.start():
                if starts_statement(top.start()) and top.start() > 0:
                    cut(top.start())
                top = next(tops, None)
            if not needed and not literal(*match.span()):
                needed = True
        # The last match's chunk ends at the next statement start.
        while needed and top is not None and not starts_statement(top.start()):
            top = next(tops, None)
    except Unsure:
        return None
    cut(len(data) if top is None else top.start())
    if run is not None:
        ranges.append((run, chunk))
    return ranges
