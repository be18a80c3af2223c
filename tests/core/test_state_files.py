"""How state paths are reached (issue 47, item 4): the usual case straight down with
O_NOFOLLOW, a call's folders kept open for the rest of it; neither ever ends outside
the state directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_workspace_mcp.core.state.files import (
    ensure_state_dir,
    locate_state,
    open_state,
    state_scope,
)
from agent_workspace_mcp.core.workspaces import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    workspace = Workspace("w", str(root), str(root), primary=True)
    ensure_state_dir(workspace)
    return workspace


def write(ws: Workspace, *parts: str, data: bytes = b"record\n") -> None:
    with locate_state(ws, *parts, create_parents=True) as loc:
        fd = open_state(loc, os.O_WRONLY | os.O_TRUNC, create=True)
        assert fd is not None
        os.write(fd, data)
        os.close(fd)


def test_a_folder_planted_as_a_link_is_replaced_never_written_through(
    ws: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    seen = Path(ws.state_dir) / "seen"
    seen.symlink_to(outside)
    write(ws, "seen", "x.jsonl")
    assert list(outside.iterdir()) == []
    assert seen.is_dir() and not seen.is_symlink()
    assert (seen / "x.jsonl").read_bytes() == b"record\n"


def test_a_call_keeps_the_folder_it_reached_whatever_is_planted_at_its_name(
    ws: Workspace, tmp_path: Path
) -> None:
    """A link planted at a folder's name mid-call is not followed: the call goes on
    writing in the folder it reached; the next call finds the link and replaces it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    state = Path(ws.state_dir)
    with state_scope():
        write(ws, "seen", "a.jsonl")
        (state / "seen").rename(state / "moved")
        (state / "seen").symlink_to(outside)
        write(ws, "seen", "b.jsonl")
        assert sorted(p.name for p in (state / "moved").iterdir()) == ["a.jsonl", "b.jsonl"]
    assert list(outside.iterdir()) == []
    write(ws, "seen", "c.jsonl")
    assert list(outside.iterdir()) == []
    assert not (state / "seen").is_symlink() and (state / "seen" / "c.jsonl").exists()


def test_a_call_reaches_folders_from_the_ones_it_already_holds(
    ws: Workspace, tmp_path: Path
) -> None:
    """A folder on the way to one the call reached is kept too, and a later state file
    is reached from the nearest kept folder, never by a second walk from the root: a
    link planted at a folder's name mid-call is not followed, nor does it split the
    call's records between two folders."""
    outside = tmp_path / "outside"
    outside.mkdir()
    state = Path(ws.state_dir)
    (state / "checkpoints" / "objects" / "ab").mkdir(parents=True)
    (state / "checkpoints" / "objects" / "cd").mkdir()
    with state_scope():
        write(ws, "checkpoints", "objects", "ab", "one")  # straight down from the root
        (state / "checkpoints").rename(state / "moved")
        (state / "checkpoints").symlink_to(outside)
        write(ws, "checkpoints", "index.jsonl")  # from the kept checkpoints/
        write(ws, "checkpoints", "objects", "cd", "two")  # from the kept objects/
        (state / "locks").mkdir()
        (state / "locks").rename(state / "locks-moved")
        (state / "locks").symlink_to(outside)
        write(ws, "locks", "path-001.lock")  # from the kept state directory, no link followed
    assert (state / "moved" / "index.jsonl").read_bytes() == b"record\n"
    assert (state / "moved" / "objects" / "cd" / "two").read_bytes() == b"record\n"
    assert list(outside.iterdir()) == []
    assert not (state / "locks").is_symlink()
    assert (state / "locks" / "path-001.lock").read_bytes() == b"record\n"


def test_a_folder_removed_mid_call_is_reached_again(ws: Workspace) -> None:
    state = Path(ws.state_dir)
    with state_scope():
        write(ws, "checkpoints", "objects", "ab", "one")
        shutil.rmtree(state / "checkpoints")
        write(ws, "checkpoints", "objects", "ab", "two")
    assert (state / "checkpoints" / "objects" / "ab" / "two").read_bytes() == b"record\n"


def test_a_scope_closes_what_it_kept(ws: Workspace) -> None:
    before = len(os.listdir("/proc/self/fd"))
    with state_scope():
        for name in ("a", "b", "c"):
            write(ws, "seen", name)
            write(ws, "checkpoints", name)
        assert len(os.listdir("/proc/self/fd")) > before
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_state_directory_ignores_itself_whatever_a_call_reaches_first(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    ws = Workspace("w", str(root), str(root), primary=True)
    with state_scope():
        write(ws, "seen", "x.jsonl")  # makes .workspace-mcp/ on the way
        ensure_state_dir(ws)
        ensure_state_dir(ws)
    assert (root / ".workspace-mcp" / ".gitignore").read_text() == "*\n"
