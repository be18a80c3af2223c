"""What a trip from the event loop to a worker thread and back costs (issue 47, item 4).

Every synchronous tool body, every answer written to stdout and every audit line take
one. Sampled in rounds, one call of each per round, in microseconds:

- on the loop (floor): the same function called inline, no trip;
- anyio.to_thread.run_sync: how FastMCP runs a synchronous tool, and how we did;
- handoff.run_sync: our worker threads (src/agent_workspace_mcp/core/handoff.py);
- bare FastMCP, sync tool / async tool awaiting handoff.run_sync: the same tool called
  through an in-memory client, FastMCP handing the first to anyio.

    python bench/handoff.py [--calls 3000] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio.to_thread
from fastmcp import Client, FastMCP

from agent_workspace_mcp.core import handoff
from floors import WARM_UP_CALLS, percentile  # bench/floors.py

HERE = Path(__file__).resolve().parent


def body() -> int:
    return 1


def bare_server() -> FastMCP:
    mcp = FastMCP("bare")

    @mcp.tool
    def sync_tool() -> int:
        return body()

    @mcp.tool
    async def handed_off() -> int:
        return await handoff.run_sync(body)

    return mcp


async def run(calls: int) -> dict[str, list[float]]:
    async def on_loop() -> object:
        return body()

    async with Client(bare_server()) as client:
        figures: dict[str, Callable[[], Awaitable[object]]] = {
            "on the loop (floor)": on_loop,
            "anyio.to_thread.run_sync": lambda: anyio.to_thread.run_sync(body),
            "handoff.run_sync": lambda: handoff.run_sync(body),
            "bare FastMCP, sync tool": lambda: client.call_tool("sync_tool", {}),
            "bare FastMCP, async tool + handoff": lambda: client.call_tool("handed_off", {}),
        }
        samples: dict[str, list[float]] = {name: [] for name in figures}
        for n in range(WARM_UP_CALLS + calls):
            for name, call in figures.items():
                started = time.perf_counter()
                await call()
                if n >= WARM_UP_CALLS:
                    samples[name].append((time.perf_counter() - started) * 1e6)
        return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--json", help="default: bench/results/handoff.json")
    args = parser.parse_args()
    samples = asyncio.run(run(args.calls))
    rows = []
    print(f"{'figure':36} {'p50 us':>7} {'p95 us':>7}")
    for name, values in samples.items():
        row = {"figure": name, "p50_us": round(statistics.median(values), 1)}
        row["p95_us"] = round(percentile(values, 95), 1)
        rows.append(row)
        print(f"{name:36} {row['p50_us']:7.1f} {row['p95_us']:7.1f}")
    p50 = {row["figure"]: row["p50_us"] for row in rows}
    floor = p50["on the loop (floor)"]
    derived = {
        "trip, anyio": p50["anyio.to_thread.run_sync"] - floor,
        "trip, handoff": p50["handoff.run_sync"] - floor,
        "tool call, anyio - handoff": p50["bare FastMCP, sync tool"]
        - p50["bare FastMCP, async tool + handoff"],
    }
    for name, value in derived.items():
        print(f"{name:36} {value:+7.1f} us (p50)")
    out = Path(args.json or HERE / "results" / "handoff.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    derived_us = {k: round(v, 1) for k, v in derived.items()}
    report = {"benchmark": "handoff", "cpus": os.cpu_count(), "calls": args.calls}
    out.write_text(json.dumps({**report, "rows": rows, "derived_us": derived_us}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
