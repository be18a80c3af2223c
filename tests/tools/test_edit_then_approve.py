"""Edit, then approve (issue 48, item 3): the person changes a proposed write in the
console; the call runs with their version, and the agent's answer says what they
changed and why. Only the text being written may change, never where it goes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import InvalidArgumentError
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry


@pytest.fixture(autouse=True)
def short_polls(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "b.txt").write_text("bee\n")
    return ws


def console(root: Path) -> ConsoleState:
    return ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )


async def asked(state: ConsoleState) -> dict:
    for _ in range(300):
        pending = [r for r in state.approvals() if r["status"] == "pending"]
        if pending:
            return pending[0]
        await asyncio.sleep(0.02)
    raise AssertionError("nothing was asked")


def server(root: Path, wait: float = 5.0):
    return create_server(
        Settings(
            root=str(root),
            audit=False,
            confirm=("write",),
            confirm_via=("console",),
            confirm_wait=wait,
        )
    )


async def test_the_persons_version_lands_and_the_agent_is_told(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(
            client.call_tool("write_file", {"path": "a.txt", "content": "one\nTWO\n"})
        )
        record = await asked(state)
        said = state.decide(
            None,
            record["id"],
            approve=True,
            edit={"content": "one\nTwo, spelled right\n"},
            note="keep the capital only at the start",
        )
        assert said.endswith("approved")
        answer = (await waiting).content[0].text
    assert (root / "a.txt").read_text() == "one\nTwo, spelled right\n"
    assert answer.startswith("Updated a.txt")
    assert "operator changed your proposal before approving it" in answer
    assert "-TWO" in answer and "+Two, spelled right" in answer
    assert "their note: keep the capital only at the start" in answer
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert "via console (edited)" in journal


async def test_an_edit_keeps_to_its_file(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(
            client.call_tool(
                "edit_file", {"path": "a.txt", "oldString": "two", "newString": "three"}
            )
        )
        record = await asked(state)
        for bad in ({"path": "b.txt"}, {"oldString": "one"}, {"newString": 3}):
            with pytest.raises(InvalidArgumentError):
                state.decide(None, record["id"], approve=True, edit=bad)
        with pytest.raises(InvalidArgumentError, match="without a grant"):
            state.decide(
                None, record["id"], approve=True, edit={"newString": "2"}, grant={"kind": "session"}
            )
        state.decide(None, record["id"], approve=True, edit={"newString": "2"})
        answer = (await waiting).content[0].text
    assert (root / "a.txt").read_text() == "one\n2\n" and "+2" in answer


async def test_an_edited_patch_reaches_no_other_file(root: Path) -> None:
    state = console(root)
    proposed = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+zwei\n"
    elsewhere = "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-bee\n+pwned\n"
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(
            client.call_tool("apply_patch", {"patch": proposed}, raise_on_error=False)
        )
        record = await asked(state)
        state.decide(None, record["id"], approve=True, edit={"patch": elsewhere})
        answer = await waiting
    assert answer.is_error and "reaches other files" in answer.content[0].text
    assert (root / "b.txt").read_text() == "bee\n" and (root / "a.txt").read_text() == "one\ntwo\n"


async def test_a_tampered_edit_is_not_run(root: Path) -> None:
    """The person's version is sealed with their decision: changed on disk, the approval
    decides nothing and the call is asked again."""
    import json

    state = console(root)
    async with Client(server(root, wait=0.3)) as client:  # "pending" at once: no one answers
        first = await client.call_tool("write_file", {"path": "a.txt", "content": "x\n"})
        assert first.content[0].text.startswith("Not run yet")
        record = await asked(state)
        state.decide(None, record["id"], approve=True, edit={"content": "person\n"})
        path = root / ".workspace-mcp" / "approvals.json"
        data = json.loads(path.read_text())
        data["approvals"][record["id"]]["edit"] = json.dumps({"content": "agent's own\n"})
        path.write_text(json.dumps(data))
        again = await client.call_tool("write_file", {"path": "a.txt", "content": "x\n"})
    assert again.content[0].text.startswith("Not run yet")
    assert (root / "a.txt").read_text() == "one\ntwo\n"
