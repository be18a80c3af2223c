"""edit_file, patch and apply_patch through the real client, on real files."""

from __future__ import annotations

import asyncio
import hashlib
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from tests.conftest import open_client
from tests.helpers import fails, ok, sha, tree


async def test_edit_file_reports_count_and_diff(client: Client, ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\n")
    text = await ok(client, "edit_file", path="a.py", oldString="y = 2", newString="y = 3")
    assert text == (
        "Edited a.py: 1 replacement\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3"
    )
    assert (ws / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_edit_file_rules(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("k\nk\n")
    assert "matches 2 times" in await fails(
        client, "edit_file", path="a.txt", oldString="k", newString="v"
    )
    assert "must not be empty" in await fails(
        client, "edit_file", path="a.txt", oldString="", newString="v"
    )
    text = await ok(
        client, "edit_file", path="a.txt", oldString="k", newString="v", replaceAll=True
    )
    assert text.startswith("Edited a.txt: 2 replacements")
    assert (ws / "a.txt").read_text() == "v\nv\n"
    message = await fails(client, "edit_file", path="missing.txt", oldString="a", newString="b")
    assert message == "not found: missing.txt (use write_file to create a file)"


async def test_snake_case_spellings_are_accepted(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("one two\n")
    await ok(client, "edit_file", path="a.txt", old_string="one", new_string="1")
    await ok(
        client,
        "patch",
        edits=[{"path": "a.txt", "old_string": "two", "new_string": "2", "replace_all": True}],
    )
    assert (ws / "a.txt").read_text() == "1 2\n"
    schema = {t.name: t for t in await client.list_tools()}["edit_file"].input_schema
    assert "oldString" in schema["properties"] and "old_string" not in schema["properties"]


async def test_crlf_bom_and_missing_final_newline_survive(client: Client, ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree")
    await ok(client, "edit_file", path="win.txt", oldString="two", newString="2a\n2b")
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbfone\r\n2a\r\n2b\r\nthree"
    await ok(client, "edit_file", path="win.txt", oldString="one\r\n2a", newString="1")
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbf1\r\n2b\r\nthree"
    await ok(
        client, "patch", edits=[{"path": "win.txt", "oldString": "three", "newString": "3\n4"}]
    )
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbf1\r\n2b\r\n3\r\n4"
    patch = "--- a/win.txt\n+++ b/win.txt\n@@ -1,4 +1,4 @@\n 1\n-2b\n+two-b\n 3\n 4\n\\ No newline at end of file\n"
    await ok(client, "apply_patch", patch=patch)
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbf1\r\ntwo-b\r\n3\r\n4"


async def test_mixed_line_endings_change_only_the_replaced_text(client: Client, ws: Path) -> None:
    original = b"a\r\nb\nc\r\nd\ne\r\nf\n"
    for dominant_crlf in (True, False):
        data = original + (b"g\r\n" if dominant_crlf else b"g\n")
        (ws / "mixed.txt").write_bytes(data)
        await ok(client, "edit_file", path="mixed.txt", oldString="c", newString="C")
        assert (ws / "mixed.txt").read_bytes() == data.replace(b"c\r\n", b"C\r\n")
        await ok(client, "edit_file", path="mixed.txt", oldString="d\ne", newString="D\nE")
        assert (ws / "mixed.txt").read_bytes() == data.replace(b"c\r\nd\ne", b"C\r\nD\nE")
    patch = "--- a/mixed.txt\n+++ b/mixed.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    await ok(client, "apply_patch", patch=patch)
    assert (ws / "mixed.txt").read_bytes() == b"a\r\nB\nC\r\nD\nE\r\nf\ng\n"


async def test_dry_runs_and_rejected_patches_leave_no_directories(client: Client, ws: Path) -> None:
    new_file = "--- /dev/null\n+++ b/new/deep/er/file.txt\n@@ -0,0 +1 @@\n+hello\n"
    await ok(client, "apply_patch", patch=new_file, dryRun=True)
    assert sorted(p.name for p in ws.iterdir() if p.name != ".workspace-mcp") == []
    # A patch whose second file does not apply writes nothing, and creates no directory.
    (ws / "exists.txt").write_text("one\n")
    rejected = new_file + "--- a/exists.txt\n+++ b/exists.txt\n@@ -1 +1 @@\n-not there\n+two\n"
    await fails(client, "apply_patch", patch=rejected)
    assert not (ws / "new").exists()
    # write_file refused for size creates no parents either.
    too_big = "x" * (16 * 1024 * 1024 + 1)
    await fails(client, "write_file", path="big/dir/f.txt", content=too_big)
    assert not (ws / "big").exists()
    await ok(client, "apply_patch", patch=new_file)
    assert (ws / "new" / "deep" / "er" / "file.txt").read_text() == "hello\n"


async def test_near_miss_is_applied_and_said(client: Client, ws: Path) -> None:
    (ws / "q.py").write_text('msg = "it\'s fine"   \nother = 1\n')
    text = await ok(
        client,
        "edit_file",
        path="q.py",
        oldString="msg = \u201cit\u2019s fine\u201d",
        newString="msg = 2",
    )
    assert text.startswith(
        "Edited q.py: 1 replacement (matched line 1 after normalizing curly quotes"
    )
    assert (ws / "q.py").read_text() == "msg = 2   \nother = 1\n"


async def test_near_miss_that_is_not_safe_is_explained(client: Client, ws: Path) -> None:
    (ws / "i.py").write_text("def f():\n\tif x:\n\t\treturn 1\n")
    before = (ws / "i.py").read_bytes()
    message = await fails(
        client, "edit_file", path="i.py", oldString="    if x:\n        return 1", newString="z"
    )
    assert message == (
        "oldString not found in i.py; closest match at lines 2-3: indentation differs "
        "at line 2 (the file has 1 tab, oldString has 4 spaces); copy the exact indentation"
    )
    # When the first lines agree, the first line that differs is named (not "no
    # indentation" twice).
    message = await fails(
        client, "edit_file", path="i.py", oldString="def f():\n    if x:", newString="z"
    )
    assert "indentation differs at line 2 (the file has 1 tab, oldString has 4 spaces)" in message
    assert (ws / "i.py").read_bytes() == before


async def test_dry_run_writes_nothing_on_all_three_tools(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\n")
    before = tree(ws)
    text = await ok(
        client, "edit_file", path="a.txt", oldString="alpha", newString="beta", dryRun=True
    )
    assert text.startswith(
        "Dry run, nothing written: would have edited a.txt: 1 replacement\n--- a/a.txt"
    )
    text = await ok(
        client,
        "patch",
        dryRun=True,
        edits=[{"path": "a.txt", "oldString": "alpha", "newString": "b"}],
    )
    assert text.startswith("Dry run, nothing written: would have patched 1 edit across 1 file")
    patch = "--- /dev/null\n+++ b/new/n.txt\n@@ -0,0 +1 @@\n+n\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+z\n"
    text = await ok(client, "apply_patch", patch=patch, dryRun=True)
    assert text.startswith("Dry run, nothing written: would have patched 2 files\n")
    assert "+++ b/new/n.txt" in text
    assert tree(ws) == before


async def test_expected_sha256_guards_against_stale_reads(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("v1\n")
    read = await ok(client, "read_file", path="a.txt")
    shown = read.rsplit("sha256 ", 1)[1].rstrip(")")
    assert shown == sha("v1\n")
    (ws / "a.txt").write_text("v2\n")  # someone else changed it
    message = await fails(
        client, "edit_file", path="a.txt", oldString="v2", newString="v3", expectedSha256=shown
    )
    assert message.startswith("a.txt changed since it was read (sha256 is now ")
    assert (ws / "a.txt").read_text() == "v2\n"
    full = hashlib.sha256(b"v2\n").hexdigest()
    await ok(
        client,
        "edit_file",
        path="a.txt",
        oldString="v2",
        newString="v3",
        expectedSha256=full.upper(),
    )
    assert "8 to 64 hexadecimal" in await fails(
        client, "edit_file", path="a.txt", oldString="v3", newString="v4", expectedSha256="xyz"
    )
    message = await fails(
        client,
        "patch",
        edits=[
            {"path": "a.txt", "oldString": "v3", "newString": "v4", "expectedSha256": "00000000"}
        ],
    )
    assert message.startswith("edit[0] failed: a.txt changed since it was read")


async def test_parallel_edits_of_one_file_never_lose_an_update(client: Client, ws: Path) -> None:
    (ws / "log.txt").write_text("END\n")

    async def add(i: int) -> None:
        await ok(client, "edit_file", path="log.txt", oldString="END", newString=f"line {i}\nEND")

    await asyncio.gather(*(add(i) for i in range(24)))
    lines = (ws / "log.txt").read_text().splitlines()
    assert sorted(lines[:-1]) == sorted(f"line {i}" for i in range(24))
    assert lines[-1] == "END"


async def test_patch_is_all_or_nothing_with_indexed_errors(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("one\n")
    (ws / "b.txt").write_text("two\n")
    before = tree(ws)
    message = await fails(
        client,
        "patch",
        edits=[
            {"path": "a.txt", "oldString": "one", "newString": "1"},
            {"path": "b.txt", "oldString": "two", "newString": "2"},
            {"path": "a.txt", "oldString": "one", "newString": "again"},
        ],
    )
    assert message.startswith("edit[2] failed: oldString not found in a.txt")
    assert tree(ws) == before
    message = await fails(
        client,
        "patch",
        edits=[
            {"path": "a.txt", "oldString": "one", "newString": "1"},
            {"path": "../x", "oldString": "a", "newString": "b"},
        ],
    )
    assert message == "edit[1] failed: path outside workspace root: ../x"
    text = await ok(
        client,
        "patch",
        edits=[
            {"path": "a.txt", "oldString": "one", "newString": "1"},
            {"path": "b.txt", "oldString": "two", "newString": "2"},
            {"path": "a.txt", "oldString": "1", "newString": "uno"},
        ],
    )
    assert text.startswith("Patched 3 edits across 2 files (3 replacements)")
    assert (ws / "a.txt").read_text() == "uno\n" and (ws / "b.txt").read_text() == "2\n"


async def test_apply_patch_modify_add_delete_rename(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    (ws / "old.txt").write_text("bye\n")
    (ws / "x.txt").write_text("moving\n")
    (ws / "x.txt").chmod(0o700)
    patch = """\
diff --git a/a.txt b/a.txt
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
+++ b/sub/new.txt
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
    text = await ok(client, "apply_patch", patch=patch)
    assert text.startswith("Patched 5 files")  # modify, add, delete, and the rename's two ends
    assert (ws / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (ws / "sub" / "new.txt").read_text() == "hello\nworld\n"
    assert not (ws / "old.txt").exists() and not (ws / "x.txt").exists()
    assert (ws / "y.txt").read_text() == "moving\n"
    assert (ws / "y.txt").stat().st_mode & 0o777 == 0o700


async def test_apply_patch_failure_names_hunk_and_writes_nothing(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "b.txt").write_text("three\n")
    before = tree(ws)
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-THREE\n+3\n"
        "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+c\n"
    )
    message = await fails(client, "apply_patch", patch=patch)
    assert message == (
        "hunk 1 (@@ -1 +1 @@) of b.txt does not apply: line 1 is 'three' but the hunk expects 'THREE'"
    )
    assert tree(ws) == before
    assert "already exists" in await fails(
        client, "apply_patch", patch="--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n"
    )
    assert (
        await fails(
            client, "apply_patch", patch="--- /dev/null\n+++ ../evil.txt\n@@ -0,0 +1 @@\n+x\n"
        )
        == "path outside workspace root: ../evil.txt"
    )


async def test_edit_targets_that_must_be_refused(client: Client, ws: Path, outside: Path) -> None:
    (ws / "bin.dat").write_bytes(b"\x00\x01abc")
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "dir_link").symlink_to(outside)
    assert await fails(client, "edit_file", path="bin.dat", oldString="abc", newString="x") == (
        "bin.dat: binary file; edit tools change text files only"
    )
    assert await fails(client, "edit_file", path="link", oldString="top", newString="x") == (
        "path outside workspace root: link"
    )
    message = await fails(
        client, "apply_patch", patch="--- /dev/null\n+++ b/dir_link/n.txt\n@@ -0,0 +1 @@\n+x\n"
    )
    assert message == "path outside workspace root: dir_link/n.txt"
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_size_cap(client: Client, ws: Path) -> None:
    (ws / "big.txt").write_bytes(b"a" * (limits.MAX_FILE_BYTES + 1))
    assert "too large to edit" in await fails(
        client, "edit_file", path="big.txt", oldString="a", newString="b"
    )
    (ws / "grow.txt").write_bytes(b"x\n" + b"a" * (limits.MAX_FILE_BYTES - 100))
    message = await fails(
        client, "edit_file", path="grow.txt", oldString="x\n", newString="y" * 1000 + "\n"
    )
    assert "the edited file would be too large" in message
    assert (ws / "grow.txt").read_bytes()[:2] == b"x\n"


# Starts the real server with a real write failure that happens even for root: files
# may not grow past 64 KiB (RLIMIT_FSIZE; SIGXFSZ ignored so write() fails with EFBIG).
LIMITED_SERVER = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
sys.argv = ["agent-workspace-mcp", *sys.argv[1:]]
runpy.run_module("agent_workspace_mcp", run_name="__main__")
"""


@pytest.mark.slow
async def test_a_failed_write_midway_restores_the_files_already_written(ws: Path) -> None:
    """File 1 is written, file 2's write fails for real (EFBIG): file 1 gets its old bytes back."""
    (ws / "a.txt").write_text("small a\n")
    (ws / "b.txt").write_text("small b\n")
    before = tree(ws)
    transport = StdioTransport(
        sys.executable, ["-c", LIMITED_SERVER, "--root", str(ws)], keep_alive=False
    )
    async with Client(transport) as client:
        answer = await client.call_tool(
            "patch",
            {
                "edits": [
                    {"path": "a.txt", "oldString": "small a", "newString": "edited a"},
                    {"path": "b.txt", "oldString": "small b", "newString": "b" * 100_000},
                ]
            },
            raise_on_error=False,
        )
    assert answer.is_error
    assert (
        answer.content[0].text == "b.txt: file too large; 1 file(s) restored, no file was changed"
    )
    assert tree(ws) == before


@st.composite
def edit_batches(draw):
    words = st.sampled_from(["alpha", "beta", "gamma", "delta", "x", "y", "1", "2"])
    line = st.lists(words, min_size=1, max_size=4).map(" ".join)
    files = draw(
        st.lists(
            st.lists(line, max_size=6).map(lambda ls: "\n".join(ls) + "\n"), min_size=1, max_size=3
        )
    )
    edits = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "file": st.integers(0, len(files) - 1),
                    "oldString": st.one_of(words, line),
                    "newString": st.one_of(words, line, st.just("")),
                    "replaceAll": st.booleans(),
                }
            ),
            min_size=1,
            max_size=5,
        )
    )
    return files, edits


def reference(files: list[str], edits: list[dict]) -> list[str] | None:
    """What `patch` must produce for ASCII text with no look-alikes, or None if it must fail."""
    out = list(files)
    for edit in edits:
        text, old, new = out[edit["file"]], edit["oldString"], edit["newString"]
        if old == new or old not in text:
            return None
        if text.count(old) > 1 and not edit["replaceAll"]:
            return None
        out[edit["file"]] = (
            text.replace(old, new) if edit["replaceAll"] else text.replace(old, new, 1)
        )
    return out


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.slow
@given(batch=edit_batches())
def test_property_random_edits_apply_fully_or_change_nothing(tmp_path_factory, batch) -> None:
    files, edits = batch
    root = tmp_path_factory.mktemp("prop")
    for i, content in enumerate(files):
        (root / f"f{i}.txt").write_text(content)
    before = tree(root)
    expected = reference(files, edits)
    arguments = [
        {
            "path": f"f{e['file']}.txt",
            "oldString": e["oldString"],
            "newString": e["newString"],
            "replaceAll": e["replaceAll"],
        }
        for e in edits
    ]

    async def run() -> bool:
        async with open_client(Settings(root=str(root))) as client:
            result = await client.call_tool("patch", {"edits": arguments}, raise_on_error=False)
            return bool(result.is_error)

    failed = asyncio.run(run())
    if expected is None:
        assert failed
        assert tree(root) == before
    else:
        assert not failed
        assert [(root / f"f{i}.txt").read_text() for i in range(len(files))] == expected
