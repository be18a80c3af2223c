"""Directory operations: recursive delete never follows links, moves never overwrite silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_workspace_mcp.core import fileops
from agent_workspace_mcp.core.containment import locate
from agent_workspace_mcp.core.errors import AlreadyExistsError, InvalidArgumentError
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


def loc_of(root: Path, path: str, **kw):
    return locate(WorkspaceRegistry.confined(str(root)).primary, path, **kw)


def test_recursive_delete_unlinks_symlinks_without_entering_them(ws: Path, outside: Path) -> None:
    (ws / "tree" / "a" / "b").mkdir(parents=True)
    (ws / "tree" / "a" / "b" / "f").write_text("x")
    (ws / "tree" / "link_out").symlink_to(outside)
    (ws / "tree" / "a" / "file_out").symlink_to(outside / "secret.txt")
    with loc_of(ws, "tree", follow_final=False) as loc:
        fileops.delete(loc, recursive=True)
    assert not (ws / "tree").exists()
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_recursive_delete_of_a_tree_deeper_than_the_recursion_limit(ws: Path) -> None:
    import sys

    depth = sys.getrecursionlimit() + 50
    # Build with relative mkdir steps so no single path exceeds PATH_MAX.
    import os

    fd = os.open(ws, os.O_RDONLY)
    try:
        os.mkdir("deep", dir_fd=fd)
        current = os.open("deep", os.O_RDONLY, dir_fd=fd)
        for _ in range(depth):
            os.mkdir("d", dir_fd=current)
            nxt = os.open("d", os.O_RDONLY, dir_fd=current)
            os.close(current)
            current = nxt
        os.close(current)
    finally:
        os.close(fd)
    with loc_of(ws, "deep", follow_final=False) as loc:
        fileops.delete(loc, recursive=True)
    assert not (ws / "deep").exists()


def test_move_refuses_to_overwrite_unless_asked(ws: Path) -> None:
    (ws / "a").write_text("a")
    (ws / "b").write_text("b")
    with loc_of(ws, "a", follow_final=False) as src, loc_of(ws, "b", follow_final=False) as dst:
        with pytest.raises(AlreadyExistsError, match="overwrite=true"):
            fileops.move(src, dst, overwrite=False)
        fileops.move(src, dst, overwrite=True)
    assert (ws / "b").read_text() == "a" and not (ws / "a").exists()


def test_move_directory_into_itself_is_one_sentence(ws: Path) -> None:
    (ws / "d").mkdir()
    with (
        loc_of(ws, "d", follow_final=False) as src,
        loc_of(ws, "d/inner", follow_final=False) as dst,
        pytest.raises(InvalidArgumentError, match="into itself"),
    ):
        fileops.move(src, dst, overwrite=False)
