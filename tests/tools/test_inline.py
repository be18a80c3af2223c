"""Which tool bodies run on the event loop: bounded reads over stdio only (issue 15)."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import anyio

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import handoff
from agent_workspace_mcp.server import build
from agent_workspace_mcp.tools.base import bind


def _thread_of_call(settings: Settings, *, inline: bool = True) -> tuple[int, int]:
    """(the event loop's thread, the thread the bound body ran in)."""
    _, services = build(settings)
    bound = bind(lambda _services: threading.get_ident(), services, inline=inline)

    async def main() -> tuple[int, int]:
        return threading.get_ident(), await bound()

    return anyio.run(main)


def test_stdio_reads_run_on_the_loop(tmp_path: Path) -> None:
    loop, body = _thread_of_call(Settings(root=str(tmp_path)))
    assert body == loop


def test_http_reads_leave_the_shared_loop(tmp_path: Path) -> None:
    loop, body = _thread_of_call(Settings(root=str(tmp_path), http=True, no_auth=True))
    assert body != loop


def test_other_synchronous_bodies_leave_the_loop_in_one_handoff(tmp_path: Path) -> None:
    """A coroutine to FastMCP (which would otherwise hand it over through anyio, at twice
    the cost), marked so the journal middleware does its work in the same thread."""
    _, services = build(Settings(root=str(tmp_path)))
    bound = bind(lambda _services: None, services)
    assert inspect.iscoroutinefunction(bound) and handoff.is_threaded(bound)
    loop, body = _thread_of_call(Settings(root=str(tmp_path)), inline=False)
    assert body != loop
