"""The `workspace` argument is routable (issue 35, SEP-2243): declared `x-mcp-header`,
mirrored by 2026-07-28 clients into `Mcp-Param-Workspace`, and a header that disagrees
with the body is refused before the call runs."""

from __future__ import annotations

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.http_server import RunningServer, start

KEY = "tok-param-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    base = tmp_path_factory.mktemp("params")
    (base / "main").mkdir()
    (base / "api").mkdir()
    (base / "main" / "f.txt").write_text("in main\n")
    (base / "api" / "f.txt").write_text("in api\n")
    server = start(
        base / "main", "--workspace", f"api={base / 'api'}", "--token", KEY, log_dir=base
    )
    yield server
    assert server.stop() == 0


def call(server: RunningServer, workspace: str, header: str | None) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "read_file",
            "arguments": {"path": "f.txt", "workspace": workspace},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "authorization": f"Bearer {KEY}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "read_file",
    }
    if header is not None:
        headers["mcp-param-workspace"] = header
    return httpx2.post(server.url, json=body, headers=headers, timeout=10)


async def test_the_workspace_argument_is_declared_and_mirrored(served: RunningServer) -> None:
    async with Client(StreamableHttpTransport(served.url), auth=KEY) as client:
        tool = next(t for t in await client.list_tools() if t.name == "read_file")
        assert tool.input_schema["properties"]["workspace"]["x-mcp-header"] == "Workspace"
        answer = await client.call_tool("read_file", {"path": "f.txt", "workspace": "api"})
        assert "in api" in answer.content[0].text


def test_header_and_body_must_agree(served: RunningServer) -> None:
    agreed = call(served, "api", "api")
    assert agreed.status_code == 200 and "in api" in agreed.text
    refused = call(served, "api", "default")
    assert refused.status_code == 400, refused.text
    assert "in api" not in refused.text and "in main" not in refused.text


def test_a_fresh_process_checks_the_header_before_any_listing(tmp_path) -> None:
    """Issue 43, item 23: a header disagreeing with the body, or missing, was accepted
    until some client had called tools/list on that process (every start, every
    worker): the SDK checks only against schemas a listing cached."""
    (tmp_path / "main").mkdir()
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "f.txt").write_text("in api\n")
    (tmp_path / "main" / "f.txt").write_text("in main\n")
    server = start(
        tmp_path / "main",
        "--workspace",
        f"api={tmp_path / 'api'}",
        "--token",
        KEY,
        log_dir=tmp_path,
    )
    try:
        wrong = call(server, "api", "default")  # the very first request of the process
        assert wrong.status_code == 400 and "in api" not in wrong.text, wrong.text
        missing = call(server, "api", None)
        assert missing.status_code == 400 and "in api" not in missing.text, missing.text
        right = call(server, "api", "api")
        assert right.status_code == 200 and "in api" in right.text
    finally:
        assert server.stop() == 0
