"""What both engines return, so one renderer serves both and results can be compared."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LineHit:
    path: str  # relative to the workspace root
    line: int  # 1-based
    text: str  # without the line terminator
    is_match: bool = True  # False: a context line


@dataclass
class GrepResult:
    hits: list[LineHit] = field(default_factory=list)
    matches: int = 0
    files: int = 0
    more: bool = False  # stopped at maxResults with more matches left
    rules_hid: bool = False  # .gitignore rules excluded files from a search that ran out


@dataclass(frozen=True)
class Entry:
    path: str  # relative to the workspace root
    is_dir: bool


@dataclass
class ListResult:
    entries: list[Entry] = field(default_factory=list)
    more: bool = False
    budget_hit: bool = False  # stopped by the answer size budget rather than `limit`
    used: int = 0  # bytes the rendered entries take
    rules_hid: bool = False  # .gitignore rules excluded entries from a listing that ran out
    seen_dirs: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class GrepQuery:
    pattern: str
    ignore_case: bool
    max_results: int
    context: int
    include: str | None
    no_ignore: bool


@dataclass(frozen=True)
class ListQuery:
    pattern: str | None
    max_depth: int
    limit: int
    no_ignore: bool
    after: str | None = None  # root-relative: list only what comes after it (paging)


def listing_key(rel: str) -> tuple[bytes, ...]:
    """Where `rel` stands in a listing: both engines walk each directory by name bytes,
    a directory before what it holds, which is this tuple order."""
    return tuple(os.fsencode(part) for part in rel.split("/"))


def add_hits(
    result: GrepResult,
    rel: str,
    lines: Sequence[str] | Mapping[int, str],
    kept: list[int],
    context: int,
) -> None:
    """Matched lines (0-based indices) plus `context` lines around each, merged, in order.
    Without context, `lines` may hold only the matched lines (index to text)."""
    if not context:
        for index in kept:
            result.hits.append(LineHit(rel, index + 1, lines[index].rstrip("\r"), True))
        return
    assert isinstance(lines, Sequence)
    wanted: dict[int, bool] = {}
    for index in kept:
        for near in range(max(0, index - context), min(len(lines), index + context + 1)):
            wanted.setdefault(near, False)
        wanted[index] = True
    for index in sorted(wanted):
        result.hits.append(LineHit(rel, index + 1, lines[index].rstrip("\r"), wanted[index]))


def take(result: GrepResult, query: GrepQuery, rel: str, matched: list[int], lines: Any) -> bool:
    """Add one file's matches under the `maxResults` cap. Returns False when the search is done.

    Both engines call this with the same arguments for the same file, which is what makes
    their answers identical: truncation, the "more" look-ahead and context all live here.
    `lines` is the file's searched lines or a callable returning them (read lazily).
    """
    if not matched:
        return True
    if result.matches >= query.max_results:
        result.more = True  # a match beyond the cap exists
        return False
    room = query.max_results - result.matches
    kept = matched[:room]
    if len(matched) > room:
        result.more = True
    add_hits(result, rel, lines() if callable(lines) else lines, kept, query.context)
    result.matches += len(kept)
    result.files += 1
    return not result.more


def add_listed_file(
    result: ListResult, query: ListQuery, rel: str, base: str, is_binary: Any, budget: int
) -> bool:
    """Add a file (and, without a pattern, its not-yet-listed directories). False: stop.

    Shared by both engines so `limit`, the answer budget and directory derivation are
    one piece of code. `is_binary` is a callable returning True/False, or None when the
    file is not a regular file inside the root any more (a tree changing under the
    walk): then neither it nor its directories are listed, since their names may have
    come from outside.
    """
    binary = is_binary()
    if binary is None:
        return True
    new: list[Entry] = []
    if query.pattern is None:
        parts = rel.split("/")
        first = len(base.split("/")) + 1 if base else 1
        for depth in range(first, len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in result.seen_dirs:
                result.seen_dirs.add(directory)
                new.append(Entry(directory, True))
    if not binary:
        new.append(Entry(rel, False))
    return all(_append(result, query, entry, budget) for entry in new)


def add_listed_dir(result: ListResult, query: ListQuery, rel: str, budget: int) -> bool:
    """Add a directory met by the walk (empty ones and top-level folders included)."""
    if rel in result.seen_dirs:
        return True
    result.seen_dirs.add(rel)
    return _append(result, query, Entry(rel, True), budget)


def _append(result: ListResult, query: ListQuery, entry: Entry, budget: int) -> bool:
    if query.after is not None and listing_key(entry.path) <= listing_key(query.after):
        return True  # shown on an earlier page
    size = len(entry.path.encode("utf-8", "surrogateescape")) + 1 + entry.is_dir
    if len(result.entries) >= query.limit or result.used + size > budget:
        result.more = True
        result.budget_hit = len(result.entries) < query.limit
        return False
    result.entries.append(entry)
    result.used += size
    return True


def listing_base(start: str, start_is_dir: bool) -> str:
    """Directories at or above this are not listed: the searched directory itself, or the
    directory of a single searched file."""
    if start in ("", "."):
        return ""
    return start if start_is_dir else start.rpartition("/")[0]
