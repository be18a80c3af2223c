"""The console over HTTP (issue 31): `/console` exists only with `--operator-token`, takes
only that credential (an agent's token gets 401), and refuses cross-site actions."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.e2e.http_server import RunningServer, start
from tests.helpers import INIT

AGENT = "tok-agent-0123456789"
OPERATOR = "tok-operator-0123456789"
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    root = tmp_path_factory.mktemp("console-http") / "ws"
    root.mkdir()
    (root / "a.txt").write_text("before\n")
    server = start(root, "--token", AGENT, "--operator-token", OPERATOR)
    server.root = root  # type: ignore[attr-defined]
    yield server
    assert server.stop() == 0


def agent_write(server: RunningServer) -> None:
    headers = {**MCP_HEADERS, "authorization": f"Bearer {AGENT}"}
    opened = httpx2.post(server.url, json=INIT, headers=headers)
    headers |= {
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    httpx2.post(
        server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "a.txt", "content": "after\n"}},
    }
    assert httpx2.post(server.url, json=body, headers=headers).status_code == 200


def test_only_the_operator_token_opens_the_console(served: RunningServer) -> None:
    page = f"{served.base}/console/"
    assert httpx2.get(page).status_code == 401
    assert httpx2.get(page, headers={"authorization": f"Bearer {AGENT}"}).status_code == 401
    assert httpx2.get(page, headers={"x-api-key": AGENT}).status_code == 401
    opened = httpx2.get(page, headers={"authorization": f"Bearer {OPERATOR}"})
    assert opened.status_code == 200 and "agent-workspace-mcp console" in opened.text
    # The operator token is no agent credential either: /mcp refuses it.
    refused = httpx2.post(
        served.url, json=INIT, headers={**MCP_HEADERS, "authorization": f"Bearer {OPERATOR}"}
    )
    assert refused.status_code == 401


def test_the_operator_undoes_an_agents_write_and_cross_site_is_refused(
    served: RunningServer,
) -> None:
    agent_write(served)
    root: Path = served.root  # type: ignore[attr-defined]
    assert (root / "a.txt").read_text() == "after\n"
    browser = httpx2.Client(base_url=served.base)
    assert browser.post("/console/login", json={"token": AGENT}).status_code == 401
    signed = browser.post("/console/login", json={"token": OPERATOR})
    assert signed.status_code == 200 and "samesite=strict" in signed.headers["set-cookie"].lower()
    assert "httponly" in signed.headers["set-cookie"].lower()
    key = signed.json()["key"]
    # The cookie alone reads nothing: the page key (kept by the page, per origin) is needed.
    assert browser.get("/console/api/entries").status_code == 401
    entries = browser.get("/console/api/entries", headers={"x-console-key": key}).json()["entries"]
    entry = next(e for e in entries if e["tool"] == "write_file")
    assert entry["by"] == "token"  # the agent's subject, shown to the operator
    assert key not in browser.get("/console/").text  # the page carries no secret
    action = {"workspace": "default", "entry": entry["id"]}
    # With the cookie but from another site: refused, whatever the CSRF header says.
    foreign = browser.post(
        "/console/api/undo",
        json=action,
        headers={"x-console-key": key, "origin": "http://evil.test"},
    )
    assert foreign.status_code == 403
    assert browser.post("/console/api/undo", json=action).status_code == 403  # no page key
    assert (root / "a.txt").read_text() == "after\n"
    done = browser.post("/console/api/undo", json=action, headers={"x-console-key": key})
    assert done.status_code == 200 and done.json()["answer"].startswith("Undid 1 call"), done.text
    assert (root / "a.txt").read_text() == "before\n"


def test_without_an_operator_token_there_is_no_console(tmp_path: Path) -> None:
    server = start(tmp_path, "--token", AGENT)
    try:
        for token in (AGENT, OPERATOR):
            answer = httpx2.get(
                f"{server.base}/console/", headers={"authorization": f"Bearer {token}"}
            )
            assert answer.status_code == 404, answer.text
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"operator_token": AGENT}, "must differ from every agent credential"),
        ({"operator_token": "short"}, "at least 16 characters"),
        (
            {"operator_token": "k" * 20, "api_keys": (("ci", "k" * 20),)},
            "must differ from every agent credential",
        ),
    ],
)
def test_an_operator_token_an_agent_could_hold_is_refused(tmp_path: Path, extra, says) -> None:
    from agent_workspace_mcp import Settings
    from agent_workspace_mcp.configuration import preflight
    from agent_workspace_mcp.core.errors import ConfigError

    settings = Settings(root=str(tmp_path), http=True, token=AGENT, **extra)
    with pytest.raises(ConfigError, match=says):
        preflight(settings)


def test_the_operator_restores_a_file_with_a_bearer_token(served: RunningServer) -> None:
    root: Path = served.root  # type: ignore[attr-defined]
    (root / "a.txt").write_text("before\n")
    agent_write(served)
    operator = {"authorization": f"Bearer {OPERATOR}"}
    entries = httpx2.get(f"{served.base}/console/api/entries", headers=operator).json()["entries"]
    entry = next(e for e in entries if e["tool"] == "write_file")
    (root / "a.txt").write_text("an editor's change since\n")
    answer = httpx2.post(
        f"{served.base}/console/api/restore",
        headers=operator,
        json={"path": "a.txt", "before": entry["id"]},
    )
    assert answer.status_code == 200 and answer.json()["answer"].startswith("Restored"), answer.text
    assert (root / "a.txt").read_text() == "before\n"
    outside = httpx2.post(
        f"{served.base}/console/api/restore",
        headers=operator,
        json={"path": "../etc/passwd", "before": entry["id"]},
    )
    assert outside.status_code == 409 and "outside" in outside.json()["error"]


def test_the_operator_undoes_one_sessions_work(served: RunningServer) -> None:
    """Two agent sessions write; undoing one session's calls leaves the other's."""
    root: Path = served.root  # type: ignore[attr-defined]
    (root / "a.txt").write_text("before\n")
    (root / "b.txt").write_text("b before\n")
    headers = {**MCP_HEADERS, "authorization": f"Bearer {AGENT}"}

    def session_writes(path: str, content: str) -> str:
        opened = httpx2.post(served.url, json=INIT, headers=headers)
        session = opened.headers["mcp-session-id"]
        h = headers | {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        httpx2.post(
            served.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h
        )
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "write_file", "arguments": {"path": path, "content": content}},
        }
        assert httpx2.post(served.url, json=body, headers=h).status_code == 200
        return session

    first = session_writes("a.txt", "first session\n")
    session_writes("b.txt", "second session\n")
    operator = {"authorization": f"Bearer {OPERATOR}"}
    entries = httpx2.get(
        f"{served.base}/console/api/entries", headers=operator, params={"session": first}
    ).json()["entries"]
    assert [e["paths"] for e in entries] == [["a.txt"]] and entries[0]["client"]
    done = httpx2.post(f"{served.base}/console/api/undo", headers=operator, json={"session": first})
    assert done.status_code == 200, done.text
    assert (root / "a.txt").read_text() == "before\n"
    assert (root / "b.txt").read_text() == "second session\n"


def test_older_pages_come_from_the_journal_itself(served: RunningServer) -> None:
    operator = {"authorization": f"Bearer {OPERATOR}"}
    first = httpx2.get(
        f"{served.base}/console/api/older", headers=operator, params={"workspace": "default"}
    ).json()
    assert first["entries"] and first["cursor"] is None  # a small journal: one page
    newest = httpx2.get(f"{served.base}/console/api/entries", headers=operator).json()
    assert [e["id"] for e in first["entries"]] == [e["id"] for e in newest["entries"]]


def test_the_console_lists_connected_sessions(served: RunningServer) -> None:
    agent_write(served)
    operator = {"authorization": f"Bearer {OPERATOR}"}
    sessions = httpx2.get(f"{served.base}/console/api/list/sessions", headers=operator).json()
    assert any(s["subject"] == "token" for s in sessions["sessions"]), sessions


def test_a_long_diff_is_paged_and_time_filters_apply(served: RunningServer) -> None:
    from agent_workspace_mcp.core.limits import CONSOLE_DIFF_LINES

    headers = {**MCP_HEADERS, "authorization": f"Bearer {AGENT}"}
    opened = httpx2.post(served.url, json=INIT, headers=headers)
    headers |= {
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    httpx2.post(
        served.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    content = "".join(f"line {i}\n" for i in range(1000))
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "long.txt", "content": content}},
    }
    assert httpx2.post(served.url, json=body, headers=headers).status_code == 200
    operator = {"authorization": f"Bearer {OPERATOR}"}
    api = f"{served.base}/console/api"
    entry = next(
        e
        for e in httpx2.get(f"{api}/entries", headers=operator).json()["entries"]
        if e.get("paths") == ["long.txt"]
    )
    first = httpx2.get(f"{api}/diff", headers=operator, params={"id": entry["id"]}).json()
    whole = first["files"][0]
    assert len(whole["lines"]) == CONSOLE_DIFF_LINES and whole["plus"] == 1000
    seen, offset = list(whole["lines"]), len(whole["lines"])
    while whole["more"]:
        whole = httpx2.get(
            f"{api}/diff",
            headers=operator,
            params={"id": entry["id"], "path": "long.txt", "offset": offset},
        ).json()["files"][0]
        seen += whole["lines"]
        offset += len(whole["lines"])
    assert sum(1 for line in seen if line.startswith("+line ")) == 1000
    future = httpx2.get(
        f"{api}/entries", headers=operator, params={"since": "2999-01-01T00:00:00Z"}
    ).json()
    assert future["entries"] == []


def test_a_jwt_with_the_operator_scope_opens_the_console(tmp_path: Path) -> None:
    import time as clock

    import jwt

    secret = "s" * 40
    server = start(tmp_path, "--jwt-secret", secret, "--jwt-audience", "workspace")

    def token(scope: str) -> str:
        claims = {
            "sub": "alice",
            "aud": "workspace",
            "exp": int(clock.time()) + 600,
            "scope": scope,
        }
        return jwt.encode(claims, secret, algorithm="HS256")

    try:
        page = f"{server.base}/console/"
        agent = httpx2.get(page, headers={"authorization": f"Bearer {token('files:read')}"})
        assert agent.status_code == 401
        operator = httpx2.get(
            page, headers={"authorization": f"Bearer {token('files:read workspace:operate')}"}
        )
        assert operator.status_code == 200 and "console" in operator.text
    finally:
        assert server.stop() == 0


def test_a_console_session_holds_across_workers(tmp_path: Path) -> None:
    """Signed in at one worker, good at every worker: sessions are signed with the
    supervisor's key, not kept in one worker's memory."""
    server = start(tmp_path, "--token", AGENT, "--operator-token", OPERATOR, "--workers", "2")
    try:
        browser = httpx2.Client(base_url=server.base)
        key = browser.post("/console/login", json={"token": OPERATOR}).json()["key"]
        answers = []
        for _ in range(30):  # a fresh connection each time: the kernel spreads them
            cookies = dict(browser.cookies)
            answer = httpx2.get(
                f"{server.base}/console/api/entries",
                cookies=cookies,
                headers={"x-console-key": key, "connection": "close"},
            )
            answers.append(answer.status_code)
        assert answers == [200] * 30
        forged = dict(browser.cookies)
        name = next(iter(forged))
        forged[name] = forged[name][:-1] + ("0" if forged[name][-1] != "0" else "1")
        tampered = httpx2.get(
            f"{server.base}/console/api/entries", cookies=forged, headers={"x-console-key": key}
        )
        assert tampered.status_code == 401
    finally:
        assert server.stop() == 0


async def test_each_agents_work_is_attributed_and_undone_alone(served: RunningServer) -> None:
    """Two agent sessions (issue 34's attribution part): the journal names each session
    and client version, work_log filters by session, workspace_list says who changed
    what, and undo(session=) reverts only that session's files."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    root: Path = served.root  # type: ignore[attr-defined]

    def agent() -> Client:
        return Client(StreamableHttpTransport(served.url), auth=AGENT, mode="legacy")

    async with agent() as first, agent() as second:
        await first.call_tool("write_file", {"path": "s1.txt", "content": "one\n"})
        await second.call_tool("write_file", {"path": "s2.txt", "content": "two\n"})
        listed = (await second.call_tool("workspace_list", {})).content[0].text
        journal = [json.loads(line) for line in (root / ".workspace-mcp/journal.jsonl").open()]
        mine = next(e for e in journal if e.get("paths") == ["s1.txt"])
        assert mine["client"] and mine["client_version"] and mine["session"]
        assert f"session {mine['session']}" in listed and "s1.txt" in listed and "s2.txt" in listed
        log = (await second.call_tool("work_log", {"session": mine["session"]})).content[0].text
        assert "s1.txt" in log and "s2.txt" not in log
        done = await second.call_tool("undo", {"session": mine["session"]})
        assert done.content[0].text.startswith("Undid 1 call")
    assert not (root / "s1.txt").exists() and (root / "s2.txt").read_text() == "two\n"


async def test_a_subpath_sessions_writes_are_shown_and_undone(tmp_path: Path) -> None:
    """Issue 43, item 12: a subpath-confined agent's writes went to sub/.workspace-mcp,
    which the console never read: it showed none of them."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from agent_workspace_mcp.console.state import ConsoleState
    from agent_workspace_mcp.core import limits
    from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("before\n")
    server = start(root, "--token", AGENT)
    try:
        transport = StreamableHttpTransport(server.url, headers={"x-workspace-subpath": "sub"})
        async with Client(transport, auth=AGENT) as client:
            wrote = await client.call_tool("write_file", {"path": "a.txt", "content": "agent\n"})
            assert not wrote.is_error
    finally:
        server.stop()
    state = ConsoleState(
        WorkspaceRegistry.confined(str(root), ()),
        journal_max_bytes=limits.JOURNAL_MAX_BYTES_DEFAULT,
        checkpoint_max_bytes=limits.CHECKPOINT_STORE_MAX_BYTES,
    )
    shown = [e for e in state.entries() if e["tool"] == "write_file"]
    assert [(e["workspace"], e["paths"]) for e in shown] == [("default:sub", ["a.txt"])]
    diff = state.diff("default:sub", shown[0]["id"])
    assert diff[0].path == "a.txt" and "+agent" in diff[0].lines
    assert "Undid 1 call" in state.undo("default:sub", entry=shown[0]["id"], dry_run=False)
    assert (root / "sub" / "a.txt").read_text() == "before\n"
