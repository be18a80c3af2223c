"""Per-call overhead over stdio, the cost of durable writes, and the size of tools/list.

Floors are measured in the same run and the same way, so the ratios survive a noisy
machine:
- per call: a bare FastMCP server with one trivial synchronous tool, spawned over stdio
  and called through the same client as ours (our server runs as users run it, with the
  default audit line on stderr, sent to /dev/null here);
- writes: the same `write_file` with and without fsync is measured in-process (the core
  write path with `os.fsync` as a no-op), so durability is reported as its own figure;
- checkpoints: the same `write_file` in-process with and without its checkpoint
  (`checkpoints=False`), alternating, new content every call;
- the stale-read guard: the same read_file + write_file in-process with the guard's
  binding on and replaced by a no-op, alternating call by call;
- tools/list: bytes of the JSON result, per tool, and where they go.

    python bench/overhead.py [--calls 400] [--json bench/results/overhead.json]
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
from fastmcp.client.transports import StdioTransport

from floors import BARE_SERVER, median_ms  # bench/floors.py (the script's directory is on sys.path)

TEN_KB = "".join(f"line {i:05d} of the ten kilobyte file\n" for i in range(300))[:10_240]


def stdio(argv: list[str]) -> Client:
    log = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the transport
    # The whole environment (the SDK would pass only a safe subset), so PYTHONPATH can
    # point a run at another checkout for a before/after comparison.
    transport = StdioTransport(
        argv[0], argv[1:], env=dict(os.environ), keep_alive=False, log_file=log
    )
    return Client(transport)


async def per_call(root: Path, calls: int) -> list[dict]:
    ours_argv = [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root)]
    bare_argv = [sys.executable, "-c", BARE_SERVER]
    cases = [
        ("workspace_list", {}),
        ("read_file", {"path": "src/app.py"}),
        ("write_file", {"path": "out/ten_kb.txt", "content": TEN_KB}),
        ("edit_file", None),  # alternating edits, made per call below
    ]
    rows = []
    async with stdio(bare_argv) as bare, stdio(ours_argv) as ours:
        for tool, args in cases:
            # Floor and subject alternate call by call, so load on the machine hits both.
            floor, mine = [], []
            for i in range(calls + 30):
                started = time.perf_counter()
                await bare.call_tool("echo", {"text": "x"})
                middle = time.perf_counter()
                await ours.call_tool(tool, args if args is not None else edit_args(i))
                if i >= 30:  # warm-up
                    floor.append(middle - started)
                    mine.append(time.perf_counter() - middle)
            f, m = statistics.median(floor) * 1000, statistics.median(mine) * 1000
            rows.append({"case": tool, "floor_ms": f, "ms": m, "ratio": m / f})
    return rows


def edit_args(i: int) -> dict:
    old, new = ("alpha", "omega") if i % 2 == 0 else ("omega", "alpha")
    return {"path": "src/edit.py", "oldString": old, "newString": new}


async def durability(root: Path, calls: int) -> dict:
    """The same write_file in-process, with and without fsync."""
    from agent_workspace_mcp import Settings, create_server

    server = create_server(Settings(root=str(root), audit=False))
    args = {"path": "out/durable.txt", "content": TEN_KB}
    async with Client(server) as client:
        with_fsync = await median_ms(client, "write_file", args, calls)
        real_fsync = os.fsync
        os.fsync = lambda fd: None
        try:
            without = await median_ms(client, "write_file", args, calls)
        finally:
            os.fsync = real_fsync
    return {
        "with_fsync_ms": with_fsync,
        "without_fsync_ms": without,
        "durability_ms": with_fsync - without,
    }


async def checkpoint_cost(root: Path, calls: int) -> dict:
    """The same write_file in-process with and without its checkpoint (issue 17), calls
    alternating; every write brings new content, so each checkpoint stores new bytes."""
    from agent_workspace_mcp import Settings, create_server

    servers = {}
    for name, on in (("with", True), ("without", False)):
        (root / name).mkdir()
        servers[name] = create_server(Settings(root=str(root / name), audit=False, checkpoints=on))
    samples: dict[str, list[float]] = {"with": [], "without": []}
    async with Client(servers["with"]) as on, Client(servers["without"]) as off:
        for i in range(calls + 30):
            args = {"path": "out/c.txt", "content": f"{i}\n{TEN_KB}"}
            for name, client in (("with", on), ("without", off)):
                started = time.perf_counter()
                await client.call_tool("write_file", args)
                if i >= 30:
                    samples[name].append((time.perf_counter() - started) * 1000)
    with_ms = statistics.median(samples["with"])
    without_ms = statistics.median(samples["without"])
    # A recursive delete of a 100-file directory (the checkpoint reads and stores it all).
    tree: dict[str, list[float]] = {"with": [], "without": []}
    async with Client(servers["with"]) as on, Client(servers["without"]) as off:
        for i in range(max(5, calls // 20)):
            for name, client in (("with", on), ("without", off)):
                base = root / name / "tree"
                for j in range(100):
                    (base / f"d{j % 10}").mkdir(parents=True, exist_ok=True)
                    (base / f"d{j % 10}" / f"f{j}.txt").write_text(f"{i} {j}\n{TEN_KB}")
                started = time.perf_counter()
                await client.call_tool("delete_path", {"path": "tree", "recursive": True})
                tree[name].append((time.perf_counter() - started) * 1000)
    tree_with = statistics.median(tree["with"])
    tree_without = statistics.median(tree["without"])
    return {
        "with_ms": with_ms,
        "without_ms": without_ms,
        "ratio": with_ms / without_ms,
        "delete_tree_with_ms": tree_with,
        "delete_tree_without_ms": tree_without,
        "delete_tree_ratio": tree_with / tree_without,
    }


async def guard_cost(root: Path, calls: int) -> dict:
    """The stale-read guard (issue 34): a read_file then a write_file of new content,
    with the guard bound (it records the read, checks and records the write) and with its
    binding a no-op, alternating, in one in-process server."""
    import contextlib

    from agent_workspace_mcp import Settings, create_server
    from agent_workspace_mcp.middleware import seen as stage

    (root / "guard").mkdir()
    server = create_server(Settings(root=str(root / "guard"), audit=False))
    real = stage.seen.bind
    samples: dict[str, list[float]] = {"on": [], "off": []}
    writes: dict[str, list[float]] = {"on": [], "off": []}
    async with Client(server) as client:
        await client.call_tool("write_file", {"path": "g.txt", "content": TEN_KB})
        try:
            for i in range(calls + 30):
                for mode in ("on", "off"):
                    stage.seen.bind = (
                        real
                        if mode == "on"
                        # type: ignore[assignment]
                        else (lambda ws, agent: contextlib.nullcontext())
                    )
                    started = time.perf_counter()
                    await client.call_tool("read_file", {"path": "g.txt"})
                    between = time.perf_counter()
                    await client.call_tool(
                        "write_file", {"path": "g.txt", "content": f"{i}{mode}\n{TEN_KB}"}
                    )
                    done = time.perf_counter()
                    if i >= 30:
                        samples[mode].append((done - started) * 1000)
                        writes[mode].append((done - between) * 1000)
        finally:
            stage.seen.bind = real  # type: ignore[assignment]
    on, off = statistics.median(samples["on"]), statistics.median(samples["off"])
    w_on, w_off = statistics.median(writes["on"]), statistics.median(writes["off"])
    return {
        "pair_on_ms": on,
        "pair_off_ms": off,
        "pair_ratio": on / off,
        "write_on_ms": w_on,
        "write_off_ms": w_off,
        "write_ratio": w_on / w_off,
    }


async def tools_list(root: Path) -> dict:
    async with stdio([sys.executable, "-m", "agent_workspace_mcp", "--root", str(root)]) as c:
        result = await c.list_tools_mcp()
    payload = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    tools = payload["tools"]
    size = len(json.dumps(payload, separators=(",", ":")))

    def part(key: str) -> int:
        return sum(len(json.dumps(t.get(key), separators=(",", ":"))) for t in tools if key in t)

    workspace_arg = sum(
        len(json.dumps(t["inputSchema"]["properties"]["workspace"], separators=(",", ":")))
        for t in tools
        if "workspace" in t["inputSchema"].get("properties", {})
    )
    return {
        "tools": len(tools),
        "bytes": size,
        "bytes_per_tool": size / len(tools),
        "input_schemas": part("inputSchema"),
        "descriptions": part("description"),
        "annotations": part("annotations"),
        "meta": part("_meta"),
        "output_schemas": part("outputSchema"),
        "workspace_argument": workspace_arg,
    }


async def run(calls: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / "src").mkdir(parents=True)
        (root / "src" / "app.py").write_text("".join(f"line {i} = {i}\n" for i in range(200)))
        (root / "src" / "edit.py").write_text("x = 'alpha'\n" + "pass\n" * 200)
        return {
            "per_call": await per_call(root, calls),
            "durability": await durability(root, calls // 2),
            "checkpoint": await checkpoint_cost(root, calls // 2),
            "guard": await guard_cost(root, calls // 2),
            "tools_list": await tools_list(root),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--json", default="bench/results/overhead.json")
    args = parser.parse_args()
    results = asyncio.run(run(args.calls))
    print(f"{'per call over stdio':24} {'floor ms':>9} {'ours ms':>8} {'ratio':>7}")
    for row in results["per_call"]:
        print(f"{row['case']:24} {row['floor_ms']:9.2f} {row['ms']:8.2f} {row['ratio']:6.2f}x")
    d = results["durability"]
    print(
        f"write_file in-process: {d['with_fsync_ms']:.2f} ms with fsync, "
        f"{d['without_fsync_ms']:.2f} ms without (durability {d['durability_ms']:.2f} ms)"
    )
    c = results["checkpoint"]
    print(
        f"write_file in-process: {c['with_ms']:.2f} ms with its checkpoint, "
        f"{c['without_ms']:.2f} ms without ({c['ratio']:.2f}x); delete_path of 100 files: "
        f"{c['delete_tree_with_ms']:.1f} ms with, {c['delete_tree_without_ms']:.1f} ms "
        f"without ({c['delete_tree_ratio']:.2f}x)"
    )
    g = results["guard"]
    print(
        f"stale-read guard in-process: read_file + write_file {g['pair_on_ms']:.2f} ms with, "
        f"{g['pair_off_ms']:.2f} ms without ({g['pair_ratio']:.2f}x); the write alone "
        f"{g['write_on_ms']:.2f} ms with, {g['write_off_ms']:.2f} ms without "
        f"({g['write_ratio']:.2f}x)"
    )
    t = results["tools_list"]
    print(
        f"tools/list: {t['bytes']} bytes for {t['tools']} tools "
        f"({t['bytes_per_tool']:.0f} B/tool); "
        f"schemas {t['input_schemas']}, descriptions {t['descriptions']}, annotations "
        f"{t['annotations']}, _meta {t['meta']}, outputSchema {t['output_schemas']}, "
        f"workspace argument {t['workspace_argument']}"
    )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": "overhead", "cpus": os.cpu_count(), **results}
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
