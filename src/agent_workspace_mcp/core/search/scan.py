"""grep's parallel scan and its sorted probe (issue 36): a parallel `rg --json` reads the
tree on every core and is kept bounded here (only the first files in path order an answer
can use); a sorted rg (the probe) starts beside it only when the scan's early pace says
the probe would fill the answer well before the scan ends, and the first to end wins.
See ripgrep_engine for the rules both reproduce."""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError, WorkspaceError
from ..limits import (
    BINARY_SNIFF_BYTES,
    GREP_BYTES_PER_FILE,
    GREP_DIR_FD_CACHE,
    GREP_PROBE_CHECK_SECONDS,
    GREP_PROBE_FIRST_MATCH_SECONDS,
    GREP_PROBE_MARGIN,
    GREP_PROBE_PROJECTED_SECONDS,
    GREP_SCAN_SPARE_MATCHES,
    GREP_SCAN_TIMES_KEPT,
    PIPE_DRAIN_GRACE_SECONDS,
)
from ..textio import is_binary
from ..workspaces import Workspace
from .python_engine import lines_searched_in
from .results import (
    GrepQuery,
    GrepResult,
    take,
)
from .rgproc import (
    DirCache,
    decode,
    kill_group,
    regex_error,
    spawn,
    stop,
    timed_out,
)
from .rules import fs_sort_key

# How long the last full parallel scan of a tree took: a probe projected to fill its
# answer later than that only slows the scan it runs beside (two cores: each takes one).
SCAN_SECONDS: dict[tuple[Any, ...], float] = {}


def remember_scan(tree: tuple[Any, ...], seconds: float) -> None:
    SCAN_SECONDS.pop(tree, None)
    SCAN_SECONDS[tree] = seconds
    while len(SCAN_SECONDS) > GREP_SCAN_TIMES_KEPT:
        del SCAN_SECONDS[next(iter(SCAN_SECONDS))]


NEWLINE = ord("\n")

# What a file's re-check leaves: the matched line indexes that hold, and the lines to
# show them with (the searched lines with context; without, only the matched ones).
Checked = tuple[list[int], Sequence[str] | Mapping[int, str]]


@dataclass
class Found:
    """One file rg reported: the matched line indexes, and rg's bytes and byte offset of
    each, which is all a re-check without context reads."""

    rel: str
    matched: list[int]
    lines: dict[int, bytes]
    offsets: dict[int, int]

    def needs(self, context: int) -> int:
        """Bytes to read to re-check it (and sniff it): with context lines, all that is
        searched; without, up to the last match and one byte more (so a last line with
        no newline is seen to end the file)."""
        if context:
            return GREP_BYTES_PER_FILE + 1
        last = self.matched[-1]
        return max(self.offsets[last] + len(self.lines[last]) + 1, BINARY_SNIFF_BYTES)

    def text(self, index: int) -> str:
        return self.lines[index].decode("utf-8", "replace").rstrip("\n")

    def check(self, data: bytes | None, context: int) -> Checked | None:
        """The matches whose line in `data` (the file's start, read through the
        containment walk) is the line rg saw; None when it is unreadable or binary.

        Without context lines, and when every match is still rg's bytes at rg's offset
        (starting a line, ending one, after as many newlines as its index), only the
        matched lines are decoded: UTF-8 never hides a newline byte in a character, so
        a line decodes alone as it does within the file. Otherwise (context wanted, or
        the file changed since rg read it) the searched lines are decoded and compared
        line by line."""
        if data is None or is_binary(data):
            return None
        if not context and self._where_rg_saw_them(data):
            shown = {index: self.text(index) for index in self.matched}
            return self.matched, shown
        searched = lines_searched_in(data) or []
        kept = [i for i in self.matched if i < len(searched) and searched[i] == self.text(i)]
        return kept, searched

    def _where_rg_saw_them(self, data: bytes) -> bool:
        newlines = at = 0
        for index in self.matched:
            start, line = self.offsets[index], self.lines[index]
            if start < at:
                return False  # rg reports lines in order; anything else is re-read
            newlines += data.count(b"\n", at, start)
            at = start
            if not (
                newlines == index
                and (start == 0 or data[start - 1] == NEWLINE)
                and data.startswith(line, start)
                and (line.endswith(b"\n") or len(data) == start + len(line))
            ):
                return False
        return True


class Files:
    """rg's JSON messages turned into (path, matched line indexes, rg's bytes and offset
    of each) per file, with the include glob and the 1 MiB line limit; binary files are
    left out by the re-check, which reads the first 8 KiB whatever else it reads."""

    def __init__(self, include: Any) -> None:
        self.include = include
        self.current = ""
        self.skip = False
        self.matched: list[int] = []
        self.lines: dict[int, bytes] = {}
        self.offsets: dict[int, int] = {}

    def feed(self, raw: bytes) -> Found | None:
        """The file that `raw` completes, if any; ValueError on a line that is not JSON
        (the last line of a killed rg). An end or the summary is known by its start
        (rg writes "type" first): only a file's start and its matches are parsed."""
        if raw.startswith(b'{"type":"end"'):
            if self.skip or not self.matched:
                return None
            done = Found(self.current, self.matched, self.lines, self.offsets)
            self.matched = []
            return done
        if raw.startswith(b'{"type":"summary"'):
            return None
        message = json.loads(raw)
        kind = message["type"]
        data = message.get("data", {})
        if kind == "begin":
            current = os.fsdecode(decode(data["path"]))
            self.current = current[2:] if current.startswith("./") else current
            self.skip = self.include is not None and not self.include.matches(self.current)
            self.matched, self.lines, self.offsets = [], {}, {}
        elif kind == "match" and not self.skip:
            line = decode(data["lines"])
            offset = data["absolute_offset"]
            if offset + len(line) > GREP_BYTES_PER_FILE:
                return None  # only whole lines within the first 1 MiB are searched
            index = data["line_number"] - 1
            self.matched.append(index)
            self.lines[index] = line
            self.offsets[index] = offset
        return None


class Scan:
    """A parallel `rg --json` running in the background. A thread reads its output and
    keeps, of the files it reports in any order, only the first ones in path order that
    an answer can use (`needed` matches, plus spares), so memory stays bounded whatever
    the query matches. While the files kept hold fewer matches than that, each new one
    is read through the containment walk there and then (the binary sniff and the
    re-check in one read), so on a sparse full scan that work overlaps rg's."""

    def __init__(
        self,
        ws: Workspace,
        include: Any,
        args: list[str],
        cwd: str,
        deadline: float,
        needed: int,
        context: int,
    ) -> None:
        self.ws = ws
        self.context = context
        self.deadline = deadline
        self.needed = needed + GREP_SCAN_SPARE_MATCHES
        self._done: Callable[[], None] | None = None
        self._done_lock = threading.Lock()
        self._complete = False
        self._files = Files(include)
        # The reader's own: it alone opens and closes them.
        self._dirs = DirCache(ws, GREP_DIR_FD_CACHE)
        self.kept: list[tuple[list[bytes], Found, Checked | None]] = []
        self._count = 0
        self.seen = 0  # matches reported so far, kept or not: the scan's pace
        self._started = time.monotonic()
        self.seconds = 0.0
        self.proc = spawn(args, cwd)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def ended_within(self, seconds: float) -> bool:
        self._reader.join(max(0.0, seconds))
        return not self._reader.is_alive()

    def worth_a_probe(self, wanted: int, expected: float) -> bool:
        """Whether a sorted single-threaded rg would likely fill `wanted` matches well
        before this scan (expected to take `expected` s in all) ends: at the scan's pace
        so far, halved (one thread against the scan's two), within GREP_PROBE_MARGIN of
        the time the scan has left (matches cluster, and a probe that loses slows it)."""
        seen, elapsed = self.seen, self.elapsed()
        if seen == 0:
            return False
        return 2 * elapsed * wanted / seen < GREP_PROBE_MARGIN * (expected - elapsed)

    def on_done(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the scan is complete (now, if it already is); the lock
        closes the gap where the reader has looked for a callback and not yet ended."""
        with self._done_lock:
            self._done = callback
            complete = self._complete
        if complete:
            callback()

    def _drain(self) -> None:
        """Read rg's output to its end whatever one file does: a reader that stopped
        would leave rg blocked on a full pipe until the time budget ran out."""
        assert self.proc.stdout is not None
        # ValueError: the pipe closed under the loop (`stop()` after the answer was full).
        with contextlib.suppress(OSError, ValueError):
            try:
                for raw in self.proc.stdout:
                    if raw.startswith(b'{"type":"match"'):
                        self.seen += 1
                    try:
                        done = self._files.feed(raw)
                        if done is not None:
                            self._keep(done)
                    except ValueError:
                        continue  # the last line of a killed rg
                    except (WorkspaceError, OSError):
                        continue  # the file changed under the scan: it is not kept
            finally:
                self._dirs.close()
        self.seconds = time.monotonic() - self._started
        complete = self.proc.wait() in (0, 1)  # 0: matches, 1: none
        with self._done_lock:
            self._complete = complete
            callback = self._done
        if complete and callback is not None:
            callback()  # the probe is overtaken

    def _keep(self, file: Found) -> None:
        key = _path_key(file.rel)
        if len(self.kept) > 1 and self._count >= self.needed and key > self.kept[-1][0]:
            return  # after every file kept, which already suffice
        checked = None
        if self._count < self.needed:
            checked = file.check(self._dirs.head(file.rel, file.needs(self.context)), self.context)
            if checked is None:
                return
        else:
            head = self._dirs.head(file.rel, BINARY_SNIFF_BYTES)
            if head is None or is_binary(head):
                return
        at = bisect.bisect(self.kept, key, key=lambda item: item[0])
        self.kept.insert(at, (key, file, checked))
        self._count += len(file.matched)
        # The last file in path order is not needed when the ones before it suffice.
        while len(self.kept) > 1 and self._count - len(self.kept[-1][1].matched) >= self.needed:
            self._count -= len(self.kept.pop()[1].matched)

    def wait(self) -> list[tuple[list[bytes], Found, Checked | None]]:
        # Joining the reader (rg's stdout at EOF) rather than `Popen.wait(timeout)`,
        # which polls with sleeps of up to 50 ms.
        self._reader.join(max(0.0, self.deadline - time.monotonic()))
        if self._reader.is_alive():
            raise timed_out()
        self.proc.wait()
        return self.kept

    def stop(self) -> None:
        stop(self.proc)
        self._reader.join(PIPE_DRAIN_GRACE_SECONDS)


class Probe:
    """One sorted rg process and its JSON stream, taken file by file as rg finishes them."""

    def __init__(
        self,
        ws: Workspace,
        include: Any,
        args: list[str],
        cwd: str,
        seconds: float,
        filled: Callable[[], float] | None = None,
        give_up_after: float | None = None,
        patience: float = GREP_PROBE_FIRST_MATCH_SECONDS,
    ) -> None:
        """rg is killed after `seconds` (or by `expire()`). A probe (`filled` gives the
        share of the answer collected so far) is also killed when it is not worth its
        CPU beside the parallel scan: no match at all after `patience` seconds,
        or, projecting its pace, a full answer later than GREP_PROBE_PROJECTED_SECONDS or
        than the last full scan of the same tree took (`give_up_after`)."""
        self.ws = ws
        self.files = Files(include)
        self.expired = False  # the timer killed rg before it finished
        self.stopped = False  # we stopped reading: the answer was full
        self.proc = spawn(args, cwd)
        self._started = time.monotonic()
        self._end = self._started + seconds
        self._filled = filled
        self._projected = min(GREP_PROBE_PROJECTED_SECONDS, give_up_after or float("inf"))
        first = min(seconds, patience) if filled else seconds
        self._timer = threading.Timer(max(0.0, first), self._check)
        self._timer.start()

    def _check(self) -> None:
        now = time.monotonic()
        if now >= self._end or self._filled is None:
            self.expire()
            return
        share = self._filled()
        elapsed = now - self._started
        if share <= 0 or elapsed / share > self._projected:
            self.expire()
            return
        self._timer = threading.Timer(min(GREP_PROBE_CHECK_SECONDS, self._end - now), self._check)
        self._timer.start()

    def expire(self) -> None:
        if self.proc.poll() is None:
            self.expired = True
            kill_group(self.proc)

    def take_in_order(self, result: GrepResult, query: GrepQuery) -> list[bytes] | None:
        """Take files as rg finishes them (in order); the sort key of the last one."""
        assert self.proc.stdout is not None
        last = None
        dirs = DirCache(self.ws, GREP_DIR_FD_CACHE)
        try:
            for raw in self.proc.stdout:
                try:
                    done = self.files.feed(raw)
                except ValueError:
                    break  # the last line of a killed rg
                if done is None:
                    continue
                last = _path_key(done.rel)
                if not take_verified(dirs, result, query, done):
                    self.stopped = True
                    return last
            self._finish()
        finally:
            dirs.close()
            self._timer.cancel()
            stop(self.proc)
        return last

    def _finish(self) -> None:
        """rg ran to the end: a regex it could not parse is the caller's mistake."""
        proc = self.proc
        proc.wait()
        proc._awm_drain.join(PIPE_DRAIN_GRACE_SECONDS)  # type: ignore[attr-defined]
        if not self.expired and proc.returncode == 2:
            message = regex_error(bytes(proc._awm_stderr))  # type: ignore[attr-defined]
            if message:
                raise InvalidArgumentError(message)


def take_verified(
    dirs: DirCache,
    result: GrepResult,
    query: GrepQuery,
    file: Found,
    checked: Checked | None = None,
) -> bool:
    """One file's matches, only those whose line, read again through the containment
    walk (`checked`, when already read so), is the line rg saw: what rg read elsewhere
    mid-swap never reaches the answer. False when the answer is full."""
    if checked is None:
        checked = file.check(dirs.head(file.rel, file.needs(query.context)), query.context)
    kept, lines = checked if checked is not None else ([], [])
    return take(result, query, file.rel, kept, lines)


def _path_key(rel: str) -> list[bytes]:
    """rg's `--sort path` order for a whole path: component by component, name bytes."""
    return [fs_sort_key(part) for part in rel.split("/")]
