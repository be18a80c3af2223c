"""Per-call latency through an in-memory client, against a bare FastMCP tool as the floor.

The floor is a FastMCP server with one trivial tool, called the same way in the same
run; the ratio says what our middleware (audit, error shaping, journal, argument
repair), containment walk and rendering add to a call.

    python bench/latency.py [--calls 300] [--json bench/results/latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from floors import bare_server, median_ms  # bench/floors.py (the script's directory is on sys.path)


async def run(calls: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / "src").mkdir(parents=True)
        (root / "src" / "app.py").write_text("".join(f"line {i} = {i}\n" for i in range(200)))
        server = create_server(Settings(root=str(root), audit_log=str(Path(tmp) / "audit.jsonl")))
        rows = []
        async with Client(bare_server()) as bare, Client(server) as ours:
            floor = await median_ms(bare, "echo", {"text": "x"}, calls)
            rows.append({"call": "bare FastMCP echo (floor)", "median_ms": floor, "ratio": 1.0})
            cases = [
                ("workspace_list", {}),
                ("read_file", {"path": "src/app.py"}),
                ("file_info", {"path": "src/app.py"}),
                ("write_file", {"path": "out.txt", "content": "hello\n"}),
                ("edit_file", {}),  # alternates two contents below, so every call edits
            ]
            for tool, args in cases:
                if tool == "edit_file":
                    samples = []
                    pair = ("line 7 = 7", "line 7 = seven")
                    for i in range(calls):
                        old, new = pair if i % 2 == 0 else pair[::-1]
                        started = time.perf_counter()
                        await ours.call_tool(
                            tool, {"path": "src/app.py", "oldString": old, "newString": new}
                        )
                        samples.append(time.perf_counter() - started)
                    value = statistics.median(samples) * 1000
                else:
                    value = await median_ms(ours, tool, args, calls)
                rows.append({"call": tool, "median_ms": value, "ratio": value / floor})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "latency.json"))
    args = parser.parse_args()
    rows = asyncio.run(run(args.calls))
    print(f"{'call':28} {'median ms':>10} {'vs floor':>9}")
    for row in rows:
        print(f"{row['call']:28} {row['median_ms']:10.2f} {row['ratio']:8.2f}x")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "latency", "cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
