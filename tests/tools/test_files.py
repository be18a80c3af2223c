"""Every file tool through a real in-memory client, on real files."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from tests.conftest import open_client
from tests.helpers import call, fails, lines_of, ok, sha

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_tool_surface_and_annotations(client: Client) -> None:
    tools = {t.name: t for t in await client.list_tools()}
    expected = {
        "read_file",
        "read_files",
        "read_binary_file",
        "write_file",
        "write_binary_file",
        "make_directory",
        "delete_path",
        "move_path",
        "rename_path",
        "file_info",
        "workspace_list",
    }
    assert expected <= set(tools)
    for name in ("read_file", "read_files", "read_binary_file", "file_info", "workspace_list"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("write_file", "write_binary_file", "delete_path", "move_path", "rename_path"):
        assert not tools[name].annotations.read_only_hint, name  # absent: the spec's false
        assert tools[name].annotations.destructive_hint is True, name
    assert tools["make_directory"].annotations.destructive_hint is False
    # With one workspace, `workspace` is not advertised (it could only name that one).
    assert not any("workspace" in t.input_schema.get("properties", {}) for t in tools.values())
    # Answers are plain text; no duplicated structured copy.
    assert tools["read_file"].output_schema is None


async def test_read_file_numbers_lines_and_pages(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    digest = sha((ws / "a.txt").read_bytes())
    assert await ok(client, "read_file", path="a.txt", limit=3) == (
        "1: line 1\n2: line 2\n3: line 3\n"
        f"... (truncated at line 3 of 10; continue with offset=4; sha256 {digest})"
    )
    assert await ok(client, "read_file", path="a.txt", offset=9) == (
        f"9: line 9\n10: line 10\n(sha256 {digest})"
    )
    assert "past the end of the file (10 lines)" in await fails(
        client, "read_file", path="a.txt", offset=11
    )


async def test_read_file_caps_lines_and_the_answer_size(client: Client, ws: Path) -> None:
    (ws / "long.txt").write_text("x" * 5000 + "\nshort\n")
    text = await ok(client, "read_file", path="long.txt")
    first = text.splitlines()[0]
    assert first == "1: " + "x" * limits.READ_CHARS_PER_LINE + "... (line truncated)"
    # Many long lines: the answer stops at the byte budget and says where to continue.
    (ws / "wide.txt").write_text(("y" * 1000 + "\n") * 500)
    text = await ok(client, "read_file", path="wide.txt")
    assert len(text.encode()) <= limits.ANSWER_BYTES + 200
    marker = text.splitlines()[-1]
    assert marker.startswith("... (truncated at line ")
    assert "of 500; continue with offset=" in marker
    assert marker.endswith(f"; sha256 {sha((ws / 'wide.txt').read_bytes())})")


async def test_read_file_crlf_bom_empty_and_no_trailing_newline(client: Client, ws: Path) -> None:
    (ws / "crlf.txt").write_bytes(b"\xef\xbb\xbfa\r\nb")
    assert lines_of(await ok(client, "read_file", path="crlf.txt")) == "1: a\n2: b"
    (ws / "empty.txt").write_bytes(b"")
    assert await ok(client, "read_file", path="empty.txt") == "(empty file: empty.txt)"
    # Only "\n" breaks lines: a form feed inside a line does not shift numbering.
    (ws / "ff.txt").write_text("a\x0cb\nc\n")
    assert lines_of(await ok(client, "read_file", path="ff.txt")) == "1: a\x0cb\n2: c"


async def test_read_file_refusals(client: Client, ws: Path) -> None:
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02")
    (ws / "latin.txt").write_bytes(b"caf\xe9\n")
    (ws / "dir").mkdir()
    assert "binary file; use read_binary_file" in await fails(client, "read_file", path="bin.dat")
    assert "not valid UTF-8" in await fails(client, "read_file", path="latin.txt")
    assert await fails(client, "read_file", path="dir") == "dir: is a directory, not a regular file"
    assert await fails(client, "read_file", path="missing.txt") == "not found: missing.txt"
    (ws / "huge.txt").write_bytes(b"a" * (limits.MAX_FILE_BYTES + 1))
    assert "file is too large" in await fails(client, "read_file", path="huge.txt")


async def test_read_files_answers_each_path(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    text = await ok(client, "read_files", paths=["a.txt", "nope.txt", "../x", "b.txt"])
    alpha, beta = sha("alpha\n"), sha("beta\n")
    assert text == (
        f"==> a.txt <==\n1: alpha\n(sha256 {alpha})\n"
        "==> nope.txt <==\nerror: not found: nope.txt\n"
        "==> ../x <==\nerror: path outside workspace root: ../x\n"
        f"==> b.txt <==\n1: beta\n(sha256 {beta})"
    )


async def test_read_files_shares_one_budget(client: Client, ws: Path) -> None:
    for i in range(5):
        (ws / f"f{i}.txt").write_text(("z" * 500 + "\n") * 100)
    text = await ok(client, "read_files", paths=[f"f{i}.txt" for i in range(5)])
    assert len(text.encode()) < limits.ANSWER_BYTES + 1000
    assert "answer budget reached; read separately:" in text


async def test_binary_round_trip_and_paging(client: Client, ws: Path) -> None:
    payload = bytes(range(256)) * 300  # 76800 bytes, larger than one chunk
    encoded = base64.b64encode(payload).decode()
    assert await ok(client, "write_binary_file", path="blob.bin", contentBase64=encoded) == (
        "Created blob.bin (76800 bytes)"
    )
    assert (ws / "blob.bin").read_bytes() == payload
    first = await ok(client, "read_binary_file", path="blob.bin")
    header, _, data = first.partition("\nbase64:\n")
    chunk = limits.READ_BINARY_CHUNK_BYTES
    assert header == f"blob.bin: bytes 0-{chunk} of 76800 (more: offset={chunk})"
    rest = await ok(client, "read_binary_file", path="blob.bin", offset=chunk)
    got = base64.b64decode(data) + base64.b64decode(rest.partition("\nbase64:\n")[2])
    assert got == payload
    assert await fails(client, "write_binary_file", path="x.bin", contentBase64="not base64!") == (
        "contentBase64 is not valid base64"
    )


async def test_images_come_back_as_image_content(client: Client, ws: Path) -> None:
    (ws / "dot.png").write_bytes(PNG_1PX)
    result = await client.call_tool("read_binary_file", {"path": "dot.png"})
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "image"]
    assert result.content[1].mime_type == "image/png"
    assert base64.b64decode(result.content[1].data) == PNG_1PX


async def test_write_file_creates_updates_and_keeps_conventions(client: Client, ws: Path) -> None:
    assert await ok(client, "write_file", path="new/deep/a.txt", content="hi\n") == (
        "Created new/deep/a.txt (3 bytes)"
    )
    (ws / "crlf.txt").write_bytes(b"\xef\xbb\xbfold\r\n")
    (ws / "crlf.txt").chmod(0o640)
    text = await ok(client, "write_file", path="crlf.txt", content="one\ntwo\n")
    assert text == (
        "Updated crlf.txt (13 bytes, kept CRLF line endings, kept UTF-8 BOM)\n"
        "--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1 +1,2 @@\n-old\n+one\n+two"
    )  # issue 44: the answer shows what changed, as edit_file's does
    assert (ws / "crlf.txt").read_bytes() == b"\xef\xbb\xbfone\r\ntwo\r\n"
    assert stat.S_IMODE((ws / "crlf.txt").stat().st_mode) == 0o640
    same = await ok(client, "write_file", path="crlf.txt", content="one\ntwo\n")
    assert same.endswith("\n(content unchanged)")
    long = "".join(f"line {i}\n" for i in range(500))
    await ok(client, "write_file", path="long.txt", content=long)
    changed = await ok(client, "write_file", path="long.txt", content=long.replace("line", "LINE"))
    assert len(changed.splitlines()) <= 1 + 41 and "(diff truncated, " in changed, changed[-200:]
    # A minified file's one long line is shown cut, not echoed whole twice (-old, +new).
    await ok(client, "write_file", path="min.js", content="a" * 10_000 + "\n")
    cut = await ok(client, "write_file", path="min.js", content="b" * 10_000 + "\n")
    shown = limits.WRITE_DIFF_LINE_CHARS
    assert cut.splitlines()[-2:] == [
        "-" + "a" * (shown - 1) + "... (line truncated)",
        "+" + "b" * (shown - 1) + "... (line truncated)",
    ], cut[-300:]
    assert await fails(client, "write_file", path="new", content="x") == "new: is a directory"


async def test_write_file_through_an_inside_symlink_keeps_the_link(
    client: Client, ws: Path
) -> None:
    (ws / "real.txt").write_text("old")
    (ws / "link.txt").symlink_to("real.txt")
    await ok(client, "write_file", path="link.txt", content="new")
    assert (ws / "link.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "new"


async def test_make_directory(client: Client, ws: Path) -> None:
    assert await ok(client, "make_directory", path="a/b/c") == "Created directory a/b/c"
    assert await ok(client, "make_directory", path="a/b/c") == "Directory a/b/c already exists"
    (ws / "f").write_text("x")
    assert await fails(client, "make_directory", path="f") == "f: already exists as a file"


async def test_delete_path(client: Client, ws: Path) -> None:
    (ws / "f.txt").write_text("x")
    (ws / "d" / "e").mkdir(parents=True)
    (ws / "d" / "e" / "g").write_text("x")
    (ws / "link").symlink_to("f.txt")
    assert await ok(client, "delete_path", path="link") == "Deleted link (symlink)"
    assert (ws / "f.txt").exists()
    assert await ok(client, "delete_path", path="f.txt") == "Deleted f.txt (file)"
    assert "recursive=true" in await fails(client, "delete_path", path="d")
    assert await ok(client, "delete_path", path="d", recursive=True) == (
        "Deleted d (directory with 2 entries)"
    )
    for root in (".", "", str(ws), "sub/.."):
        (ws / "sub").mkdir(exist_ok=True)
        assert await fails(client, "delete_path", path=root, recursive=True) == (
            "refusing to delete the workspace root itself"
        )
    assert ws.is_dir()
    assert await fails(client, "delete_path", path="gone") == "not found: gone"


async def test_move_and_rename(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("a")
    (ws / "b.txt").write_text("b")
    assert "overwrite=true" in await fails(client, "move_path", source="a.txt", destination="b.txt")
    assert (ws / "b.txt").read_text() == "b"
    assert await ok(client, "move_path", source="a.txt", destination="sub/dir/a.txt") == (
        "Moved a.txt -> sub/dir/a.txt"
    )
    assert await ok(client, "rename_path", path="sub/dir/a.txt", newName="c.txt") == (
        "Renamed sub/dir/a.txt -> sub/dir/c.txt"
    )
    assert (ws / "sub" / "dir" / "c.txt").read_text() == "a"
    assert await fails(client, "rename_path", path="b.txt", newName="../x") == (
        "newName must be a plain file name without '/'"
    )
    assert await ok(
        client, "move_path", source="b.txt", destination="sub/dir/c.txt", overwrite=True
    )
    assert (ws / "sub" / "dir" / "c.txt").read_text() == "b"
    assert (
        await fails(client, "move_path", source="missing", destination="x") == "not found: missing"
    )


async def test_file_info(client: Client, ws: Path) -> None:
    (ws / "t.txt").write_text("a\nb\nc")
    (ws / "link").symlink_to("t.txt")
    text = await ok(client, "file_info", path="t.txt")
    rows = dict(line.split(": ", 1) for line in text.splitlines())
    assert (
        rows["type"] == "file" and rows["size"] == "5 bytes" and rows["content"] == "text, 3 lines"
    )
    import hashlib

    assert rows["sha256"] == hashlib.sha256(b"a\nb\nc").hexdigest()
    assert "type: symlink -> t.txt" in await ok(client, "file_info", path="link")
    assert "type: directory" in await ok(client, "file_info", path=".")


async def test_workspace_argument_and_listing(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "f.txt").write_text("in two\n")
    settings = Settings(root=str(tmp_path / "one"), workspaces=(("api", str(tmp_path / "two")),))
    async with open_client(settings) as c:
        answer = await ok(c, "read_file", path="f.txt", workspace="api")
        assert lines_of(answer) == "1: in two"
        assert await fails(c, "read_file", path="f.txt") == "not found: f.txt"
        assert await fails(c, "read_file", path="f.txt", workspace="nope") == (
            'unknown workspace "nope". Available: default, api'
        )
        # An escape is judged against the selected workspace, even if it lands in another.
        assert "outside" in await fails(c, "read_file", path="../two/f.txt")
        listing = await ok(c, "workspace_list")
        # The read is remembered for the stale-read guard, in the workspace it was in.
        assert listing.splitlines() == [
            f"default  {tmp_path / 'one'}  (primary)  state: none",
            f"api  {tmp_path / 'two'}  state: yes",
        ]


async def test_tool_filters_leave_resources_and_prompts_alone(ws: Path) -> None:
    for settings in (
        Settings(root=str(ws), read_only=True),
        Settings(root=str(ws), tools=("read_file",)),
        Settings(root=str(ws), disable_tools=("write_file",)),
        Settings(root=str(ws), tools=("read_file", "write_file"), read_only=True),
    ):
        async with open_client(settings) as c:
            resources = {str(r.uri) for r in await c.list_resources()}
            prompts = {p.name for p in await c.list_prompts()}
            tools = {t.name for t in await c.list_tools()}
            assert {"resource://skills", "resource://cwd", "resource://workspaces"} <= resources
            assert {"resume", "new_skill", "plan_change"} <= prompts
            assert "read_file" in tools and "write_file" not in tools


async def test_read_only_mode_registers_only_read_tools(ws: Path) -> None:
    async with open_client(Settings(root=str(ws), read_only=True)) as c:
        names = {t.name for t in await c.list_tools()}
        assert "read_file" in names and "write_file" not in names and "delete_path" not in names
        answer = await call(c, "write_file", path="x", content="y")
        assert answer.is_error and not (ws / "x").exists()


async def test_tool_filters(ws: Path) -> None:
    async with open_client(Settings(root=str(ws), tools=("read_file", "grep", "write_file"))) as c:
        assert {t.name for t in await c.list_tools()} == {"read_file", "grep", "write_file"}
    async with open_client(
        Settings(root=str(ws), tools=("read_file", "write_file"), read_only=True)
    ) as c:
        assert {t.name for t in await c.list_tools()} == {"read_file"}
    async with open_client(
        Settings(root=str(ws), disable_tools=("delete_path", "write_file"))
    ) as c:
        names = {t.name for t in await c.list_tools()}
        assert "delete_path" not in names and "write_file" not in names and "read_file" in names
        assert (await call(c, "delete_path", path="x")).is_error


async def test_missing_paths_suggest_the_near_miss(client: Client, ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "utils.py").write_text("x = 1\n")
    (ws / "README.md").write_text("# hi\n")
    assert (
        await fails(client, "read_file", path="src/utlis.py")
        == "not found: src/utlis.py (did you mean src/utils.py?)"
    )
    assert (
        await fails(client, "read_file", path="README.MD")
        == "not found: README.MD (did you mean README.md?)"
    )
    assert (
        await fails(client, "file_info", path="src/util.py")
        == "not found: src/util.py (did you mean src/utils.py?)"
    )
    assert await fails(client, "edit_file", path="src/utils.pyy", oldString="x", newString="y") == (
        "not found: src/utils.pyy (did you mean src/utils.py?)"
    )
    assert await fails(client, "read_file", path="src/zzz.rs") == "not found: src/zzz.rs"
    # A missing parent directory gets the corrected path too.
    assert await fails(client, "read_file", path="sc/utils.py") == (
        "sc/utils.py: parent directory not found (did you mean src/utils.py?)"
    )
    assert await fails(client, "list_files", path="SRC/deeper") == (
        "SRC/deeper: parent directory not found (did you mean src/deeper?)"
    )
    assert await fails(client, "read_file", path="nothing/like/it.py") == (
        "nothing/like/it.py: parent directory not found"
    )
