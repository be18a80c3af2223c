"""`agent-workspace-mcp check [server options]`: start the server as a client would and
use it: initialize, list tools, list files, read one. One line per step with its time;
exit 1 with the reason at the first step that fails (exit 2 for bad options)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import TextIO

from .config import server_args, server_command
from .configuration import PROG, preflight, settings_from_sources
from .core.echo import terminal_safe
from .core.errors import ConfigError
from .core.limits import CHECK_LOG_LINES
from .core.operator import say


def out(text: str) -> None:
    """Everything check prints: file names and server lines may hold ESC, BEL or OSC
    sequences a terminal would run."""
    sys.stdout.write(terminal_safe(text))


def main(argv: list[str]) -> int:
    try:
        settings = settings_from_sources(argv, environ={}, dotenv_path=os.devnull)
        preflight(settings)
    except ConfigError as exc:
        say(f"error: {exc}")
        return 2
    if settings.http:
        say("error: check talks to the server over stdio; leave out --http")
        return 2
    import anyio

    command = server_command()
    return anyio.run(_check, command, server_args(settings))


async def _check(command: list[str], args: list[str]) -> int:
    # The server's stderr (start-up line, audit lines) is kept aside: its start-up line is
    # shown on success, its last lines on failure, where they usually hold the reason.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as server_log:
        code = await _steps(command, args, server_log)
        server_log.seek(0)
        said = [line.rstrip() for line in server_log if line.strip()]
    if code == 0:
        ready = next((line for line in said if line.startswith(f"{PROG}: v")), None)
        if ready:
            out(f"    {ready}\n")
    else:
        for line in said[-CHECK_LOG_LINES:]:
            out(f"    server: {line}\n")
    return code


async def _steps(command: list[str], args: list[str], server_log: TextIO) -> int:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    def line(step: str, started: float, detail: str) -> None:
        out(f"ok  {step}: {detail} ({(time.monotonic() - started) * 1000:.0f} ms)\n")

    step = "start and initialize"
    started = time.monotonic()
    try:
        transport = StdioTransport(
            command[0], [*command[1:], *args], keep_alive=False, log_file=server_log
        )
        async with Client(transport, timeout=60) as client:
            line(step, started, f"{' '.join(command)} answered")
            step, started = "tools/list", time.monotonic()
            tools = await client.list_tools()
            line(step, started, f"{len(tools)} tools")
            names = {tool.name for tool in tools}
            # Exercise what the served profile has (persona has no list_files).
            if "list_files" not in names:
                out("ok  list_files: not served by this profile; nothing more to try\n")
                return 0
            reader = "read_file" if "read_file" in names else "read"
            step, started = "list_files", time.monotonic()
            listing = await client.call_tool("list_files", {"limit": 50})
            said = listing.content[0].text
            lines = [] if said.startswith("no files") else said.splitlines()
            entries = [e for e in lines if e and e[0] != "("]
            line(step, started, f"{len(entries)} entries")
            target = next((e for e in entries if not e.endswith("/")), None)
            if target is None:
                out("ok  read_file: nothing to read (no files in the workspace)\n")
                return 0
            if reader not in names:
                out("ok  read_file: not served by this profile\n")
                return 0
            step, started = f"{reader} {target}", time.monotonic()
            await client.call_tool(reader, {"path": target})
            line(step, started, "read")
    except Exception as exc:
        out(f"FAIL {step}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}\n")
        return 1
    return 0
