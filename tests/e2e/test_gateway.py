"""Behind a plain reverse proxy (issue 49, item 4): nginx on 127.0.0.1, configured by
deploy/gateway/nginx.conf, in front of the server over HTTP. Real MCP clients go through
it; sessions, streaming and the workspace header pass; a client's X-Workspace-Subpath is
dropped, and only the proxy's own confines a session."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.http_server import free_port, start
from tests.helpers import requires

pytestmark = [
    pytest.mark.slow,
    requires(None if shutil.which("nginx") else "nginx is not installed"),
]
CONF = Path(__file__).resolve().parents[2] / "deploy" / "gateway" / "nginx.conf"
TOKEN = "gateway-test-token-0123456789"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    root = tmp_path_factory.mktemp("gw")
    (root / "top.txt").write_text("top\n")
    (root / "team-a").mkdir()
    (root / "team-a" / "mine.txt").write_text("team a\n")
    server = start(root, "--token", TOKEN)
    try:
        yield from _behind_nginx(server, tmp_path_factory)
    finally:
        server.stop()


def _behind_nginx(server, tmp_path_factory):
    temp = tmp_path_factory.mktemp("nginx")
    port = free_port()
    conf = (
        CONF.read_text()
        .replace("UPSTREAM", f"127.0.0.1:{server.port}")
        .replace("LISTEN", f"127.0.0.1:{port}")
        .replace("PIDFILE", str(temp / "nginx.pid"))
        .replace("ERRORLOG", str(temp / "error.log"))
        .replace("TEMPDIR", str(temp))
    )
    (temp / "nginx.conf").write_text(conf)
    nginx = subprocess.Popen(
        [shutil.which("nginx"), "-c", str(temp / "nginx.conf"), "-g", "daemon off;"],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx2.HTTPError:
            time.sleep(0.05)
    else:
        nginx.kill()
        raise RuntimeError(f"nginx did not come up: {(temp / 'error.log').read_text()}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def client(url: str, **headers: str) -> Client:
    headers = {"Authorization": f"Bearer {TOKEN}", **headers}
    return Client(StreamableHttpTransport(url, headers=headers))


async def test_sessions_and_tools_pass_through_the_proxy(gateway: str) -> None:
    async with client(f"{gateway}/mcp") as agent:
        listed = await agent.call_tool("list_files", {"path": "."})
        assert "top.txt" in listed.content[0].text and "team-a/" in listed.content[0].text
        written = await agent.call_tool("write_file", {"path": "via-proxy.txt", "content": "x\n"})
        assert written.content[0].text.startswith("Created via-proxy.txt")


async def test_a_clients_subpath_header_is_dropped_the_proxys_is_kept(gateway: str) -> None:
    # A client that asks for a folder through the open route gets the whole root: the
    # proxy decides confinement, not the client.
    async with client(f"{gateway}/mcp", **{"X-Workspace-Subpath": "team-a"}) as agent:
        seen = (await agent.call_tool("list_files", {"path": "."})).content[0].text
    assert "top.txt" in seen
    # The proxy's team route confines the session to team-a, whatever the client sends.
    async with client(f"{gateway}/team-a/mcp", **{"X-Workspace-Subpath": "."}) as agent:
        seen = (await agent.call_tool("list_files", {"path": "."})).content[0].text
        outside = await agent.call_tool("read_file", {"path": "../top.txt"}, raise_on_error=False)
    assert "mine.txt" in seen and "top.txt" not in seen and outside.is_error


async def test_no_credential_is_refused_through_the_proxy(gateway: str) -> None:
    answer = httpx2.post(
        f"{gateway}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401 and "Bearer" in answer.headers.get("www-authenticate", "")
