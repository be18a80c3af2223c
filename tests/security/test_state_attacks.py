"""Issue 28: the state directory and its lock cannot be turned against the workspace.

Planted by a process inside the root (a command, another agent): a `.lock` symlink, a
`.workspace-mcp` symlink to an ordinary folder, a lock another process holds forever.
Each test is the attack as the red team ran it; each failed before the fix.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from tests.conftest import open_client
from tests.helpers import fails, ok

STATE = ".workspace-mcp"


def journal_tools(ws: Path) -> list[str]:
    path = ws / STATE / "journal.jsonl"
    return [json.loads(line)["tool"] for line in path.read_text().splitlines()]


async def test_a_planted_lock_link_inside_truncates_nothing(ws: Path) -> None:
    (ws / "src").mkdir()
    victim = ws / "src" / "victim.py"
    victim.write_text("print('precious')\n")
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="first.txt", content="1\n")  # state exists
        lock = ws / STATE / ".lock"
        lock.unlink()
        lock.symlink_to("../src/victim.py")
        await ok(client, "write_file", path="a.txt", content="a\n")
        await ok(client, "write_file", path="a.txt", content="b\n")
    assert victim.read_text() == "print('precious')\n"
    assert not lock.is_symlink() and lock.is_file()
    assert journal_tools(ws).count("write_file") == 3


async def test_a_planted_lock_link_outside_keeps_the_record(ws: Path, outside: Path) -> None:
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="keep.txt", content="keep me\n")
        lock = ws / STATE / ".lock"
        lock.unlink()
        lock.symlink_to(outside / "secret.txt")
        await ok(client, "delete_path", path="keep.txt")
        assert "delete_path" in journal_tools(ws)
        await ok(client, "undo")
    assert (ws / "keep.txt").read_text() == "keep me\n"
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_a_state_dir_link_to_a_folder_is_not_followed(ws: Path) -> None:
    (ws / "meta").mkdir()
    (ws / STATE).symlink_to("meta")
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="a.txt", content="a\n")
        await ok(client, "remember", text="a note")
        # The folder it pointed at stays an ordinary folder the agent may write ...
        assert sorted(os.listdir(ws / "meta")) == []
        await ok(client, "write_file", path="meta/own.txt", content="mine\n")
        # ... and the real state directory cannot be written by the file tools.
        assert (ws / STATE).is_dir() and not (ws / STATE).is_symlink()
        await fails(client, "write_file", path=f"{STATE}/journal.jsonl", content="{}\n")
    assert "write_file" in journal_tools(ws)


def hold_lock_in_another_process(path: Path) -> subprocess.Popen:
    code = (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


async def test_a_held_state_lock_bounds_the_wait(ws: Path, monkeypatch) -> None:
    monkeypatch.setattr(limits, "STATE_LOCK_WAIT_SECONDS", 1.0)
    async with open_client(Settings(root=str(ws))) as client:
        await ok(client, "write_file", path="a.txt", content="a\n")
        holder = hold_lock_in_another_process(ws / STATE / ".lock")
        try:
            started = time.monotonic()
            text = await fails(client, "write_file", path="a.txt", content="b\n")
            assert time.monotonic() - started < 10
            assert f"pid {holder.pid}" in text and "lock" in text, text
            # Nothing was done without its record.
            assert (ws / "a.txt").read_text() == "a\n"
        finally:
            holder.kill()
            holder.wait()
        await ok(client, "write_file", path="a.txt", content="c\n")
    assert (ws / "a.txt").read_text() == "c\n"
    with open(ws / STATE / ".lock", "rb") as handle:  # and nobody holds it now
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
