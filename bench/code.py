"""Code navigation against its floors (issue 16), on the Django source tree.

- `outline` of a ~2,000-line file against `read_file` of the same file, warm (the
  definitions cached by content digest, as when an agent outlines a file again or reads
  a symbol from it) and cold (cache cleared: read, parse, query);
- `find_symbol` against the ripgrep prefilter it runs (`grep` of `\\bNAME\\b` over the
  source files, the same call through the same client);
- `find_references` against `grep` for the same word;
- `find_symbol` against `rg -l -w NAME` spawned directly (issue 36's floor): warm (a
  repeated query), cold (a new query on a running server: the outline cache cleared,
  the symbol index kept, as after a restart, which loads it from the state directory)
  and first (nothing kept: every candidate file parsed once).

Every figure is the median of interleaved calls through one in-memory
`fastmcp.Client`, as a ratio to its floor measured in the same run.

    python bench/code.py [--calls 15] [--json bench/results/code.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core.code import index, outline
from agent_workspace_mcp.core.code.languages import parse
from agent_workspace_mcp.core.code.navigate import SOURCE_GLOB
from agent_workspace_mcp.core.search.rgproc import find_rg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search import ensure_corpus

HERE = Path(__file__).resolve().parent
FILE = "django/db/migrations/autodetector.py"  # 1,907 lines


def cases() -> list[tuple[str, str, dict, str, dict]]:
    """(label, tool, args, floor tool, floor args)"""
    grep = {"include": SOURCE_GLOB, "maxResults": 1000}
    return [
        ("outline, 1,907-line file", "outline", {"path": FILE}, "read_file", {"path": FILE}),
        ("outline, same file, cold", "outline*", {"path": FILE}, "read_file", {"path": FILE}),
        (
            "find_symbol MigrationAutodetector",
            "find_symbol",
            {"name": "MigrationAutodetector"},
            "grep",
            {"pattern": r"\bMigrationAutodetector\b", **grep},
        ),
        (
            "find_symbol get_object_or_404",
            "find_symbol",
            {"name": "get_object_or_404"},
            "grep",
            {"pattern": r"\bget_object_or_404\b", **grep},
        ),
        (
            "find_references get_object_or_404",
            "find_references",
            {"name": "get_object_or_404", "maxResults": 1000},
            "grep",
            {"pattern": r"\bget_object_or_404\b", "maxResults": 1000},
        ),
    ]


def parse_ms(path: Path) -> float:
    """tree-sitter's parse of the file alone, in process (no read, no query, no client)."""
    source = path.read_bytes()
    started = time.perf_counter()
    parse("python", source)
    return (time.perf_counter() - started) * 1000


async def timed(client: Client, tool: str, args: dict, cold: bool = False) -> float:
    if cold:
        outline._cache.clear()  # the first outline of a file: parse and all
    started = time.perf_counter()
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert not result.is_error, result.content[0].text
    return (time.perf_counter() - started) * 1000


SYMBOLS = ("QuerySet", "get_object_or_404", "MigrationAutodetector")


def rg_ms(root: Path, name: str) -> float:
    started = time.perf_counter()
    subprocess.run([find_rg() or "rg", "-l", "-w", name], cwd=root, capture_output=True)
    return (time.perf_counter() - started) * 1000


async def symbol_rows(client: Client, root: Path, calls: int) -> list[dict]:
    rows = []
    for name in SYMBOLS:
        for mode in ("warm", "cold", "first"):
            ours, floor = [], []
            await timed(client, "find_symbol", {"name": name})
            for _ in range(calls if mode != "first" else max(3, calls // 3)):
                if mode != "warm":
                    outline._cache.clear()
                if mode == "first":
                    index._indexes.clear()
                    (root / ".workspace-mcp" / index.STATE_FILE).unlink(missing_ok=True)
                ours.append(await timed(client, "find_symbol", {"name": name}))
                floor.append(rg_ms(root, name))
            row = {
                "case": f"find_symbol {name}, {mode}",
                "floor": "rg -l -w",
                "ours_ms": round(statistics.median(ours), 1),
                "floor_ms": round(statistics.median(floor), 1),
            }
            row["ratio"] = round(row["ours_ms"] / row["floor_ms"], 2)
            rows.append(row)
            print(
                f"{row['case']:38} {row['ours_ms']:9.1f} {'rg -l -w':>10} "
                f"{row['floor_ms']:9.1f} {row['ratio']:6.2f}x",
                flush=True,
            )
    return rows


async def run(calls: int) -> list[dict]:
    small, _ = ensure_corpus()
    rows = []
    async with Client(create_server(Settings(root=str(small), audit=False))) as client:
        for label, tool, args, floor_tool, floor_args in cases():
            ours, floor = [], []
            cold = tool.endswith("*")
            tool = tool.rstrip("*")
            await timed(client, tool, args)  # first use imports the grammar
            parse_only = []
            for _ in range(calls):
                ours.append(await timed(client, tool, args, cold))
                floor.append(await timed(client, floor_tool, floor_args))
                if cold:
                    parse_only.append(parse_ms(small / args["path"]))
            row = {
                "case": label,
                "ours_ms": round(statistics.median(ours), 1),
                "floor": floor_tool,
                "floor_ms": round(statistics.median(floor), 1),
            }
            row["ratio"] = round(row["ours_ms"] / row["floor_ms"], 2)
            if parse_only:  # what no outline can go below: tree-sitter's own parse
                row["parse_only_ms"] = round(statistics.median(parse_only), 1)
            rows.append(row)
            print(
                f"{label:38} {row['ours_ms']:9.1f} {floor_tool:>10} {row['floor_ms']:9.1f} "
                f"{row['ratio']:6.2f}x",
                flush=True,
            )
            if parse_only:
                share = row["parse_only_ms"] / row["floor_ms"]
                print(
                    f"{'  of which tree-sitter parse alone':38} {row['parse_only_ms']:9.1f} "
                    f"{'':>10} {'':>9} {share:6.2f}x",
                    flush=True,
                )
        rows += await symbol_rows(client, small, calls)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--json", default=str(HERE / "results" / "code.json"))
    args = parser.parse_args()
    print(f"{'case':38} {'ours ms':>9} {'floor':>10} {'floor ms':>9} {'ratio':>7}")
    rows = asyncio.run(run(args.calls))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "code", "cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
