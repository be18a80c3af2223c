"""The real CLI over stdio: the official client, a clean stdout, and clean shutdowns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.helpers import INIT, missing, pid_alive, pids_running, wait_for


async def test_official_client_over_stdio(ws: Path) -> None:
    (ws / "hello.txt").write_text("hello from disk\n")
    transport = StdioTransport(
        sys.executable, ["-m", "agent_workspace_mcp", "--root", str(ws)], keep_alive=False
    )
    async with Client(transport) as client:
        result = await client.call_tool("read_file", {"path": "hello.txt"})
        assert result.content[0].text.split("\n")[0] == "1: hello from disk"
        bad = await client.call_tool("read_file", {"path": "../etc/passwd"}, raise_on_error=False)
        assert bad.is_error and bad.content[0].text == "path outside workspace root: ../etc/passwd"
        await client.call_tool("write_file", {"path": "out.txt", "content": "written"})
    assert (ws / "out.txt").read_text() == "written"


def start_server(ws: Path, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(ws), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()  # the initialize answer: the server is up
    answer = json.loads(line)
    assert answer["id"] == 1 and "result" in answer
    return proc


def stop_and_collect(proc: subprocess.Popen, how: str) -> tuple[int, float, str, bytes]:
    started = time.monotonic()
    if how == "stdin":
        proc.stdin.close()
    else:
        proc.send_signal(getattr(signal, how))
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"server did not exit within 15 s after {how}")
    elapsed = time.monotonic() - started
    stderr = proc.stderr.read().decode()
    stdout = proc.stdout.read()
    if how != "stdin":
        proc.stdin.close()
    return proc.returncode, elapsed, stderr, stdout


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin"])
def test_shutdown_is_prompt_and_runs_cleanup(ws: Path, how: str) -> None:
    proc = start_server(ws)
    code, elapsed, stderr, stdout = stop_and_collect(proc, how)
    assert code == 0, stderr
    assert elapsed < 10
    reason = "stdin closed" if how == "stdin" else how
    assert f"stopped ({reason}), cleanup done" in stderr
    assert "Traceback" not in stderr
    # stdout carried nothing but protocol messages.
    for line in stdout.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_stdout_is_protocol_only_even_for_errors(ws: Path) -> None:
    proc = start_server(ws)
    requests = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "/etc/shadow"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": 5}},
        },
    ]
    for request in requests:
        proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    code, _, _, rest = stop_and_collect(proc, "stdin")
    assert code == 0
    by_id = {a["id"]: a for a in answers}
    assert by_id[2]["result"]["isError"] is True
    assert by_id[2]["result"]["content"][0]["text"] == "path outside workspace root: /etc/shadow"
    assert by_id[3]["result"]["content"][0]["text"].startswith("invalid arguments for read_file:")
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert os.path.exists(ws)


def call_tool_raw(proc: subprocess.Popen, request_id: int, name: str, arguments: dict) -> dict:
    request = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    while True:
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == request_id:
            return answer["result"]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin"])
def test_stopping_the_server_kills_running_jobs(ws: Path, how: str) -> None:
    proc = start_server(ws, "--shell-any", "--sandbox", "none")  # host pids below
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    result = call_tool_raw(
        proc,
        2,
        "start_job",
        {"command": ["sh", "-c", "echo $$ > job.pid; sleep 1000 & echo $! > child.pid; wait"]},
    )
    assert result["content"][0]["text"].startswith("Started job job-")
    deadline = time.monotonic() + 10

    def written(name: str) -> bool:
        path = ws / name
        return path.exists() and path.read_text().strip().isdigit()

    while not (written("job.pid") and written("child.pid")) and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int((ws / name).read_text()) for name in ("job.pid", "child.pid")]
    code, _, stderr, _ = stop_and_collect(proc, how)
    assert code == 0, stderr
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(pid) for pid in pids), "a job outlived the server"


def test_stopping_the_server_kills_sandboxed_jobs(ws: Path) -> None:
    """Jobs in the default sandbox have pids of their own namespace: found by a marker."""
    from agent_workspace_mcp.core.errors import ConfigError
    from agent_workspace_mcp.core.exec.commands import check_bwrap

    try:
        check_bwrap(os.environ["PATH"].split(os.pathsep))
    except ConfigError as exc:
        missing(str(exc))
    proc = start_server(ws, "--shell-any")
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    marker = f"{1000 + os.getpid() % 1000}.{time.time_ns() % 10**6}"
    result = call_tool_raw(
        proc, 2, "start_job", {"command": ["sh", "-c", f"sleep {marker} & wait"]}
    )
    assert result["content"][0]["text"].startswith("Started job job-")
    wait_for(lambda: pids_running(marker), timeout=10, what="the sandboxed job to start")
    code, _, stderr, _ = stop_and_collect(proc, "stdin")
    assert code == 0, stderr
    wait_for(lambda: not pids_running(marker), timeout=10, what="the sandboxed job to end")


async def test_unconfined_mode_chdirs_into_workspace_cwd(tmp_path: Path, outside: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "here.txt").write_text("relative works\n")
    transport = StdioTransport(
        sys.executable,
        ["-m", "agent_workspace_mcp", "--unconfined"],
        env={"WORKSPACE_CWD": str(target), "PATH": os.environ.get("PATH", "")},
        keep_alive=False,
    )
    async with Client(transport) as client:
        assert (await client.read_resource("resource://cwd"))[0].text == str(target)
        text = (await client.call_tool("read_file", {"path": "here.txt"})).content[0].text
        assert text.startswith("1: relative works")
        # Paths are used as given: outside any workspace boundary.
        text = (
            (await client.call_tool("read_file", {"path": str(outside / "secret.txt")}))
            .content[0]
            .text
        )
        assert text.startswith("1: top secret")


def test_a_start_up_line_says_what_is_served(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = tmp_path / "ws"
    root.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root), "--read-only"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout == ""
    first = out.stderr.splitlines()[0]
    assert (
        first.startswith("agent-workspace-mcp: v")
        and ", 19 tools (+1 for hosts with MCP Apps), confined (default=" in first
    )
    assert str(root.resolve()) in first and first.endswith("waiting for a client on stdin")
    assert ", commands off," in first


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tasks", "--sandbox", "none"], ", commands run_task (unsandboxed: --sandbox none),"),
        (
            ["--shell", "--sandbox", "none", "--tools", "read_file,run_command"],
            ", commands run_command (allowlist; unsandboxed: --sandbox none),",
        ),
        (["--tasks", "--tools", "read_file"], ", commands off,"),  # issue 29: said run_task
    ],
)
def test_the_start_up_line_names_the_command_tools_served(tmp_path: Path, args, says) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(tmp_path), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert says in out.stderr.splitlines()[-2], out.stderr


async def test_a_call_accepted_after_coercion_logs_nothing(ws: Path, tmp_path: Path) -> None:
    """Issue 29: snake_case names and arrays sent as JSON strings were accepted, and
    FastMCP logged a multi-line `WARNING Invalid arguments for tool ...` for each."""
    (ws / "a.txt").write_text("a\n")
    log = tmp_path / "stderr.txt"
    transport = StdioTransport(
        sys.executable,
        ["-m", "agent_workspace_mcp", "--root", str(ws), "--no-audit"],
        keep_alive=False,
        log_file=log,
    )
    async with Client(transport) as client:
        read = await client.call_tool("read_files", {"paths": '["a.txt"]'})
        assert not read.is_error
        renamed = await client.call_tool("rename_path", {"path": "a.txt", "new_name": "b.txt"})
        assert not renamed.is_error
    said = log.read_text()
    assert "Invalid arguments" not in said and "WARNING" not in said, said


def test_the_start_up_count_is_what_tools_list_serves(tmp_path: Path) -> None:
    """Issue 44, item 2: the ready line said 39 tools where tools/list served 37 to the
    same client; the app-only tools are named apart."""
    import json
    import re
    import subprocess
    import sys

    from tests.helpers import INIT

    root = tmp_path / "ws"
    root.mkdir()
    frames = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root), "--no-startup-cache"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    proc.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
    proc.stdin.flush()
    listed = None
    while listed is None:
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == 2:
            listed = answer["result"]["tools"]
    proc.stdin.close()
    proc.wait(timeout=30)
    first = proc.stderr.read().decode().splitlines()[0]
    said = re.search(r", (\d+) tools \(\+(\d+) for hosts with MCP Apps\),", first)
    assert said, first
    assert int(said.group(1)) == len(listed), (first, len(listed))
    assert "review_changes_data" not in {t["name"] for t in listed}
