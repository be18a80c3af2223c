"""Code navigation against its floors (issue 16), on the Django source tree.

- `outline` of a ~2,000-line file against `read_file` of the same file, warm (the
  definitions cached by content digest, as when an agent outlines a file again or reads
  a symbol from it) and cold (cache cleared: read, parse, query);
- `find_symbol` against the ripgrep prefilter it runs (`grep` of `\\bNAME\\b` over the
  source files, the same call through the same client);
- `find_references` against `grep` for the same word;
- `find_symbol` against `rg -l -w NAME` and `find_references` against `rg -n -w NAME`,
  spawned directly (issue 47's floors), on the corpus and on its 10x tree: warm (the
  same query again), after a restart (memory empty, the indexes on disk kept) and with
  nothing kept (memory empty, the indexes deleted).

Every figure is the median of interleaved calls through one in-memory
`fastmcp.Client`, as a ratio to its floor measured in the same run.

    python bench/code.py [--calls 15] [--no-big] [--json bench/results/code.json]
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
from commands import prepare
from search import CORPUS, ensure_corpus

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
# Issue 47: each navigation query against its grep floor, in four states of what is kept.
MODES = {
    "warm": "the same query again",
    "restart": "a new process: memory empty, the indexes on disk kept",
    "nothing kept": "a new process with the indexes on disk deleted",
}
FLOORS = {"find_symbol": ["-l", "-w"], "find_references": ["-n", "-w"]}


def rg_ms(root: Path, flags: list[str], name: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [find_rg() or "rg", *flags, name], cwd=root, capture_output=True, stdin=subprocess.DEVNULL
    )
    return (time.perf_counter() - started) * 1000


def forget(root: Path, mode: str) -> None:
    """Put the server in `mode`'s state before a query."""
    if mode == "warm":
        return
    outline._cache.clear()  # a new process: nothing parsed in memory
    index._indexes.clear()
    index._ref_indexes.clear()
    if mode == "nothing kept":
        for name in (index.STATE_FILE, index.REFERENCES_FILE):
            (root / ".workspace-mcp" / name).unlink(missing_ok=True)


async def navigation_rows(client: Client, root: Path, tree: str, calls: int) -> list[dict]:
    rows = []
    for tool, flags in FLOORS.items():
        for name in SYMBOLS:
            args = {"name": name} if tool == "find_symbol" else {"name": name, "maxResults": 1000}
            await timed(client, tool, args)  # grammars imported, indexes made
            for mode in MODES:
                ours, floor = [], []
                for _ in range(calls if mode == "warm" else max(3, calls // 2)):
                    forget(root, mode)
                    ours.append(await timed(client, tool, args))
                    floor.append(rg_ms(root, flags, name))
                row = {
                    "tree": tree,
                    "case": f"{tool} {name}, {mode}",
                    "floor": f"rg {' '.join(flags)}",
                    "ours_ms": round(statistics.median(ours), 1),
                    "floor_ms": round(statistics.median(floor), 1),
                }
                row["ratio"] = round(row["ours_ms"] / row["floor_ms"], 2)
                rows.append(row)
                print(
                    f"{tree:9} {row['case']:51} {row['ours_ms']:9.1f} {row['floor']:>10} "
                    f"{row['floor_ms']:9.1f} {row['ratio']:6.2f}x",
                    flush=True,
                )
    return rows


async def run(calls: int, big_tree: bool) -> list[dict]:
    small, _ = ensure_corpus()
    big = prepare(small, 10, CORPUS / "django-5.2.19_x10") if big_tree else None
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
                f"{label:61} {row['ours_ms']:9.1f} {floor_tool:>10} {row['floor_ms']:9.1f} "
                f"{row['ratio']:6.2f}x",
                flush=True,
            )
            if parse_only:
                share = row["parse_only_ms"] / row["floor_ms"]
                print(
                    f"{'  of which tree-sitter parse alone':61} {row['parse_only_ms']:9.1f} "
                    f"{'':>10} {'':>9} {share:6.2f}x",
                    flush=True,
                )
        rows += await navigation_rows(client, small, "corpus", calls)
    if big is not None:
        async with Client(create_server(Settings(root=str(big), audit=False))) as client:
            rows += await navigation_rows(client, big, "10x", max(3, calls // 3))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--no-big", action="store_true", help="skip the 10x tree")
    parser.add_argument("--json", default=str(HERE / "results" / "code.json"))
    args = parser.parse_args()
    print(f"{'case':61} {'ours ms':>9} {'floor':>10} {'floor ms':>9} {'ratio':>7}")
    rows = asyncio.run(run(args.calls, not args.no_big))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "code", "cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
