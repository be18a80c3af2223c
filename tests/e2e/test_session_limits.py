"""Stateful HTTP sessions with limits (issue 35): idle sessions expire, and new ones past
the per-credential or total cap are refused with 503 and a sentence; a session answers
only the credential that opened it.
"""

from __future__ import annotations

import time

import httpx2
import pytest

from tests.e2e.http_server import RunningServer, start
from tests.helpers import INIT, wait_for

FIRST = "tok-first-0123456789"
SECOND = "tok-second-012345678"
ACCEPT = "application/json, text/event-stream"
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
CAP = 8  # --sessions-per-credential (issue 44: a setting, not only a constant)


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    root = tmp_path_factory.mktemp("sessions")
    server = start(
        root,
        "--api-key",
        f"first={FIRST}",
        "--api-key",
        f"second={SECOND}",
        "--session-idle-timeout",
        "3",
        "--sessions-per-credential",
        str(CAP),
    )
    yield server
    assert server.stop() == 0


def open_session(server: RunningServer, key: str) -> httpx2.Response:
    headers = {"authorization": f"Bearer {key}", "accept": ACCEPT}
    return httpx2.post(server.url, json=INIT, headers=headers, timeout=10)


def use(server: RunningServer, key: str, session: str, method: str = "POST") -> httpx2.Response:
    headers = {
        "authorization": f"Bearer {key}",
        "accept": ACCEPT,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    }
    if method == "DELETE":
        return httpx2.delete(server.url, headers=headers, timeout=10)
    return httpx2.post(server.url, json=LIST, headers=headers, timeout=10)


def test_an_idle_session_expires(served: RunningServer) -> None:
    opened = open_session(served, FIRST)
    session = opened.headers["mcp-session-id"]
    assert use(served, FIRST, session).status_code == 200
    assert use(served, SECOND, session).status_code == 404  # another credential's
    time.sleep(4)
    gone = use(served, FIRST, session)
    assert (gone.status_code, gone.json()) == (404, {"error": "session not found"})


def test_sessions_are_capped_per_credential(served: RunningServer) -> None:
    opened = []
    for _ in range(CAP):
        answer = open_session(served, FIRST)
        if answer.status_code == 503:
            break  # some are still open from the test before (they expire in 3 s)
        opened.append(answer.headers["mcp-session-id"])
    refused = open_session(served, FIRST)
    assert refused.status_code == 503
    assert refused.json()["error"] == (
        f"this credential has {CAP} open sessions, its limit (--sessions-per-credential); "
        "close one (DELETE /mcp with its mcp-session-id, or end an SSE stream) or wait for "
        "idle ones to expire"
    )
    # Another credential is not affected, nor are sessionless 2026-07-28 requests.
    assert open_session(served, SECOND).status_code == 200
    discover = httpx2.post(
        served.url,
        headers={
            "authorization": f"Bearer {FIRST}",
            "accept": ACCEPT,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "server/discover",
        },
        json={
            "jsonrpc": "2.0",
            "id": 3,
            "method": "server/discover",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            },
        },
        timeout=10,
    )
    assert discover.status_code == 200, discover.text
    # Closing one makes room; so does waiting for the idle ones to expire.
    assert use(served, FIRST, opened[0], "DELETE").status_code in (200, 202, 204)
    assert open_session(served, FIRST).status_code == 200
    # Refused opens make nothing, so polling adds no session while the idle ones expire.
    wait_for(lambda: open_session(served, FIRST).status_code == 200, what="idle sessions to expire")
