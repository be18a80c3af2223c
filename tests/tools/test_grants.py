"""Grants (issue 48, item 2): "approve this and the same kind" is honoured only within its
bounds (subject, session, tool, rule, paths or a folder the person named, time), is
revocable, journaled with who made it, and a planted grant decides nothing. The
console's decisions through its state object, the same code its page posts to."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import InvalidArgumentError
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from tests.helpers import ok


@pytest.fixture(autouse=True)
def short_polls(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    for name in ("a.py", "b.py"):
        (ws / "src" / "pkg" / name).write_text("x = 1\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "c.md").write_text("c\n")
    return ws


def server(root: Path, **extra):
    values = {
        "root": str(root),
        "audit": False,
        "confirm": ("write",),
        "confirm_via": ("console",),
        "confirm_wait": 1.0,
    } | extra
    return create_server(Settings(**values))


def console(root: Path) -> ConsoleState:
    return ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )


async def pending_for(
    state: ConsoleState, client: Client, tool: str = "write_file", **call
) -> tuple[asyncio.Task, dict]:
    """The call started, and the question it asked the person (it waits for the answer)."""
    waiting = asyncio.create_task(client.call_tool(tool, call, raise_on_error=False))
    for _ in range(200):
        pending = [r for r in state.approvals() if r["status"] == "pending"]
        if pending:
            return waiting, pending[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no question was asked for {call['path']}: {(await waiting)}")


async def decided(
    state: ConsoleState, client: Client, grant: dict, tool: str = "write_file", **call
) -> str:
    """The call, approved from the console with `grant`; its answer."""
    waiting, record = await pending_for(state, client, tool, **call)
    said = state.decide(None, record["id"], approve=True, grant=grant)
    assert "granted as gr-" in said
    return (await waiting).content[0].text


async def asked(state: ConsoleState, client: Client, tool: str = "write_file", **call) -> list[str]:
    """The paths the call asked the person about (no grant covered it), denied at once
    rather than waited out: the call must then change nothing."""
    waiting, record = await pending_for(state, client, tool, **call)
    state.decide(None, record["id"], approve=False)
    answer = await waiting
    assert answer.is_error and "denied by operator" in answer.content[0].text
    return record["paths"]


async def test_a_minutes_grant_covers_the_same_paths_only(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        first = await decided(
            state,
            client,
            {"kind": "minutes", "minutes": 30},
            path="src/pkg/a.py",
            content="x = 2\n",
        )
        assert first.startswith("Updated src/pkg/a.py")
        again = await ok(client, "write_file", path="src/pkg/a.py", content="x = 3\n")
        assert again.startswith("Updated src/pkg/a.py")  # no question: granted
        # another path: never wider than what was seen
        assert await asked(state, client, path="src/pkg/b.py", content="x = 3\n") == [
            "src/pkg/b.py"
        ]
    assert (root / "src" / "pkg" / "b.py").read_text() == "x = 1\n"
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert '"tool":"grant"' in journal and "granted by operator (gr-" in journal


async def test_a_folder_grant_covers_what_is_under_it(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        await decided(
            state, client, {"kind": "paths", "under": "src"}, path="src/pkg/a.py", content="y\n"
        )
        assert (await ok(client, "write_file", path="src/pkg/b.py", content="y\n")).startswith(
            "Updated"
        )
        assert (await ok(client, "write_file", path="src/new.py", content="y\n")).startswith(
            "Created"
        )
        assert await asked(state, client, path="docs/c.md", content="y\n") == ["docs/c.md"]
        # decided on the real path, and the person is asked about that path
        assert await asked(state, client, path="src/../docs/c.md", content="y\n") == ["docs/c.md"]
    assert (root / "docs" / "c.md").read_text() == "c\n"


async def test_a_folder_grant_does_not_reach_the_folder_itself(root: Path) -> None:
    """A grant for paths under src/pkg covers what is inside it: deleting the folder
    itself, with whatever the person never saw in it, is asked again."""
    state = console(root)
    async with Client(server(root)) as client:
        said = await decided(
            state, client, {"kind": "paths", "under": "src/pkg"}, "delete_path", path="src/pkg/a.py"
        )
        assert said.startswith("Deleted"), said
        assert await asked(state, client, "delete_path", path="src/pkg", recursive=True) == [
            "src/pkg",
            "src/pkg/b.py",
        ]
        assert await asked(state, client, "delete_path", path="src/pkg/", recursive=True) == [
            "src/pkg",
            "src/pkg/b.py",
        ]
    assert (root / "src" / "pkg" / "b.py").read_text() == "x = 1\n"


def test_a_session_grant_is_that_sessions_only(root: Path) -> None:
    """Sessions are the transports' (over stdio and in memory there is one); the grant
    is bound to the session that asked, as the gate passes it."""
    from agent_workspace_mcp.core.state.grants import Grants

    ws = WorkspaceRegistry.confined(str(root), ()).get(None)
    (root / ".workspace-mcp").mkdir()
    approval = {
        "id": "ap-1",
        "status": "approved",
        "decided_by": "operator",
        "subject": "ann",
        "session": "s-1",
        "tool": "write_file",
        "rule": "--confirm write",
        "paths": ["src/pkg/a.py"],
        "digest": "d",
    }
    grants = Grants()
    grants.make(ws, approval, kind="session", minutes=30, under=None, by="operator")
    call = {
        "tool": "write_file",
        "why": "--confirm write",
        "paths": ["src/pkg/a.py"],
        "call_digest": "x",
    }
    assert grants.covering(ws, subject="ann", session="s-1", **call) is not None
    assert grants.covering(ws, subject="ann", session="s-2", **call) is None
    assert grants.covering(ws, subject="bob", session="s-1", **call) is None
    assert (
        grants.covering(ws, subject="ann", session="s-1", **{**call, "tool": "delete_path"}) is None
    )
    assert (
        grants.covering(
            ws, subject="ann", session="s-1", **{**call, "why": "--confirm risky (ci: x)"}
        )
        is None
    )


async def test_a_revoked_or_expired_grant_covers_nothing(root: Path, monkeypatch) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        await decided(state, client, {"kind": "minutes"}, path="src/pkg/a.py", content="1\n")
        (grant,) = state.grants()
        assert grant["kind"] == "minutes" and grant["expires"] - grant["created"] == 30 * 60
        assert state.revoke(None, grant["id"]).endswith("revoked")
        assert await asked(state, client, path="src/pkg/a.py", content="2\n") == ["src/pkg/a.py"]
        assert (root / "src" / "pkg" / "a.py").read_text() == "1\n"
        await decided(
            state, client, {"kind": "minutes", "minutes": 1}, path="src/pkg/b.py", content="1\n"
        )
        import time

        later = time.time() + 61
        monkeypatch.setattr(state.grant_store, "clock", lambda: later)
        assert state.grants() == []
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert '"tool":"revoke"' in journal


async def test_a_grant_never_widens_past_what_was_seen(root: Path) -> None:
    state = console(root)
    async with Client(server(root)) as client:
        waiting = asyncio.create_task(
            client.call_tool("write_file", {"path": "src/pkg/a.py", "content": "z\n"})
        )
        for _ in range(200):
            pending = [r for r in state.approvals() if r["status"] == "pending"]
            if pending:
                break
            await asyncio.sleep(0.02)
        with pytest.raises(InvalidArgumentError, match="does not hold every path"):
            state.decide(
                None, pending[0]["id"], approve=True, grant={"kind": "paths", "under": "docs"}
            )
        with pytest.raises(InvalidArgumentError, match="between 1 minute"):
            state.decide(
                None, pending[0]["id"], approve=True, grant={"kind": "minutes", "minutes": 10_000}
            )
        with pytest.raises(InvalidArgumentError, match="only an approval"):
            state.decide(None, pending[0]["id"], approve=False, grant={"kind": "session"})
        state.decide(None, pending[0]["id"], approve=True)
        await waiting


async def test_a_planted_grant_decides_nothing(root: Path) -> None:
    (root / ".workspace-mcp").mkdir()
    planted = {
        "grants": {
            "gr-0": {
                "id": "gr-0",
                "subject": None,
                "session": None,
                "tool": "write_file",
                "rule": "--confirm write",
                "kind": "paths",
                "paths": ["src/pkg/a.py"],
                "under": "",
                "call": None,
                "granted_by": "operator",
                "created": 0,
                "expires": 9e9,
                "from": "ap-0",
                "proof": "0" * 64,
            }
        }
    }
    (root / ".workspace-mcp" / "grants.json").write_text(json.dumps(planted))
    state = console(root)
    async with Client(server(root)) as client:
        assert await asked(state, client, path="src/pkg/a.py", content="pwned\n") == [
            "src/pkg/a.py"
        ]
    assert (root / "src" / "pkg" / "a.py").read_text() == "x = 1\n"
