"""`--confirm-notify URL` (issue 48, item 5): a pending approval is announced to a webhook
on 127.0.0.1 with no file contents, arguments or credentials; once per request; a
webhook that fails approves nothing and is journaled."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.errors import ConfigError
from tests.e2e.http_server import free_port
from tests.helpers import ok

SECRET = "top-secret-content-7f3a"


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    received: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers["Content-Length"])
            received.append(
                {"body": json.loads(self.rfile.read(size)), "type": self.headers["Content-Type"]}
            )
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", received
    server.shutdown()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(f"{SECRET}\n")
    return ws


def server(root: Path, url: str, **extra):
    values = {
        "root": str(root),
        "audit": False,
        "confirm": ("destructive", "write"),
        "confirm_via": ("console",),
        "confirm_wait": 0.3,
        "confirm_notify": url,
    } | extra
    return create_server(Settings(**values))


async def test_a_pending_approval_is_announced_without_contents(
    root: Path, webhook: tuple[str, list[dict]]
) -> None:
    url, received = webhook
    async with Client(server(root, url)) as client:
        first = await ok(client, "write_file", path="a.txt", content=f"{SECRET} edited\n")
        again = await ok(client, "write_file", path="a.txt", content=f"{SECRET} edited\n")
    assert first.startswith("Not run yet") and again.startswith("Not run yet")
    assert len(received) == 1  # once per request, not once per call
    body = received[0]["body"]
    assert received[0]["type"] == "application/json"
    assert body["tool"] == "write_file" and body["id"] in first and body["workspace"] == "default"
    assert "--confirm write" in body["rule"] and "waits for your approval" in body["text"]
    assert SECRET not in json.dumps(body) and "content" not in json.dumps(body)
    assert (root / "a.txt").read_text() == f"{SECRET}\n"


async def test_a_failing_webhook_approves_nothing_and_is_journaled(root: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/nobody-listens"
    async with Client(server(root, url)) as client:
        answer = await ok(client, "delete_path", path="a.txt")
    assert answer.startswith("Not run yet") and (root / "a.txt").exists()
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text()
    assert "not announced: the webhook could not be reached" in journal


async def test_a_slow_webhook_costs_at_most_its_bound(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts, never answers
    monkeypatch.setattr("agent_workspace_mcp.core.announce.CONFIRM_NOTIFY_SECONDS", 0.5)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/slow"
        async with Client(server(root, url)) as client:
            answer = await ok(client, "delete_path", path="a.txt")
    finally:
        listener.close()
    assert answer.startswith("Not run yet") and (root / "a.txt").exists()
    assert "not announced" in (root / ".workspace-mcp" / "journal.jsonl").read_text()


def test_a_webhook_that_is_no_url_refuses_to_start(root: Path) -> None:
    with pytest.raises(ConfigError, match="not an http"):
        server(root, "ftp://example.invalid/x")
    assert limits.CONFIRM_NOTIFY_SECONDS < limits.CONFIRM_WAIT_SECONDS
