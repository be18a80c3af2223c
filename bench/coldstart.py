"""Cold start: spawn the server over stdio, send `initialize`, stop at the answer.

Clients give a server a few seconds to come up, so this is measured, not assumed.
Each run spawns a fresh interpreter. The package is byte-compiled first, as an
install leaves it (pip compiles at install; uv's cache keeps what the first run
writes): with PYTHONDONTWRITEBYTECODE set, an editable checkout would otherwise
compile every module on every start (~90 ms here). The floor, measured in the same
run and the same way, is a bare FastMCP server with one tool: the ratio says what our
own start-up adds on top of the framework, which is stable across noisy machines.

    python bench/coldstart.py [--runs 15] [--json bench/results/coldstart.json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import agent_workspace_mcp
from floors import BARE_SERVER  # bench/floors.py (the script's directory is on sys.path)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def time_to_initialize(argv: list[str], cwd: str) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.wait(timeout=30)
    if b'"result"' not in line:
        raise RuntimeError(f"unexpected first line: {line[:200]!r}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", default="bench/results/coldstart.json")
    args = parser.parse_args()
    compileall.compile_dir(Path(agent_workspace_mcp.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as root:
        subjects = {
            "python -c pass (interpreter floor)": [sys.executable, "-c", "pass"],
            "bare FastMCP server (framework floor)": [sys.executable, "-c", BARE_SERVER],
            "agent-workspace-mcp --root": [
                sys.executable,
                "-m",
                "agent_workspace_mcp",
                "--root",
                root,
            ],
        }
        results: dict[str, list[float]] = {name: [] for name in subjects}
        for _ in range(args.runs):  # interleaved, so background load hits all alike
            for name, argv in subjects.items():
                if "-c" in argv and argv[-1] == "pass":
                    started = time.perf_counter()
                    subprocess.run(argv, check=True)
                    results[name].append(time.perf_counter() - started)
                else:
                    results[name].append(time_to_initialize(argv, root))
    floor = statistics.median(results["bare FastMCP server (framework floor)"])
    rows = []
    print(f"{'subject':42} {'min ms':>8} {'median ms':>10} {'vs FastMCP':>11}")
    for name, samples in results.items():
        med = statistics.median(samples)
        rows.append(
            {
                "subject": name,
                "min_ms": min(samples) * 1000,
                "median_ms": med * 1000,
                "ratio_to_fastmcp": med / floor,
                "runs": len(samples),
            }
        )
        print(f"{name:42} {min(samples) * 1000:8.0f} {med * 1000:10.0f} {med / floor:10.2f}x")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "coldstart", "cpus": os.cpu_count(), "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
