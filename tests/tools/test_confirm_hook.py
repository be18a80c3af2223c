"""`--confirm-hook` (issue 48, item 4): a reviewer program answers before a person; every
way it can fail denies, with its stderr tail kept; it must lie out of the agent's reach.
Real programs (shell scripts) outside the workspace, a real in-memory client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits, reviewer
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from tests.helpers import call, ok

pytestmark = pytest.mark.slow  # each call runs a real reviewer program


@pytest.fixture(autouse=True)
def short_waits(monkeypatch) -> None:
    monkeypatch.setattr(limits, "CONFIRM_POLL_SECONDS", 0.05)
    monkeypatch.setattr(reviewer, "CONFIRM_HOOK_SECONDS", 1.0)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    return ws


def hook(tmp_path: Path, body: str) -> str:
    """A reviewer program outside the workspace: a shell script with `body`."""
    script = tmp_path / "hooks" / f"hook{len(list(tmp_path.glob('hooks/*')))}.sh"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!/bin/sh\ncat > {tmp_path}/hooks/last-request.json\n{body}\n")
    script.chmod(0o755)
    return str(script)


def server(root: Path, command: str, **extra):
    values = {
        "root": str(root),
        "audit": False,
        "confirm": ("destructive",),
        "confirm_via": ("console",),
        "confirm_wait": 1.0,
        "confirm_hook": command,
    } | extra
    return create_server(Settings(**values))


async def test_an_approval_runs_the_call_and_the_request_is_what_a_person_sees(
    root: Path, tmp_path: Path
) -> None:
    async with Client(server(root, hook(tmp_path, "echo approve"))) as client:
        answer = await ok(client, "delete_path", path="a.txt")
    assert answer.startswith("Deleted a.txt") and not (root / "a.txt").exists()
    request = json.loads((tmp_path / "hooks" / "last-request.json").read_text())
    assert request["tool"] == "delete_path" and request["arguments"] == {"path": "a.txt"}
    assert "removes a.txt (6 bytes)" in request["shown"] and "destructive" in request["rule"]
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert "the reviewer program hook0.sh" in journal and "via hook" in journal


async def test_a_denial_with_a_reason_refuses_and_says_it(root: Path, tmp_path: Path) -> None:
    body = 'echo \'{"decision": "deny", "reason": "deletes need a ticket"}\''
    async with Client(server(root, hook(tmp_path, body))) as client:
        answer = await call(client, "delete_path", path="a.txt")
    assert answer.is_error and "deletes need a ticket" in answer.text
    assert (root / "a.txt").exists()


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("echo broken >&2; exit 3", "exited with status 3; stderr: …broken"),
        ("sleep 5; echo approve", "did not answer within 1 s"),
        ("echo 'yes please'", "was not approve, deny or ask"),
        ('echo \'{"decision": "maybe"}\'', "was not approve, deny or ask"),
        ("kill -9 $$", "exited with status -9"),
    ],
)
async def test_every_failure_denies(root: Path, tmp_path: Path, body: str, says: str) -> None:
    async with Client(server(root, hook(tmp_path, body))) as client:
        answer = await call(client, "delete_path", path="a.txt")
    assert answer.is_error and "denied by the reviewer program" in answer.text, answer.text
    assert says in answer.text, answer.text
    assert (root / "a.txt").exists()


async def test_ask_leaves_it_to_a_person(root: Path, tmp_path: Path) -> None:
    state = ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    async with Client(server(root, hook(tmp_path, "echo ask"))) as client:
        waiting = asyncio.create_task(call(client, "delete_path", path="a.txt"))
        for _ in range(200):
            pending = [r for r in state.approvals() if r["status"] == "pending"]
            if pending:
                break
            await asyncio.sleep(0.02)
        state.decide(None, pending[0]["id"], approve=True)
        answer = await waiting
    assert answer.text.startswith("Deleted a.txt")


def test_a_reviewer_inside_the_workspace_refuses_to_start(root: Path, tmp_path: Path) -> None:
    inside = root / "review.sh"
    inside.write_text("#!/bin/sh\necho approve\n")
    inside.chmod(0o755)
    for command in (str(inside), f"/bin/sh {inside}"):
        with pytest.raises(ConfigError) as error:
            server(root, command)
        assert "inside a workspace" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="not an executable program"):
        server(root, "no-such-reviewer-program")
