"""Every handle a client can name is checked against the caller on every use (issue 35):
an HTTP session, a job, a task, a journal/checkpoint entry, an approval. Ann makes one
of each; Bob, another credential on the same server, names each and is refused or told
it does not exist, and Ann's work is untouched. One server for the module.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest

from agent_workspace_mcp.requestctx import sessionless_agent
from tests.e2e.http_server import RunningServer, rpc2026, start

ANN = "tok-ann-handles-0123456"
BOB = "tok-bob-handles-0123456"
TASKS = {"io.modelcontextprotocol/tasks": {}}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[RunningServer, Path]:
    root = tmp_path_factory.mktemp("handles")
    (root / "keep.txt").write_text("ann's\n")
    server = start(
        root,
        "--shell",
        "--shell-allow",
        "sleep",
        "--allow-remote-exec",
        "--confirm",
        "delete_path",
        "--confirm-via",
        "console",
        "--confirm-wait",  # a call answers "pending" after 1 s, not 20 (issue 45)
        "1",
        "--operator-token",
        "op-handles-0123456789",
        "--api-key",
        f"ann={ANN}",
        "--api-key",
        f"bob={BOB}",
    )
    yield server, root
    assert server.stop() == 0


def call(server: RunningServer, key: str, tool: str, **arguments) -> str:
    answer = rpc2026(server, key, "tools/call", {"name": tool, "arguments": arguments})
    return answer["result"]["content"][0]["text"]


def test_a_session_is_its_openers(served) -> None:
    server, _ = served
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "ann", "version": "1"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {ANN}"}
    opened = httpx2.post(server.url, json=init, headers=headers)
    session = opened.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    as_bob = {
        **headers,
        "authorization": f"Bearer {BOB}",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    }
    assert httpx2.post(server.url, json=ping, headers=as_bob).status_code == 404
    assert httpx2.delete(server.url, headers=as_bob).status_code == 404
    as_ann = {**as_bob, "authorization": f"Bearer {ANN}"}
    assert httpx2.post(server.url, json=ping, headers=as_ann).status_code == 200


def test_a_job_and_its_task_are_their_starters(served) -> None:
    server, _ = served
    started = call(server, ANN, "start_job", command=["sleep", "5"])
    job = re.search(r"job-[0-9a-f]+", started).group(0)
    for tool in ("job_status", "job_kill"):
        assert "unknown job" in call(server, BOB, tool, jobId=job)
    for method in ("tasks/get", "tasks/cancel"):
        refused = rpc2026(server, BOB, method, {"taskId": job}, extensions=TASKS)
        assert refused["error"]["code"] == -32602
    assert "running" in call(server, ANN, "job_status", jobId=job)  # Bob's kill did nothing
    assert "killed" in call(server, ANN, "job_kill", jobId=job)


def test_history_entries_are_their_authors(served) -> None:
    server, root = served
    call(server, ANN, "write_file", path="ann.txt", content="ann wrote this\n")
    entry = re.search(r"\(id (\w+)\)", call(server, ANN, "work_log")).group(1)
    theirs = call(server, BOB, "work_log")
    assert entry not in theirs and "ann.txt" not in theirs
    ann_session = sessionless_agent("ann", "raw-test", "1")  # what the journal records
    for arguments in ({"to": entry}, {"steps": 1}, {"session": ann_session}):
        call(server, BOB, "undo", **arguments)
        assert (root / "ann.txt").read_text() == "ann wrote this\n", arguments
    call(server, BOB, "restore_file", path="ann.txt")
    assert (root / "ann.txt").read_text() == "ann wrote this\n"
    assert f"#{entry} write_file" in call(server, ANN, "undo", steps=1, dryRun=True)


def test_an_approval_is_its_askers(served) -> None:
    server, root = served
    asked = call(server, ANN, "delete_path", path="keep.txt")
    approval = re.search(r"ap-[0-9A-Za-z_-]+", asked).group(0)
    assert f"no approval {approval} of yours" in call(server, BOB, "approval_status", id=approval)
    assert "waiting for a person" in call(server, ANN, "approval_status", id=approval)
    # The same call from Bob is his own request, never a use of Ann's approval.
    his = re.search(r"ap-[0-9A-Za-z_-]+", call(server, BOB, "delete_path", path="keep.txt"))
    assert his is not None and his.group(0) != approval
    assert (root / "keep.txt").exists()
