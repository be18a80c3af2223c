"""`--workers N` (issue 18): one port, several real server processes, nothing lost.

One supervisor with two workers serves the whole module. Which worker answers a request
is the kernel's choice, so the tests that must cross workers kill the worker that holds
something (a job) and go on through the others.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.http_server import RunningServer, start
from tests.helpers import until, wait_for

ALICE = "tok-alice-0123456789"
BOB = "tok-bob-0123456789"


def children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(x) for x in text.split()}


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def workers_of(server: RunningServer) -> set[int]:
    return {pid for pid in children(server.proc.pid) if "__worker__" in cmdline(pid)}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def start_workers(root: Path, job_dir: Path, *args: str) -> RunningServer:
    job_dir.mkdir(mode=0o700, exist_ok=True)
    server = start(
        root,
        "--workers",
        "2",
        "--no-audit",
        *args,
        env={"WORKSPACE_MCP_JOB_DIR": str(job_dir)},
    )
    wait_for(lambda: "serving" in server.stderr(), what="the ready line")
    wait_for(lambda: len(workers_of(server)) == 2, what="two workers")
    return server


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> RunningServer:
    base = tmp_path_factory.mktemp("workers")
    root = base / "ws"
    root.mkdir()
    server = start_workers(
        root,
        base / "jobs",
        "--api-key",
        f"alice={ALICE}",
        "--api-key",
        f"bob={BOB}",
        "--shell-any",
        "--allow-remote-exec",
    )
    server.root = root  # type: ignore[attr-defined]
    server.job_dir = base / "jobs"  # type: ignore[attr-defined]
    yield server
    server.stop(timeout=40)


def client(server: RunningServer, token: str) -> Client:
    return Client(StreamableHttpTransport(server.url), auth=token)


async def call(server: RunningServer, tool: str, args: dict, token: str = ALICE) -> str:
    async with client(server, token) as c:
        result = await c.call_tool(tool, args, raise_on_error=False)
    return result.content[0].text


def test_one_ready_line_names_the_workers(served: RunningServer) -> None:
    lines = [line for line in served.stderr().splitlines() if "serving" in line]
    assert len(lines) == 1, served.stderr()
    assert "2 workers (stateless)" in lines[0]
    assert all(parent_of(pid) == served.proc.pid for pid in workers_of(served))


async def test_no_lost_update_across_workers(served: RunningServer) -> None:
    """8 clients x 10 calls at once: every file, note, edit, journal entry and checkpoint
    line is there (edits of one shared file serialise across processes)."""
    root: Path = served.root  # type: ignore[attr-defined]
    (root / "shared.txt").write_text("END\n")
    state = root / ".workspace-mcp"
    journal_before = _lines(state / "journal.jsonl")
    index_before = _lines(state / "checkpoints" / "index.jsonl")
    rounds, clients = 10, 8

    async def agent(n: int) -> None:
        async with client(served, ALICE) as c:
            for i in range(rounds):
                tag = f"agent{n}-call{i}"
                kind = i % 3
                if kind == 0:
                    await c.call_tool("write_file", {"path": f"own/{tag}.txt", "content": tag})
                elif kind == 1:
                    await c.call_tool("remember", {"text": f"note {tag}"})
                else:
                    await c.call_tool(
                        "edit_file",
                        {"path": "shared.txt", "oldString": "END\n", "newString": f"{tag}\nEND\n"},
                    )

    await asyncio.gather(*(agent(n) for n in range(clients)))
    tags = [(n, i) for n in range(clients) for i in range(rounds)]
    for n, i in tags:
        tag = f"agent{n}-call{i}"
        if i % 3 == 0:
            assert (root / "own" / f"{tag}.txt").read_text() == tag
    shared = (root / "shared.txt").read_text().splitlines()
    edits = {f"agent{n}-call{i}" for n, i in tags if i % 3 == 2}
    assert set(shared[:-1]) == edits and len(shared) == len(edits) + 1 and shared[-1] == "END"
    notes = [json.loads(x)["text"] for x in _lines(state / "notes.jsonl")]
    assert {f"note agent{n}-call{i}" for n, i in tags if i % 3 == 1} <= set(notes)
    changing = sum(1 for _, i in tags if i % 3 != 1)  # a note is not journaled
    journal = _lines(state / "journal.jsonl")[len(journal_before) :]
    assert len(journal) == changing
    assert all(json.loads(line) for line in journal)  # no torn line
    index = _lines(state / "checkpoints" / "index.jsonl")[len(index_before) :]
    assert len(index) >= changing and all(json.loads(line) for line in index)


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def _job_id(answer: str) -> tuple[str, int]:
    found = re.search(r"Started job (job-[0-9a-f]{12}) \(pid (\d+)\)", answer)
    assert found, answer
    return found.group(1), int(found.group(2))


async def test_a_job_outlives_its_worker_and_is_killed_through_another(
    served: RunningServer,
) -> None:
    script = "echo one; sleep 1; echo two; sleep 60"
    job, pid = _job_id(await call(served, "start_job", {"command": ["sh", "-c", script]}))
    starter = parent_of(pid)
    assert starter in workers_of(served)
    assert "unknown job" in await call(served, "job_status", {"jobId": job}, token=BOB)
    os.kill(starter, signal.SIGKILL)
    wait_for(
        lambda: not alive(starter) and len(workers_of(served)) == 2, what="a new worker", timeout=60
    )
    assert alive(pid) and parent_of(pid) == served.proc.pid  # the supervisor inherited it
    # "two" is written after the starter died: its pump outlived it.
    status = await until(
        lambda: call(served, "job_status", {"jobId": job, "tailBytes": 100}),
        lambda s: "one\ntwo" in s,
    )
    assert ": running" in status and "one\ntwo" in status, status
    listing = await call(served, "job_status", {})
    assert job in listing and "running" in listing
    assert job not in await call(served, "job_status", {}, token=BOB)
    assert "unknown job" in await call(served, "job_kill", {"jobId": job}, token=BOB)
    assert alive(pid)
    killed = await call(served, "job_kill", {"jobId": job})
    assert ": killed" in killed, killed
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), what="the job to be reaped")
    assert ": killed" in await call(served, "job_status", {"jobId": job})


async def test_the_supervisor_records_the_exit_code_of_an_orphaned_job(
    served: RunningServer,
) -> None:
    answer = await call(served, "start_job", {"command": ["sh", "-c", "sleep 1.5; exit 3"]})
    job, pid = _job_id(answer)
    os.kill(parent_of(pid), signal.SIGKILL)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), what="the job to end and be reaped")
    wait_for(lambda: len(workers_of(served)) == 2, what="a new worker", timeout=60)
    status = await call(served, "job_status", {"jobId": job})
    assert ": exited, exit code 3" in status, status


async def test_metrics_add_up_across_workers(served: RunningServer) -> None:
    """Whichever worker answers /metrics counts every worker's calls, including those
    of a worker that has died since."""
    auth = {"authorization": f"Bearer {ALICE}"}
    assert httpx2.get(f"{served.base}/metrics").status_code == 401

    def samples() -> dict[tuple[str, str], float]:
        text = httpx2.get(f"{served.base}/metrics", headers=auth).text
        found: dict[tuple[str, str], float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "awm_tool_calls_total" and sample.labels["outcome"] == "ok":
                    key = (sample.name, sample.labels["tool"])
                    found[key] = found.get(key, 0.0) + sample.value
                elif sample.name == "awm_jobs_running":
                    found[(sample.name, "")] = sample.value
        return found

    before = samples()
    answer = await call(served, "start_job", {"command": ["sleep", "60"]})
    job, pid = _job_id(answer)
    starter = parent_of(pid)
    os.kill(starter, signal.SIGKILL)  # it answered start_job; another answers from now on
    wait_for(
        lambda: not alive(starter) and len(workers_of(served)) == 2, what="a new worker", timeout=60
    )
    await asyncio.gather(*(call(served, "workspace_list", {}) for _ in range(12)))
    after = samples()
    started = ("awm_tool_calls_total", "start_job")
    listed = ("awm_tool_calls_total", "workspace_list")
    assert after[started] - before.get(started, 0) == 1
    assert after[listed] - before.get(listed, 0) == 12
    assert after[("awm_jobs_running", "")] >= 1
    assert ": killed" in await call(served, "job_kill", {"jobId": job})


def test_workers_need_http(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(tmp_path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.endswith("--workers needs --http: a stdio server has one client"), done.stderr


def test_sigterm_stops_workers_and_jobs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    server = start_workers(
        root, tmp_path / "jobs", "--token", ALICE, "--shell-any", "--allow-remote-exec"
    )
    workers = workers_of(server)
    answer = asyncio.run(call(server, "start_job", {"command": ["sleep", "60"]}))
    _, pid = _job_id(answer)
    os.kill(parent_of(pid), signal.SIGKILL)  # an orphan only the supervisor can stop
    wait_for(lambda: parent_of(pid) == server.proc.pid, what="the supervisor to inherit it")
    assert server.stop(timeout=40) == 0
    lines = server.stderr().strip().splitlines()
    assert lines[-1].endswith(": stopped, cleanup done"), lines  # the supervisor's, last
    assert any(f"worker {p} stopped, cleanup done" in line for p in workers for line in lines)
    assert not any(alive(p) for p in (*workers, pid))
    (shared,) = (tmp_path / "jobs").glob("workers-*")
    assert sorted(p.name for p in shared.iterdir() if p.is_dir()) == []  # metrics, locks gone
    assert list(shared.glob("job-*.json")) and list(shared.glob("job-*.log"))
