"""Records kept as append-only logs of JSON lines, folded into one mapping.

A record rewritten whole on every change costs in proportion to its size: the stale-read
guard's writers record (up to SEEN_WRITERS files) made each write 24 ms slower in a
workspace that had seen 4,096 writes (issue 47, item 4). Here a change appends one line,
`{key: value, ...}` (null forgets the key); a reader folds the lines in order, later wins
and a key set again moves to the end (the order is recency; past the bound the oldest go).
A reader keeps what it folded with the file's identity and the offset it reached, so it
reads only what was appended since; another process's appends are read the same way.

Appends are made by the holders of the record's lock, one `write()` each; a reader never
takes a line without its newline (an append in progress). A line that does not parse (a
crash tore it) is skipped, and the next append starts on a line of its own. When the
lines outnumber twice the bound, or the bytes FOLDLOG_COMPACT_BYTES, the lock's holder writes the
folded mapping as one line to a new file renamed over the old, so a reader without the
lock sees the old file or the new one, whole. Not fsynced: these are hints, and a lost
tail only makes the guard forget.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import safejson
from ..containment import Located
from ..errors import WorkspaceError, describe_os_error
from ..fdread import read_capped
from ..limits import FOLDLOG_COMPACT_BYTES
from .files import open_state
from .records import dumps, replace_record

Valid = Callable[[Any], bool]


@dataclass(frozen=True)
class Folded:
    """A record as read: never changed once made (readers in other threads hold it)."""

    ident: tuple[int, int] = (0, 0)  # (st_dev, st_ino) of the file folded
    offset: int = 0  # bytes consumed: up to the last complete line
    lines: int = 0
    entries: dict[str, Any] = field(default_factory=dict)


EMPTY = Folded()


def load(loc: Located, cached: Folded | None, bound: int, valid: Valid) -> Folded:
    """The record at `loc`, folded; only what was appended since `cached` is read when it
    is still the same file. A missing or unreadable record is empty."""
    fd = open_state(loc, os.O_RDONLY, create=False)
    if fd is None:
        return EMPTY
    try:
        return _fold(fd, os.fstat(fd), cached, bound, valid)
    finally:
        os.close(fd)


def _fold(fd: int, st: os.stat_result, cached: Folded | None, bound: int, valid: Valid) -> Folded:
    ident = (st.st_dev, st.st_ino)
    if cached is not None and cached.ident == ident and cached.offset <= st.st_size:
        if cached.offset == st.st_size:
            return cached
        start, lines, entries = cached.offset, cached.lines, cached.entries.copy()
    else:
        start, lines, entries = 0, 0, {}
    if st.st_size - start > FOLDLOG_COMPACT_BYTES * 2:
        return Folded(ident, st.st_size)  # grown past any bound: damaged, start afresh
    os.lseek(fd, start, os.SEEK_SET)
    data = read_capped(fd, st.st_size - start)
    end = data.rfind(b"\n") + 1
    for raw in data[:end].split(b"\n")[:-1]:
        lines += 1
        try:
            change = safejson.loads(raw)
        except ValueError:
            continue  # torn by a crash, or planted: that line only is lost
        if isinstance(change, dict):
            _apply(entries, change, bound, valid)
    return Folded(ident, start + end, lines, entries)


def append(
    loc: Located, change: dict[str, Any], cached: Folded | None, bound: int, valid: Valid
) -> Folded:
    """Under the record's lock: fold what was appended since `cached`, then add one change
    (or, past the bound, rewrite the record folded), through one open of the file (issue
    47, item 4); the record as it now is."""
    try:
        fd = open_state(loc, os.O_RDWR | os.O_APPEND, create=True)
        assert fd is not None
        try:
            st = os.fstat(fd)
            folded = _fold(fd, st, cached, bound, valid)
            # copy(), not dict(): once the oldest have gone, dict() re-inserts key by key
            # (0.11 ms at SEEN_WRITERS), copy() clones the table (0.02 ms).
            entries = folded.entries.copy()
            _apply(entries, change, bound, valid)
            line = (dumps(change) + "\n").encode("utf-8")
            compact = (
                folded.lines + 1 > 2 * bound or folded.offset + len(line) > FOLDLOG_COMPACT_BYTES
            )
            # Bytes past the last newline: a crash tore the last append, so this one
            # starts on a line of its own.
            torn = folded.offset < st.st_size
            if torn:
                line = b"\n" + line
            if not compact:
                os.write(fd, line)  # one write, as the journal's (a short one: a torn line)
        finally:
            os.close(fd)
    except OSError as exc:
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None
    if compact:
        return _compact(loc, entries)
    ident = (st.st_dev, st.st_ino)
    return Folded(ident, st.st_size + len(line), folded.lines + 1 + torn, entries)


def _compact(loc: Located, entries: dict[str, Any]) -> Folded:
    data = (dumps(entries) + "\n").encode("utf-8")
    replace_record(loc, data, durable=False)
    st = loc.lstat()
    ident = (st.st_dev, st.st_ino) if st is not None else (0, 0)
    return Folded(ident, len(data), 1, entries)


def _apply(entries: dict[str, Any], change: dict[str, Any], bound: int, valid: Valid) -> None:
    """One change, folded in: a key set again moves to the end; past the bound the
    oldest go."""
    for key, value in change.items():
        entries.pop(key, None)
        if value is not None and valid(value):
            entries[key] = value
    while len(entries) > bound:
        entries.pop(next(iter(entries)))
