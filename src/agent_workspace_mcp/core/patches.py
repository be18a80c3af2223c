"""Unified diffs as `git diff` prints them: parse leniently, apply with context search.

Written here rather than taken from `unidiff`: that library trusts the `@@` line counts,
and diffs written by models often miscount. unidiff 1.0.1 then either rejects the
patch or silently drops the lines past the declared count (verified), which would
turn an all-or-nothing patch into a partial one. This parser takes each hunk's extent
from its body and recounts. Hunks apply at their stated line when the context matches
there, else at the nearest place where it matches exactly, else (one more try) with
trailing whitespace ignored; otherwise the hunk is reported and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .editing import clip
from .errors import WorkspaceError

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(WorkspaceError):
    pass


@dataclass
class Hunk:
    old_start: int
    header: str
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" "|"-"|"+", text)
    old_no_newline: bool = False
    new_no_newline: bool = False

    @property
    def old_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind in " -"]

    @property
    def new_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind in " +"]


@dataclass
class FilePatch:
    old_path: str | None  # None for an added file
    new_path: str | None  # None for a deleted file
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def display(self) -> str:
        return self.new_path or self.old_path or "?"


def _strip_prefix(path: str, prefix: str) -> str | None:
    path = path.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    if path == "/dev/null":
        return None
    return path[len(prefix) :] if path.startswith(prefix) else path


def parse(text: str) -> list[FilePatch]:
    """Parse one or more file diffs. Raises PatchError naming the first problem."""
    lines = text.replace("\r\n", "\n").split("\n")
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    git_paths: tuple[str, str] | None = None
    rename_from: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        nxt = lines[index + 1] if index + 1 < len(lines) else ""
        if line.startswith("diff --git "):
            hunk = None
            current = None
            rename_from = None
            match = re.match(r"diff --git a/(.+) b/(.+)$", line)
            git_paths = (match.group(1), match.group(2)) if match else None
        elif line.startswith("rename from "):
            rename_from = line[len("rename from ") :].strip()
        elif line.startswith("rename to ") and rename_from is not None:
            current = FilePatch(rename_from, line[len("rename to ") :].strip())
            files.append(current)
        elif line.startswith("--- ") and nxt.startswith("+++ "):
            old = _strip_prefix(line[4:], "a/")
            new = _strip_prefix(nxt[4:], "b/")
            if old is None and new is None:
                raise PatchError("a file header has /dev/null on both sides")
            if (
                current is not None
                and current.old_path == old
                and current.new_path == new
                and not current.hunks
            ):
                pass  # the rename header already created this file entry
            else:
                current = FilePatch(old, new)
                files.append(current)
            hunk = None
            index += 1
        elif line.startswith("@@"):
            match = _HUNK_RE.match(line)
            if not match:
                raise PatchError(f"malformed hunk header: {line[:80]}")
            if current is None:
                raise PatchError("a hunk appears before any ---/+++ file header")
            hunk = Hunk(int(match.group(1)), match.group(0))
            current.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            hunk.lines.append((line[0], line[1:]))
        elif hunk is not None and line.startswith("\\"):
            if hunk.lines:
                kind = hunk.lines[-1][0]
                if kind in " -":
                    hunk.old_no_newline = True
                if kind in " +":
                    hunk.new_no_newline = True
        elif hunk is not None and line == "":
            # A blank context line whose leading space was lost (common in pasted
            # diffs), unless it is only the patch's own trailing newline.
            ahead = index + 1
            while ahead < len(lines) and lines[ahead] == "":
                ahead += 1
            follower = lines[ahead] if ahead < len(lines) else ""
            is_body = follower[:1] in (" ", "-", "+", "\\")
            if is_body and not follower.startswith(("--- ", "+++ ")):
                hunk.lines.append((" ", ""))
        elif line.startswith("Binary files"):
            raise PatchError("binary diffs are not supported; use write_binary_file")
        index += 1
    if git_paths and not files:
        raise PatchError("the diff names files but has no ---/+++ headers or hunks")
    if not files:
        raise PatchError("no file diffs found; expected ---/+++ headers followed by @@ hunks")
    for patch in files:
        if patch.old_path == patch.new_path and not patch.hunks:
            raise PatchError(f"{patch.display}: file header without any hunk")
    return files


def apply_hunks(text: str, patch: FilePatch) -> str:
    """Apply a file's hunks to `text` ("\\n" line endings); raise PatchError on a mismatch."""
    had_newline = text.endswith("\n") or text == ""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[str] = []
    cursor = 0  # next unconsumed line in `lines`
    delta = 0  # how far actual positions drifted from the headers
    final_newline = had_newline
    for number, hunk in enumerate(patch.hunks, 1):
        old = hunk.old_lines
        expected = max(hunk.old_start - 1 + delta, cursor) if hunk.old_start > 0 else cursor
        position = _locate_hunk(lines, old, expected, cursor)
        if position is None:
            raise PatchError(_mismatch(patch.display, number, hunk, lines, expected))
        out.extend(lines[cursor:position])
        out.extend(hunk.new_lines)
        cursor = position + len(old)
        delta = position - (hunk.old_start - 1) if hunk.old_start > 0 else delta
        if cursor >= len(lines):
            if hunk.new_no_newline:
                final_newline = False
            elif hunk.old_no_newline or not had_newline:
                final_newline = True
    out.extend(lines[cursor:])
    if not out:
        return ""
    return "\n".join(out) + ("\n" if final_newline else "")


def _locate_hunk(lines: list[str], old: list[str], expected: int, floor: int) -> int | None:
    """The start line where `old` matches, nearest to `expected` and not before `floor`."""
    if not old:
        return min(max(expected, floor), len(lines))
    limit = len(lines) - len(old)
    if limit < floor:
        return None
    candidates = sorted(range(floor, limit + 1), key=lambda c: (abs(c - expected), c))
    exact: Callable[[str, str], bool] = lambda a, b: a == b  # noqa: E731
    loose: Callable[[str, str], bool] = lambda a, b: a.rstrip() == b.rstrip()  # noqa: E731
    for same in (exact, loose):
        for start in candidates:
            if same(lines[start], old[0]) and all(
                same(lines[start + i], old[i]) for i in range(1, len(old))
            ):
                return start
    return None


def _mismatch(display: str, number: int, hunk: Hunk, lines: list[str], expected: int) -> str:
    old = hunk.old_lines
    for i, want in enumerate(old):
        at = expected + i
        have = lines[at] if at < len(lines) else None
        if have != want:
            shown = "end of file" if have is None else repr(clip(have))
            return (
                f"hunk {number} ({hunk.header}) of {display} does not apply: "
                f"line {at + 1} is {shown} but the hunk expects {clip(want)!r}"
            )
    return f"hunk {number} ({hunk.header}) of {display} does not apply"
