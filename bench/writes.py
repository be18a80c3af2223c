"""What a write costs beyond its durability (issue 47, item 4).

All figures are sampled in rounds, one call of each per round, so every figure sees the
same moment of a noisy machine:

- durable write (floor): 10 KB written to a temp file, fsync, rename over the target,
  fsync of the directory, in plain Python: what no durable write can avoid;
- new empty file (floor): a file created and kept, in plain Python: what the file system
  alone charges for the inode a new checkpoint object takes (`new content - one line
  changed`). On ext4 without a journal (our CI machines) it is not steady: a new inode
  skips every one freed in the last 60-300 s, and every replace frees one, so it grows
  with the files deleted in the last minutes, the bench's own replaces included;
- bare FastMCP, durable write: a bare FastMCP server whose synchronous tool does the
  same, called through an in-memory client: the floor plus the protocol and the
  worker-thread trip every synchronous tool takes; "same on the loop": an async tool
  doing it without the trip;
- read_file 10 KB and write_file 10 KB through our server (in-memory client);
- write_file 10 KB, one line changed: the same size, each write changing one line of
  the last (an agent's usual write: a short diff);
- write_file 10 KB, new content: one line changed, and content no write made before, so
  the checkpoint stores it as a new object, as for an agent's writes (the figures above
  alternate two contents, which the store holds after the first round);
- write_file 10 KB, long session: the same on a workspace whose stale-read records are
  full (this session has read 512 files, 4,096 files have a last writer recorded).

The target: write_file within 1.5 ms of read_file, with every record kept. `write_file -
bare durable` is what our checks and records add to a durable write.

`--bound` switches every check and record of a write off in this process (the
stale-read guard and its lines, the checkpoint, the journal entry and checkpoint line,
the state check, the path lock, the diff): the same server then does only what a bare
durable write does, and `write_file - read_file` is what no write that keeps them can
beat on this machine. Never a setting: the server has no way to run like this.

`--stdio` measures the same as users run the server (and as issue 47 measured it,
beside peers that only run over stdio): our server spawned with `python -m
agent_workspace_mcp --root DIR` (the audit line to /dev/null), and a bare FastMCP server
spawned the same way whose synchronous tools read a file and do the durable write, plus
the same write in an async tool (no worker-thread trip), all called through one kind of
client in the same rounds. Over stdio a read and a write both cross threads for the
pipe, so the worker-thread trip a synchronous tool adds is smaller than in memory.

`--stdio --base SRC` also spawns our server from another source tree (a checkout of an
earlier commit: `git worktree add /tmp/base <commit>`, then `--base /tmp/base/src`) and
times its read, write and new-content write in the same rounds: a change compared with
the commit before it at the same moment of the machine.

`--stdio --split` spawns ours and the bare server through bench/timed_server.py, which
times each write's body where it runs (ours: the state check, the tool and its records
in the worker thread; bare: its durable write), wall and thread CPU: whether a gap
between the two servers lies inside the body or around it (client, protocol, thread
trip, middleware).

`--stdio --split --without ready,stale,index` also switches those parts of our write
off in our server (bench/timed_server.py says which is what): an upper bound on what
merging them into the other records could save. `--without diff,journal` bounds what
moving work out of the write's path would save (the answer's diff only on request, the
journal entry and checkpoint line after the answer).

`--in-process` measures the same writes without a client, protocol or thread trip,
each wrapped as the journal middleware wraps it (far steadier than through a client,
so small changes to the records show): a write changing every line or one line, on a
fresh workspace and on one whose records are full, beside the durable-write floor; and
the diff alone, on 160 and 9,600 lines.

`--repeat N` repeats the whole measurement N times in a row (fresh servers and folders
each time) and prints each figure's p50 per run, then each derived figure per run and
its spread: the machine moves the floor between runs (its disk's inode reuse, its CPU
speed; docs/PERFORMANCE.md, fourteenth pass), so one run says little, and a target held
in every run is met only when the highest run is within it.

    python bench/writes.py [--calls 300] [--repeat 1]
        [--bound | --stdio [--base SRC] [--split [--without PARTS]] | --in-process]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.state import stale_reads
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from bare_writer import bare_writer, durable_write  # bench/bare_writer.py
from floors import WARM_UP_CALLS, percentile  # bench/floors.py
from timed_server import PARTS  # bench/timed_server.py

HERE = Path(__file__).resolve().parent
SIZE = 10 * 1024


def text(mark: str) -> str:
    """10 KB of source-like lines (64 bytes each). A read answers with all of it, as a
    write sends all of it: the same size both ways. (A one-line 10 KB file, used until
    issue 47's fourth pass, is cut to 2,000 characters by read_file.)"""
    line = f"    value_{mark} = compute(alpha, beta, gamma)  # a line of code\n"
    return "".join(line.replace("compute", f"compute{n:04d}", 1)[:63] + "\n" for n in range(160))


CONTENTS = (text("a"), text("b"))  # each write changes every line: the longest diff


def one_line_changed(base: str) -> tuple[str, str]:
    """`base` and the same with its middle line changed: an agent's usual write."""
    lines = base.splitlines(keepends=True)
    lines[len(lines) // 2] = "    value = changed()  # the one line this write changes\n"
    return base, "".join(lines)


EDITS = one_line_changed(CONTENTS[0])


def new_content(n: int) -> str:
    """10 KB whose middle line carries `n`: every write leaves content never stored
    before, as an agent's writes do (the alternating contents above are both in the
    checkpoint store after the first round, so their writes store no new object)."""
    lines = CONTENTS[0].splitlines(keepends=True)
    lines[len(lines) // 2] = f"    value = changed({n:08d})  # this write's own line\n"
    return "".join(lines)


def new_file(directory: Path, n: int) -> None:
    """An empty file created and kept: the inode a new checkpoint object takes, what the
    file system alone charges for it at this moment of the run."""
    os.close(os.open(directory / f"new-{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


async def long_session(client: Client, root: Path) -> None:
    """Fill the records as a long session would: 512 files read, 4,096 last writers."""
    many = root / "many"
    many.mkdir()
    for n in range(limits.SEEN_PATHS_PER_SESSION):
        (many / f"f{n}.txt").write_text(f"{n}\n")
        await client.call_tool("read_file", {"path": f"many/f{n}.txt"})
    records = stale_reads.records_for(WorkspaceRegistry.confined(str(root)).primary)
    digest = "0" * 64
    writers = {f"elsewhere/f{n}.txt": digest for n in range(limits.SEEN_WRITERS)}
    records.update(stale_reads.Agent("another session"), {}, writers)


async def run(calls: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        floor_dir, bare_dir, fresh, full = (base / n for n in ("floor", "bare", "ws", "full"))
        for directory in (floor_dir, bare_dir, fresh, full):
            directory.mkdir()
        for root in (fresh, full):
            (root / "small.txt").write_text(CONTENTS[0])
        settings = {"audit": False}
        async with (
            Client(bare_writer(str(bare_dir))) as bare,
            Client(create_server(Settings(root=str(fresh), **settings))) as ours,
            Client(create_server(Settings(root=str(full), **settings))) as old,
        ):
            await long_session(old, full)
            turn = [0]
            figures = shared_figures(floor_dir, bare, ours, turn)
            figures["write_file 10 KB, long session"] = lambda: old.call_tool(
                "write_file", {"path": "out.txt", "content": CONTENTS[turn[0] % 2]}
            )
            return await sampled(figures, turn, calls)


def spawned(argv: list[str], log: object, pythonpath: str | None = None) -> Client:
    from fastmcp.client.transports import StdioTransport

    # The whole environment, so PYTHONPATH can point a run at another checkout.
    env = dict(os.environ) if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    transport = StdioTransport(argv[0], argv[1:], env=env, keep_alive=False, log_file=log)
    return Client(transport)


async def over_stdio(
    calls: int, base_src: str | None = None, split: bool = False, without: str | None = None
) -> dict[str, list[float]]:
    """`--stdio`: both servers spawned as processes, as users run ours; with `base_src`,
    a third: our server from that source tree (another checkout's `src`); with `split`,
    ours and the bare one through bench/timed_server.py, which times each write's body
    where it runs."""
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as log:
        base = Path(tmp)
        floor_dir, bare_dir, root, base_root = (base / n for n in ("floor", "bare", "ws", "base"))
        for directory in (floor_dir, bare_dir, root, base_root):
            directory.mkdir()
            (directory / "small.txt").write_text(CONTENTS[0])
        ours_argv = [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root)]
        bare_argv = [sys.executable, str(HERE / "bare_writer.py"), str(bare_dir)]
        timed_ours, timed_bare = base / "ours-bodies.json", base / "bare-bodies.json"
        if split:
            ours_argv[1:3] = [str(HERE / "timed_server.py"), "ours", str(timed_ours)]
            if without:
                ours_argv[4:4] = ["--without", without]
            bare_argv[1:2] = [str(HERE / "timed_server.py"), "bare", str(timed_bare)]
        base_argv = [sys.executable, "-m", "agent_workspace_mcp", "--root", str(base_root)]
        async with contextlib.AsyncExitStack() as stack:
            bare = await stack.enter_async_context(spawned(bare_argv, log))
            ours = await stack.enter_async_context(spawned(ours_argv, log))
            turn = [0]
            figures = shared_figures(floor_dir, bare, ours, turn, bare_read=True)
            if base_src is not None:
                other = await stack.enter_async_context(spawned(base_argv, log, base_src))
                figures |= {
                    "base: read_file 10 KB": lambda: other.call_tool(
                        "read_file", {"path": "small.txt"}
                    ),
                    "base: write_file 10 KB": lambda: other.call_tool(
                        "write_file", {"path": "out.txt", "content": CONTENTS[turn[0] % 2]}
                    ),
                    "base: new content": lambda: other.call_tool(
                        "write_file", {"path": "new.txt", "content": new_content(turn[0])}
                    ),
                }
            samples = await sampled(figures, turn, calls)
        if split:  # the servers have exited and written their bodies' times
            samples |= bodies(timed_ours, timed_bare, calls)
        return samples


def bodies(ours_file: Path, bare_file: Path, calls: int) -> dict[str, list[float]]:
    """What `--split` adds: the bodies timed inside the servers, per figure. Each round
    calls the bare server's two writes and our three in the order `shared_figures`
    names them, so a body's figure is its place in its round."""
    ours, bare = (json.loads(f.read_text()) for f in (ours_file, bare_file))
    figures: dict[str, list[float]] = {}
    for kind, times, per_round, place in (
        ("write_file 10 KB", ours, 3, 0),
        ("bare durable write", bare, 2, 0),
    ):
        for unit in ("wall", "cpu"):
            values = times[f"{unit}_ms"]
            if len(values) != (WARM_UP_CALLS + calls) * per_round:
                raise SystemExit(f"--split: {len(values)} bodies timed, not one per call")
            rounds = values[WARM_UP_CALLS * per_round :]
            figures[f"body, {unit}: {kind}"] = rounds[place::per_round]
    return figures


def shared_figures(
    floor_dir: Path, bare: Client, ours: Client, turn: list[int], *, bare_read: bool = False
) -> dict[str, Callable[[], Awaitable[object]]]:
    """The figures both client modes time, in round order: the floor, the bare server's
    (its read too, where it has one), then ours. `turn` holds the round number."""

    def content() -> str:
        return CONTENTS[turn[0] % 2]

    async def floor() -> None:
        durable_write(str(floor_dir), "out.txt", content().encode())

    async def empty_file() -> None:
        new_file(floor_dir, turn[0])

    figures: dict[str, Callable[[], Awaitable[object]]] = {
        "durable write (floor)": floor,
        "new empty file (floor)": empty_file,
    }
    if bare_read:
        figures["bare FastMCP, read 10 KB"] = lambda: bare.call_tool("read", {"path": "small.txt"})
    figures |= {
        "bare FastMCP, durable write": lambda: bare.call_tool("write", {"content": content()}),
        "bare FastMCP, same on the loop": lambda: bare.call_tool(
            "write_on_loop", {"content": content()}
        ),
        "read_file 10 KB": lambda: ours.call_tool("read_file", {"path": "small.txt"}),
        "write_file 10 KB": lambda: ours.call_tool(
            "write_file", {"path": "out.txt", "content": content()}
        ),
        "write_file 10 KB, one line changed": lambda: ours.call_tool(
            "write_file", {"path": "edited.txt", "content": EDITS[turn[0] % 2]}
        ),
        "write_file 10 KB, new content": lambda: ours.call_tool(
            "write_file", {"path": "new.txt", "content": new_content(turn[0])}
        ),
    }
    return figures


async def sampled(
    figures: dict[str, Callable[[], Awaitable[object]]], turn: list[int], calls: int
) -> dict[str, list[float]]:
    """Each figure once a round, in the same rounds (after WARM_UP_CALLS rounds)."""
    samples: dict[str, list[float]] = {name: [] for name in figures}
    for n in range(WARM_UP_CALLS + calls):
        turn[0] = n
        for name, call in figures.items():
            started = time.perf_counter()
            await call()
            if n >= WARM_UP_CALLS:
                samples[name].append((time.perf_counter() - started) * 1000)
    return samples


def in_process(calls: int) -> dict[str, list[float]]:
    """`--in-process`: write_file called directly, as the journal middleware calls it in
    the tool's thread (state check, capture, stale-read binding, journal entry)."""
    from agent_workspace_mcp.core.editing import unified_diff
    from agent_workspace_mcp.core.state.files import state_scope
    from agent_workspace_mcp.core.state.journal import calls as journaling
    from agent_workspace_mcp.middleware.journal import JournalMiddleware
    from agent_workspace_mcp.server import build
    from agent_workspace_mcp.tools import files

    agent = stale_reads.Agent("bench", "writes.py")

    def server(root: Path, reads: int = 0) -> Callable[[str, str], None]:
        _, services = build(Settings(root=str(root), audit=False))
        ws = services.workspaces.get(None)
        store = services.checkpoints(ws)
        (root / "many").mkdir()
        for n in range(reads):  # as long_session: each file read once, as a read records it
            (root / "many" / f"f{n}.txt").write_text(f"{n}\n")
            with state_scope(), stale_reads.bind(ws, agent, keep=True):
                files.read_file(services, f"many/f{n}.txt")

        def write(path: str, content: str) -> None:
            with state_scope():
                JournalMiddleware._ready_here(ws)
                with (
                    journaling.capturing(ws, "write_file", store, checkpoints=True) as call,
                    stale_reads.bind(ws, agent, keep=True),
                ):
                    files.write_file(services, path, content)
                    call.extra = {"session": agent.session, "client": agent.client}
                    journaling.write(call, services.memory, subject=None, checkpoints=True)

        return write

    many = "".join(f"line {n} = compute({n})\n" for n in range(9_600))
    many_edited = many.replace("line 4800 =", "line 4800 changed =")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for name in ("floor", "ws", "full"):
            (base / name).mkdir()
        fresh = server(base / "ws")
        full = server(base / "full", reads=limits.SEEN_PATHS_PER_SESSION)
        # and 4,096 files with a last writer recorded, as long_session leaves them
        records = stale_reads.records_for(WorkspaceRegistry.confined(str(base / "full")).primary)
        digest = "0" * 64
        writers = {f"elsewhere/f{n}.txt": digest for n in range(limits.SEEN_WRITERS)}
        records.update(stale_reads.Agent("another session"), {}, writers)
        figures: dict[str, Callable[[int], object]] = {
            "durable write (floor)": lambda n: durable_write(
                str(base / "floor"), "out.txt", CONTENTS[n % 2].encode()
            ),
            "new empty file (floor)": lambda n: new_file(base / "floor", n),
            "write, every line changed": lambda n: fresh("out.txt", CONTENTS[n % 2]),
            "write, one line changed": lambda n: fresh("edited.txt", EDITS[n % 2]),
            "write, new content": lambda n: fresh("new.txt", new_content(n)),
            "write, every line, long session": lambda n: full("out.txt", CONTENTS[n % 2]),
            "diff, 160 lines, all changed": lambda n: unified_diff(
                CONTENTS[n % 2], CONTENTS[1 - n % 2], "f", max_lines=limits.WRITE_DIFF_MAX_LINES
            ),
            "diff, 160 lines, one changed": lambda n: unified_diff(
                EDITS[n % 2], EDITS[1 - n % 2], "f", max_lines=limits.WRITE_DIFF_MAX_LINES
            ),
            "diff, 9,600 lines, one changed": lambda n: unified_diff(
                many, many_edited, "f", max_lines=limits.WRITE_DIFF_MAX_LINES
            ),
        }
        samples: dict[str, list[float]] = {name: [] for name in figures}
        for n in range(WARM_UP_CALLS + calls):
            for name, call in figures.items():
                started = time.perf_counter()
                call(n)
                if n >= WARM_UP_CALLS:
                    samples[name].append((time.perf_counter() - started) * 1000)
        return samples


def without_checks_and_records() -> None:
    """`--bound`: what a write does beyond its durable replace, switched off in place."""
    import contextlib

    from agent_workspace_mcp.core.state import locks
    from agent_workspace_mcp.core.state.journal import activity, calls
    from agent_workspace_mcp.middleware.journal import JournalMiddleware
    from agent_workspace_mcp.tools import files

    def nothing(*_args: object, **_kwargs: object) -> None:
        return None

    stale_reads.check = stale_reads.wrote = nothing
    activity.before_content = activity.before = activity.left_content = nothing
    calls.write = nothing
    files._write_diff = lambda *_args: ""
    locks.PathLocks.hold = lambda *_args: contextlib.nullcontext()
    JournalMiddleware._ready_here = staticmethod(nothing)


def over_read(p50: dict[str, float]) -> dict[str, float]:
    """What both client modes derive first: each write of ours over our read, and what a
    new checkpoint object adds (beside "new empty file (floor)")."""
    return {
        "write_file - read_file": p50["write_file 10 KB"] - p50["read_file 10 KB"],
        "one line changed - read_file": p50["write_file 10 KB, one line changed"]
        - p50["read_file 10 KB"],
        "new content - read_file": p50["write_file 10 KB, new content"] - p50["read_file 10 KB"],
        "new content - one line changed": p50["write_file 10 KB, new content"]
        - p50["write_file 10 KB, one line changed"],
    }


def through_client_derived(p50: dict[str, float]) -> dict[str, float]:
    return over_read(p50) | {
        "long session - read_file": p50["write_file 10 KB, long session"] - p50["read_file 10 KB"],
        "write_file - bare durable": p50["write_file 10 KB"] - p50["bare FastMCP, durable write"],
        "bare durable - floor": p50["bare FastMCP, durable write"] - p50["durable write (floor)"],
        "thread trip (bare - on loop)": p50["bare FastMCP, durable write"]
        - p50["bare FastMCP, same on the loop"],
    }


def stdio_derived(p50: dict[str, float]) -> dict[str, float]:
    return (
        over_read(p50)
        | {
            "write_file - bare durable": p50["write_file 10 KB"]
            - p50["bare FastMCP, durable write"],
            "bare durable - bare read": p50["bare FastMCP, durable write"]
            - p50["bare FastMCP, read 10 KB"],
            "thread trip (bare - on loop)": p50["bare FastMCP, durable write"]
            - p50["bare FastMCP, same on the loop"],
        }
        | (
            {
                "body: write_file - bare (wall)": p50["body, wall: write_file 10 KB"]
                - p50["body, wall: bare durable write"],
                "body: write_file - bare (CPU)": p50["body, cpu: write_file 10 KB"]
                - p50["body, cpu: bare durable write"],
                "around the body: write_file - bare": p50["write_file 10 KB"]
                - p50["bare FastMCP, durable write"]
                - p50["body, wall: write_file 10 KB"]
                + p50["body, wall: bare durable write"],
            }
            if "body, wall: write_file 10 KB" in p50
            else {}
        )
        | (
            {
                "base: write_file - read_file": p50["base: write_file 10 KB"]
                - p50["base: read_file 10 KB"],
                "base: new content - read_file": p50["base: new content"]
                - p50["base: read_file 10 KB"],
            }
            if "base: read_file 10 KB" in p50
            else {}
        )
    )


def in_process_derived(p50: dict[str, float]) -> dict[str, float]:
    floor = p50["durable write (floor)"]
    return {
        "every line changed - floor": p50["write, every line changed"] - floor,
        "one line changed - floor": p50["write, one line changed"] - floor,
        "new content - floor": p50["write, new content"] - floor,
        "new content - one line changed": p50["write, new content"]
        - p50["write, one line changed"],
        "long session - fresh": p50["write, every line, long session"]
        - p50["write, every line changed"],
    }


def measured(args: argparse.Namespace) -> dict[str, list[float]]:
    """One run of the mode `args` names: every figure's samples."""
    if args.in_process:
        return in_process(args.calls)
    if args.stdio:
        return asyncio.run(over_stdio(args.calls, args.base, args.split, args.without))
    return asyncio.run(run(args.calls))


def summed_up(samples: dict[str, list[float]], args: argparse.Namespace) -> dict:
    """One run's rows (p50, p95 per figure) and the figures derived from their p50s."""
    digits = 3 if args.in_process else 2
    rows = [
        {
            "figure": name,
            "p50_ms": round(statistics.median(values), digits),
            "p95_ms": round(percentile(values, 95), digits),
        }
        for name, values in samples.items()
    ]
    p50 = {row["figure"]: row["p50_ms"] for row in rows}
    if args.in_process:
        derived = in_process_derived(p50)
    else:
        derived = stdio_derived(p50) if args.stdio else through_client_derived(p50)
    return {"rows": rows, "derived_ms": {k: round(v, digits) for k, v in derived.items()}}


def spread(runs: list[dict]) -> dict[str, dict[str, float]]:
    """Each derived figure over the runs: its lowest, median and highest p50 (a target
    held "in every run" is met only when the highest is within it)."""
    names = runs[0]["derived_ms"]
    return {
        name: {
            "min": min(r["derived_ms"][name] for r in runs),
            "median": statistics.median(r["derived_ms"][name] for r in runs),
            "max": max(r["derived_ms"][name] for r in runs),
        }
        for name in names
    }


def printed(runs: list[dict], digits: int) -> None:
    """One run: p50 and p95 per figure. Several: each run's p50 side by side, then each
    derived figure per run and its spread."""
    if len(runs) == 1:
        print(f"{'figure':34} {'p50 ms':>7} {'p95 ms':>7}")
        for row in runs[0]["rows"]:
            print(f"{row['figure']:34} {row['p50_ms']:7.{digits}f} {row['p95_ms']:7.{digits}f}")
        for name, value in runs[0]["derived_ms"].items():
            print(f"{name:34} {value:+7.{digits}f} ms (p50)")
        return
    heads = "".join(f"{f'run {n}':>8}" for n in range(1, len(runs) + 1))
    print(f"{'figure (p50 ms)':34} {heads}")
    for at, row in enumerate(runs[0]["rows"]):
        cells = "".join(f"{r['rows'][at]['p50_ms']:8.{digits}f}" for r in runs)
        print(f"{row['figure']:34} {cells}")
    for name, over in spread(runs).items():
        cells = "".join(f"{r['derived_ms'][name]:+8.{digits}f}" for r in runs)
        low, high = over["min"], over["max"]
        print(f"{name:34} {cells}  ({low:+.{digits}f} to {high:+.{digits}f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--repeat", type=int, default=1, help="whole runs in a row, each figure per run and spread"
    )
    parser.add_argument("--json", help="default: bench/results/writes[-stdio|-in-process].json")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--bound", action="store_true", help="every check and record of a write switched off"
    )
    mode.add_argument(
        "--stdio", action="store_true", help="both servers spawned over stdio, as users run ours"
    )
    mode.add_argument(
        "--in-process", action="store_true", help="no client: the write and the diff alone"
    )
    parser.add_argument(
        "--base",
        metavar="SRC",
        help="with --stdio: also our server from this source tree (another checkout's src), "
        "in the same rounds",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="with --stdio: also each write's body, timed inside both servers",
    )
    parser.add_argument(
        "--without",
        metavar="PARTS",
        help="with --split: switch these parts of our write off (ready, stale, index; "
        "comma-separated): what merging them could save at most",
    )
    args = parser.parse_args()
    if args.without and not args.split:
        parser.error("--without needs --split")
    unknown = set((args.without or "").split(",")) - {"", *PARTS}
    if unknown:
        parser.error(f"--without: {', '.join(sorted(unknown))} is not one of {', '.join(PARTS)}")
    if args.base and not args.stdio:
        parser.error("--base needs --stdio")
    if args.split and not args.stdio:
        parser.error("--split needs --stdio")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.bound:
        without_checks_and_records()
    runs = [summed_up(measured(args), args) for _ in range(args.repeat)]
    printed(runs, 3 if args.in_process else 2)
    mode_name = "-in-process" if args.in_process else "-stdio" if args.stdio else ""
    out = Path(args.json or HERE / "results" / f"writes{mode_name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": "writes",
        "cpus": os.cpu_count(),
        "calls": args.calls,
        "bound": args.bound,
        "in_process": args.in_process,
        "stdio": args.stdio,
        "base": args.base,
        "split": args.split,
        "without": args.without,
        # The last run's rows, as a single run always wrote them; every run below.
        "rows": runs[-1]["rows"],
        "derived_ms": runs[-1]["derived_ms"],
        "runs": runs,
        "spread_ms": spread(runs),
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
