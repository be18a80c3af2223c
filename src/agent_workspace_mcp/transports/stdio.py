"""Serve over stdio, with a shutdown that always runs the cleanup.

FastMCP 4.2's `run()` skips the lifespan cleanup on SIGTERM and, on SIGINT, waits for
stdin to close before exiting. A desktop client that stops us with a signal would
then leave background processes behind. So we watch for SIGTERM/SIGINT ourselves,
run the same idempotent cleanup the lifespan runs, and leave with `os._exit(0)`:
the SDK's stdin reader is a blocking thread that a normal return would wait on.
"""

from __future__ import annotations

import os
import signal
import threading

import anyio
from fastmcp import FastMCP

from ..console import say
from ..core.limits import SHUTDOWN_CLEANUP_SECONDS
from ..services import Services


def _finish_and_exit(services: Services, reason: str) -> None:
    # A stuck cleanup must not keep the process alive: exit anyway after a bound.
    worker = threading.Thread(target=services.shutdown.run, daemon=True)
    worker.start()
    worker.join(SHUTDOWN_CLEANUP_SECONDS)
    say(f"stopped ({reason}), cleanup done")
    os._exit(0)


def run_stdio(app: FastMCP, services: Services, ready_line: str) -> int:
    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        _finish_and_exit(services, signal.Signals(signum).name)

            group.start_soon(on_signal)
            say(ready_line)
            await app.run_stdio_async(show_banner=False, log_level=services.settings.log_level)
            group.cancel_scope.cancel()

    anyio.run(main)
    services.shutdown.run()
    say("stopped (stdin closed), cleanup done")
    return 0
