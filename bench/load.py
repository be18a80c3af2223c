"""Load over Streamable HTTP: concurrent sessions doing mixed read/write/edit calls.

Starts the real CLI (`--http` on a free 127.0.0.1 port, API-key auth, audit to a file),
opens N sessions with the official client (2025-11-25 handshake, one session each), and
has each run M calls on its own file: write_file, read_file, edit_file in rotation. It
reports calls/s, p50/p99 latency and the server's peak RSS (VmHWM), and checks every
file's final content against what its session wrote.

    python bench/load.py [--sessions 20] [--calls 50] [--json bench/results/load.json]
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
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


async def session(url: str, index: int, calls: int, latencies: list[float]) -> str:
    path = f"s{index:02d}.txt"
    expected = ""
    async with Client(StreamableHttpTransport(url), auth=TOKEN, mode="legacy") as client:
        for step in range(calls):
            kind = step % 3
            started = time.perf_counter()
            if kind == 0:
                expected = f"session {index} step {step}\nvalue = {step}\n"
                args, tool = {"path": path, "content": expected}, "write_file"
            elif kind == 1:
                args, tool = {"path": path}, "read_file"
            else:
                old, new = f"value = {step - 2}", f"value = edited{step}"
                args, tool = {"path": path, "oldString": old, "newString": new}, "edit_file"
                expected = expected.replace(old, new)
            result = await client.call_tool(tool, args, raise_on_error=False)
            latencies.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"{tool} failed in session {index}: {result.content[0].text}")
    return expected


async def run(sessions: int, calls: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        port = free_port()
        argv = [
            sys.executable, "-m", "agent_workspace_mcp", "--root", str(root), "--http",
            "--port", str(port), "--api-key", f"bench={TOKEN}",
            "--audit-log", str(Path(tmp) / "audit.jsonl"),
        ]  # fmt: skip
        with open(Path(tmp) / "server.stderr", "w") as stderr:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
            )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    time.sleep(0.1)
            latencies: list[float] = []
            started = time.perf_counter()
            expected = await asyncio.gather(
                *(session(f"{base}/mcp", i, calls, latencies) for i in range(sessions))
            )
            elapsed = time.perf_counter() - started
            rss = peak_rss_kib(proc.pid)
            for index, content in enumerate(expected):
                actual = (root / f"s{index:02d}.txt").read_text()
                assert actual == content, f"session {index}: file content differs"
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    ordered = sorted(latencies)
    return {
        "sessions": sessions,
        "calls_per_session": calls,
        "total_calls": len(latencies),
        "seconds": elapsed,
        "calls_per_second": len(latencies) / elapsed,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "peak_rss_mib": rss / 1024,
        "files_verified": sessions,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "load.json"))
    args = parser.parse_args()
    result = asyncio.run(run(args.sessions, args.calls))
    header = ("sessions", "calls", "calls/s", "p50 ms", "p99 ms", "peak RSS MiB")
    print("{:>8} {:>6} {:>8} {:>7} {:>7} {:>13}".format(*header))
    print(
        f"{result['sessions']:8d} {result['total_calls']:6d} {result['calls_per_second']:8.1f} "
        f"{result['p50_ms']:7.1f} {result['p99_ms']:7.1f} {result['peak_rss_mib']:13.1f}"
    )
    print(f"all {result['files_verified']} files hold exactly what their session wrote")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "load", "cpus": os.cpu_count(), **result}, indent=2) + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
