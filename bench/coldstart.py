"""Cold start: spawn a server over stdio and time, from the spawn, the answers to
`initialize`, to `tools/list` and to the first `tools/call`, as a client sees them.

Clients give a server a few seconds to come up, so this is measured, not assumed.
Each run spawns a fresh interpreter. The package is byte-compiled first, as an
install leaves it (pip compiles at install; uv's cache keeps what the first run
writes). Subjects, interleaved run by run so background load hits all alike:

- `python -c pass`: the interpreter floor;
- a bare FastMCP server with one tool: the framework floor;
- @modelcontextprotocol/server-filesystem (Node, from npm into bench/.npm; skipped
  with a line when npm or the registry is missing): the peer floor issue 36 names;
- ours on its first start (`--no-startup-cache`: everything waits for FastMCP);
- ours on a later start: initialize and tools/list answered from what the server
  wrote on an earlier start (transports/early.py) while FastMCP loads.

The client writes initialize, notifications/initialized, tools/list and one tools/call
at once, as fast clients do, and keeps stdin open until the call is answered.

    python bench/coldstart.py [--runs 15] [--json bench/results/coldstart.json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import agent_workspace_mcp
from floors import BARE_SERVER  # bench/floors.py (the script's directory is on sys.path)

HERE = Path(__file__).resolve().parent
NPM_DIR = HERE / ".npm"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"


def frames(call: dict) -> bytes:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    rest = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
    ]
    return b"".join(json.dumps(m).encode() + b"\n" for m in [init, *rest])


def timed(argv: list[str], cwd: str, call: dict, env: dict) -> dict[int, float]:
    """Seconds from spawn to the answer of each request id (1, 2, 3)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(frames(call))
    proc.stdin.flush()
    seen: dict[int, float] = {}
    while 3 not in seen:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{argv[0]} closed stdout after answering {sorted(seen)}")
        message = json.loads(line)
        if message.get("id") in (1, 2, 3):
            if "result" not in message:
                raise RuntimeError(f"unexpected answer: {line[:200]!r}")
            seen[message["id"]] = time.perf_counter() - started
    proc.stdin.close()
    proc.wait(timeout=30)
    return seen


def filesystem_server() -> list[str] | None:
    """server-filesystem's entry point, installed once under bench/.npm."""
    entry = NPM_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"
    if not entry.exists():
        npm = shutil.which("npm")
        if npm is None:
            return None
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(NPM_DIR),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                FILESYSTEM,
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not entry.exists():
            return None
    return [str(entry)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", default="bench/results/coldstart.json")
    args = parser.parse_args()
    compileall.compile_dir(Path(agent_workspace_mcp.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as cache:
        Path(root, "a.txt").write_text("alpha\n")
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        ours = [sys.executable, "-m", "agent_workspace_mcp", "--root", root]
        read = {"name": "read_file", "arguments": {"path": "a.txt"}}
        subjects: dict[str, tuple[list[str], dict]] = {
            "bare FastMCP server (framework floor)": (
                [sys.executable, "-c", BARE_SERVER],
                {"name": "echo", "arguments": {"text": "x"}},
            ),
            "agent-workspace-mcp, first start": ([*ours, "--no-startup-cache"], read),
            "agent-workspace-mcp, later starts": (ours, read),
        }
        node = filesystem_server()
        if node is None:
            print(f"{FILESYSTEM} skipped: npm or the registry is missing")
        else:
            subjects[f"{FILESYSTEM} (Node)"] = (
                [*node, root],
                {"name": "read_text_file", "arguments": {"path": f"{root}/a.txt"}},
            )
        timed(ours, root, read, env)  # the start that keeps its answers
        results: dict[str, list[dict[int, float]]] = {name: [] for name in subjects}
        interpreter: list[float] = []
        for _ in range(args.runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            interpreter.append(time.perf_counter() - started)
            for name, (argv, call) in subjects.items():
                results[name].append(timed(argv, root, call, env))
    peer = results.get(f"{FILESYSTEM} (Node)")
    floor = statistics.median(r[1] for r in peer) if peer else None
    rows = []
    print(f"python -c pass: {statistics.median(interpreter) * 1000:.0f} ms (median)")
    print(
        f"{'subject':46} {'initialize':>10} {'tools/list':>10} {'1st call':>9} {'init vs fs':>10}"
    )
    for name, samples in results.items():
        med = {i: statistics.median(s[i] for s in samples) for i in (1, 2, 3)}
        ratio = med[1] / floor if floor else None
        rows.append(
            {
                "subject": name,
                "initialize_ms": med[1] * 1000,
                "tools_list_ms": med[2] * 1000,
                "first_call_ms": med[3] * 1000,
                "initialize_vs_filesystem": ratio,
                "runs": len(samples),
            }
        )
        shown = f"{ratio:9.2f}x" if ratio else "         -"
        print(f"{name:46} {med[1] * 1000:10.0f} {med[2] * 1000:10.0f} {med[3] * 1000:9.0f} {shown}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": "coldstart",
        "cpus": os.cpu_count(),
        "unit": "ms from spawn (median)",
        "rows": rows,
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
