"""Checkpoints cannot be turned against the host (issue 17).

The store lives under `.workspace-mcp/`, which the file tools cannot write but a command
(or any process inside the root) can: a planted index line, object or symlink must never
make an undo write outside the root, into `.git`, or a setuid file, and a restore must
never bring an outside file's content in. A directory swapped for a symlink while the
server records and undoes must never let a change land outside.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from agent_workspace_mcp.configuration import preflight
from agent_workspace_mcp.core.checkpoints.store import Store
from tests.conftest import open_client
from tests.helpers import call, fails, ok
from tests.tools.test_undo import entries

AT_FDCWD = -100
INDEX = Path(".workspace-mcp/checkpoints/index.jsonl")


def plant(ws: Path, manifest: dict) -> None:
    """An index line as a process inside the root could append it."""
    line = {"id": "planted", "ts": "2026-01-01T00:00:00.000Z", "tool": "write_file", "p": manifest}
    with (ws / INDEX).open("a") as handle:
        handle.write(json.dumps(line) + "\n")


def store_of(ws: Path) -> Store:
    return Store(preflight(Settings(root=str(ws))).primary)


def file_state(data: bytes, mode: int = 0o644) -> dict:
    return {"t": "f", "m": mode, "s": len(data), "h": hashlib.sha256(data).hexdigest(), "o": 1}


async def test_planted_paths_cannot_leave_the_root_or_enter_git(ws: Path, outside: Path) -> None:
    secret = outside / "secret.txt"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "lnk").symlink_to(outside)
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="a.txt", content="a\n")
        hook = b"#!/bin/sh\ntouch /tmp/pwned\n"
        store_of(ws).put(hook)
        for rel in ("../outside/secret.txt", str(secret), "lnk/secret.txt", "a/../../x"):
            plant(ws, {rel: [{"t": "-"}, file_state(secret.read_bytes())]})
            assert (await fails(client, "undo", steps=1)).startswith(
                ("undo failed", "undo refused", "path outside workspace root")
            )
            lines = (ws / INDEX).read_text().splitlines()
            (ws / INDEX).write_text("\n".join(lines[:-1]) + "\n")
        plant(ws, {".git/hooks/pre-commit": [file_state(hook, 0o755), {"t": "-"}]})
        assert ".git" in await fails(client, "undo", steps=1)
    assert secret.read_text() == "top secret\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


async def test_a_planted_mode_never_restores_setuid(ws: Path) -> None:
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="a.txt", content="now\n")
        tool = b"#!/bin/sh\nid\n"
        store_of(ws).put(tool)
        plant(ws, {"suid.sh": [file_state(tool, 0o6755), {"t": "-"}]})
        await ok(client, "undo", steps=1)
    assert (ws / "suid.sh").read_bytes() == tool
    assert (ws / "suid.sh").stat().st_mode & 0o7777 == 0o755


async def test_a_hard_link_at_an_object_name_never_brings_an_outside_file_in(
    ws: Path, outside: Path
) -> None:
    # An object is one header byte (`r` raw) and the content: an outside file that
    # starts with `r` (/etc/passwd starts with "root:") is a valid object of the rest.
    (outside / "passwd").write_bytes(b"root:x:0:0:secret\n")
    secret = b"oot:x:0:0:secret\n"
    digest = hashlib.sha256(secret).hexdigest()
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="x.txt", content="x\n")
        bucket = ws / ".workspace-mcp" / "checkpoints" / "objects" / digest[:2]
        bucket.mkdir(parents=True, exist_ok=True)
        os.link(outside / "passwd", bucket / digest[2:])
        plant(ws, {"leak.txt": [file_state(secret), {"t": "-"}]})
        refusal = await fails(client, "undo", steps=1)
    assert "is not a plain file" in refusal and "put back" in refusal
    assert not (ws / "leak.txt").exists()


async def test_a_symlinked_store_writes_nothing_outside(ws: Path, outside: Path) -> None:
    (ws / ".workspace-mcp").mkdir()
    (ws / ".workspace-mcp" / "checkpoints").symlink_to(outside)
    listing = sorted(os.listdir(outside))
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="a.txt", content="a\n")  # the write still works
        await ok(client, "undo")  # the link was replaced by a real store (issue 28)
    assert sorted(os.listdir(outside)) == listing
    assert not (ws / "a.txt").exists()
    assert not (ws / ".workspace-mcp" / "checkpoints").is_symlink()


@pytest.mark.slow  # 360 calls against a swapping thread: ~10 s
async def test_record_and_undo_while_a_directory_is_swapped_for_a_symlink(
    ws: Path, outside: Path
) -> None:
    """A thread keeps swapping `d` with a symlink to outside/ while the server writes,
    creates, deletes and undoes inside it: nothing outside may ever change."""
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("OUTSIDE\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "keep.txt").write_text("OUTSIDE\n")

    def state() -> dict[str, bytes | None]:
        return {
            str(p.relative_to(outside)): p.read_bytes() if p.is_file() else None
            for p in sorted(outside.rglob("*"))
        }

    before = state()
    stop = threading.Event()
    swaps = [0]
    link = ws / ".d-link"
    os.symlink(outside, link)
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("needs renameat2 (glibc 2.28+)")

    def swap() -> None:
        # RENAME_EXCHANGE: `d` is always there (a directory or the symlink), so the
        # server never finds it missing and never re-creates it in a gap.
        while not stop.is_set():
            if libc.renameat2(AT_FDCWD, bytes(ws / "d"), AT_FDCWD, bytes(link), 2) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
            swaps[0] += 1

    thread = threading.Thread(target=swap, daemon=True)
    async with open_client(Settings(root=str(ws), audit=False)) as client:
        thread.start()
        try:
            for i in range(60):
                await call(client, "write_file", path="d/f.txt", content=f"agent {i}\n")
                await call(client, "make_directory", path="d/sub/x")
                await call(client, "delete_path", path="d/sub", recursive=True)
                await call(client, "undo", steps=2, force=True)
                await call(client, "undo", steps=1, force=True)
                await call(client, "restore_file", path="d", before=entries(ws)[0]["id"])
        finally:
            stop.set()
            thread.join()
    assert swaps[0] > 100
    assert state() == before  # nothing outside was written, created or deleted
    assert len(entries(ws)) >= 6 * 60


@pytest.mark.slow  # 240 calls against a swapping thread: ~5 s
async def test_state_folders_swapped_for_symlinks_mid_call_write_nothing_outside(
    ws: Path, outside: Path
) -> None:
    """A thread keeps exchanging the state folders a write reaches (its lock stripes,
    the stale-read records, the checkpoint store) with symlinks to outside/, and plants
    the link again whenever the server has replaced it, while the server writes, reads
    and undoes: nothing outside may ever change (a call holds the folders it reached as
    themselves and opens its state files in them, issue 47, item 4)."""
    names = ("locks", "seen", "checkpoints")
    for name in names:
        (outside / name).mkdir()
        (outside / name / "keep.txt").write_text("OUTSIDE\n")
    before = {str(p.relative_to(outside)): p.read_bytes() for p in outside.rglob("*.txt")}
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("needs renameat2 (glibc 2.28+)")
    stop = threading.Event()
    swaps = [0]
    state = ws / ".workspace-mcp"

    def swap() -> None:
        while not stop.is_set():
            for name in names:
                link = ws / f".{name}-link"
                if not link.is_symlink():  # the server replaced the planted link: again
                    shutil.rmtree(link, ignore_errors=True)
                    with contextlib.suppress(FileExistsError):
                        os.symlink(outside / name, link)
                # RENAME_EXCHANGE: the name always holds a folder or the link.
                if libc.renameat2(AT_FDCWD, bytes(state / name), AT_FDCWD, bytes(link), 2) == 0:
                    swaps[0] += 1

    thread = threading.Thread(target=swap, daemon=True)
    async with open_client(Settings(root=str(ws), audit=False)) as client:
        await ok(client, "write_file", path="f.txt", content="first\n")  # the folders exist
        thread.start()
        try:
            for i in range(60):
                await call(client, "read_file", path="f.txt")
                await call(
                    client, "write_file", path="f.txt", content=f"agent {i}\n", expectedSha256=None
                )
                await call(client, "write_file", path=f"new{i}.txt", content=f"new {i}\n")
                await call(client, "undo", steps=1, force=True)
        finally:
            stop.set()
            thread.join()
        await ok(client, "read_file", path="f.txt")  # still answering
    after = {str(p.relative_to(outside)): p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    assert swaps[0] > 100
    assert after == before  # nothing outside was written or created


def two_file_line(good: bytes, bad_state: dict) -> dict:
    # a.txt's after-state is what is on disk, so nothing but the bad state stops the undo.
    return {"a.txt": [file_state(good), file_state(b"now a\n")], "b.txt": [bad_state, {"t": "-"}]}


GOOD = b"good a\n"
GOOD_H = hashlib.sha256(GOOD).hexdigest()
# Damaged states as a process inside the root could plant them (issue 28 item 5).
BAD_STATES = [
    {"t": "f", "m": "x", "s": 1, "h": GOOD_H, "o": 1},
    {"t": "f", "m": -1, "s": 1, "h": GOOD_H, "o": 1},
    {"t": "f", "m": 0o644, "s": "1", "h": GOOD_H, "o": 1},
    {"t": "f", "m": 0o644, "s": 1, "h": 7, "o": 1},
    {"t": "f", "m": 0o644, "s": 1, "h": "zz", "o": 1},
    {"t": "f", "m": 0o644, "s": 1, "o": 1},
    {"t": "f", "m": True, "s": 1, "h": GOOD_H, "o": 1},
    {"t": "f", "m": 0o644, "s": 1, "q": "x"},
    {"t": "d", "m": None},
    {"t": "d"},
    {"t": "l", "k": 5},
    {"t": "l", "k": ""},
    {"t": "l", "k": "a\u0000b"},
    {"t": 3},
    {"t": "x"},
    {},
    "a string",
    None,
    [1, 2],
]


async def test_a_damaged_line_is_refused_before_anything_changes(ws: Path) -> None:
    """Item 5: a planted entry with a bad mode restored one file of two, then answered
    `internal error in undo (ValueError)`."""
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="first.txt", content="first\n")
        store_of(ws).put(GOOD)
        saved = (ws / INDEX).read_text()
        for bad in BAD_STATES:
            (ws / "a.txt").write_bytes(b"now a\n")
            plant(ws, two_file_line(GOOD, bad))
            refusal = await fails(client, "undo")
            assert "#planted" in refusal and "damaged" in refusal, (bad, refusal)
            assert (ws / "a.txt").read_bytes() == b"now a\n", bad
            (ws / INDEX).write_text(saved)
        # Malformed line shapes: none may make any tool answer an internal error.
        for line in (
            {"id": "planted", "tool": 5, "p": {}},
            {"id": "planted", "ts": [], "p": {}},
            {"id": "planted", "reverts": "abc", "p": {}},
            {"id": "planted", "reverts": [1], "p": {}},
            {"id": "planted", "change": {}, "p": {}},
            {"id": "planted", "b": "many", "p": {"a.txt": [file_state(GOOD), {"t": "-"}]}},
            {"id": "planted", "p": {"a.txt": [file_state(GOOD)]}},
            {"id": "planted", "p": {"a.txt": "x"}},
            {"id": "planted", "p": {"": [file_state(GOOD), {"t": "-"}]}},
            {"id": "planted", "p": []},
            {"id": "planted", "m": 12},
            {"id": 5, "p": {}},
            {"id": "", "p": {}},
        ):
            with (ws / INDEX).open("a") as handle:
                handle.write(json.dumps(line) + "\n")
            for tool, args in (("undo", {}), ("undo", {"to": "planted"}), ("work_log", {})):
                answer = await call(client, tool, **args)
                assert "internal error" not in answer.text, (line, tool, answer.text)
            (ws / INDEX).write_text(saved)  # an undo of first.txt may have run: as before
            (ws / "first.txt").write_text("first\n")
        # Forced, the damaged line is left out and the rest is undone.
        plant(ws, two_file_line(GOOD, BAD_STATES[0]))
        text = await ok(client, "undo", steps=2, force=True)
        assert "first.txt" in text
    assert not (ws / "first.txt").exists()


async def test_a_zlib_bomb_is_not_inflated(ws: Path) -> None:
    """Item 7: a 1.7 MiB planted object inflated to 772 MiB; inflation stops at the size
    the index records (or the file size limit)."""
    import zlib

    claimed = b"small\n"
    digest = hashlib.sha256(claimed).hexdigest()
    bomb = b"z" + zlib.compress(b"\0" * (200 * 1024 * 1024), 9)
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="x.txt", content="x\n")
        bucket = ws / ".workspace-mcp" / "checkpoints" / "objects" / digest[:2]
        bucket.mkdir(parents=True, exist_ok=True)
        (bucket / digest[2:]).write_bytes(bomb)
        plant(ws, {"bomb.txt": [file_state(claimed), {"t": "-"}]})
        import resource

        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        refusal = await fails(client, "undo")
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert "damaged" in refusal and "put back" in refusal
    assert grown_kib < 64 * 1024, grown_kib  # far from the 200 MiB it inflates to
    assert not (ws / "bomb.txt").exists()
