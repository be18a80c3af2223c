"""What recording a command's changes costs (issue 46), on the Django 5.2.19 corpus
(bench/search.py fetches it) and on a tree of ten copies of it.

For each tree: `run_command ["true"]` and `["git", "status"]` through an in-memory
client with recording on (the default) and off (`checkpoints=False`), and the same
command spawned bare. "on-off" is what recording changes in a command as the server
runs it: negative, since the tree index also answers the `.git` survey every command
needs (issue 43); "on-bare" is what a recorded command costs over the program itself.
The first command on a never-seen tree (which stores the tree's content once) is stated
apart. Then 100 commands that each change one file: how much the checkpoint store grew.

`--staged` measures instead what `--stage-commands` adds under `--confirm risky`, on
the corpus under bubblewrap: each command recorded (run on the real tree) and staged
(run against a fuse-overlayfs view, its change set decided by the rules and landed at
once when it meets none), in turn: `true`, and a command that appends a line to a
source file (a change that lands).

    python bench/commands.py [--calls N] [--skip-big | --staged]

Prints the table and writes bench/results/commands.json (commands-staged.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search import CORPUS, ensure_corpus
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server

GIT = ["git", "-c", "user.email=b@b", "-c", "user.name=b"]


def prepare(source: Path, copies: int, dest: Path) -> Path:
    """`copies` copies of `source` under one git repository (committed once)."""
    if not dest.exists():
        dest.mkdir()
        for i in range(copies):
            shutil.copytree(source, dest / f"copy{i:02d}", symlinks=True)
        subprocess.run([*GIT, "init", "-q"], cwd=dest, check=True)
        subprocess.run([*GIT, "add", "-A"], cwd=dest, check=True)
        subprocess.run([*GIT, "commit", "-qm", "corpus"], cwd=dest, check=True)
    shutil.rmtree(dest / ".workspace-mcp", ignore_errors=True)
    return dest


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def bare_ms(argv: list[str], cwd: Path, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
        times.append((time.perf_counter() - started) * 1000)
    return times


async def timed(client: Client, argv: list[str]) -> float:
    started = time.perf_counter()
    result = await client.call_tool("run_command", {"command": argv}, raise_on_error=False)
    assert not result.is_error, result.content[0].text
    return (time.perf_counter() - started) * 1000


def settings(root: Path, recording: bool) -> Settings:
    return Settings(
        root=str(root), shell_mode="any", sandbox="none", audit=False, checkpoints=recording
    )


def _walk(root: Path):
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".workspace-mcp")]
        yield here, dirs, files


async def measure(root: Path, calls: int) -> dict:
    entries = sum(len(d) + len(f) for _, d, f in _walk(root))
    row: dict = {"tree": root.name, "entries": entries}
    async with Client(create_server(settings(root, True))) as on:
        row["first_ms"] = round(await timed(on, ["true"]), 1)  # stores the tree once
        async with Client(create_server(settings(root, False))) as off:
            for name, argv in (("true", ["true"]), ("git status", ["git", "status"])):
                times_on, times_off = [], []
                for _ in range(calls):  # in turn, so load hits both alike
                    times_on.append(await timed(on, argv))
                    times_off.append(await timed(off, argv))
                bare = bare_ms(argv, root, calls)
                row[name] = {
                    "on_p50_ms": p50(times_on),
                    "off_p50_ms": p50(times_off),
                    "bare_p50_ms": p50(bare),
                    "added_p50_ms": round(p50(times_on) - p50(times_off), 1),
                    "over_bare_p50_ms": round(p50(times_on) - p50(bare), 1),
                }
    return row


async def growth(root: Path) -> dict:
    """100 commands that each change one file: the store's growth."""
    target = next(root.rglob("*.py"))
    store = root / ".workspace-mcp" / "checkpoints"

    def size() -> int:
        return sum(p.stat().st_size for p in store.rglob("*") if p.is_file())

    async with Client(create_server(settings(root, True))) as client:
        await timed(client, ["true"])
        start = size()
        for i in range(100):
            await timed(client, ["sh", "-c", f"echo '# {i}' >> {target}"])
        grown = size() - start
    subprocess.run(["git", "checkout", "--", str(target)], cwd=root, check=True)
    return {"commands": 100, "file_bytes": target.stat().st_size, "store_growth_bytes": grown}


async def staged(root: Path, calls: int) -> dict:
    """`--staged`: the same commands recorded and staged, in turn, under bubblewrap."""
    target = next(p for p in sorted(root.rglob("*.py")) if ".git" not in p.parts)
    rel = target.relative_to(root).as_posix()
    base = {"root": str(root), "shell_mode": "any", "sandbox": "bwrap", "audit": False}
    risky = {"confirm": ("risky",), "confirm_via": ("console",)}
    commands = {"true": ["true"], "append a line": ["sh", "-c", f"echo '# x' >> {rel}"]}
    row: dict = {"tree": root.name}
    async with (
        Client(create_server(Settings(**base, **risky))) as recorded,
        Client(create_server(Settings(**base, **risky, stage_commands=True))) as staging,
    ):
        await timed(recorded, ["true"])  # the first command stores the tree once
        for name, argv in commands.items():
            times_recorded, times_staged = [], []
            for _ in range(calls):
                times_recorded.append(await timed(recorded, argv))
                times_staged.append(await timed(staging, argv))
            row[name] = {
                "recorded_p50_ms": p50(times_recorded),
                "staged_p50_ms": p50(times_staged),
                "added_p50_ms": round(p50(times_staged) - p50(times_recorded), 1),
            }
    subprocess.run(["git", "checkout", "--", rel], cwd=root, check=True)
    return row


def main_staged(calls: int) -> int:
    small, _ = ensure_corpus()
    with tempfile.TemporaryDirectory(dir=CORPUS) as tmp:
        row = asyncio.run(staged(prepare(small, 1, Path(tmp) / "django"), calls))
    print(f"{'command':<16}{'recorded':>10}{'staged':>10}{'added':>8}   (p50 ms, {calls} calls)")
    for name in ("true", "append a line"):
        cell = row[name]
        print(
            f"{name:<16}{cell['recorded_p50_ms']:>10}{cell['staged_p50_ms']:>10}"
            f"{cell['added_p50_ms']:>8}"
        )
    out = Path(__file__).resolve().parent / "results" / "commands-staged.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(row, indent=2) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--staged", action="store_true")
    args = parser.parse_args()
    if args.staged:
        return main_staged(args.calls)
    small, _ = ensure_corpus()
    with tempfile.TemporaryDirectory(dir=CORPUS) as tmp:
        trees = [prepare(small, 1, Path(tmp) / "django")]
        if not args.skip_big:
            trees.append(prepare(small, 10, CORPUS / "django-5.2.19_x10"))
        rows = [
            asyncio.run(measure(tree, args.calls if i == 0 else 5)) for i, tree in enumerate(trees)
        ]
        grown = asyncio.run(growth(trees[0]))
    print(
        f"{'tree':<20}{'entries':>9}{'first':>9}  {'command':<11}"
        f"{'bare':>8}{'off':>8}{'on':>8}{'on-off':>8}{'on-bare':>9}"
    )
    for row in rows:
        for name in ("true", "git status"):
            cell = row[name]
            print(
                f"{row['tree']:<20}{row['entries']:>9}{row['first_ms']:>9}  {name:<11}"
                f"{cell['bare_p50_ms']:>8}{cell['off_p50_ms']:>8}{cell['on_p50_ms']:>8}"
                f"{cell['added_p50_ms']:>8}{cell['over_bare_p50_ms']:>9}"
            )
    print(
        f"store growth after 100 one-file commands: {grown['store_growth_bytes']} bytes "
        f"(the file is {grown['file_bytes']} bytes)"
    )
    out = Path(__file__).resolve().parent / "results" / "commands.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "growth": grown}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
