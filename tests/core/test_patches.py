"""The lenient unified-diff parser and the context-searching applier."""

from __future__ import annotations

import pytest

from agent_workspace_mcp.core.patches import PatchError, apply_hunks, parse

GIT_DIFF = """\
diff --git a/a.txt b/a.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/x.txt b/y.txt
similarity index 100%
rename from x.txt
rename to y.txt
"""


def test_parse_git_diff_kinds() -> None:
    files = parse(GIT_DIFF)
    assert [(f.old_path, f.new_path, len(f.hunks)) for f in files] == [
        ("a.txt", "a.txt", 1),
        (None, "new.txt", 1),
        ("old.txt", None, 1),
        ("x.txt", "y.txt", 0),
    ]


def test_miscounted_hunk_headers_are_recounted() -> None:
    (patch,) = parse("--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n three\n four\n")
    assert apply_hunks("one\ntwo\nthree\nfour\n", patch) == "one\nTWO\nthree\nfour\n"
    (patch,) = parse("--- a/a.txt\n+++ b/a.txt\n@@ -1,9 +1,9 @@\n one\n-two\n+TWO\n")
    assert apply_hunks("one\ntwo\n", patch) == "one\nTWO\n"


def test_stale_line_numbers_still_apply_by_context() -> None:
    (patch,) = parse("--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n c\n-d\n+D\n e\n")
    text = "x\ny\na\nb\nc\nd\ne\n"  # the context moved down by 3 lines
    assert apply_hunks(text, patch) == "x\ny\na\nb\nc\nD\ne\n"


def test_blank_context_lines_without_their_space() -> None:
    (patch,) = parse("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n")
    assert apply_hunks("a\n\nb\n", patch) == "a\n\nB\n"


def test_no_newline_at_end_of_file() -> None:
    (patch,) = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n")
    assert apply_hunks("a", patch) == "b\n"
    (patch,) = parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n")
    assert apply_hunks("a\n", patch) == "b"


def test_mismatch_names_file_hunk_and_line() -> None:
    (patch,) = parse(
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n@@ -9,1 +9,1 @@\n-nine\n+9\n"
    )
    with pytest.raises(PatchError) as info:
        apply_hunks("one\ntwo\nthree\n", patch)
    assert str(info.value) == (
        "hunk 2 (@@ -9,1 +9,1 @@) of f does not apply: line 9 is end of file but the hunk expects 'nine'"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("just words", "no file diffs found"),
        ("--- a/f\n+++ b/f\n@@ bad @@\n", "malformed hunk header"),
        ("@@ -1 +1 @@\n-a\n+b\n", "a hunk appears before any ---/[+]{3} file header"),
        ("diff --git a/f b/f\nBinary files a/f and b/f differ\n", "binary diffs are not supported"),
        ("--- a/f\n+++ b/f\n", "file header without any hunk"),
    ],
)
def test_malformed_patches(text: str, message: str) -> None:
    with pytest.raises(PatchError, match=message):
        parse(text)
