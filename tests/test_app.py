"""The application class (app.py): FastMCP's session-state store is made only when
something writes to it, and once made it works as FastMCP's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastmcp import Client, Context

from agent_workspace_mcp.app import WorkspaceApp
from tests.helpers import raw_stdio_session


@pytest.mark.slow
def test_a_served_session_never_imports_the_state_store(tmp_path: Path) -> None:
    """The CLI over stdio as a client drives it; `-X importtime` names every module the
    server imported (in process, FastMCP's client would import the store's package)."""
    (tmp_path / "a.txt").write_text("hello\n")
    calls = [
        ("tools/list", {}),
        ("tools/call", {"name": "read_file", "arguments": {"path": "a.txt"}}),
        ("tools/call", {"name": "write_file", "arguments": {"path": "b.txt", "content": "x\n"}}),
        ("resources/list", {}),
    ]
    log = tmp_path.parent / "imports.log"  # a file: a pipe left unread would fill and stall
    server = [sys.executable, "-X", "importtime", "-m", "agent_workspace_mcp", "--root"]
    with log.open("wb") as stderr:
        answered = raw_stdio_session([*server, str(tmp_path)], calls, stderr=stderr)
    assert all("result" in answered.get(n, {}) for n in range(2, 2 + len(calls))), answered
    assert (tmp_path / "b.txt").read_text() == "x\n"
    imported = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in log.read_text().splitlines()
        if line.startswith("import time:")
    }
    assert {"fastmcp", "agent_workspace_mcp"} <= imported  # importtime saw the server's
    assert not imported & {"key_value", "beartype"}


async def test_the_state_store_is_made_on_the_first_write_and_works() -> None:
    app = WorkspaceApp("t")

    @app.tool
    async def state(ctx: Context) -> list:
        seen = [await ctx.get_state("n")]
        await ctx.set_state("n", 7)
        seen.append(await ctx.get_state("n"))
        await ctx.delete_state("n")
        seen.append(await ctx.get_state("n"))
        return seen

    async with Client(app) as client:
        for _ in range(2):
            assert (await client.call_tool("state", {})).content[0].text == "[null,7,null]"
