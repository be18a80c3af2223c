"""Exact edits and the near-miss rules, on plain strings."""

from __future__ import annotations

import difflib
import random

import pytest

from agent_workspace_mcp.core import editing
from agent_workspace_mcp.core.editing import Edit, EditError, apply_edit, apply_edits, unified_diff


def test_exact_single_and_replace_all() -> None:
    assert apply_edit("a b a", Edit("b", "c"), "f").text == "a c a"
    outcome = apply_edit("a b a", Edit("a", "x", replace_all=True), "f")
    assert (outcome.text, outcome.replacements) == ("x b x", 2)


def test_refusals_name_the_fix() -> None:
    with pytest.raises(EditError, match="must not be empty"):
        apply_edit("abc", Edit("", "x"), "f")
    with pytest.raises(EditError, match="identical; nothing would change"):
        apply_edit("abc", Edit("b", "b"), "f")
    with pytest.raises(EditError, match=r"matches 3 times in f \(lines 1, 2, 3\).*replaceAll=true"):
        apply_edit("x\nx\nx\n", Edit("x", "y"), "f")


def test_crlf_in_arguments_matches_lf_text() -> None:
    assert apply_edit("a\nb\n", Edit("a\r\nb", "c\r\nd"), "f").text == "c\nd\n"


@pytest.mark.parametrize(
    ("text", "old", "kind"),
    [
        ('say("hi")\n', "say(\u201chi\u201d)", "curly quotes"),
        ("a - b\n", "a \u2013 b", "Unicode dashes"),
        ("a b\n", "a\u00a0b", "non-breaking spaces"),
        ("x = 1   \ny = 2\n", "x = 1\ny = 2", "trailing whitespace"),
        ("x = 1\ny = 2\n", "x = 1  \ny = 2", "trailing whitespace"),
    ],
)
def test_near_miss_with_one_candidate_is_applied_and_reported(
    text: str, old: str, kind: str
) -> None:
    outcome = apply_edit(text, Edit(old, "NEW"), "f")
    assert outcome.replacements == 1
    assert kind in outcome.notes[0] and "matched line" in outcome.notes[0]
    assert "NEW" in outcome.text


def test_near_miss_keeps_trailing_blanks_it_did_not_match() -> None:
    outcome = apply_edit(
        "    return \u201chi\u201d  \nnext\n", Edit('return "hi"', "return 1"), "f"
    )
    assert outcome.text == "    return 1  \nnext\n"


def test_indentation_difference_is_not_applied_but_explained() -> None:
    text = "def f():\n    if x:\n        return 1\n"
    with pytest.raises(EditError) as info:
        apply_edit(text, Edit("  if x:\n      return 1", "z"), "f.py")
    message = str(info.value)
    assert message.startswith("oldString not found in f.py; closest match at lines 2-3")
    assert (
        "indentation differs at line 2 (the file has 4 spaces, oldString has 2 spaces)" in message
    )


def test_changed_characters_are_not_applied_but_located() -> None:
    text = "alpha\nbeta = compute(1)\ngamma\n"
    with pytest.raises(EditError) as info:
        apply_edit(text, Edit("beta = compute(2)", "z"), "f")
    assert "closest match at line 2: line 2 is 'beta = compute(1)' but oldString has" in str(
        info.value
    )


def test_several_normalized_candidates_are_not_applied() -> None:
    text = 'a = "x"\nb = 1\na = "x"\n'
    with pytest.raises(EditError, match=r"matches 2 places \(lines 1, 3\), so nothing was applied"):
        apply_edit(text, Edit("a = \u201cx\u201d", "z"), "f")


def test_nothing_similar() -> None:
    with pytest.raises(EditError, match="no similar text either"):
        apply_edit("alpha\nbeta\n", Edit("zzzzzzzz qqqq", "y"), "f")


def test_edits_apply_progressively() -> None:
    outcome = apply_edits("one two", [Edit("one", "1"), Edit("1 two", "12")], "f")
    assert (outcome.text, outcome.replacements) == ("12", 2)


def test_unified_diff_is_short_and_marks_truncation() -> None:
    diff = unified_diff("a\nb\n", "a\nc\n", "f.txt")
    assert diff.splitlines()[:3] == ["--- a/f.txt", "+++ b/f.txt", "@@ -1,2 +1,2 @@"]
    big = unified_diff("".join(f"{i}\n" for i in range(500)), "", "f", max_lines=10)
    assert big.splitlines()[-1].startswith("... (diff truncated, ")
    assert "\\ No newline at end of file" in unified_diff("a", "b", "f")


def _difflib_cut(before: str, after: str, max_lines: int, line_chars: int | None) -> str:
    """The whole diff as difflib writes it, then cut: what unified_diff must equal."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    for lines in (old, new):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    text = "".join(difflib.unified_diff(old, new, "a/f", "b/f")).rstrip("\n").split("\n")
    if line_chars is not None:
        text = [
            t if len(t) <= line_chars else t[:line_chars] + "... (line truncated)" for t in text
        ]
    if len(text) > max_lines:
        text = [*text[:max_lines], f"... (diff truncated, {len(text) - max_lines} more lines)"]
    return "\n".join(text)


def _random_pair(rng: random.Random, pieces: list[str]) -> tuple[str, str]:
    """A text of random pieces, and the same with a few of its characters replaced."""
    before = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 40)))
    after = list(before)
    for _ in range(rng.randrange(0, 6)):
        at = rng.randrange(0, len(after) + 1)
        after[at : at + rng.randrange(0, 8)] = rng.choice(pieces) * rng.randrange(0, 3)
    return before, "".join(after)


def test_unified_diff_builds_only_what_it_shows_and_says_the_rest() -> None:
    # Lines with other breaks (\r, form feed), empty lines, a missing final newline,
    # long lines, and cuts before, inside and after every hunk. The first and last lines
    # differ, so no shared start or end is set aside: the text must be difflib's own.
    rng = random.Random(47)
    pieces = ["a\n", "b\n", "\n", "c\r", "d\x0ce\n", "x" * 30 + "\n", "end", "", "f\r\n"]
    for _ in range(600):
        before, after = _random_pair(rng, pieces)
        before = "<old>" + before + rng.choice(["zb", "zb\n"])
        new = "<new>" + after + rng.choice(["za", "za\n"])
        max_lines, line_chars = rng.randrange(1, 30), rng.choice([None, 5, 20])
        expected = _difflib_cut(before, new, max_lines, line_chars)
        shown = unified_diff(before, new, "f", max_lines=max_lines, line_chars=line_chars)
        assert shown == expected, (before, new, max_lines, line_chars)


def test_a_shared_start_and_end_change_nothing_where_lines_are_unique() -> None:
    # Set aside or compared by difflib, a line that occurs once on each side can only
    # match itself: the hunks, their context and their cut are difflib's.
    rng = random.Random(48)
    for _ in range(600):
        pool = [f"line {n}\n" for n in range(rng.randrange(0, 60))]
        before = [line for line in pool if rng.random() < 0.9]
        after = [line for line in pool if rng.random() < 0.9]
        after[rng.randrange(0, len(after) + 1) : 0] = ["new\n"] * rng.randrange(0, 2)
        ends = [rng.choice(["", "last"]) for _ in range(2)]
        old, new = "".join(before) + ends[0], "".join(after) + ends[1]
        max_lines = rng.choice([3, 10, 40, 1000])
        assert unified_diff(old, new, "f", max_lines=max_lines) == _difflib_cut(
            old, new, max_lines, None
        ), (old, new, max_lines)


def test_a_rewrite_that_shares_no_line_is_difflibs_one_change() -> None:
    # No line of the old middle occurs in the new one (or one side is empty): the one
    # opcode taken without difflib must give difflib's text, around any shared start,
    # shared end, duplicates within a side and a missing final newline.
    rng = random.Random(50)
    for _ in range(600):
        shared = [f"same {n}\n" for n in range(rng.randrange(0, 8))]
        cut = rng.randrange(0, len(shared) + 1)
        old = [rng.choice(["a\n", "b\n", "a\n", "\n"]) for _ in range(rng.randrange(0, 30))]
        new = [rng.choice(["c\n", "d\n", "d\n"]) for _ in range(rng.randrange(0, 30))]
        ends = [rng.choice(["", "last-old"]), rng.choice(["", "last-new"])]
        before = "".join(shared[:cut] + old + shared[cut:]) + ends[0]
        after = "".join(shared[:cut] + new + shared[cut:]) + ends[1]
        max_lines = rng.choice([2, 10, 40, 1000])
        assert unified_diff(before, after, "f", max_lines=max_lines) == _difflib_cut(
            before, after, max_lines, None
        ), (before, after, max_lines)


def _patched(before: str, diff: str) -> str:
    """`before` with a unified diff of "\n"-separated lines applied, as `patch` would."""
    old = before.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    last = ""
    for line in diff.split("\n")[2:]:
        if line.startswith("@@"):
            start, _, length = line.split()[1][1:].partition(",")
            first = int(start) if length == "0" else int(start) - 1
            out += old[at:first]
            at = first
        elif line.startswith("\\"):
            if last in (" ", "+"):  # the line just written has no newline
                out[-1] = out[-1].removesuffix("\n")
        elif line[:1] in (" ", "-"):
            assert old[at].removesuffix("\n") == line[1:], (old[at], line)
            at += 1
            if line[0] == " ":
                out.append(old[at - 1])
        elif line[:1] == "+":
            out.append(line[1:] + "\n")
        last = line[:1]
    out += old[at:]
    return "".join(out)


def test_diffs_of_repeated_lines_apply() -> None:
    # Repeated lines are where setting the shared start and end aside can align a change
    # differently from difflib; either way the diff must turn the old text into the new.
    rng = random.Random(49)
    pieces = ["a\n", "b\n", "\n", "x" * 30 + "\n", "c\n"]
    for _ in range(600):
        before, new = _random_pair(rng, pieces)
        diff = unified_diff(before, new, "f", max_lines=10_000)
        assert _patched(before, diff) == new, (before, new, diff)


def test_one_changed_line_in_a_long_file_is_one_hunk() -> None:
    lines = [f"line {n}\n" for n in range(9_600)]
    after = lines.copy()
    after[5_000] = "changed\n"
    diff = unified_diff("".join(lines), "".join(after), "f")
    assert diff.split("\n") == [
        "--- a/f",
        "+++ b/f",
        "@@ -4998,7 +4998,7 @@",
        *(f" line {n}" for n in range(4_997, 5_000)),
        "-line 5000",
        "+changed",
        *(f" line {n}" for n in range(5_001, 5_004)),
    ]


def test_a_rewrite_of_every_line_shows_its_start_and_counts_the_rest() -> None:
    before = "".join(f"old {n}\n" for n in range(160))
    after = "".join(f"new {n}\n" for n in range(160))
    lines = unified_diff(before, after, "f", max_lines=40).split("\n")
    assert lines[:4] == ["--- a/f", "+++ b/f", "@@ -1,160 +1,160 @@", "-old 0"]
    assert lines[-1] == "... (diff truncated, 283 more lines)"  # 3 + 160 + 160 - 40
    assert len(lines) == 41


def _hunks(before: str, after: str) -> list[list[tuple[str, int, int, int, int]]]:
    """The hunks unified_diff shows, from the whole texts split into lines."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    for lines in (old, new):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    return editing._grouped(editing._opcodes(old, new))


def test_the_lines_around_a_change_give_the_hunks_of_the_whole_texts() -> None:
    """Texts with only "\\n" breaks are cut to the lines around their change before they
    are split: the hunks, numbered from the lines left out, are those of the whole
    texts, with repeated lines, empty lines, a missing final newline, one text empty or
    a prefix of the other, and identical texts."""
    rng = random.Random(51)
    pieces = ["a\n", "b\n", "\n", "a\n", "x" * 40 + "\n", "ab\n", "b"]
    for _ in range(3000):
        before, after = _random_pair(rng, pieces)
        if rng.random() < 0.3:
            shared = "".join(rng.choice(pieces[:-1]) for _ in range(rng.randrange(0, 12)))
            before, after = shared + before + shared, shared + after + shared
        skip, old, new = editing._around_change(before, after, 3)
        shifted = [
            [(tag, i1 + skip, i2 + skip, j1 + skip, j2 + skip) for tag, i1, i2, j1, j2 in g]
            for g in _hunks(old, new)
        ]
        assert shifted == _hunks(before, after), (before, after)
        assert before.startswith("".join(before.splitlines(keepends=True)[:skip]) + old)


def test_a_change_deep_in_a_long_file_is_diffed_around_it() -> None:
    lines = [f"line {n}\n" for n in range(9_600)]
    changed = [*lines[:4800], "line 4800 changed\n", *lines[4801:]]
    diff = unified_diff("".join(lines), "".join(changed), "f", max_lines=40)
    assert diff.split("\n")[2:] == [
        "@@ -4798,7 +4798,7 @@",
        " line 4797",
        " line 4798",
        " line 4799",
        "-line 4800",
        "+line 4800 changed",
        " line 4801",
        " line 4802",
        " line 4803",
    ]


def test_long_texts_diffed_around_their_changes_are_difflibs() -> None:
    """Past _AROUND_FROM_CHARS the shared ends are found on characters: with unique
    lines (where setting them aside changes nothing) the text is difflib's, hunk numbers
    included, for changes at the start, the end, the middle and in several places."""
    rng = random.Random(52)
    for _ in range(60):
        pool = [f"line {n:05d} of a long file\n" for n in range(2_000)]
        before = [line for line in pool if rng.random() < 0.98]
        after = list(before)
        for _ in range(rng.randrange(1, 4)):
            at = rng.choice([0, len(after) - 1, rng.randrange(len(after))])
            after[at : at + rng.randrange(0, 3)] = ["new\n"] * rng.randrange(0, 3)
        ends = [rng.choice(["", "last"]) for _ in range(2)]
        old, new = "".join(before) + ends[0], "".join(after) + ends[1]
        assert len(old) + len(new) > editing._AROUND_FROM_CHARS
        max_lines = rng.choice([10, 40, 1000])
        assert unified_diff(old, new, "f", max_lines=max_lines) == _difflib_cut(
            old, new, max_lines, None
        ), (old[:200], new[:200], max_lines)
