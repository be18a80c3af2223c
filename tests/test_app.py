"""The application class (app.py): FastMCP's session-state store is made only when
something writes to it, and once made it works as FastMCP's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client, Context

from agent_workspace_mcp.app import WorkspaceApp
from tests.helpers import INIT


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
    frames = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}] + [
        {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        for n, (method, params) in enumerate(calls, start=2)
    ]
    log = tmp_path.parent / "imports.log"  # a file: a pipe left unread would fill and stall
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "agent_workspace_mcp", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log.open("wb"),
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in frames))
    proc.stdin.flush()
    answered: dict[int, dict] = {}
    while len(answered) < len(frames) - 1 and (line := proc.stdout.readline()):
        answer = json.loads(line)
        answered[answer.get("id")] = answer
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    imported = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in log.read_text().splitlines()
        if line.startswith("import time:")
    }
    assert all("result" in answered.get(n, {}) for n in range(2, 2 + len(calls))), answered
    assert (tmp_path / "b.txt").read_text() == "x\n"
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
