"""Approvals over HTTP with `--workers 2` (issue 32): the client's answer to an
`input_required` round may reach the other worker, the operator's approval in the
console reaches the worker whose call waits, and an agent's token approves nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.http_server import RunningServer, start

AGENT = "tok-agent-0123456789"
OPERATOR = "tok-operator-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    root = tmp_path_factory.mktemp("approvals-http")
    server = start(
        root,
        "--token",
        AGENT,
        "--operator-token",
        OPERATOR,
        "--workers",
        "2",
        "--confirm",
        "destructive",
        "--confirm-via",
        "console,client",
    )
    server.root = root  # type: ignore[attr-defined]
    yield server
    assert server.stop() == 0


def agent(server: RunningServer, **kwargs) -> Client:
    # A connection per request, so the kernel may hand each to either worker (a kept-alive
    # connection stays with one).
    transport = StreamableHttpTransport(server.url, headers={"connection": "close"})
    return Client(transport, auth=AGENT, **kwargs)


async def test_a_clients_answer_holds_across_workers(served: RunningServer) -> None:
    root: Path = served.root  # type: ignore[attr-defined]
    asked: list[str] = []

    async def yes(message, response_type, params, context):
        asked.append(message)
        return ElicitResult(action="accept", content={"approve": True})

    for i in range(10):  # the retry lands on either worker; each must accept the state
        (root / f"c{i}.txt").write_text("x\n")
        async with agent(served, elicitation_handler=yes) as client:
            result = await client.call_tool("delete_path", {"path": f"c{i}.txt"})
        assert result.content[0].text.startswith(f"Deleted c{i}.txt")
    assert len(asked) == 10 and not any(root.glob("c*.txt"))


async def test_the_operator_approves_at_any_worker(served: RunningServer) -> None:
    root: Path = served.root  # type: ignore[attr-defined]
    (root / "d.txt").write_text("keep?\n")
    operator = {"authorization": f"Bearer {OPERATOR}"}
    api = f"{served.base}/console/api"
    async with agent(served) as client:  # no elicitation: only the console can answer
        waiting = asyncio.create_task(client.call_tool("delete_path", {"path": "d.txt"}))
        pending = None
        for _ in range(100):
            listed = httpx2.get(f"{api}/list/approvals", headers=operator).json()["approvals"]
            pending = next((a for a in listed if a["status"] == "pending"), None)
            if pending:
                break
            await asyncio.sleep(0.1)
        assert pending and "removes d.txt" in pending["summary"] and pending["subject"] == "token"
        # The agent's own token decides nothing, and cannot even see the queue.
        for token in (AGENT,):
            refused = httpx2.post(
                f"{api}/approvals/decide",
                json={"id": pending["id"], "approve": True},
                headers={"authorization": f"Bearer {token}"},
            )
            assert refused.status_code == 401
            listing = httpx2.get(
                f"{api}/list/approvals", headers={"authorization": f"Bearer {token}"}
            )
            assert listing.status_code == 401
        decided = httpx2.post(
            f"{api}/approvals/decide", headers=operator, json={"id": pending["id"], "approve": True}
        )
        assert decided.status_code == 200, decided.text
        result = await asyncio.wait_for(waiting, 30)
    assert result.content[0].text.startswith("Deleted d.txt") and not (root / "d.txt").exists()
