"""Which tool bodies run on the event loop: bounded reads over stdio only (issue 15)."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio

from agent_workspace_mcp import Settings
from agent_workspace_mcp.server import build
from agent_workspace_mcp.tools.base import bind


def _thread_of_call(settings: Settings) -> tuple[int, int]:
    """(the event loop's thread, the thread the bound body ran in)."""
    _, services = build(settings)
    bound = bind(lambda _services: threading.get_ident(), services, inline=True)

    async def main() -> tuple[int, int]:
        return threading.get_ident(), await bound()

    return anyio.run(main)


def test_stdio_reads_run_on_the_loop(tmp_path: Path) -> None:
    loop, body = _thread_of_call(Settings(root=str(tmp_path)))
    assert body == loop


def test_http_reads_leave_the_shared_loop(tmp_path: Path) -> None:
    loop, body = _thread_of_call(Settings(root=str(tmp_path), http=True, no_auth=True))
    assert body != loop
