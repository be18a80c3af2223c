"""What one recorded call changed, per path, as unified diffs (issue 31, 33): read from
its checkpoint (before) and the store or the disk (after), through the containment walk.
Text is diffed a page at a time; binary files and large files are named by size."""

from __future__ import annotations

import difflib
import hashlib
import stat
from dataclasses import dataclass, field

from .. import limits
from ..containment import locate
from ..errors import WorkspaceError
from ..textio import read_bytes
from ..workspaces import Workspace
from .history import History
from .states import State, same
from .store import LostObjectError, Store


@dataclass
class FileDiff:
    path: str
    change: str  # created, deleted, modified, mode; "created dir", "link -> file", ...
    plus: int = 0
    minus: int = 0
    lines: list[str] = field(default_factory=list)  # unified diff lines (paged)
    more: int = 0  # diff lines not shown
    note: str = ""  # binary, too large, content not kept


def line_counts(old: list[str], new: list[str]) -> tuple[int, int]:
    """Lines added and removed from `old` to `new` (undo's and a command's answer)."""
    plus = minus = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    return plus, minus


def entry_diffs(
    ws: Workspace, store: Store, entry_id: str, *, path: str | None = None, offset: int = 0
) -> list[FileDiff]:
    """What one call changed, per path, from its checkpoint: unified diffs for text,
    CONSOLE_DIFF_LINES at a time (`path` and `offset`: the next page of one file's)."""
    history = History(store, None)
    entry = history.entries[history.find(entry_id)]
    if entry.paths is None:
        raise WorkspaceError(f"#{entry.id} has no checkpoint left (pruned or damaged)")
    return [
        file_diff(ws, store, rel, before, after, offset)
        for rel, (before, after) in sorted(entry.paths.items())
        if path is None or rel == path
    ]


_KIND = {"f": "file", "d": "dir", "l": "link"}  # a recorded state's type, as people say it


def file_diff(
    ws: Workspace, store: Store, rel: str, before: State, after: State, offset: int = 0
) -> FileDiff:
    kinds = (before.get("t"), after.get("t"))
    if kinds == ("-", "f"):
        change = "created"
    elif kinds == ("f", "-"):
        change = "deleted"
    elif kinds == ("f", "f"):
        change = "modified" if before.get("h") != after.get("h") else "mode"
    elif kinds[0] == "-":
        change = f"created {_KIND.get(str(kinds[1]), 'entry')}"
    elif kinds[1] == "-":
        change = f"deleted {_KIND.get(str(kinds[0]), 'entry')}"
    elif kinds[0] == kinds[1]:
        change = f"{_KIND.get(str(kinds[0]), 'entry')} changed"
    else:  # a file became a folder, a link a file, ...
        change = f"{_KIND.get(str(kinds[0]), 'entry')} -> {_KIND.get(str(kinds[1]), 'entry')}"
    result = FileDiff(rel, change)
    if "f" not in kinds:
        return result
    old = _content(ws, store, rel, before)
    new = _content(ws, store, rel, after)
    if old is None or new is None:
        result.note = "content not kept (too large, or no longer recorded)"
        return result
    try:
        old_lines = old.decode("utf-8").splitlines()
        new_lines = new.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        result.note = f"binary: {len(old)} -> {len(new)} bytes"
        return result
    lines = list(difflib.unified_diff(old_lines, new_lines, f"a/{rel}", f"b/{rel}", lineterm=""))
    result.plus = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    result.minus = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    shown = limits.CONSOLE_DIFF_LINES
    result.lines = lines[offset : offset + shown]
    result.more = max(0, len(lines) - offset - shown)
    return result


def _content(ws: Workspace, store: Store, rel: str, state: State) -> bytes | None:
    """A recorded file's bytes: from the store, else from disk when the file there is
    still that very content (after-states are not stored); b"" for no file."""
    if state.get("t") != "f":
        return b""
    digest, size = state.get("h"), state.get("s")
    if not isinstance(digest, str) or not isinstance(size, int):
        return None
    if size > limits.CONSOLE_DIFF_MAX_BYTES:
        return None
    try:
        return store.get(digest, size)
    except LostObjectError:
        pass
    try:
        with locate(ws, rel) as loc:
            st = loc.lstat()
            if st is None or not stat.S_ISREG(st.st_mode) or st.st_size != size:
                return None
            data, _ = read_bytes(loc, limits.CONSOLE_DIFF_MAX_BYTES)
    except WorkspaceError:
        return None

    return data if hashlib.sha256(data).hexdigest() == digest else None


def net_diffs(
    ws: Workspace, store: Store, ids: set[str], subject: str | None = None
) -> tuple[list[FileDiff], dict[str, str]]:
    """What the calls `ids` changed together, per path: from each path's state before the
    first of them to its state after the last (so a file written three times is one
    diff), and for each path the first call's id (what undoing that file starts from).
    Undos among them count like any call: a file they put back as it was is no change."""
    history = History(store, subject)
    spans: dict[str, tuple[State, State]] = {}
    first: dict[str, str] = {}
    for entry in history.entries:  # oldest first
        if entry.id not in ids or not entry.paths:
            continue
        if not history.visible(entry):
            continue
        for rel, (before, after) in entry.paths.items():
            start = spans[rel][0] if rel in spans else before
            spans[rel] = (start, after)
            first.setdefault(rel, entry.id)
    changed = [(rel, span) for rel, span in sorted(spans.items()) if not same(*span)]
    diffs = [file_diff(ws, store, rel, before, after) for rel, (before, after) in changed]
    return diffs, first
