"""Load over Streamable HTTP: concurrent sessions doing mixed calls, per worker count.

For each `--workers` value, starts the real CLI (`--http` on a free 127.0.0.1 port,
API-key auth, audit to a file, `sleep` allowed as a command), opens N sessions with the
official client (one session each) and has each run M calls on its own file:
write_file, read_file, edit_file in rotation, except that call 10 starts a background
job (`sleep 60`) and call 40 kills the job of the *next* session. It reports calls/s,
p50/p99 latency and the peak RSS of all server processes (VmHWM, summed), checks every
file's final content against what its session wrote, checks that every job ended
`killed`, and counts the kills that went through another worker than the one that
started the job (their record says the kill was asked for from outside).

    python bench/load.py [--workers 1,2] [--sessions 20] [--calls 50]
                         [--json bench/results/load.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

TOKEN = "bench-token-0123456789abcdef"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def peak_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    """The process and its descendants (the supervisor, its workers, their jobs)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            text = Path(f"/proc/{current}/task/{current}/children").read_text()
        except OSError:
            continue
        todo.extend(int(x) for x in text.split())
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(pid: int) -> float:
    return sum(cpu_seconds(p) for p in tree(pid) if "agent_workspace_mcp" in _cmdline(p))


def server_rss_kib(pid: int) -> int:
    return sum(peak_rss_kib(p) for p in tree(pid) if "agent_workspace_mcp" in _cmdline(p))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


JOB_START_STEP, JOB_KILL_STEP = 10, 40  # both read_file turns (step % 3 == 1)


async def session(
    url: str, index: int, sessions: int, calls: int, latencies: list[float], jobs: dict
) -> str:
    path = f"s{index:02d}.txt"
    expected = ""
    async with Client(StreamableHttpTransport(url), auth=TOKEN, mode="legacy") as client:
        for step in range(calls):
            kind = step % 3
            if step == JOB_START_STEP:
                args, tool = {"command": ["sleep", "60"]}, "start_job"
            elif step == JOB_KILL_STEP:
                victim = (index + 1) % sessions
                while victim not in jobs:  # the next session may be slower
                    await asyncio.sleep(0.05)
                args, tool = {"jobId": jobs[victim]}, "job_kill"
            elif kind == 0:
                expected = f"session {index} step {step}\nvalue = {step}\n"
                args, tool = {"path": path, "content": expected}, "write_file"
            elif kind == 1:
                args, tool = {"path": path}, "read_file"
            else:
                old, new = f"value = {step - 2}", f"value = edited{step}"
                args, tool = {"path": path, "oldString": old, "newString": new}, "edit_file"
                expected = expected.replace(old, new)
            started = time.perf_counter()
            result = await client.call_tool(tool, args, raise_on_error=False)
            latencies.append(time.perf_counter() - started)
            text = result.content[0].text
            if result.is_error:
                raise RuntimeError(f"{tool} failed in session {index}: {text}")
            if tool == "start_job":
                jobs[index] = text.split()[2]
            elif tool == "job_kill" and ": killed" not in text:
                raise RuntimeError(f"job_kill did not kill in session {index}: {text}")
    return expected


def job_records(job_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in job_dir.glob("**/job-*.json")]


async def run(workers: int, sessions: int, calls: int) -> dict:
    if calls <= JOB_KILL_STEP:
        raise SystemExit(f"--calls must be more than {JOB_KILL_STEP} (call 40 kills a job)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        job_dir = Path(tmp) / "jobs"
        job_dir.mkdir(mode=0o700)
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "agent_workspace_mcp",
            "--root",
            str(root),
            "--http",
            "--port",
            str(port),
            "--api-key",
            f"bench={TOKEN}",
            "--workers",
            str(workers),
            "--shell",
            "--shell-allow",
            "sleep",
            "--allow-remote-exec",
            "--audit-log",
            str(Path(tmp) / "audit.jsonl"),
        ]
        env = {**os.environ, "WORKSPACE_MCP_JOB_DIR": str(job_dir)}
        stderr_path = Path(tmp) / "server.stderr"
        with open(stderr_path, "w") as stderr:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env
            )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(600):  # every worker is up once the ready line is out
                if "serving" in stderr_path.read_text():
                    break
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited: {stderr_path.read_text()}")
                time.sleep(0.1)
            httpx2.get(f"{base}/health", timeout=5).raise_for_status()
            latencies: list[float] = []
            jobs: dict[int, str] = {}
            server_cpu = server_cpu_seconds(proc.pid)
            client_cpu = time.process_time()
            started = time.perf_counter()
            expected = await asyncio.gather(
                *(
                    session(f"{base}/mcp", i, sessions, calls, latencies, jobs)
                    for i in range(sessions)
                )
            )
            elapsed = time.perf_counter() - started
            client_cpu = time.process_time() - client_cpu
            server_cpu = server_cpu_seconds(proc.pid) - server_cpu
            rss = server_rss_kib(proc.pid)
            for index, content in enumerate(expected):
                actual = (root / f"s{index:02d}.txt").read_text()
                assert actual == content, f"session {index}: file content differs"
            records = job_records(job_dir)
            if workers > 1:
                assert sorted(r["id"] for r in records) == sorted(jobs.values())
                assert all(r["status"] == "killed" for r in records), "a job was not killed"
            remote_kills = sum(1 for r in records if r["kill_requested"])
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    ordered = sorted(latencies)
    return {
        "workers": workers,
        "sessions": sessions,
        "calls_per_session": calls,
        "total_calls": len(latencies),
        "seconds": elapsed,
        "calls_per_second": len(latencies) / elapsed,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "peak_rss_mib": rss / 1024,
        "server_cpu_seconds": server_cpu,
        "client_cpu_seconds": client_cpu,
        "files_verified": sessions,
        "jobs_killed": len(jobs),
        "jobs_killed_through_another_worker": remote_kills,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts to compare")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "load.json"))
    args = parser.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    results = [asyncio.run(run(n, args.sessions, args.calls)) for n in counts]
    base = results[0]["calls_per_second"]
    header = (
        "workers",
        "sessions",
        "calls",
        "calls/s",
        "ratio",
        "p50 ms",
        "p99 ms",
        "RSS MiB",
        "server CPU s",
        "client CPU s",
        "jobs",
        "killed elsewhere",
    )
    print(
        "{:>7} {:>8} {:>6} {:>8} {:>6} {:>7} {:>7} {:>8} {:>12} {:>12} {:>5} {:>16}".format(*header)
    )
    for r in results:
        r["throughput_ratio"] = r["calls_per_second"] / base
        print(
            f"{r['workers']:7d} {r['sessions']:8d} {r['total_calls']:6d} "
            f"{r['calls_per_second']:8.1f} {r['throughput_ratio']:6.2f} {r['p50_ms']:7.1f} "
            f"{r['p99_ms']:7.1f} {r['peak_rss_mib']:8.1f} {r['server_cpu_seconds']:12.1f} "
            f"{r['client_cpu_seconds']:12.1f} {r['jobs_killed']:5d} "
            f"{r['jobs_killed_through_another_worker']:16d}"
        )
    print(
        f"every run: all {args.sessions} files hold exactly what their session wrote, "
        "every job was killed"
    )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "load", "cpus": os.cpu_count(), "runs": results}, indent=2) + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
