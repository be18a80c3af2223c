"""Issue 28 item 3: an undo racing writes never loses an acknowledged write.

A write answered "Updated" must afterwards be on disk or in the checkpoint store (an
undo that replaced it recorded it first). Raced in one server (two sessions, tool bodies
on worker threads) and across two real server processes on one root; zero tolerance.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.configuration import preflight
from agent_workspace_mcp.core.checkpoints.store import LostObjectError, Store
from tests.helpers import Answer

WRITES = 120


def lost_writes(ws: Path, acknowledged: list[str]) -> list[str]:
    store = Store(preflight(Settings(root=str(ws))).primary)
    on_disk = (ws / "f.txt").read_text() if (ws / "f.txt").exists() else None
    lost = []
    for content in acknowledged:
        if content == on_disk:
            continue
        try:
            store.get(hashlib.sha256(content.encode()).hexdigest())
        except LostObjectError:
            lost.append(content)
    return lost


async def race(writer: Client, undoer: Client) -> list[str]:
    acknowledged: list[str] = []
    done = anyio.Event()

    async def write() -> None:
        for i in range(WRITES):
            content = f"write {i}\n"
            # Read first, as an agent does: a blind write over the other process's undo is
            # refused by the stale-read guard (issue 34), which is not what is raced here.
            await writer.call_tool("read_file", {"path": "f.txt"}, raise_on_error=False)
            answer = Answer(
                await writer.call_tool(
                    "write_file", {"path": "f.txt", "content": content}, raise_on_error=False
                )
            )
            if not answer.is_error and answer.text.startswith(("Updated", "Created")):
                acknowledged.append(content)
        done.set()

    async def undo() -> None:
        while not done.is_set():
            await undoer.call_tool("undo", {"force": True}, raise_on_error=False)

    async with anyio.create_task_group() as group:
        group.start_soon(write)
        group.start_soon(undo)
    return acknowledged


@pytest.mark.slow  # a race, many rounds
async def test_undo_in_the_same_server_loses_no_write(ws: Path) -> None:
    (ws / "f.txt").write_text("start\n")
    app = create_server(Settings(root=str(ws), audit=False))
    async with Client(app) as writer, Client(app) as undoer:
        acknowledged = await race(writer, undoer)
    assert len(acknowledged) > WRITES // 2
    assert lost_writes(ws, acknowledged) == []


@pytest.mark.slow
async def test_undo_in_another_process_loses_no_write(ws: Path) -> None:
    (ws / "f.txt").write_text("start\n")

    def server() -> Client:
        args = ["-m", "agent_workspace_mcp", "--root", str(ws), "--no-audit"]
        return Client(StdioTransport(sys.executable, args, keep_alive=False))

    async with server() as writer, server() as undoer:
        acknowledged = await race(writer, undoer)
    assert len(acknowledged) > WRITES // 2
    assert lost_writes(ws, acknowledged) == []
