"""The standalone console's own Host/Origin check, in process (issue 43, mutation test):
a mutant that accepted any Origin passed the suite, because only the HTTP server's outer
guard was tested. Through Starlette's TestClient: a signed-in browser's request from
another 127.0.0.1 port, or a DNS-rebound name, is refused, and nothing is decided."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agent_workspace_mcp.console.app import KEY_HEADER, Secrets, build_console
from agent_workspace_mcp.console.state import ConsoleState
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.state.approvals import Approvals, digest
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

HOST = "127.0.0.1:47001"


@pytest.fixture
def signed_in(tmp_path: Path):
    registry = WorkspaceRegistry.confined(str(tmp_path), ())
    state = ConsoleState(
        registry,
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    keys = Secrets()
    token = keys.login
    app = build_console(state, keys, allowed_hosts={HOST})
    client = TestClient(app, base_url=f"http://{HOST}")
    answer = client.post("/login", json={"token": token}, headers={"origin": f"http://{HOST}"})
    assert answer.status_code == 200, answer.text
    page_key = answer.json()["key"]
    record = Approvals(300).request(
        registry.primary,
        tool="delete_path",
        call_digest=digest("delete_path", {"path": "x"}),
        summary="removes x",
        subject=None,
        session=None,
        client=None,
    )
    return client, page_key, record["id"], state


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:47002", "http://evil.example:47001", "null", "http://localhost:47001"],
)
def test_a_foreign_origin_decides_nothing(signed_in, origin: str) -> None:
    client, page_key, approval, state = signed_in
    answer = client.post(
        "/api/approvals/decide",
        json={"id": approval, "approve": True},
        headers={KEY_HEADER: page_key, "origin": origin},
    )
    assert answer.status_code == 403 and "cross-site" in answer.text, answer.text
    assert state.approvals()[0]["status"] == "pending"


def test_a_rebound_host_is_refused(signed_in) -> None:
    client, page_key, approval, state = signed_in
    answer = client.post(
        "/api/approvals/decide",
        json={"id": approval, "approve": True},
        headers={KEY_HEADER: page_key, "host": "rebound.example:47001"},
    )
    assert answer.status_code == 403 and state.approvals()[0]["status"] == "pending"


def test_the_consoles_own_origin_decides(signed_in) -> None:
    client, page_key, approval, state = signed_in
    answer = client.post(
        "/api/approvals/decide",
        json={"id": approval, "approve": True},
        headers={KEY_HEADER: page_key, "origin": f"http://{HOST}"},
    )
    assert answer.status_code == 200, answer.text
    assert state.approvals()[0]["status"] == "approved"
    asyncio.run(asyncio.sleep(0))
