"""What the benchmarks measure against, defined once: the bare FastMCP server (a script
to spawn, or an in-process app) and the median of repeated tool calls."""

from __future__ import annotations

import statistics
import time

from fastmcp import Client, FastMCP

# A bare FastMCP 4.2 server with one trivial synchronous tool, as a script to spawn.
BARE_SERVER = """
from fastmcp import FastMCP
mcp = FastMCP("bare")
@mcp.tool
def echo(text: str) -> str:
    return text
mcp.run(show_banner=False)
"""

WARM_UP_CALLS = 30


def bare_server() -> FastMCP:
    """The same bare server, in process."""
    mcp = FastMCP("bare")

    @mcp.tool
    def echo(text: str) -> str:
        return text

    return mcp


async def median_ms(client: Client, tool: str, args: dict, calls: int) -> float:
    for _ in range(WARM_UP_CALLS):
        await client.call_tool(tool, args)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call_tool(tool, args)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def percentile(samples: list[float], q: int) -> float:
    """The q-th percentile of timed samples (inclusive: q=100 is the slowest one)."""
    return statistics.quantiles(sorted(samples), n=100, method="inclusive")[q - 1]
