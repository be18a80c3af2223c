"""How state paths are reached (issue 47, item 4): the usual case straight down with
O_NOFOLLOW, a call's folders kept open for the rest of it; neither ever ends outside
the state directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_workspace_mcp.core.state.files import (
    ABSENT,
    Held,
    ensure_state_dir,
    locate_state,
    open_held,
    open_state,
    state_scope,
)
from agent_workspace_mcp.core.workspaces import Workspace
from tests.helpers import fds_under


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


def test_a_missing_folder_is_made_in_the_folder_the_call_holds(
    ws: Workspace, tmp_path: Path
) -> None:
    """A new checkpoint object's fan-out folder is made below the kept objects folder,
    not by a walk from the root: a link planted at a folder's name meanwhile is neither
    followed nor made into, and a link planted where the folder is to be made is not
    entered."""
    outside = tmp_path / "outside"
    outside.mkdir()
    state = Path(ws.state_dir)
    (state / "checkpoints" / "objects" / "ab").mkdir(parents=True)
    with state_scope():
        write(ws, "checkpoints", "objects", "ab", "one")  # straight down: folders kept
        (state / "checkpoints").rename(state / "moved")
        (state / "checkpoints").symlink_to(outside)
        write(ws, "checkpoints", "objects", "ef", "two")  # made in the kept objects/
        (state / "moved" / "objects" / "12").symlink_to(outside)
        write(ws, "checkpoints", "objects", "12", "three")
    made = state / "moved" / "objects" / "ef"
    assert made.is_dir() and not made.is_symlink()
    assert (made / "two").read_bytes() == b"record\n"
    assert list(outside.iterdir()) == []
    # the walk from the root decided the planted link: replaced, nothing written through
    assert (state / "checkpoints" / "objects" / "12" / "three").read_bytes() == b"record\n"


def test_a_folder_removed_mid_call_is_reached_again(ws: Workspace) -> None:
    state = Path(ws.state_dir)
    with state_scope():
        write(ws, "checkpoints", "objects", "ab", "one")
        shutil.rmtree(state / "checkpoints")
        write(ws, "checkpoints", "objects", "ab", "two")
    assert (state / "checkpoints" / "objects" / "ab" / "two").read_bytes() == b"record\n"


def test_a_scope_closes_what_it_kept(ws: Workspace) -> None:
    before = fds_under(ws.state_dir)
    with state_scope():
        for name in ("a", "b", "c"):
            write(ws, "seen", name)
            write(ws, "checkpoints", name)
        assert fds_under(ws.state_dir) > before
    assert fds_under(ws.state_dir) == before


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


def held(ws: Workspace, *parts: str, create: bool = False) -> object:
    """open_held's answer, its fd closed (a Held becomes "held")."""
    found = open_held(ws, parts, os.O_RDWR, create=create)
    if isinstance(found, Held):
        os.close(found.fd)
        return "held"
    return found


def test_a_state_file_opened_in_a_held_folder_is_only_ever_a_plain_file(
    ws: Workspace, tmp_path: Path
) -> None:
    """The short way (no walk) takes a name only when it is a plain file in a folder the
    call reached as itself; anything else goes the full way, which repairs it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "index.jsonl").write_bytes(b"theirs\n")
    state = Path(ws.state_dir)
    assert held(ws, ".lock") is None  # no call scope: always the full way
    with state_scope():
        ensure_state_dir(ws)  # the call now holds the state directory
        assert held(ws, "journal.jsonl") is ABSENT
        assert held(ws, "journal.jsonl", create=True) == "held"
        assert (state / "journal.jsonl").is_file()
        (state / "checkpoints").symlink_to(outside)
        # A folder in the name is never opened through: it must be held itself.
        assert held(ws, "checkpoints/index.jsonl", create=True) is None
        assert held(ws, "checkpoints", "index.jsonl", create=True) is None
        assert held(ws, "..", "x", create=True) is None
        (state / "linked").symlink_to(outside / "index.jsonl")
        os.mkfifo(state / "fifo")
        os.link(state / "journal.jsonl", tmp_path / "second-name")
        for name in ("linked", "fifo", "journal.jsonl"):  # a link, a FIFO, two names
            assert held(ws, name, create=True) is None
        (state / "folder").mkdir()
        assert held(ws, "folder") is None
    assert (outside / "index.jsonl").read_bytes() == b"theirs\n"
    assert sorted(p.name for p in outside.iterdir()) == ["index.jsonl"]


def test_a_folder_removed_mid_call_is_never_said_to_be_empty(ws: Workspace) -> None:
    state = Path(ws.state_dir)
    (state / "changes").mkdir()
    with state_scope():
        write(ws, "changes", "a.json")
        assert held(ws, "changes", "b.json") is ABSENT  # held, and b.json is not there
        shutil.rmtree(state / "changes")
        (state / "changes").mkdir()
        (state / "changes" / "b.json").write_bytes(b"{}")
        assert held(ws, "changes", "b.json") is None  # the full way finds the new folder
        with locate_state(ws, "changes", "b.json") as loc:
            assert loc.lstat() is not None


def test_a_job_outliving_its_call_keeps_no_folder(ws: Workspace) -> None:
    """A job started by a call runs in the call's context after the call's scope closed:
    it walks afresh every time and keeps nothing (nobody would close it)."""
    with state_scope():
        write(ws, "seen", "a.jsonl")
        from agent_workspace_mcp.core.state import files

        scope = files._scope.get()
    before = fds_under(ws.state_dir)
    token = files._scope.set(scope)  # as a job's context still holds it
    try:
        for name in ("b", "c"):
            write(ws, "seen", name)
            write(ws, "checkpoints", "objects", "ab", name)
            assert held(ws, "seen", name) is None
    finally:
        files._scope.reset(token)
    assert fds_under(ws.state_dir) == before
