"""Jobs as tasks (issue 35, SEP-2663): a 2026-07-28 client that declares the tasks
extension gets a long command back as a task, polls `tasks/get` for its status and the
answer, cancels it with `tasks/cancel`; the task outlives the connection that started it,
is read from any worker, and another credential is told it does not exist.

Raw JSON-RPC over HTTP, because the request `_meta` is where the extension is declared
and that is what these tests are about; one server per worker mode.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.http_server import RunningServer, rpc2026, start
from tests.helpers import pids_running, wait_for

ANN = "tok-ann-0123456789abcd"
BOB = "tok-bob-0123456789abcd"
TASKS = {"io.modelcontextprotocol/tasks": {}}


def rpc(
    server: RunningServer,
    key: str,
    method: str,
    params: dict,
    *,
    extensions: dict | None = TASKS,
    name: str | None = None,
) -> dict:
    return rpc2026(server, key, method, params, extensions=extensions, name=name)


@pytest.fixture(scope="module", params=["one process", "--workers 2"])
def served(tmp_path_factory, request) -> RunningServer:
    root = tmp_path_factory.mktemp("tasks")
    extra = ("--workers", "2") if request.param == "--workers 2" else ()
    server = start(
        root,
        "--shell-any",
        "--allow-remote-exec",
        "--api-key",
        f"ann={ANN}",
        "--api-key",
        f"bob={BOB}",
        *extra,
    )
    yield server
    assert server.stop() == 0


def bash(server: RunningServer, command: str, key: str = ANN, **kw) -> dict:
    return rpc(server, key, "tools/call", {"name": "bash", "arguments": {"command": command}}, **kw)


def poll(server: RunningServer, task_id: str, key: str = ANN, until: float = 30) -> dict:
    deadline = time.monotonic() + until
    while True:
        answer = rpc(server, key, "tasks/get", {"taskId": task_id})["result"]
        if answer["status"] != "working" or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_the_extension_is_advertised(served: RunningServer) -> None:
    caps = rpc(served, ANN, "server/discover", {})["result"]["capabilities"]
    assert "io.modelcontextprotocol/tasks" in caps["extensions"]
    assert "tasks" not in caps


def test_a_long_command_is_a_task_whose_result_is_the_answer(served: RunningServer) -> None:
    created = bash(served, "sleep 1.5; echo done-$((6*7))")["result"]
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert created["taskId"].startswith("job-")
    assert created["ttlMs"] is None and created["pollIntervalMs"] > 0
    for key in ("result", "error", "task", "ttl", "pollInterval", "requestState"):
        assert key not in created
    # Durable at once: the very next tasks/get (any worker) resolves it.
    first = rpc(served, ANN, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert first["taskId"] == created["taskId"] and first["status"] in ("working", "completed")
    done = poll(served, created["taskId"])
    assert done["status"] == "completed", done
    assert done["resultType"] == "complete"
    text = done["result"]["content"][0]["text"]
    assert "done-42" in text and "[exit code 0" in text
    assert done["result"]["isError"] is False
    assert text.startswith("$ bash -c ")


def test_a_quick_command_answers_in_the_call(served: RunningServer) -> None:
    answer = bash(served, "echo quick")["result"]
    assert answer["resultType"] == "complete"
    assert "taskId" not in answer
    assert "quick" in answer["content"][0]["text"]


def test_background_is_a_task_at_once(served: RunningServer) -> None:
    answer = rpc(
        served,
        ANN,
        "tools/call",
        {"name": "run_command", "arguments": {"command": ["echo", "bg"], "background": True}},
    )
    assert "result" in answer, answer
    created = answer["result"]
    assert created["resultType"] == "task"
    done = poll(served, created["taskId"])
    assert done["status"] == "completed" and "bg" in done["result"]["content"][0]["text"]


def test_cancel_kills_the_process_group(served: RunningServer, tmp_path: Path) -> None:
    marker = f"/tmp/awm-task-{time.time_ns()}"
    created = bash(served, f"(sleep 3; touch {marker}) & sleep 30")["result"]
    ack = rpc(served, ANN, "tasks/cancel", {"taskId": created["taskId"]})["result"]
    assert ack == {"resultType": "complete", **({"_meta": ack["_meta"]} if "_meta" in ack else {})}
    after = poll(served, created["taskId"])
    assert after["status"] == "cancelled"
    assert "result" not in after and "error" not in after
    again = rpc(served, ANN, "tasks/cancel", {"taskId": created["taskId"]})["result"]
    assert again["resultType"] == "complete"  # idempotent on a terminal task
    # Once no process names the marker, `touch` either ran (the kill missed the
    # background child) or never will.
    wait_for(lambda: not pids_running(marker), timeout=10, what="the job's processes to end")
    assert not Path(marker).exists(), "the job's background child outlived the cancel"


def test_another_credential_is_told_it_does_not_exist(served: RunningServer) -> None:
    created = bash(served, "sleep 2; echo ann-only")["result"]
    for method in ("tasks/get", "tasks/cancel"):
        refused = rpc(served, BOB, method, {"taskId": created["taskId"]})
        assert refused["error"]["code"] == -32602, refused
    unknown = rpc(served, ANN, "tasks/get", {"taskId": "job-000000000000"})
    assert unknown["error"]["code"] == -32602
    done = poll(served, created["taskId"])
    assert done["status"] == "completed"  # bob's cancel did nothing


def test_without_the_extension(served: RunningServer) -> None:
    answer = bash(served, "sleep 1.5; echo plain", extensions=None)["result"]
    assert answer["resultType"] == "complete" and "taskId" not in answer
    assert "plain" in answer["content"][0]["text"]
    for method, params in (
        ("tasks/get", {"taskId": "x"}),
        ("tasks/cancel", {"taskId": "x"}),
        ("tasks/update", {"taskId": "x", "inputResponses": {}}),
    ):
        refused = rpc(served, ANN, method, params, extensions=None)
        assert refused["error"]["code"] == -32021, refused
        assert "io.modelcontextprotocol/tasks" in json.dumps(refused["error"]["data"])
    for removed in ("tasks/result", "tasks/list"):
        assert rpc(served, ANN, removed, {"taskId": "x"})["error"]["code"] == -32601


def test_the_routing_header_must_name_the_task(served: RunningServer) -> None:
    created = bash(served, "sleep 1.2")["result"]
    wrong = rpc(served, ANN, "tasks/get", {"taskId": created["taskId"]}, name="job-other")
    assert wrong["error"]["code"] == -32020, wrong
    poll(served, created["taskId"])


def test_tasks_outlive_a_restart(tmp_path: Path) -> None:
    """Issue 43, item 22: after a restart, tasks/get answered "unknown taskId" for
    finished and stopped tasks whose records were still on disk."""
    root, jobs = tmp_path / "ws", tmp_path / "jobs"
    root.mkdir()
    jobs.mkdir(mode=0o700)
    args = (
        "--shell-any",
        "--allow-remote-exec",
        "--api-key",
        f"ann={ANN}",
        "--api-key",
        f"bob={BOB}",
    )
    env = {"WORKSPACE_MCP_JOB_DIR": str(jobs)}
    first = start(root, *args, env=env)
    try:
        done = rpc(
            first,
            ANN,
            "tools/call",
            {
                "name": "run_command",
                "arguments": {"command": ["echo", "kept-answer"], "background": True},
            },
        )["result"]
        finished = poll(first, done["taskId"])
        stopped = bash(first, "sleep 30")["result"]
        rpc(first, ANN, "tasks/cancel", {"taskId": stopped["taskId"]})
        poll(first, stopped["taskId"])
    finally:
        assert first.stop() == 0
    second = start(root, *args, env=env)
    try:
        again = rpc(second, ANN, "tasks/get", {"taskId": done["taskId"]})["result"]
        assert again["status"] == "completed" == finished["status"]
        assert again["taskId"] == finished["taskId"]
        text = again["result"]["content"][0]["text"]
        assert "kept-answer" in text and "[exit code 0" in text
        assert (
            rpc(second, ANN, "tasks/get", {"taskId": stopped["taskId"]})["result"]["status"]
            == "cancelled"
        )
        assert rpc(second, BOB, "tasks/get", {"taskId": done["taskId"]})["error"]["code"] == -32602
    finally:
        assert second.stop() == 0
