"""Serve over stdio: every frame answered, and a shutdown that always runs the cleanup.

Frames. The MCP SDK's stdio transport drops a line it cannot parse without a reply,
reads a line of any length into memory, and stops the whole server when an answer
cannot be serialized (a lone surrogate). We run the two loops ourselves: stdin in lines
of at most STDIO_FRAME_MAX_BYTES, each checked and parsed once (`frames.check_frame`),
a bad one answered with a JSON-RPC error; stdout written line by line, an answer that
pydantic cannot serialize re-encoded with its surrogates escaped. FastMCP 4.2's
`run_stdio_async` cannot take other streams, so `_serve` repeats its few lines
(lifespan, transport marker, the low-level server's `run`), as FastMCP's own in-memory
transport does.
While serving, fd 0 reads /dev/null and fd 1 writes to stderr, so a child process or a
stray print can neither eat a frame nor tear one (the SDK does the same for itself).
The CLI claims them before FastMCP is imported (`early.Wire`), and what the client sent
meanwhile, and what was answered early from the start-up cache, is handed over
(`early.Handover`, issue 36).

Shutdown. FastMCP 4.2's `run()` skips the lifespan cleanup on SIGTERM and, on SIGINT,
waits for stdin to close before exiting. A desktop client that stops us with a signal
would then leave background processes behind. So we watch for SIGTERM/SIGINT
ourselves, run the same idempotent cleanup the lifespan runs, and leave with
`os._exit(0)`: the stdin reader is a blocking thread that a normal return would wait on.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from typing import Any, BinaryIO

import anyio
from fastmcp import FastMCP
from pydantic_core import PydanticSerializationError

from ..core import handoff
from ..core.limits import SHUTDOWN_CLEANUP_SECONDS, STDIO_FRAME_MAX_BYTES
from ..core.operator import say
from ..services import Services
from .early import Handover
from .frames import FRAME_ID_SCAN_BYTES, BadFrame, check_frame, too_large

_DISCARD_CHUNK = 1 << 20  # an over-long line is skipped a MiB at a time


class _Out:
    """stdout for the SDK's writer and for our error replies: one whole line per write,
    in order (a lock), written from a worker thread so a slow reader never blocks the loop.
    An answer already sent before start-up finished is checked and not sent again."""

    def __init__(self, handover: Handover) -> None:
        self.handover = handover
        self.lock = anyio.Lock()

    async def message(self, message: Any) -> None:
        data = _serialized(message)
        if self.handover.pending and self.handover.drop(message, data):
            return
        await self.send(data + b"\n")

    async def send(self, data: bytes) -> None:
        async with self.lock:
            await handoff.run_sync(lambda: self.handover.wire.write(data))


class _Frames:
    """stdin as parsed, checked messages; a bad frame is answered here and skipped."""

    def __init__(self, handover: Handover, out: _Out) -> None:
        self.reader: BinaryIO = handover.take_over()
        self.handover = handover
        self.out = out

    def __aiter__(self) -> _Frames:
        return self

    async def __anext__(self) -> Any:
        while True:
            got = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
            if got is None:
                raise StopAsyncIteration
            if isinstance(got, BadFrame):
                await self.out.send(got.reply() + b"\n")
                continue
            return got

    def _next(self) -> Any:
        """The next message, the answer to a bad frame, or None at the end of input."""
        while True:
            try:
                line = self.reader.readline(STDIO_FRAME_MAX_BYTES + 1)
            except OSError:
                return None
            if not line:
                return None
            if len(line) > STDIO_FRAME_MAX_BYTES and not line.endswith(b"\n"):
                tail = b""  # the frame's last bytes, where its id may be
                while (rest := self.reader.readline(_DISCARD_CHUNK)) and not rest.endswith(b"\n"):
                    tail = (tail + rest)[-FRAME_ID_SCAN_BYTES:]
                tail = (tail + rest)[-FRAME_ID_SCAN_BYTES:]
                return too_large(STDIO_FRAME_MAX_BYTES, line[:FRAME_ID_SCAN_BYTES], tail)
            if line.strip():  # blank lines are not frames
                self.handover.saw(line)
                return check_frame(line)


def _serialized(message: Any) -> bytes:
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    except PydanticSerializationError:
        # A lone surrogate somewhere (answers are made wire-safe first, so this is the
        # last line): json escapes it as \\udXXX instead of the reply being lost.
        data = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return json.dumps(data, separators=(",", ":")).encode()


async def _serve(app: FastMCP, log_level: str | None, handover: Handover) -> None:
    from fastmcp.server.context import reset_transport, set_transport
    from fastmcp.utilities.logging import temporary_log_level
    from mcp.shared.message import SessionMessage

    token = set_transport("stdio")
    try:
        with temporary_log_level(log_level):
            out = _Out(handover)
            frames = _Frames(handover, out)
            read_send, read_receive = anyio.create_memory_object_stream[Any](0)
            write_send, write_receive = anyio.create_memory_object_stream[Any](0)

            async def reader() -> None:
                async with read_send:
                    async for message in frames:
                        await read_send.send(SessionMessage(message))

            written = anyio.Event()

            async def writer() -> None:
                try:
                    async with write_receive:
                        async for session_message in write_receive:
                            await out.message(session_message.message)
                finally:
                    written.set()

            async with app._lifespan_manager(), anyio.create_task_group() as group:
                group.start_soon(reader)
                group.start_soon(writer)
                server = app._mcp_server
                await server.run(read_receive, write_send, server.create_initialization_options())
                await written.wait()  # the runner closed its write stream: every answer is out
                group.cancel_scope.cancel()  # a reader still blocked on stdin is not needed
    finally:
        handover.wire.release()
        reset_transport(token)


def _finish_and_exit(services: Services, reason: str) -> None:
    # A stuck cleanup must not keep the process alive: exit anyway after a bound.
    worker = threading.Thread(target=services.shutdown.run, daemon=True)
    worker.start()
    worker.join(SHUTDOWN_CLEANUP_SECONDS)
    say(f"stopped ({reason}), cleanup done")
    os._exit(0)


def run_stdio(app: FastMCP, services: Services, ready_line: str, handover: Handover) -> int:
    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        _finish_and_exit(services, signal.Signals(signum).name)

            group.start_soon(on_signal)
            say(ready_line)
            await _serve(app, services.settings.log_level, handover)
            group.cancel_scope.cancel()

    anyio.run(main)
    services.shutdown.run()
    say("stopped (stdin closed), cleanup done")
    return 0
