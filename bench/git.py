"""git_status and git_diff against plain git and against the official mcp-server-git
(issue 36), on a 2,000-file repository with 100 files changed.

Two tables. In process: our call (in-memory client, so it includes an MCP round trip),
with the repository check and filter-driver list cached and without
(GIT_CHECKS_CACHED=0), as a ratio to the same git command spawned directly. Over
stdio: our server and mcp-server-git (PyPI, installed once into bench/.peers; skipped
with a line when that fails), each spawned as a client runs it and called through the
same official client, call by call in turn so load hits both alike: `git_status`
against its `git_status`, `git_diff` against its `git_diff_unstaged`.

    python bench/git.py [--files N] [--calls N]

Prints the tables and writes bench/results/git.json.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.floors import median_ms
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import gitread

ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}


def repository(root: Path, files: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=ENV)
    for i in range(files):
        d = root / f"pkg{i % 40}"
        d.mkdir(exist_ok=True)
        (d / f"m{i}.py").write_text("".join(f"line {j} of {i}\n" for j in range(30)))
    subprocess.run(["git", "-C", str(root), "add", "."], check=True, env=ENV)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "base"], check=True, env=ENV)
    for i in range(0, files, max(1, files // 20)):
        path = root / f"pkg{i % 40}" / f"m{i}.py"
        path.write_text(path.read_text().replace("line 3 ", "line three "))


def floor_ms(root: Path, args: list[str], calls: int) -> float:
    argv = ["git", "-C", str(root), "--no-pager", *args]
    for _ in range(5):
        subprocess.run(argv, capture_output=True, env=ENV, check=True)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True, env=ENV, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def ours_ms(root: Path, tool: str, calls: int, cached: bool) -> float:
    saved = gitread.GIT_CHECKS_CACHED
    gitread.GIT_CHECKS_CACHED = saved if cached else 0
    try:
        async with Client(create_server(Settings(root=str(root)))) as client:
            return await median_ms(client, tool, {}, calls)
    finally:
        gitread.GIT_CHECKS_CACHED = saved


async def run(files: int, calls: int) -> tuple[list[dict], list[dict]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        repository(root, files)
        for tool, args in (
            ("git_status", ["status", "--porcelain=v1", "-b", "-z", "--", "."]),
            (
                "git_diff",
                ["diff", "--relative", "--no-ext-diff", "--no-textconv", "--no-color", "--", "."],
            ),
        ):
            floor = floor_ms(root, args, calls)
            cached = await ours_ms(root, tool, calls, cached=True)
            uncached = await ours_ms(root, tool, calls, cached=False)
            rows.append(
                {
                    "workload": tool,
                    "git_ms": round(floor, 2),
                    "ours_ms": round(cached, 2),
                    "ours_uncached_ms": round(uncached, 2),
                    "ratio": round(cached / floor, 2),
                    "ratio_uncached": round(uncached / floor, 2),
                }
            )
        peer_rows = await stdio_rows(root, calls)
    return rows, peer_rows


PEERS = Path(__file__).resolve().parent / ".peers"


def mcp_server_git() -> str | None:
    """The official server's entry point, installed once into its own environment (it
    pins another MCP SDK than ours)."""
    entry = PEERS / "bin" / "mcp-server-git"
    if not entry.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(PEERS)], capture_output=True)
        pip = (
            subprocess.run(
                [str(PEERS / "bin" / "pip"), "install", "-q", "mcp-server-git"], capture_output=True
            )
            if made.returncode == 0
            else made
        )
        if pip.returncode != 0 or not entry.exists():
            return None
    return str(entry)


async def stdio_rows(root: Path, calls: int) -> list[dict]:
    peer = mcp_server_git()
    if peer is None:
        print("mcp-server-git skipped: it could not be installed from PyPI")
        return []
    ours = Client(
        StdioTransport(
            sys.executable, ["-m", "agent_workspace_mcp", "--root", str(root), "--no-audit"]
        )
    )
    theirs = Client(StdioTransport(peer, ["--repository", str(root)]))
    rows = []
    async with ours, theirs:
        for tool, peer_tool in (("git_diff", "git_diff_unstaged"), ("git_status", "git_status")):
            samples: dict[str, list[float]] = {"ours": [], "peer": []}
            calls_of = {
                "ours": (ours, tool, {}),
                "peer": (theirs, peer_tool, {"repo_path": str(root)}),
            }
            for n in range(calls + 10):
                for name, (client, name_of_tool, args) in calls_of.items():
                    started = time.perf_counter()
                    await client.call_tool(name_of_tool, args)
                    if n >= 10:  # the first ten warm up
                        samples[name].append(time.perf_counter() - started)
            ours_ms = statistics.median(samples["ours"]) * 1000
            peer_ms = statistics.median(samples["peer"]) * 1000
            ratio = round(ours_ms / peer_ms, 2)
            rows.append(
                {
                    "workload": tool,
                    "mcp_server_git_ms": round(peer_ms, 2),
                    "ours_ms": round(ours_ms, 2),
                    "ratio": ratio,
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    rows, peer_rows = asyncio.run(run(args.files, args.calls))
    print("in process (in-memory client) against git spawned directly:")
    print(f"{'workload':<12}{'git ms':>9}{'ours ms':>9}{'ratio':>7}{'uncached':>10}{'ratio':>7}")
    for r in rows:
        print(
            f"{r['workload']:<12}{r['git_ms']:>9}{r['ours_ms']:>9}{r['ratio']:>7}"
            f"{r['ours_uncached_ms']:>10}{r['ratio_uncached']:>7}"
        )
    if peer_rows:
        print("over stdio, the same client, against mcp-server-git:")
        print(f"{'workload':<12}{'mcp-server-git ms':>18}{'ours ms':>9}{'ratio':>7}")
        for r in peer_rows:
            print(
                f"{r['workload']:<12}{r['mcp_server_git_ms']:>18}{r['ours_ms']:>9}{r['ratio']:>7}"
            )
    out = Path(__file__).resolve().parent / "results" / "git.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {"files": args.files, "calls": args.calls, "rows": rows, "stdio_rows": peer_rows},
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
