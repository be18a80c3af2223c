"""Reading a long journal back: `work_log` (the 20 newest entries) through an in-memory
client, and the console's pages (newest first, 5,000 entries a page, back to the first),
on a journal of `--entries` entries shaped like a write_file's; for this source tree and,
with `--base SRC`, another one (a checkout of an earlier commit: `git worktree add
/tmp/base <commit>`, then `--base /tmp/base/src`), each run in its own interpreter, taking
turns.

    python bench/journal.py [--entries 5000] [--calls 100] [--rounds 3] [--base SRC]
        [--json bench/results/journal.json]
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

HERE_SRC = str(Path(__file__).resolve().parents[1] / "src")


def entry(i: int) -> dict:
    return {
        "ts": "2026-12-07T10:00:00.000Z",
        "id": f"a{i:05d}",
        "tool": "write_file",
        "paths": [f"src/pkg/module_{i % 40}.py"],
        "detail": "updated 10240 bytes",
        "result": "ok",
        "session": "s-1234",
        "client": "claude-code 2.1",
        "ms": 3.2,
    }


async def one(entries: int, calls: int) -> dict[str, float]:
    """In the interpreter of the tree under test: work_log p50/p95, and one full paging."""
    from fastmcp import Client

    from agent_workspace_mcp import Settings, create_server
    from agent_workspace_mcp.core.state.streams import JsonlStream
    from agent_workspace_mcp.core.workspaces import WorkspaceRegistry

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".workspace-mcp").mkdir()
        with (root / ".workspace-mcp" / "journal.jsonl").open("w") as f:
            f.writelines(json.dumps(entry(i)) + "\n" for i in range(entries))
        async with Client(create_server(Settings(root=str(root), audit=False))) as client:
            for _ in range(10):
                await client.call_tool("work_log", {})
            samples = []
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool("work_log", {})
                samples.append((time.perf_counter() - started) * 1000)
        ws = WorkspaceRegistry.confined(str(root), (), allow_git_writes=False).primary
        stream = JsonlStream(ws, "journal", 10**9)
        started, cursor = time.perf_counter(), None
        while True:
            _, cursor = stream.page(cursor, 5_000)
            if cursor is None:
                break
        paging = (time.perf_counter() - started) * 1000
    samples.sort()
    return {
        "work_log_p50_ms": statistics.median(samples),
        "work_log_p95_ms": samples[int(len(samples) * 0.95) - 1],
        "all_pages_ms": paging,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", help="another source tree (its src/), measured in turn")
    parser.add_argument("--json", default="bench/results/journal.json")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(one(args.entries, args.calls))))
        return 0
    trees = {"this": HERE_SRC}
    if args.base:
        trees = {"base": str(Path(args.base).resolve()), **trees}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            argv = ["--one", "--entries", str(args.entries), "--calls", str(args.calls)]
            out = subprocess.run(
                [sys.executable, __file__, *argv],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
                check=True,
            )
            runs[name].append(json.loads(out.stdout.splitlines()[-1]))
    rows = {
        name: {key: statistics.median(run[key] for run in runs[name]) for key in runs[name][0]}
        for name in trees
    }
    print(f"{args.entries} entries; medians of {args.rounds} runs")
    print(f"{'tree':6} {'work_log p50':>13} {'p95':>9} {'all pages':>10}")
    for name, row in rows.items():
        print(
            f"{name:6} {row['work_log_p50_ms']:10.2f} ms {row['work_log_p95_ms']:6.2f} ms "
            f"{row['all_pages_ms']:7.0f} ms"
        )
    out_path = Path(args.json)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps({"entries": args.entries, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
