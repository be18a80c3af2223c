"""Colliding JSON-RPC ids (issue 35): two clients that use the same request ids at the
same time each get only their own answers, on one server process and across workers.

The 2026 advisories were about one shared transport answering client A's request to
client B when ids collided. Two real `fastmcp.Client`s number their requests the same
way, so running them side by side makes every id collide; each reads its own file, so
an answer delivered to the wrong client shows.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.http_server import RunningServer, start

CALLS = 40


@pytest.fixture(scope="module", params=["one process", "--workers 2"])
def served(tmp_path_factory, request) -> RunningServer:
    root = tmp_path_factory.mktemp("ids")
    for who in ("first", "second"):
        (root / f"{who}.txt").write_text(f"this is {who}'s file\n")
    extra = ("--workers", "2") if request.param == "--workers 2" else ()
    server = start(
        root,
        "--api-key",
        "first=tok-first-0123456789",
        "--api-key",
        "second=tok-second-012345678",
        *extra,
    )
    yield server
    assert server.stop() == 0


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_client_gets_only_its_own_answers(served: RunningServer, mode: str) -> None:
    def client(who: str, key: str) -> Client:
        # A connection per request under --workers, so the kernel spreads them.
        transport = StreamableHttpTransport(served.url, headers={"connection": "close"})
        return Client(transport, auth=key, mode=mode)

    wrong: list[str] = []
    answered = {"first": 0, "second": 0}
    first = client("first", "tok-first-0123456789")
    second = client("second", "tok-second-012345678")

    async def run(who: str, c: Client) -> None:
        async def one() -> None:
            result = await c.call_tool("read_file", {"path": f"{who}.txt"})
            text = result.content[0].text
            if f"this is {who}'s file" not in text:
                wrong.append(f"{who} got: {text[:80]}")
            answered[who] += 1

        async with anyio.create_task_group() as group:
            for _ in range(CALLS):
                group.start_soon(one)

    async with first, second, anyio.create_task_group() as group:
        group.start_soon(run, "first", first)
        group.start_soon(run, "second", second)
    assert wrong == []
    assert answered == {"first": CALLS, "second": CALLS}


def test_a_raw_id_reused_by_two_callers_at_once(served: RunningServer, tmp_path: Path) -> None:
    """The same id (7) from both callers, in flight together, on the sessionless
    protocol: each response carries its caller's file."""
    import concurrent.futures

    import httpx2

    def call(who: str, key: str) -> str:
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "read_file",
                "arguments": {"path": f"{who}.txt"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": who, "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {
            "authorization": f"Bearer {key}",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "read_file",
            "connection": "close",
        }
        return httpx2.post(served.url, json=body, headers=headers, timeout=30).text

    jobs = [("first", "tok-first-0123456789"), ("second", "tok-second-012345678")] * 20
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda job: (job[0], call(*job)), jobs))
    for who, text in answers:
        assert f"this is {who}'s file" in text, (who, text[:300])
        assert '"id":7' in text.replace(" ", ""), text[:300]
