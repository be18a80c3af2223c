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


def test_the_one_guard_decides_every_route(signed_in, tmp_path: Path) -> None:
    """Issue 45: the console's auth is one middleware, not a check per route. Without a
    session every API route is 401; a change without the page key is 403; the sign-in
    page and the page shell are open (they show the sign-in)."""
    client, page_key, approval, state = signed_in
    fresh = TestClient(client.app, base_url=f"http://{HOST}")  # no cookie
    for path in ("/api/entries", "/api/list/jobs", "/api/diff?id=x", "/events"):
        assert fresh.get(path).status_code == 401, path
    assert fresh.get("/login").status_code == 200
    assert fresh.get("/").status_code == 401 and "sign" in fresh.get("/").text.lower()
    no_key = client.post("/api/approvals/decide", json={"id": approval, "approve": True})
    assert no_key.status_code == 403 and "page key" in no_key.text
    read = client.get("/api/list/approvals", headers={KEY_HEADER: page_key})
    assert read.status_code == 200 and read.json()["approvals"][0]["id"] == approval
    assert state.approvals()[0]["status"] == "pending"


def test_an_operator_bearer_token_is_a_script_not_a_browser(tmp_path: Path) -> None:
    registry = WorkspaceRegistry.confined(str(tmp_path), ())
    state = ConsoleState(
        registry,
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    operator = "op-" + "x" * 30
    app = build_console(state, Secrets(operator=operator), allowed_hosts=None, base_path="/console")
    client = TestClient(app, base_url="http://127.0.0.1:47003")
    assert client.get("/api/list/workspaces").status_code == 401
    ok = client.get("/api/list/workspaces", headers={"authorization": f"Bearer {operator}"})
    assert ok.status_code == 200 and ok.json() == {"workspaces": ["default"]}
    wrong = client.get("/api/list/workspaces", headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
