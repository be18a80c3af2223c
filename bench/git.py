"""git_status and git_diff against plain git (issue 36): our call, with the repository
check and filter-driver list cached and without (GIT_CHECKS_CACHED=0, one run), as a
ratio to the same git command run directly, in one process and one run.

    python bench/git.py [--files N] [--calls N]

Prints a table and writes bench/results/git.json. Our figure includes the MCP round
trip of an in-memory client (bench/latency.py measures that alone).
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

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import gitread

ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
    "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid",
}  # fmt: skip


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


async def run(files: int, calls: int) -> list[dict]:
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
            rows.append({"workload": tool, "git_ms": round(floor, 2),
                         "ours_ms": round(cached, 2), "ours_uncached_ms": round(uncached, 2),
                         "ratio": round(cached / floor, 2),
                         "ratio_uncached": round(uncached / floor, 2)})  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    rows = asyncio.run(run(args.files, args.calls))
    print(f"{'workload':<12}{'git ms':>9}{'ours ms':>9}{'ratio':>7}{'uncached':>10}{'ratio':>7}")
    for r in rows:
        print(f"{r['workload']:<12}{r['git_ms']:>9}{r['ours_ms']:>9}{r['ratio']:>7}"
              f"{r['ours_uncached_ms']:>10}{r['ratio_uncached']:>7}")  # fmt: skip
    out = Path(__file__).resolve().parent / "results" / "git.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"files": args.files, "calls": args.calls, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
