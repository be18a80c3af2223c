"""Issue 28's attacks through real HTTP and legacy SSE sessions: one server for the module.

Each test is the attack as the red team ran it; it failed against the code before the fix.
"""

from __future__ import annotations

import re
import subprocess

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.sse import sse_client

from tests.e2e.http_server import RunningServer, start
from tests.helpers import INIT

ALICE, BOB = "tok-alice-0123456789", "tok-bob-0123456789"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    root = tmp_path_factory.mktemp("redteam") / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "top.txt").write_text("top level\n")
    (root / "sub" / "inner.txt").write_text("inside sub\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "gitlink").symlink_to(".git")
    (root / "statelink").symlink_to(".workspace-mcp")
    (root / ".workspace-mcp").mkdir()
    server = start(root, "--api-key", f"alice={ALICE}", "--api-key", f"bob={BOB}")
    server.root = root  # type: ignore[attr-defined]
    yield server
    server.stop()


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def http_client(server: RunningServer, token: str, headers: dict | None = None) -> Client:
    return Client(StreamableHttpTransport(server.url, headers=headers), auth=token)


@pytest.mark.parametrize(
    "subpath", [".git", ".git/hooks", ".GIT", "gitlink", ".workspace-mcp", "statelink"]
)
def test_a_session_cannot_be_rooted_in_git_or_the_state(served: RunningServer, subpath) -> None:
    """Item 1: rooted in .git, a session wrote hooks/ and config; the user's commit ran them."""
    headers = {**MCP_HEADERS, "authorization": f"Bearer {ALICE}", "x-workspace-subpath": subpath}
    opened = httpx2.post(served.url, json=INIT, headers=headers, timeout=10)
    assert opened.status_code == 400, opened.text
    assert "x-workspace-subpath" in opened.text and "refused" in opened.text
    stream = httpx2.get(
        f"{served.base}/sse",
        headers={"authorization": f"Bearer {ALICE}", "x-workspace-subpath": subpath},
        timeout=10,
    )
    assert stream.status_code == 400, stream.text
    assert not (served.root / ".git" / "hooks" / "pre-commit").exists()  # type: ignore[attr-defined]


async def test_sse_applies_the_subpath_to_every_tool(served: RunningServer) -> None:
    """Item 2: a legacy SSE stream opened with a subpath must see only that directory."""
    confined = {"Authorization": f"Bearer {ALICE}", "x-workspace-subpath": "sub"}
    whole = {"Authorization": f"Bearer {ALICE}"}
    async with (
        sse_client(f"{served.base}/sse", headers=whole) as (r2, w2),
        ClientSession(r2, w2) as wide,
        sse_client(f"{served.base}/sse", headers=confined) as (r1, w1),
        ClientSession(r1, w1) as narrow,
    ):
        await wide.initialize()
        await narrow.initialize()
        for _ in range(3):  # interleaved with an unconfined stream of the same subject
            listing = text_of(await narrow.call_tool("list_files", {}))
            assert listing.strip() == "inner.txt", listing
            assert "top.txt" in text_of(await wide.call_tool("list_files", {}))
            read = await narrow.call_tool("read_file", {"path": "top.txt"})
            assert read.is_error, text_of(read)
            found = text_of(await narrow.call_tool("grep", {"pattern": "top level"}))
            assert "top.txt" not in found, found


def _sse_session(served: RunningServer, token: str):
    """Open a raw SSE stream; returns (stream, its text iterator, session id). The
    iterator must stay referenced: closing it ends the stream."""
    stream = httpx2.stream(
        "GET", f"{served.base}/sse", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    response = stream.__enter__()
    chunks = response.iter_text()
    seen = ""
    while (found := re.search(r"session_id=([0-9a-f]+)\r?\n", seen)) is None:
        seen += next(chunks)
    return stream, chunks, found.group(1)


def test_repeated_session_parameters_are_refused(served: RunningServer) -> None:
    """Item 15: our guard read the first session_id, the SDK the last."""
    stream_a, _keep_a, alice = _sse_session(served, ALICE)
    stream_b, _keep_b, bob = _sse_session(served, BOB)
    try:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for query in (
            f"session_id={bob}&session_id={alice}",
            f"session_id={bob}&session_id={bob}",
            f"session_id={bob}&session_id=",
        ):
            answer = httpx2.post(
                f"{served.base}/messages/?{query}",
                json=ping,
                headers={"Authorization": f"Bearer {BOB}"},
                timeout=10,
            )
            assert answer.status_code == 400, (query, answer.status_code)
            assert "session_id" in answer.text
        own = httpx2.post(
            f"{served.base}/messages/?session_id={bob}",
            json=ping,
            headers={"Authorization": f"Bearer {BOB}"},
            timeout=10,
        )
        assert own.status_code == 202
    finally:
        stream_a.__exit__(None, None, None)
        stream_b.__exit__(None, None, None)


def test_repeated_session_headers_are_refused(served: RunningServer) -> None:
    """Item 15 on /mcp: two mcp-session-id or x-workspace-subpath headers are refused."""
    base = [(k, v) for k, v in MCP_HEADERS.items()] + [("authorization", f"Bearer {ALICE}")]
    twice = httpx2.post(
        served.url,
        json=INIT,
        headers=[*base, ("x-workspace-subpath", "sub"), ("x-workspace-subpath", ".")],
        timeout=10,
    )
    assert twice.status_code == 400 and "x-workspace-subpath" in twice.text
    session = httpx2.post(served.url, json=INIT, headers=base, timeout=10)
    sid = session.headers["mcp-session-id"]
    both = httpx2.post(
        served.url,
        json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
        headers=[*base, ("mcp-session-id", sid), ("mcp-session-id", "0" * 32)],
        timeout=10,
    )
    assert both.status_code == 400 and "mcp-session-id" in both.text


async def test_an_undo_error_names_no_host_path(served: RunningServer, tmp_path) -> None:
    """Item 10: `path outside workspace root: <the host path of the root>/sub2/f.txt`."""
    root = served.root  # type: ignore[attr-defined]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with http_client(served, ALICE) as client:
        await client.call_tool("write_file", {"path": "sub2/f.txt", "content": "one\n"})
        (root / "sub2" / "f.txt").unlink()
        (root / "sub2").rmdir()
        (root / "sub2").symlink_to(elsewhere)
        answer = await client.call_tool("undo", {}, raise_on_error=False)
        (root / "sub2").unlink()
    text = text_of(answer)
    assert answer.is_error and "outside workspace root: sub2/f.txt" in text, text
    assert str(root) not in text and str(tmp_path) not in text


async def test_history_and_undo_are_scoped_to_the_subject(served: RunningServer) -> None:
    """Item 11: subject B's undo reverted subject A's write; B's work_log listed A's."""
    root = served.root  # type: ignore[attr-defined]
    async with http_client(served, ALICE) as alice, http_client(served, BOB) as bob:
        await alice.call_tool("write_file", {"path": "alice.txt", "content": "alice's\n"})
        await bob.call_tool("write_file", {"path": "bob.txt", "content": "bob's\n"})
        bob_log = text_of(await bob.call_tool("work_log", {}))
        assert "bob.txt" in bob_log and "alice.txt" not in bob_log, bob_log
        alice_log = text_of(await alice.call_tool("work_log", {}))
        alice_id = alice_log.splitlines()[0].rsplit("(id ", 1)[1].rstrip(")")
        undone = text_of(await bob.call_tool("undo", {}))
        assert "bob.txt" in undone and not (root / "bob.txt").exists()
        again = await bob.call_tool("undo", {}, raise_on_error=False)
        assert again.is_error and "nothing to undo" in text_of(again)
        named = await bob.call_tool("undo", {"to": alice_id}, raise_on_error=False)
        assert named.is_error and "no journal entry" in text_of(named)
        restore = await bob.call_tool(
            "restore_file", {"path": "alice.txt", "before": alice_id}, raise_on_error=False
        )
        assert restore.is_error
        assert (root / "alice.txt").read_text() == "alice's\n"
        assert "alice.txt" in text_of(await alice.call_tool("undo", {}))
    assert not (root / "alice.txt").exists()
