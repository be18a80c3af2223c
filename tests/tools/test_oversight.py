"""What the console shows of approval fatigue (issue 48, item 6): per session, how many
calls ran, how many were asked about, how long each waited and how many were denied."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


@pytest.fixture(autouse=True)
def short_polls(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)


async def test_calls_questions_waits_and_denials_per_session(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    state = ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    settings = Settings(
        root=str(root), audit=False, confirm=("risky",), confirm_via=("console",), confirm_wait=5
    )
    async with Client(create_server(settings)) as client:
        for n in range(3):  # not risky: they run without a question
            await client.call_tool("write_file", {"path": f"f{n}.py", "content": "x\n"})
        for verdict in (True, False):
            waiting = asyncio.create_task(
                client.call_tool(
                    "write_file", {"path": ".env", "content": "K=v\n"}, raise_on_error=False
                )
            )
            for _ in range(200):
                pending = [r for r in state.approvals() if r["status"] == "pending"]
                if pending:
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # the person reads it
            state.decide(None, pending[0]["id"], approve=verdict)
            await waiting
    (row,) = [r for r in state.oversight() if r["calls"]]
    assert row["calls"] == 5 and row["asked"] == 2 and row["denied"] == 1
    assert 0.3 <= row["waited_median_s"] <= row["waited_max_s"] < 5
