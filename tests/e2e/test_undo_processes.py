"""Undo across real server processes (issue 17): two servers share one checkpoint store
without losing a call, and an undo that fails midway for real puts every file back."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.tools.test_editing import LIMITED_SERVER
from tests.tools.test_undo import entries, snapshot


def server(ws: Path, *argv: str) -> Client:
    args = ["-m", "agent_workspace_mcp", "--root", str(ws), "--no-audit", *argv]
    return Client(StdioTransport(sys.executable, args, keep_alive=False))


async def test_two_processes_share_the_store_and_lose_no_call(ws: Path) -> None:
    (ws / "shared.txt").write_text("start\n")
    before = snapshot(ws)
    rounds = 15
    async with server(ws) as one, server(ws) as two:
        refused = 0

        async def work(client: Client, name: str) -> None:
            nonlocal refused
            for i in range(rounds):
                await client.call_tool("write_file", {"path": f"{name}/{i}.txt", "content": name})
                while True:  # read-modify-write: the stale-read guard refuses a blind one
                    await client.call_tool("read_file", {"path": "shared.txt"})
                    args = {"path": "shared.txt", "content": f"{name}{i}"}
                    done = await client.call_tool("write_file", args, raise_on_error=False)
                    if not done.is_error:
                        break
                    assert "changed since this session" in done.content[0].text
                    refused += 1

        async with anyio.create_task_group() as group:
            group.start_soon(work, one, "one")
            group.start_soon(work, two, "two")
        index = (ws / ".workspace-mcp" / "checkpoints" / "index.jsonl").read_text()
        # Every call of both processes, a refused one included (it changed nothing).
        assert len(index.splitlines()) == 4 * rounds + refused
        assert len(entries(ws)) == 4 * rounds + refused
        # One process undoes everything, the other's calls included.
        answer = await two.call_tool("undo", {"steps": 4 * rounds + refused})
        assert answer.content[0].text.startswith("Undid "), answer.content[0].text
    assert snapshot(ws) == before


async def test_an_undo_that_fails_midway_puts_every_file_back(ws: Path) -> None:
    """File 1 is restored, file 2's restore fails for real (EFBIG under a 64 KiB file size
    limit): file 1 gets the bytes it had before the undo, and the undo says so."""
    async with server(ws) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "small a\n"})
        await client.call_tool("write_file", {"path": "big.txt", "content": "b" * 100_000})
        await client.call_tool("write_file", {"path": "a.txt", "content": "edited a\n"})
        await client.call_tool("write_file", {"path": "big.txt", "content": "small now\n"})
    before_undo = snapshot(ws)
    written = (ws / "a.txt").stat().st_mtime_ns
    limited = Client(
        StdioTransport(
            sys.executable,
            ["-c", LIMITED_SERVER, "--root", str(ws), "--no-audit"],
            keep_alive=False,
        )
    )
    async with limited as client:
        answer = await client.call_tool("undo", {"steps": 2}, raise_on_error=False)
        assert answer.is_error
        assert answer.content[0].text.startswith("undo failed: big.txt: ")
        assert answer.content[0].text.endswith("; every file was put back as it was")
        assert snapshot(ws) == before_undo
        # a.txt really was restored first, then put back (written again, same bytes).
        assert (ws / "a.txt").stat().st_mtime_ns > written
        # Nothing was recorded as undone: the same undo works where the limit is gone.
    async with server(ws) as client:
        await client.call_tool("undo", {"steps": 2})
    assert (ws / "a.txt").read_text() == "small a\n"
    assert (ws / "big.txt").read_text() == "b" * 100_000
