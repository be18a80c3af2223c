"""The legacy HTTP+SSE transport, through the official MCP Python SDK's `sse_client`,
on the same port as Streamable HTTP and behind the same auth and session rules."""

from __future__ import annotations

import re

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client

from tests.e2e.http_server import RunningServer, start

ALICE, BOB = "tok-alice-0123456789", "tok-bob-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    root = tmp_path_factory.mktemp("sse") / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "top.txt").write_text("top level\n")
    (root / "sub" / "inner.txt").write_text("inside sub\n")
    server = start(root, "--api-key", f"alice={ALICE}", "--api-key", f"bob={BOB}")
    server.root = root  # type: ignore[attr-defined]
    yield server
    server.stop()


def served_root(served: RunningServer):
    return served.root  # type: ignore[attr-defined]


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_the_sdk_sse_client_works_with_credentials(served: RunningServer) -> None:
    headers = {"Authorization": f"Bearer {ALICE}"}
    async with (
        sse_client(f"{served.base}/sse", headers=headers) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"read_file", "grep", "write_file"} <= names
        answer = await session.call_tool("read_file", {"path": "top.txt"})
        assert not answer.is_error and text_of(answer).startswith("1: top level")
        failed = await session.call_tool("read_file", {"path": "../x"})
        assert failed.is_error and text_of(failed) == "path outside workspace root: ../x"


def test_sse_without_credentials_is_401(served: RunningServer) -> None:
    answer = httpx2.get(f"{served.base}/sse", timeout=5)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    posted = httpx2.post(f"{served.base}/messages/?session_id=" + "0" * 32, json={}, timeout=5)
    assert posted.status_code == 401


def test_another_subject_cannot_post_to_a_stream(served: RunningServer) -> None:
    with httpx2.stream(
        "GET", f"{served.base}/sse", headers={"Authorization": f"Bearer {ALICE}"}, timeout=10
    ) as stream:
        # Read without leaving a for-loop: closing the iterator would end the stream.
        chunks = stream.iter_text()
        endpoint = ""
        found = None
        while found is None:
            endpoint += next(chunks)
            found = re.search(r"session_id=([0-9a-f]+)\r?\n", endpoint)
        session_id = found.group(1)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        url = f"{served.base}/messages/?session_id={session_id}"
        stolen = httpx2.post(url, json=ping, headers={"Authorization": f"Bearer {BOB}"})
        assert stolen.status_code == 404
        forged = httpx2.post(
            f"{served.base}/messages/?session_id={'f' * 32}",
            json=ping,
            headers={"Authorization": f"Bearer {ALICE}"},
        )
        assert forged.status_code == 404
        own = httpx2.post(url, json=ping, headers={"Authorization": f"Bearer {ALICE}"})
        assert own.status_code == 202, own.text


async def test_the_subpath_is_bound_when_the_stream_opens(served: RunningServer) -> None:
    headers = {"Authorization": f"Bearer {ALICE}", "x-workspace-subpath": "sub"}
    async with (
        sse_client(f"{served.base}/sse", headers=headers) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        inner = await session.call_tool("read_file", {"path": "inner.txt"})
        assert text_of(inner).startswith("1: inside sub")
        escape = await session.call_tool("read_file", {"path": "../top.txt"})
        assert escape.is_error and "outside workspace root" in text_of(escape)
    bad = httpx2.get(
        f"{served.base}/sse",
        headers={"Authorization": f"Bearer {ALICE}", "x-workspace-subpath": "../.."},
        timeout=5,
    )
    assert bad.status_code == 400


async def test_get_mcp_without_a_session_is_the_sse_handshake(served: RunningServer) -> None:
    headers = {"Authorization": f"Bearer {ALICE}"}
    async with (
        sse_client(served.url, headers=headers) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        answer = await session.call_tool("read_file", {"path": "top.txt"})
        assert text_of(answer).startswith("1: top level")


def test_streamable_http_still_answers_on_the_same_port(served: RunningServer) -> None:
    assert httpx2.get(f"{served.base}/health").status_code == 200
    assert httpx2.post(served.url, json={}, timeout=5).status_code == 401


async def test_a_client_chosen_session_header_is_not_who_made_the_call(
    served: RunningServer,
) -> None:
    """Issue 43, item 10: on /messages/ the SDK never checks Mcp-Session-Id, so bob sent
    `operator` (or alice's session) and his writes were journaled as theirs."""
    headers = {"Authorization": f"Bearer {BOB}", "Mcp-Session-Id": "operator"}
    async with (
        sse_client(f"{served.base}/sse", headers=headers) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        wrote = await session.call_tool("write_file", {"path": "bob.txt", "content": "b\n"})
        assert not wrote.is_error, text_of(wrote)
    journal = (served_root(served) / ".workspace-mcp" / "journal.jsonl").read_text()
    entry = next(line for line in journal.splitlines() if '"bob.txt"' in line)
    assert '"session":"operator"' not in entry and '"session":"sse-' in entry, entry


def test_legacy_streams_count_toward_the_per_credential_cap(served: RunningServer) -> None:
    """Item 18: 90 /sse streams on one key were all accepted (the cap counted /mcp only)."""
    from agent_workspace_mcp.core.limits import HTTP_SESSIONS_PER_SUBJECT

    headers = {"Authorization": f"Bearer {BOB}"}
    with httpx2.Client(timeout=10) as http:
        streams, refused = [], None
        try:
            for _ in range(HTTP_SESSIONS_PER_SUBJECT + 1):
                stream = http.stream("GET", f"{served.base}/sse", headers=headers)
                response = stream.__enter__()
                if response.status_code == 503:
                    refused = response.read().decode()
                    stream.__exit__(None, None, None)
                    break
                # Kept with its stream: a dropped iterator would close the stream.
                chunks = response.iter_text()
                seen = ""
                while "session_id=" not in seen:
                    seen += next(chunks)
                streams.append((stream, chunks))
        finally:
            for stream, _chunks in streams:
                stream.__exit__(None, None, None)
    assert refused is not None and "open sessions" in refused, len(streams)
    assert len(streams) == HTTP_SESSIONS_PER_SUBJECT
