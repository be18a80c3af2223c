"""What an open operator console costs the agent, and how fast it opens a long history.

- agent calls: `write_file` over stdio (our server as users run it) while no console
  runs, then while a console streams the live view (its server-sent events, polling the
  journal every CONSOLE_POLL_SECONDS), alternating in rounds so machine noise hits both;
  the figure is the ratio of medians.
- opening: the console's first page of a 100,000-entry journal (`GET /api/entries`,
  signed in), against the floor of reading and parsing the same journal tail in-process.

    python bench/console.py [--calls 200] [--json bench/results/console.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from agent_workspace_mcp.core.limits import STATE_READ_BYTES

ROUNDS = 4


class Console:
    """`agent-workspace-mcp console` on the root, signed in, optionally streaming."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent_workspace_mcp", "console", str(root), "--no-open"],
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stderr.readline()
        login = re.search(r"(http://\S+)/login#token=(\S+)", line)
        self.base = login.group(1)
        self.http = httpx2.Client(timeout=30)
        key = self.http.post(f"{self.base}/login", json={"token": login.group(2)}).json()["key"]
        self.http.headers["x-console-key"] = key
        self._stop = threading.Event()
        self._thread = None

    def stream(self) -> None:
        def run() -> None:
            with self.http.stream("GET", f"{self.base}/events", timeout=None) as response:
                for _ in response.iter_lines():
                    if self._stop.is_set():
                        break

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self.proc.terminate()
        self.proc.wait(timeout=15)


async def calls(root: Path, count: int) -> dict:
    argv = [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root), "--no-audit"]
    transport = StdioTransport(
        argv[0],
        argv[1:],
        env=dict(os.environ),
        keep_alive=False,
        log_file=open(os.devnull, "w"),  # noqa: SIM115  (the transport owns it)
    )
    without, streaming = [], []
    async with Client(transport) as client:
        for n in range(10):  # warm up
            await client.call_tool("write_file", {"path": "warm.txt", "content": f"{n}\n"})
        for round_ in range(ROUNDS):
            for label, sink in (("without", without), ("streaming", streaming)):
                console = Console(root) if label == "streaming" else None
                if console:
                    console.stream()
                    time.sleep(1.0)  # the stream is open and polling
                for n in range(count // ROUNDS):
                    content = f"round {round_} call {n} {label}\n"
                    start = time.perf_counter()
                    await client.call_tool("write_file", {"path": "out.txt", "content": content})
                    sink.append((time.perf_counter() - start) * 1000)
                if console:
                    console.close()
    a, b = statistics.median(without), statistics.median(streaming)
    return {
        "write_file_ms_without_console": round(a, 3),
        "write_file_ms_console_streaming": round(b, 3),
        "ratio": round(b / a, 3),
        "calls_each": len(without),
    }


def opening(entries: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".workspace-mcp").mkdir()
        journal = root / ".workspace-mcp" / "journal.jsonl"
        with journal.open("w") as f:
            for i in range(entries):
                f.write(
                    json.dumps(
                        {
                            "ts": f"2026-12-02T07:00:00.{i % 1000:03d}Z",
                            "id": f"e{i:07d}",
                            "tool": "write_file",
                            "paths": [f"src/f{i % 300}.py"],
                            "result": "ok",
                            "ms": 4.2,
                        }
                    )
                    + "\n"
                )
        size_mib = journal.stat().st_size / 2**20
        floor = []
        for _ in range(20):
            start = time.perf_counter()
            with journal.open("rb") as f:
                f.seek(max(0, journal.stat().st_size - STATE_READ_BYTES))
                rows = [json.loads(x) for x in f.read().split(b"\n")[1:] if x.strip()]
            assert rows[-200:]
            floor.append((time.perf_counter() - start) * 1000)
        console = Console(root)
        try:
            opened = []
            for _ in range(20):
                start = time.perf_counter()
                answer = console.http.get(f"{console.base}/api/entries")
                assert answer.status_code == 200 and answer.json()["entries"]
                opened.append((time.perf_counter() - start) * 1000)
        finally:
            console.close()
    a, b = statistics.median(floor), statistics.median(opened)
    return {
        "entries": entries,
        "journal_mib": round(size_mib, 1),
        "floor_ms": round(a, 2),
        "first_page_ms": round(b, 2),
        "ratio": round(b / a, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--json", default="bench/results/console.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        agent = asyncio.run(calls(Path(tmp), args.calls))
    opened = opening(args.entries)
    print("| measure | without console | console streaming | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| write_file over stdio (median ms, {agent['calls_each']} calls each) | "
        f"{agent['write_file_ms_without_console']} | {agent['write_file_ms_console_streaming']} "
        f"| {agent['ratio']}x |"
    )
    print()
    print("| measure | floor (read + parse the tail) | console first page | ratio |")
    print("| --- | --- | --- | --- |")
    print(
        f"| {opened['entries']:,}-entry journal (median ms) | {opened['floor_ms']} | "
        f"{opened['first_page_ms']} | {opened['ratio']}x |"
    )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"agent": agent, "opening": opened}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
