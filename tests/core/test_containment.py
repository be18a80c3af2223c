"""The containment walk, tested directly on real directories and symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_workspace_mcp.core.containment import display_path, locate
from agent_workspace_mcp.core.errors import (
    InvalidPathError,
    NotFoundError,
    OutsideWorkspaceError,
    WorkspaceError,
    WrongTypeError,
)
from agent_workspace_mcp.core.textio import atomic_write, read_bytes
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


def workspace(root: Path):
    return WorkspaceRegistry.confined(str(root)).primary


def resolved(root: Path, path: str, **kw) -> str:
    with locate(workspace(root), path, **kw) as loc:
        return loc.real_rel


def test_plain_relative_and_absolute_inside(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x")
    assert resolved(ws, "src/a.py") == "src/a.py"
    assert resolved(ws, "./src//a.py") == "src/a.py"
    assert resolved(ws, str(ws / "src" / "a.py")) == "src/a.py"
    assert resolved(ws, "src/../src/a.py") == "src/a.py"
    assert resolved(ws, ".") == "."
    assert resolved(ws, "") == "."
    assert resolved(ws, str(ws)) == "."


@pytest.mark.parametrize(
    "path", ["..", "../x", "src/../../x", "a/b/../../../x", "/etc/passwd", "/"]
)
def test_traversal_and_absolute_outside_are_refused(ws: Path, path: str) -> None:
    (ws / "src").mkdir()
    with pytest.raises(OutsideWorkspaceError) as info:
        locate(workspace(ws), path)
    assert str(info.value) == f"path outside workspace root: {path}"


def test_prefix_look_alike_root_is_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    evil = tmp_path / "ws_evil"
    root.mkdir()
    evil.mkdir()
    (evil / "x").write_text("evil")
    with pytest.raises(OutsideWorkspaceError):
        locate(workspace(root), str(evil / "x"))
    with pytest.raises(OutsideWorkspaceError):
        locate(workspace(root), "../ws_evil/x")
    (root / "link").symlink_to(evil / "x")
    with pytest.raises(OutsideWorkspaceError):
        locate(workspace(root), "link")


def test_symlinks_that_stay_inside_keep_working(ws: Path) -> None:
    (ws / "real" / "deep").mkdir(parents=True)
    (ws / "real" / "deep" / "f.txt").write_text("inside")
    (ws / "rel_dir").symlink_to("real/deep")
    (ws / "abs_dir").symlink_to(ws / "real" / "deep")
    (ws / "real" / "up").symlink_to("../real")
    (ws / "file_link").symlink_to("real/deep/f.txt")
    assert resolved(ws, "rel_dir/f.txt") == "real/deep/f.txt"
    assert resolved(ws, "abs_dir/f.txt") == "real/deep/f.txt"
    assert resolved(ws, "real/up/deep/f.txt") == "real/deep/f.txt"
    assert resolved(ws, "file_link") == "real/deep/f.txt"
    # A symlink followed by ".." uses the link target's parent, as the kernel does.
    assert resolved(ws, "rel_dir/../deep/f.txt") == "real/deep/f.txt"
    # follow_final=False names the link itself.
    assert resolved(ws, "file_link", follow_final=False) == "file_link"


def test_symlinks_that_leave_are_refused(ws: Path, outside: Path) -> None:
    (ws / "abs_out").symlink_to(outside)
    (ws / "rel_out").symlink_to("../outside")
    (ws / "file_out").symlink_to(outside / "secret.txt")
    (ws / "dangling_out").symlink_to(outside / "not-yet.txt")
    (ws / "sub").mkdir()
    (ws / "sub" / "chain").symlink_to("../rel_out")
    for path in [
        "abs_out/secret.txt",
        "rel_out/secret.txt",
        "file_out",
        "dangling_out",
        "sub/chain/secret.txt",
        "abs_out/new.txt",
        "rel_out/new/dir/f.txt",
    ]:
        with pytest.raises(OutsideWorkspaceError):
            locate(workspace(ws), path, create_parents=True)
    assert not (outside / "new").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_loops_end_with_one_sentence(ws: Path) -> None:
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    (ws / "self").symlink_to("self")
    for path in ("a", "a/x", "self/x"):
        with pytest.raises(WorkspaceError, match="too many levels of symbolic links"):
            locate(workspace(ws), path)


def test_malformed_input(ws: Path) -> None:
    with pytest.raises(InvalidPathError, match="NUL"):
        locate(workspace(ws), "a\x00b")
    with pytest.raises(InvalidPathError, match="longer than"):
        locate(workspace(ws), "a/" * 3000)


def test_missing_parent_and_file_as_parent(ws: Path) -> None:
    (ws / "file.txt").write_text("x")
    with pytest.raises(NotFoundError):
        locate(workspace(ws), "missing/dir/f.txt")
    with pytest.raises(WrongTypeError):
        locate(workspace(ws), "file.txt/f.txt")
    with locate(workspace(ws), "missing/dir/f.txt", create_parents=True) as loc:
        assert loc.lstat() is None
    assert (ws / "missing" / "dir").is_dir()


def test_directory_swapped_for_symlink_after_check_cannot_escape(ws: Path, outside: Path) -> None:
    """The race the walk exists for: check, swap the parent for a link, then write and read."""
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("original")
    loc = locate(workspace(ws), "sub/f.txt")
    try:
        os.rename(ws / "sub", ws / "sub_moved")
        (ws / "sub").symlink_to(outside)
        (outside / "f.txt").write_text("outside copy")
        atomic_write(loc, b"written after swap")
        data, _ = read_bytes(loc)
    finally:
        loc.close()
    assert data == b"written after swap"
    assert (ws / "sub_moved" / "f.txt").read_bytes() == b"written after swap"
    assert (outside / "f.txt").read_text() == "outside copy"


def test_final_component_swapped_for_symlink_is_not_followed_on_read(
    ws: Path, outside: Path
) -> None:
    (ws / "f.txt").write_text("inside")
    loc = locate(workspace(ws), "f.txt")
    try:
        (ws / "f.txt").unlink()
        (ws / "f.txt").symlink_to(outside / "secret.txt")
        with pytest.raises(WorkspaceError, match="changed while being opened"):
            read_bytes(loc)
    finally:
        loc.close()


def test_unconfined_uses_paths_as_given(tmp_path: Path, outside: Path) -> None:
    ws = WorkspaceRegistry.unconfined(str(tmp_path)).primary
    with locate(ws, str(outside / "secret.txt")) as loc:
        assert read_bytes(loc)[0] == b"top secret\n"
        assert loc.display == "outside/secret.txt"
    with locate(ws, "outside/secret.txt") as loc:
        assert loc.real_abs == str(outside / "secret.txt")
    with locate(ws, "/../" + str(outside / "secret.txt")) as loc:
        assert loc.real_abs == str(outside / "secret.txt")
    assert display_path(ws, "/etc/hosts") == "/etc/hosts"


def test_alias_spelling_of_root_is_accepted(tmp_path: Path) -> None:
    real = tmp_path / "real_root"
    real.mkdir()
    (real / "f.txt").write_text("x")
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    ws = WorkspaceRegistry.confined(str(alias)).primary
    assert ws.root == str(real)
    with locate(ws, str(alias / "f.txt")) as loc:
        assert loc.real_rel == "f.txt"
    with pytest.raises(OutsideWorkspaceError):
        locate(ws, str(tmp_path / "alias_evil" / "f.txt"))
