"""Every figure held to a budget (issue 47, item 5): one command runs the per-tool latency
set, the cold start and the size of tools/list, and compares them with the figures
recorded in docs/PERFORMANCE.md (the table between the `budget` markers, which this
command writes with `--write`).

- Per tool: p50, p95 and p99 of `--calls` calls through an in-memory `fastmcp.Client`,
  each as a ratio to the same percentile of a bare FastMCP server's trivial tool called
  the same way in the same run, call by call in turn with ours (the floor: these
  machines are noisy, so a ratio to a floor measured alongside is what can be compared
  across runs and machines).
- Cold start: spawn to the answer of `initialize` over stdio, ours (a later start, the
  start-up cache warm) against the bare FastMCP server spawned the same way.
- tools/list: the bytes of the answer a client reads, for the default surface.

A figure is over budget when its ratio is worse than the recorded one by more than 10%
(p50, p95, cold start, tools/list bytes) or 20% (p99), the budget Azure's MCP server
holds itself to (microsoft/mcp#3119). Exit status 1 when any is; `--write` records this
run's figures as the new baseline instead.

    python bench/budget.py [--calls 300] [--runs 9] [--write] [--json bench/results/budget.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from coldstart import timed as spawn_timed  # bench/coldstart.py
from floors import BARE_SERVER, WARM_UP_CALLS, bare_server

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "PERFORMANCE.md"
START, END = "<!-- budget:start -->", "<!-- budget:end -->"
# (limit on p50/p95 and the scalar figures, limit on p99): worse by more than this fails
TOLERANCE = (0.10, 0.20)


def cases(root: Path) -> list[tuple[str, str, dict]]:
    """(label, tool, arguments): the calls an agent makes most, on a small project."""
    return [
        ("workspace_list", "workspace_list", {}),
        ("read_file 200 lines", "read_file", {"path": "src/app.py"}),
        ("read_file 10 KB", "read_file", {"path": "small.txt"}),
        ("file_info", "file_info", {"path": "src/app.py"}),
        ("list_files", "list_files", {"path": "."}),
        ("grep", "grep", {"pattern": "line 7"}),
        ("outline", "outline", {"path": "src/app.py"}),
        ("find_symbol", "find_symbol", {"name": "App"}),
        ("write_file 10 KB", "write_file", {"path": "out.txt", "content": "y" * 10239 + "\n"}),
        ("edit_file", "edit_file", {}),
        ("work_log", "work_log", {}),
    ]


def project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    body = "".join(f"line_{i} = {i}\n" for i in range(196))
    (root / "src" / "app.py").write_text(f"class App:\n    pass\n\n\n{body}")
    (root / "small.txt").write_text("x" * 10239 + "\n")


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    cut = statistics.quantiles(ordered, n=100, method="inclusive")
    return statistics.median(ordered), cut[94], cut[98]


async def sample(
    bare: Client, ours: Client, tool: str, args: dict, calls: int
) -> tuple[list[float], list[float]]:
    """The floor's call and ours, alternating call by call, so a change of load on the
    machine hits both alike (in blocks of 300, a slow minute moved ratios by 30%)."""
    edit = tool == "edit_file"
    pair = ("line_7 = 7", "line_7 = seven")
    floor: list[float] = []
    mine: list[float] = []
    for i in range(WARM_UP_CALLS + calls):
        if edit:
            old, new = pair if i % 2 == 0 else pair[::-1]
            args = {"path": "src/app.py", "oldString": old, "newString": new}
        for client, name, arguments, times in (
            (bare, "echo", {"text": "x"}, floor),
            (ours, tool, args, mine),
        ):
            started = time.perf_counter()
            await client.call_tool(name, arguments)
            if i >= WARM_UP_CALLS:
                times.append((time.perf_counter() - started) * 1000)
    return floor, mine


async def latency(calls: int) -> tuple[list[dict], int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        project(root)
        server = create_server(Settings(root=str(root), audit=False))
        rows = []
        async with Client(bare_server()) as bare, Client(server) as ours:
            listed = await ours.list_tools_mcp()
            tools_bytes = len(listed.model_dump_json(by_alias=True, exclude_none=True))
            for label, tool, args in cases(root):
                floor_ms, mine_ms = await sample(bare, ours, tool, args, calls)
                floor, mine = percentiles(floor_ms), percentiles(mine_ms)
                row = {"figure": label}
                for name, value, base in zip(("p50", "p95", "p99"), mine, floor, strict=True):
                    row[f"{name}_ms"] = round(value, 2)
                    row[f"{name}_x"] = round(value / base, 2)
                rows.append(row)
                print(
                    f"{label:22} "
                    + " ".join(f"{row[f'{p}_ms']:7.2f} {row[f'{p}_x']:5.2f}x" for p in P),
                    flush=True,
                )
    return rows, tools_bytes


P = ("p50", "p95", "p99")


def cold_start(runs: int) -> dict:
    """Spawn to initialize's answer over stdio: ours (start-up cache warm) and bare."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        project(root)
        script = Path(tmp) / "bare.py"
        script.write_text(BARE_SERVER)
        env = {**os.environ}
        call = {"name": "workspace_list", "arguments": {}}
        ours_argv = [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root)]
        bare_argv = [sys.executable, str(script)]
        spawn_timed(ours_argv, tmp, call, env)  # the first start fills the start-up cache
        ours, bare = [], []
        for _ in range(runs):
            ours.append(spawn_timed(ours_argv, tmp, call, env)[1] * 1000)
            bare.append(
                spawn_timed(bare_argv, tmp, {"name": "echo", "arguments": {"text": "x"}}, env)[1]
                * 1000
            )
    mine, floor = statistics.median(ours), statistics.median(bare)
    return {
        "figure": "cold start (initialize)",
        "p50_ms": round(mine, 1),
        "p50_x": round(mine / floor, 2),
    }


def table(rows: list[dict], cold: dict, tools_bytes: int) -> str:
    lines = [
        "| figure | p50 ms | p50 x | p95 ms | p95 x | p99 ms | p99 x |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        cells = " | ".join(f"{row[f'{p}_ms']:.2f} | {row[f'{p}_x']:.2f}" for p in P)
        lines.append(f"| {row['figure']} | {cells} |")
    lines.append(f"| {cold['figure']} | {cold['p50_ms']:.1f} | {cold['p50_x']:.2f} | | | | |")
    lines.append(f"| tools/list bytes | {tools_bytes} | | | | | |")
    return "\n".join(lines)


def recorded(text: str) -> dict[str, dict[str, float]]:
    """The figures of the recorded table: figure -> {p50_x, p95_x, p99_x, bytes}."""
    if START not in text or END not in text:
        return {}
    block = text.split(START, 1)[1].split(END, 1)[0]
    found: dict[str, dict[str, float]] = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not re.match(r"^-?[\d.]+$", cells[1] or "x"):
            continue
        figure = cells[0]
        values: dict[str, float] = {}
        if figure == "tools/list bytes":
            values["bytes"] = float(cells[1])
        else:
            for index, name in ((2, "p50_x"), (4, "p95_x"), (6, "p99_x")):
                if cells[index]:
                    values[name] = float(cells[index])
        found[figure] = values
    return found


def over_budget(now: dict[str, dict[str, float]], before: dict[str, dict[str, float]]) -> list[str]:
    """Each figure worse than its recorded value by more than its tolerance."""
    worse = []
    for figure, values in now.items():
        for name, value in values.items():
            base = before.get(figure, {}).get(name)
            if base is None or base <= 0:
                continue
            limit = TOLERANCE[1] if name == "p99_x" else TOLERANCE[0]
            if value > base * (1 + limit):
                label = figure if name == "bytes" else f"{figure} {name.removesuffix('_x')}"
                worse.append(
                    f"{label}: {value:g} against {base:g} "
                    f"(+{(value / base - 1) * 100:.0f}%, budget +{limit * 100:.0f}%)"
                )
    return worse


def as_figures(rows: list[dict], cold: dict, tools_bytes: int) -> dict[str, dict[str, float]]:
    figures = {row["figure"]: {f"{p}_x": row[f"{p}_x"] for p in P} for row in rows}
    figures[cold["figure"]] = {"p50_x": cold["p50_x"]}
    figures["tools/list bytes"] = {"bytes": float(tools_bytes)}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=9, help="cold starts of each server")
    parser.add_argument("--write", action="store_true", help="record this run as the baseline")
    parser.add_argument("--json", default=str(HERE / "results" / "budget.json"))
    args = parser.parse_args()
    print(f"{'figure':22} " + " ".join(f"{p + ' ms':>7} {'x':>6}" for p in P))
    rows, tools_bytes = asyncio.run(latency(args.calls))
    cold = cold_start(args.runs)
    print(f"{cold['figure']:22} {cold['p50_ms']:7.1f} {cold['p50_x']:5.2f}x")
    print(f"{'tools/list bytes':22} {tools_bytes}")
    text = DOC.read_text(encoding="utf-8")
    worse = over_budget(as_figures(rows, cold, tools_bytes), recorded(text))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "budget",
                "cpus": os.cpu_count(),
                "rows": rows,
                "cold": cold,
                "tools_list_bytes": tools_bytes,
                "over_budget": worse,
            },
            indent=2,
        )
        + "\n"
    )
    if args.write:
        body = f"{START}\n{table(rows, cold, tools_bytes)}\n{END}"
        if START in text:
            text = re.sub(
                re.escape(START) + ".*?" + re.escape(END), lambda _: body, text, flags=re.S
            )
        else:
            text += f"\n{body}\n"
        DOC.write_text(text, encoding="utf-8")
        print(f"recorded in {DOC}")
        return 0
    for line in worse:
        print(f"OVER BUDGET: {line}")
    print("within budget" if not worse else f"{len(worse)} figures over budget")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
