"""Exact-string edits on text, with near-miss help when the exact string is not there.

Pure functions over `str` (text with "\\n" line endings, as `TextDoc` holds it): no I/O.
When `old` is not found exactly, one more search runs with line endings, trailing
whitespace and Unicode punctuation look-alikes (curly quotes, dashes, non-breaking
spaces) normalized on both sides. Exactly one such match is applied and reported;
anything looser (indentation, several candidates, changed characters) is not applied,
and the error names the closest candidate's lines and what differs, so an agent can
fix its call in one step.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from .errors import WorkspaceError
from .limits import (
    EDIT_CANDIDATE_WINDOWS,
    EDIT_DIFF_MAX_LINES,
    EDIT_MATCHES_COUNTED,
    EDIT_MATCHES_LISTED,
)

# Look-alikes that models and editors substitute for ASCII. One char each, so
# normalization keeps offsets (the trailing-whitespace rule is what needs a map).
LOOKALIKES = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u00a0": " ",
    "\u2007": " ",
    "\u2009": " ",
    "\u202f": " ",
    "\u200a": " ",
}
_TRANSLATE = str.maketrans(LOOKALIKES)
_QUOTES = set("\u2018\u2019\u201a\u201b\u2032\u201c\u201d\u201e\u201f\u2033")
_DASHES = set("\u2010\u2011\u2012\u2013\u2014\u2212")
_SPACES = set("\u00a0\u2007\u2009\u202f\u200a")
_TRAILING_WS = re.compile(r"[ \t]+(?=\n|$)")


class EditError(WorkspaceError):
    """An edit that cannot be applied; the message says why and what to change."""


@dataclass(frozen=True)
class Edit:
    old: str
    new: str
    replace_all: bool = False


@dataclass
class EditOutcome:
    text: str
    replacements: int = 0
    notes: list[str] = field(default_factory=list)  # near-miss normalizations applied


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _span_lines(text: str, start: int, end: int) -> str:
    first = line_of(text, start)
    last = line_of(text, max(start, end - 1))
    return f"line {first}" if first == last else f"lines {first}-{last}"


def normalize_newlines(value: str) -> str:
    return value.replace("\r\n", "\n")


def _normalized_with_map(text: str) -> tuple[str, list[int]]:
    """Look-alikes translated and trailing blanks removed, plus normalized->original offsets."""
    translated = text.translate(_TRANSLATE)
    out: list[str] = []
    index_map: list[int] = []
    position = 0
    for match in _TRAILING_WS.finditer(translated):
        out.append(translated[position : match.start()])
        index_map.extend(range(position, match.start()))
        position = match.end()
    out.append(translated[position:])
    index_map.extend(range(position, len(translated)))
    index_map.append(len(text))  # one past the end
    return "".join(out), index_map


def _find_all(haystack: str, needle: str, limit: int = EDIT_MATCHES_COUNTED) -> list[int]:
    found: list[int] = []
    start = haystack.find(needle)
    while start != -1 and len(found) < limit:
        found.append(start)
        start = haystack.find(needle, start + max(1, len(needle)))
    return found


def _what_was_normalized(original: str, requested: str) -> str:
    kinds: list[str] = []
    seen = set(original) ^ set(requested)
    if seen & _QUOTES:
        kinds.append("curly quotes")
    if seen & _DASHES:
        kinds.append("Unicode dashes")
    if seen & _SPACES:
        kinds.append("non-breaking spaces")
    if _TRAILING_WS.sub("", original) != original or _TRAILING_WS.sub("", requested) != requested:
        kinds.append("trailing whitespace")
    return ", ".join(kinds) or "whitespace"


def apply_edit(text: str, edit: Edit, display: str) -> EditOutcome:
    """Apply one edit to `text` or raise EditError with a one-sentence reason."""
    old = normalize_newlines(edit.old)
    new = normalize_newlines(edit.new)
    if old == "":
        raise EditError("oldString must not be empty (use write_file to create or replace a file)")
    if old == new:
        raise EditError("oldString and newString are identical; nothing would change")
    positions = _find_all(text, old)
    if positions:
        if len(positions) > 1 and not edit.replace_all:
            where = ", ".join(str(line_of(text, p)) for p in positions[:EDIT_MATCHES_LISTED])
            more = "" if len(positions) <= EDIT_MATCHES_LISTED else ", ..."
            raise EditError(
                f"oldString matches {len(positions)} times in {display} (lines {where}{more}); "
                "add surrounding lines to make it unique, or pass replaceAll=true"
            )
        count = text.count(old) if edit.replace_all else 1
        return EditOutcome(
            text.replace(old, new) if edit.replace_all else text.replace(old, new, 1), count
        )
    return _apply_near_miss(text, old, new, edit.replace_all, display)


def _apply_near_miss(text: str, old: str, new: str, replace_all: bool, display: str) -> EditOutcome:
    norm_text, index_map = _normalized_with_map(text)
    norm_old, _ = _normalized_with_map(old)
    hits = _find_all(norm_text, norm_old) if norm_old.strip() else []
    if len(hits) == 1:
        start = index_map[hits[0]]
        # End after the last matched character, so trailing blanks the agent did not
        # mention stay as they were.
        end = index_map[hits[0] + len(norm_old) - 1] + 1
        original = text[start:end]
        normalized = _what_was_normalized(original, old)
        note = f"matched {_span_lines(text, start, end)} after normalizing {normalized}"
        return EditOutcome(text[:start] + new + text[end:], 1, [note])
    if len(hits) > 1:
        where = ", ".join(str(line_of(text, index_map[h])) for h in hits[:EDIT_MATCHES_LISTED])
        raise EditError(
            f"oldString not found exactly in {display}; normalized for whitespace and quotes it "
            f"matches {len(hits)} places (lines {where}), so nothing was applied; "
            "copy the exact text"
        )
    raise EditError(f"oldString not found in {display}; {closest_candidate(text, old)}")


def closest_candidate(text: str, old: str) -> str:
    """Describe the most similar block of lines: where it is and what differs."""
    lines = text.split("\n")
    wanted = old.strip("\n").split("\n")
    width = len(wanted)
    if not text or width == 0:
        return "the file is empty" if not text else "read the file and copy the exact text"
    key = [w.strip() for w in wanted]
    starts: set[int] = set()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        for offset, candidate in enumerate(key):
            if candidate and (
                stripped == candidate or stripped in candidate or candidate in stripped
            ):
                starts.add(index - offset)
        if len(starts) > EDIT_CANDIDATE_WINDOWS:
            break
    if not starts and len(lines) * width <= EDIT_CANDIDATE_WINDOWS * 20:
        starts = set(range(len(lines)))
    best: tuple[float, int] | None = None
    joined_old = "\n".join(wanted)
    for start in sorted(s for s in starts if 0 <= s < len(lines))[:EDIT_CANDIDATE_WINDOWS]:
        window = "\n".join(lines[start : start + width])
        score = difflib.SequenceMatcher(None, window, joined_old, autojunk=False).ratio()
        if best is None or score > best[0]:
            best = (score, start)
    if best is None or best[0] < 0.5:
        return "no similar text either; read the file and copy the exact text"
    start = best[1]
    found = lines[start : start + width]
    where = f"line {start + 1}" if width == 1 else f"lines {start + 1}-{start + len(found)}"
    return f"closest match at {where}: {_difference(found, wanted, start)}"


def _difference(found: list[str], wanted: list[str], start: int) -> str:
    if [f.strip() for f in found] == [w.strip() for w in wanted]:
        # Name the first line whose indentation differs, not just the first line.
        differing = next(
            (
                (i, f, w)
                for i, (f, w) in enumerate(zip(found, wanted, strict=False))
                if _indent([f]) != _indent([w])
            ),
            None,
        )
        if differing is None:
            return "only whitespace at line ends differs; copy the exact text"
        offset, have, want = differing
        return (
            f"indentation differs at line {start + offset + 1} (the file has "
            f"{_indent([have])}, oldString has {_indent([want])}); copy the exact indentation"
        )
    for offset, (have, want) in enumerate(zip(found, wanted, strict=False)):
        if have != want:
            return f"line {start + offset + 1} is {clip(have)!r} but oldString has {clip(want)!r}"
    return f"the file has {len(found)} lines there but oldString has {len(wanted)}"


def _indent(lines: list[str]) -> str:
    for line in lines:
        if line.strip():
            lead = line[: len(line) - len(line.lstrip())]
            if not lead:
                return "no indentation"
            tabs = lead.count("\t")
            spaces = len(lead) - tabs
            parts = [
                f"{n} {word}{'s' if n != 1 else ''}"
                for n, word in ((tabs, "tab"), (spaces, "space"))
                if n
            ]
            return " and ".join(parts)
    return "no indentation"


def clip(value: str, width: int = 60) -> str:
    """A long line shortened for an error sentence."""
    return value if len(value) <= width else value[: width - 3] + "..."


def apply_edits(text: str, edits: list[Edit], display: str) -> EditOutcome:
    """Apply edits in order against the progressively edited text."""
    outcome = EditOutcome(text)
    for edit in edits:
        step = apply_edit(outcome.text, edit, display)
        outcome.text = step.text
        outcome.replacements += step.replacements
        outcome.notes.extend(step.notes)
    return outcome


def unified_diff(
    before: str,
    after: str,
    display: str,
    *,
    created: bool = False,
    deleted: bool = False,
    max_lines: int = EDIT_DIFF_MAX_LINES,
    line_chars: int | None = None,
) -> str:
    """A short unified diff (3 lines of context), truncated with a count of what was left
    out; with `line_chars`, each longer line is cut there and says so.

    The format is difflib's, but only the lines shown are built: past `max_lines` the
    rest is counted, not formatted (a rewrite of a 160-line file shows 40 of its 323
    lines, and formatting the others was most of the diff's cost; issue 47, item 4).
    Lines the two texts share at their start and end are set aside before difflib
    compares the rest, as GNU diff and git do: a one-line change to a 9,600-line file
    took difflib 16 ms, and is now a scan of the lines. A middle that shares no line at
    all (a rewrite) is one change, without difflib. Texts whose only line break is "\n"
    find that shared start and end on their characters (compared in C), and only the
    lines around the change are split: a one-line change to a 9,600-line file took 1.9 ms
    splitting and scanning all its lines."""
    skip = 0  # lines before the part diffed, all shared: the hunks' numbers start after
    long = len(before) + len(after) > _AROUND_FROM_CHARS
    if long and _only_newlines(before) and _only_newlines(after):
        skip, before, after = _around_change(before, after, _CONTEXT)
    before_lines = before.splitlines(keepends=True)
    after_lines = after.splitlines(keepends=True)
    for lines in (before_lines, after_lines):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    parts: list[str] = []
    # The diff's lines so far, as its text splits at "\n": a line may hold the marker's
    # too, and one that ends at another break ("\r") runs on into the next.
    count = 0
    tail = ""

    def add(prefix: str, lines: list[str]) -> None:
        nonlocal count, tail
        if not lines:
            return
        newlines = "".join(lines).count("\n")
        room = max_lines - count
        if room > 0:
            shown = lines[:room]  # enough unless lines end at "\r" alone (old Mac files)
            if len(shown) < len(lines) and "".join(shown).count("\n") < room:
                shown = lines
            parts.extend(prefix + line for line in shown)
        count += newlines
        tail = lines[-1]

    for group in _grouped(_opcodes(before_lines, after_lines)):
        if count == 0:  # the first hunk
            add("--- ", ["/dev/null\n" if created else f"a/{display}\n"])
            add("+++ ", ["/dev/null\n" if deleted else f"b/{display}\n"])
        first, last = group[0], group[-1]
        old = _hunk_range(skip + first[1], skip + last[2])
        new = _hunk_range(skip + first[3], skip + last[4])
        add("", [f"@@ -{old} +{new} @@\n"])
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                add(" ", before_lines[i1:i2])
                continue
            if tag in ("replace", "delete"):
                add("-", before_lines[i1:i2])
            if tag in ("replace", "insert"):
                add("+", after_lines[j1:j2])
    if not tail.endswith("\n"):
        count += 1  # the last line has no newline of its own (or the diff is empty)
    text = "".join(parts).rstrip("\n").split("\n")
    if line_chars is not None:
        text = [
            line if len(line) <= line_chars else line[:line_chars] + "... (line truncated)"
            for line in text
        ]
    if count > max_lines:
        text = [*text[:max_lines], f"... (diff truncated, {count - max_lines} more lines)"]
    return "\n".join(text)


Opcode = tuple[str, int, int, int, int]


def _opcodes(before: list[str], after: list[str]) -> list[Opcode]:
    """difflib's opcodes for the lines between the texts' common start and end, which
    are equal blocks of their own."""
    limit = min(len(before), len(after))
    start = _shared(before, after, limit, at_end=False)
    # Lines shared at the end, never overlapping the shared start.
    end = _shared(before, after, limit - start, at_end=True)
    stop_before, stop_after = len(before) - end, len(after) - end
    old, new = before[start:stop_before], after[start:stop_after]
    middle: list[Opcode]
    if old and new and not set(old).isdisjoint(new):
        middle = list(difflib.SequenceMatcher(None, old, new).get_opcodes())
    else:
        # No line in common: difflib finds no match and says so in one opcode; building
        # its index of the new lines to learn that was most of a rewrite's diff.
        tag = "replace" if old and new else "delete" if old else "insert"
        middle = [(tag, 0, len(old), 0, len(new))] if old or new else []
    codes: list[Opcode] = [("equal", 0, start, 0, start)] if start else []
    for tag, i1, i2, j1, j2 in middle:
        codes.append((tag, i1 + start, i2 + start, j1 + start, j2 + start))
    if end:
        codes.append(("equal", stop_before, len(before), stop_after, len(after)))
    # Equal neighbours merged: an empty middle leaves the start and end side by side.
    merged: list[Opcode] = []
    for code in codes:
        if merged and merged[-1][0] == code[0] == "equal":
            merged[-1] = ("equal", merged[-1][1], code[2], merged[-1][3], code[4])
        else:
            merged.append(code)
    return merged


def _shared(before: list[str], after: list[str], limit: int, *, at_end: bool) -> int:
    """How many lines (at most `limit`) the two lists share at their start, or end:
    compared a slice at a time, growing while they match and halving where they do not,
    so a long shared run is compared in C, not line by line."""
    shared, step = 0, 16
    while shared < limit:
        size = min(step, limit - shared)
        if at_end:
            same = (
                before[len(before) - shared - size : len(before) - shared]
                == after[len(after) - shared - size : len(after) - shared]
            )
        else:
            same = before[shared : shared + size] == after[shared : shared + size]
        if same:
            shared += size
            step = size * 2
        elif size == 1:
            break
        else:
            step = size // 2
    return shared


_CONTEXT = 3  # lines shown around a change, as diff -u and git show them
# Below this many characters (both texts), splitting every line costs no more than
# finding the shared ends first (a 10 KB rewrite: 13 us more, a 10 KB one-line change
# 13 us less); a 200 KB one-line change takes 0.17 ms instead of 1.4.
_AROUND_FROM_CHARS = 32 * 1024

# What str.splitlines() ends a line at besides "\n": the ASCII ones, then the others.
_ASCII_BREAKS = ("\r", "\v", "\f", "\x1c", "\x1d", "\x1e")
_OTHER_BREAKS = ("\x85", "\u2028", "\u2029")


def _only_newlines(text: str) -> bool:
    """Whether "\n" is the only line break in `text` (each check a scan in C)."""
    if any(mark in text for mark in _ASCII_BREAKS):
        return False
    return text.isascii() or not any(mark in text for mark in _OTHER_BREAKS)


def _around_change(before: str, after: str, context: int) -> tuple[int, str, str]:
    """For texts whose only line break is "\n": the lines where they differ with up to
    `context` shared lines either side, and how many shared lines come before those. The
    lines `_opcodes` would set aside as the shared start and end, found on characters:
    the common prefix cut back to the start of its line, the common suffix (never into
    that start) cut forward to where a line starts in both texts."""
    shortest = min(len(before), len(after))
    start = before.rfind("\n", 0, _common_prefix(before, after, shortest)) + 1
    suffix = _common_suffix(before, after, shortest - start)
    end, end_after = len(before) - suffix, len(after) - suffix
    if not (end == start or before[end - 1] == "\n") or not (
        end_after == start or after[end_after - 1] == "\n"
    ):
        newline = before.find("\n", end)  # the first line wholly in the shared end
        end = len(before) if newline < 0 else newline + 1
    if start == 0 and end == len(before):
        return 0, before, after  # no whole line shared at either end (a rewrite)
    keep_from = start
    for _ in range(context):
        if keep_from == 0:
            break
        keep_from = before.rfind("\n", 0, keep_from - 1) + 1
    for _ in range(context):
        if end >= len(before):
            break
        newline = before.find("\n", end)
        end = len(before) if newline < 0 else newline + 1
    end_after = len(after) - (len(before) - end)  # the same shared lines, in `after`
    return before.count("\n", 0, keep_from), before[keep_from:end], after[keep_from:end_after]


def _common_prefix(a: str, b: str, limit: int) -> int:
    """How many characters (at most `limit`) `a` and `b` share at their start: the first
    64 compared alone (a rewrite differs there), then halves; every comparison in C."""
    first = min(limit, 64)
    low, high = (first, limit) if a[:first] == b[:first] else (0, first)
    while high - low > 16:  # a[:low] == b[:low]; the answer lies in [low, high]
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    while low < high and a[low] == b[low]:
        low += 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    """How many characters (at most `limit`) `a` and `b` share at their end, found as
    `_common_prefix` finds a start."""
    end_a, end_b = len(a), len(b)
    first = min(limit, 64)
    same = a[end_a - first :] == b[end_b - first :]
    low, high = (first, limit) if same else (0, first)
    while high - low > 16:
        mid = (low + high) // 2
        if a[end_a - mid : end_a - low] == b[end_b - mid : end_b - low]:
            low = mid
        else:
            high = mid
    while low < high and a[end_a - low - 1] == b[end_b - low - 1]:
        low += 1
    return low


def _grouped(codes: list[Opcode], context: int = _CONTEXT) -> list[list[Opcode]]:
    """The hunks of a unified diff with `context` lines around each change: difflib's
    `get_grouped_opcodes`, over opcodes it did not compute itself."""
    if not any(tag != "equal" for tag, *_ in codes):
        return []
    codes = list(codes)
    if codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:  # a gap wide enough to split hunks
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _hunk_range(start: int, stop: int) -> str:
    """A hunk's `start,length` as unified diffs write it (difflib's rule: a length of 1
    is left out, and an empty range names the line before it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"
