"""A server for `bench/writes.py --stdio --split`, timing each write's body inside it.

    python bench/timed_server.py ours OUT [--without PARTS] --root DIR
    python bench/timed_server.py bare OUT DIR

`ours` runs our CLI as `python -m agent_workspace_mcp` would, `bare` bench/bare_writer.py.

`ours` times the synchronous body of every journaled call in its worker thread
(`journaling.InThread.run`: the state check, the tool, the checkpoint line and the
journal entry); `bare` times its durable write, in both its tools. Each body's wall and
thread CPU time, in call order, go to OUT (JSON) when the server exits: what the write
costs where it runs, without the client, the protocol or the thread trip, so a gap
between two servers can be placed inside the body or around it.

`--without` switches parts of our write's bookkeeping off in this process, to bound what
merging them into the others, or moving them out of the write's path, could save at most
(as `bench/writes.py --bound` does for all of them; never a setting, the server has no
way to run like this): `ready` the state check before the body, `stale` the stale-read
records of what was written, `index` the checkpoint's index line (its objects are still
stored), `diff` the diff in the answer (issue 44), `journal` the journal entry and the
checkpoint line written with it (what a write would leave until after its answer).
"""

from __future__ import annotations

import atexit
import json
import sys
import time
from collections.abc import Callable
from typing import Any

TIMES: dict[str, list[float]] = {"wall_ms": [], "cpu_ms": []}
PARTS = ("ready", "stale", "index", "diff", "journal")  # what `--without` can switch off


def timed(body: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        return body()
    finally:
        TIMES["wall_ms"].append((time.perf_counter() - wall) * 1000)
        TIMES["cpu_ms"].append((time.thread_time() - cpu) * 1000)


def switched_off(parts: list[str]) -> None:
    from agent_workspace_mcp.core.checkpoints.store import Store
    from agent_workspace_mcp.core.state import stale_reads
    from agent_workspace_mcp.core.state.journal import calls
    from agent_workspace_mcp.middleware.journal import JournalMiddleware
    from agent_workspace_mcp.tools import files

    def nothing(*_args: object, **_kwargs: object) -> None:
        return None

    for part in parts:
        if part == "ready":
            JournalMiddleware._ready_here = staticmethod(nothing)  # type: ignore[method-assign]
        elif part == "stale":
            stale_reads.wrote = nothing
        elif part == "index":
            Store.append = nothing  # type: ignore[method-assign]
        elif part == "diff":
            files._write_diff = lambda *_args: ""
        elif part == "journal":
            calls.write = nothing
        else:
            raise SystemExit(f"--without: {part!r} is not one of {', '.join(PARTS)}")


def main() -> int:
    which, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]

    def dump() -> None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(TIMES, handle)

    atexit.register(dump)
    if which == "ours":
        from agent_workspace_mcp import cli
        from agent_workspace_mcp.core.state.journal import calls

        if args[:1] == ["--without"]:
            switched_off(args[1].split(","))
            args = args[2:]

        run = calls.InThread.run
        calls.InThread.run = lambda self, body: timed(lambda: run(self, body))  # type: ignore[method-assign]
        return cli.main(args)
    import bare_writer  # bench/bare_writer.py, beside this file

    durable = bare_writer.durable_write
    bare_writer.durable_write = lambda *a: timed(lambda: durable(*a))  # the tools look it up
    bare_writer.bare_writer(args[0]).run(show_banner=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
