"""A server for `bench/writes.py --stdio --split`, timing each write's body inside it.

    python bench/timed_server.py ours OUT --root DIR   our CLI, as `python -m agent_workspace_mcp`
    python bench/timed_server.py bare OUT DIR          bench/bare_writer.py

`ours` times the synchronous body of every journaled call in its worker thread
(`journaling.InThread.run`: the state check, the tool, the checkpoint line and the
journal entry); `bare` times its durable write, in both its tools. Each body's wall and
thread CPU time, in call order, go to OUT (JSON) when the server exits: what the write
costs where it runs, without the client, the protocol or the thread trip, so a gap
between two servers can be placed inside the body or around it.
"""

from __future__ import annotations

import atexit
import json
import sys
import time
from collections.abc import Callable
from typing import Any

TIMES: dict[str, list[float]] = {"wall_ms": [], "cpu_ms": []}


def timed(body: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        return body()
    finally:
        TIMES["wall_ms"].append((time.perf_counter() - wall) * 1000)
        TIMES["cpu_ms"].append((time.thread_time() - cpu) * 1000)


def main() -> int:
    which, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]

    def dump() -> None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(TIMES, handle)

    atexit.register(dump)
    if which == "ours":
        from agent_workspace_mcp import cli
        from agent_workspace_mcp.core.state.journal import calls

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
