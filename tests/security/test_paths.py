"""Path attacks through the real tool surface: every one refused in one line, nothing touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client

from tests.helpers import fails, ok, tree

READ_TOOLS = [
    ("read_file", {}),
    ("read_binary_file", {}),
    ("file_info", {}),
]
WRITE_TOOLS = [
    ("write_file", {"content": "pwned"}),
    ("write_binary_file", {"contentBase64": "cHduZWQ="}),
    ("make_directory", {}),
    ("delete_path", {"recursive": True}),
]


@pytest.fixture
def planted(ws: Path, outside: Path) -> Path:
    (ws / "link_dir").symlink_to(outside)
    (ws / "rel_link_dir").symlink_to("../outside")
    (ws / "link_file").symlink_to(outside / "secret.txt")
    (ws / "dangling").symlink_to(outside / "created-by-attack.txt")
    evil = ws.parent / (ws.name + "_evil")
    evil.mkdir()
    (evil / "secret.txt").write_text("evil secret\n")
    return evil


ESCAPES = [
    "../outside/secret.txt",
    "../../etc/passwd",
    "/etc/passwd",
    "link_dir/secret.txt",
    "rel_link_dir/secret.txt",
    "link_file",
    "dangling",
    "link_dir/new/deeper/file.txt",
]


# delete_path and file_info act on a final symlink itself, which is inside (tested below).
CASES = [
    (tool, extra, path)
    for tool, extra in READ_TOOLS + WRITE_TOOLS
    for path in ESCAPES
    if not (tool in ("delete_path", "file_info") and path in ("link_file", "dangling"))
]


@pytest.mark.parametrize(("tool", "extra", "path"), CASES)
async def test_escapes_are_refused_for_every_tool(
    client: Client, ws: Path, outside: Path, planted: Path, tool: str, extra: dict, path: str
) -> None:
    before = tree(outside)
    message = await fails(client, tool, path=path, **extra)
    assert message == f"path outside workspace root: {path}"
    assert tree(outside) == before
    assert not (outside / "new").exists() and not (outside / "created-by-attack.txt").exists()


async def test_prefix_look_alike_root(client: Client, ws: Path, planted: Path) -> None:
    for path in (str(planted / "secret.txt"), f"../{planted.name}/secret.txt"):
        assert await fails(client, "read_file", path=path) == f"path outside workspace root: {path}"
        assert await fails(client, "write_file", path=path, content="x") == (
            f"path outside workspace root: {path}"
        )
    assert (planted / "secret.txt").read_text() == "evil secret\n"


async def test_move_cannot_carry_files_out_or_in(
    client: Client, ws: Path, outside: Path, planted
) -> None:
    (ws / "mine.txt").write_text("mine")
    for source, destination in [
        ("mine.txt", "../outside/mine.txt"),
        ("mine.txt", "link_dir/mine.txt"),
        ("../outside/secret.txt", "stolen.txt"),
        ("link_dir/secret.txt", "stolen.txt"),
    ]:
        message = await fails(client, "move_path", source=source, destination=destination)
        assert message.startswith("path outside workspace root: ")
    assert (ws / "mine.txt").read_text() == "mine"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert await fails(client, "rename_path", path="link_dir/secret.txt", newName="x") == (
        "path outside workspace root: link_dir/secret.txt"
    )


async def test_links_themselves_can_be_removed_without_touching_targets(
    client: Client, ws: Path, outside: Path, planted
) -> None:
    assert await ok(client, "delete_path", path="link_file") == "Deleted link_file (symlink)"
    assert await ok(client, "delete_path", path="link_dir") == "Deleted link_dir (symlink)"
    assert (outside / "secret.txt").read_text() == "top secret\n"
    info = await ok(client, "file_info", path="dangling")
    assert "type: symlink -> " in info


async def test_new_file_under_a_symlinked_parent(client: Client, ws: Path, outside: Path) -> None:
    (ws / "inside_real").mkdir()
    (ws / "inside_link").symlink_to("inside_real")
    (ws / "outside_link").symlink_to(outside)
    assert await ok(client, "write_file", path="inside_link/new/f.txt", content="ok")
    assert (ws / "inside_real" / "new" / "f.txt").read_text() == "ok"
    assert await fails(client, "write_file", path="outside_link/new/f.txt", content="x") == (
        "path outside workspace root: outside_link/new/f.txt"
    )
    assert not (outside / "new").exists()


async def test_nul_bytes_and_the_root_itself(client: Client, ws: Path) -> None:
    assert (
        await fails(client, "read_file", path="a\x00/../../etc/passwd")
        == "path contains a NUL byte"
    )
    assert (
        await fails(client, "write_file", path="x\x00y", content="z") == "path contains a NUL byte"
    )
    assert await fails(client, "write_file", path=".", content="z") == ".: is a directory"
    assert await fails(client, "read_file", path=str(ws)) == ".: is a directory, not a regular file"
    assert await fails(client, "delete_path", path=str(ws), recursive=True) == (
        "refusing to delete the workspace root itself"
    )
    assert await fails(client, "move_path", source=".", destination="x") == (
        "refusing to move the workspace root itself"
    )
    assert ws.is_dir()
