"""tools/list as a client pays for it over stdio: a server's first list (spawn to the
answer, no start-up cache, and the server's CPU to that point) and later lists of a
running server, for this source tree and, with `--base SRC`, another one (a checkout of
an earlier commit: `git worktree add /tmp/base <commit>`, then `--base /tmp/base/src`)
sampled in the same rounds, so both see the same moment of a noisy machine.

    python bench/toollist.py [--starts 40] [--lists 300] [--base SRC]
        [--json bench/results/toollist.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

import agent_workspace_mcp
from coldstart import timed  # bench/coldstart.py (the script's directory is on sys.path)
from floors import WARM_UP_CALLS, percentile  # bench/floors.py

HERE_SRC = str(Path(agent_workspace_mcp.__file__).resolve().parents[1])
FIRST_CALL = {"name": "list_files", "arguments": {}}


def first_lists(trees: dict[str, str], root: str, starts: int) -> dict[str, dict[str, float]]:
    """Median ms from spawn to the first tools/list answer, and the server's CPU ms."""
    answered: dict[str, list[float]] = {name: [] for name in trees}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(starts):
        for name, src in trees.items():
            env = {**os.environ, "PYTHONPATH": src}
            argv = [sys.executable, "-m", "agent_workspace_mcp", "--root", root]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            seen = timed([*argv, "--no-startup-cache"], root, FIRST_CALL, env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            answered[name].append(seen[2] * 1000)
            spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpu[name].append(spent * 1000)
    return {
        name: {
            "first_list_ms": statistics.median(answered[name]),
            "server_cpu_ms": statistics.median(cpu[name]),
        }
        for name in trees
    }


async def later_lists(trees: dict[str, str], root: str, lists: int) -> dict[str, list[float]]:
    clients = {
        name: Client(
            StdioTransport(
                command=sys.executable,
                args=["-m", "agent_workspace_mcp", "--root", root, "--no-audit"],
                env={**os.environ, "PYTHONPATH": src},
            )
        )
        for name, src in trees.items()
    }
    samples: dict[str, list[float]] = {name: [] for name in trees}
    for client in clients.values():
        await client.__aenter__()
    try:
        for n in range(WARM_UP_CALLS + lists):
            for name, client in clients.items():
                started = time.perf_counter()
                await client.list_tools_mcp()
                if n >= WARM_UP_CALLS:
                    samples[name].append((time.perf_counter() - started) * 1000)
    finally:
        for client in clients.values():
            await client.__aexit__(None, None, None)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=40)
    parser.add_argument("--lists", type=int, default=300)
    parser.add_argument("--base", help="another source tree (its src/), measured alongside")
    parser.add_argument("--json", default="bench/results/toollist.json")
    args = parser.parse_args()
    trees = {"this": HERE_SRC}
    if args.base:
        trees = {"base": str(Path(args.base).resolve()), **trees}
    with tempfile.TemporaryDirectory() as root:
        first = first_lists(trees, root, args.starts)
        later = asyncio.run(later_lists(trees, root, args.lists))
    rows = {}
    print(f"{'tree':6} {'first list ms':>14} {'its CPU ms':>11} {'list p50':>9} {'list p95':>9}")
    for name in trees:
        rows[name] = {
            **first[name],
            "list_p50_ms": percentile(later[name], 50),
            "list_p95_ms": percentile(later[name], 95),
        }
        row = rows[name]
        print(
            f"{name:6} {row['first_list_ms']:14.0f} {row['server_cpu_ms']:11.0f} "
            f"{row['list_p50_ms']:9.2f} {row['list_p95_ms']:9.2f}"
        )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"starts": args.starts, "lists": args.lists, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
