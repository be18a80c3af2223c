"""Checkpoints cannot be turned against the host (issue 17).

The store lives under `.workspace-mcp/`, which the file tools cannot write but a command
(or any process inside the root) can: a planted index line, object or symlink must never
make an undo write outside the root, into `.git`, or a setuid file, and a restore must
never bring an outside file's content in. A directory swapped for a symlink while the
server records and undoes must never let a change land outside.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
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
                ("undo failed", "path outside workspace root", "checkpoint index names")
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
