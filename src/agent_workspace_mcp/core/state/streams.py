"""JSON-lines streams (the journal, the notes, the checkpoint index): appended under the
state lock, rotated once past their size, read back newest first in bounded windows."""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Callable, Iterator
from typing import Any

from .. import safejson
from ..errors import (
    WorkspaceError,
)
from ..limits import STATE_READ_BYTES
from ..workspaces import Workspace
from .files import Held, existing, locate_state, open_held, open_state, read_state
from .locks import state_lock
from .records import dumps


def _newest_first(lines: list[tuple[int, bytes]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records among a window's lines, newest first, each parsed when reached; a line
    that is not a JSON object (damaged, planted) is skipped, as by every reader."""
    for at, raw in reversed(lines):
        try:
            record = safejson.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield at, record


class JsonlStream:
    """An append-only JSON-lines file with one rotated predecessor (`<name>.1.jsonl`)."""

    def __init__(self, ws: Workspace, name: str, max_bytes: int) -> None:
        self.ws = ws
        self.current = f"{name}.jsonl"
        self.rotated = f"{name}.1.jsonl"
        self.max_bytes = max_bytes

    def append(self, record: dict[str, Any], *, locked: bool = False) -> int:
        """Append one record; returns the file's size after it (before any rotation)."""
        return self.append_line((dumps(record) + "\n").encode("utf-8"), locked=locked)

    def append_line(self, line: bytes, *, locked: bool = False) -> int:
        """`append` of a record already encoded as one line (newline included)."""
        flags = os.O_WRONLY | os.O_APPEND
        with contextlib.nullcontext() if locked else state_lock(self.ws):
            held = open_held(self.ws, (self.current,), flags, create=True, with_dir=True)
            if isinstance(held, Held):
                try:
                    return self._appended(held.fd, held.dir_fd, line)
                finally:
                    os.close(held.dir_fd)
            with locate_state(self.ws, self.current, create_parents=True) as loc:
                fd = open_state(loc, flags, create=True)
                assert fd is not None
                return self._appended(fd, loc.dir_fd, line)

    def _appended(self, fd: int, dir_fd: int, line: bytes) -> int:
        """`line` written at the end of the open stream file (closed after), which is
        rotated once past its size; returns its size after the line."""
        try:
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > self.max_bytes:  # names in the stream's own folder (`dir_fd`)
            current, rotated = posixpath.basename(self.current), posixpath.basename(self.rotated)
            os.rename(current, rotated, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return size

    def _window(self, name: str, end: int | None) -> tuple[list[tuple[int, bytes]], int]:
        """(offset, line) pairs of the lines with text in the STATE_READ_BYTES before offset
        `end` (None: the file's end), oldest first, and the offset where the first whole
        line starts (0: the file's start was reached). Parsed by `_newest_first` as far as
        the reader goes: a page of 50 parses 50 lines, not the window's thousands."""
        try:
            with existing(self.ws, name) as loc:
                if loc is None:
                    return [], 0
                fd = open_state(loc, os.O_RDONLY, create=False)
                if fd is None:
                    return [], 0
                try:
                    size = os.fstat(fd).st_size
                    stop = size if end is None else min(end, size)
                    start = max(0, stop - STATE_READ_BYTES)
                    data = os.pread(fd, stop - start, start)
                finally:
                    os.close(fd)
        except WorkspaceError:
            return [], 0
        lines = data.split(b"\n")
        window_start = start
        if start > 0 and lines:
            cut = lines[0]
            lines = lines[1:]  # the first line was cut by the read window
            # It is read whole by the next window; one longer than a window is skipped.
            start = start + len(cut) + 1 if lines else window_start
        kept = []
        offset = start
        for raw in lines:
            at, offset = offset, offset + len(raw) + 1
            if raw.strip():
                kept.append((at, raw))
        return kept, start

    def newest(
        self,
        limit: int,
        keep: Callable[[dict[str, Any]], bool] = lambda r: True,
        *,
        whole: bool = False,
    ) -> list[dict[str, Any]]:
        """Up to `limit` matching records, newest first: current file, then the rotated one.

        By default only the last STATE_READ_BYTES of each file are read (a view of recent
        work); `whole` reads both files back to their start, window by window, for answers
        that must be complete (one session's or change's calls, for undo): other agents'
        work can push a session's first calls out of the last window."""
        found: list[dict[str, Any]] = []
        for name in (self.current, self.rotated):
            end: int | None = None
            while True:
                lines, start = self._window(name, end)
                for _, record in _newest_first(lines):
                    if keep(record):
                        found.append(record)
                        if len(found) >= limit:
                            return found
                if not whole or start == 0:
                    break
                if end is not None and start >= end:
                    start = max(0, end - STATE_READ_BYTES)  # one line longer than a window
                end = start
        return found

    def page(
        self,
        before: int | None,
        limit: int,
        keep: Callable[[dict[str, Any]], bool] = lambda r: True,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Up to `limit` matching records of the current file older than offset `before`
        (None: from its end), newest first, and the cursor for the page after (None when
        the file's start was reached). Each step reads one bounded window."""
        found: list[dict[str, Any]] = []
        cursor = before
        while True:
            lines, start = self._window(self.current, cursor)
            for at, record in _newest_first(lines):
                if keep(record):
                    found.append(record)
                    if len(found) == limit:
                        return found, at if at > 0 else None
            if cursor is not None and start >= cursor:
                # The window held only the end of one line longer than a window: step
                # back past it (it is skipped, as by every reader of this file).
                start = max(0, cursor - STATE_READ_BYTES)
            if start == 0:
                return found, None
            cursor = start

    def mark(self) -> tuple[int, int, int] | None:
        """What changes when a record is appended (or the file rotates): for watchers
        that must not re-read the file to learn nothing happened."""
        try:
            with existing(self.ws, self.current) as loc:
                st = None if loc is None else loc.lstat()
        except WorkspaceError:
            return None
        return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)

    def count(self) -> int:
        """Lines in both files (what `remember` reports as the running total)."""
        total = 0
        for name in (self.current, self.rotated):
            with existing(self.ws, name) as loc:
                data = None if loc is None else read_state(loc)
            if data is None:
                continue
            total += sum(1 for line in data.split(b"\n") if line.strip())
        return total
