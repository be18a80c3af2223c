"""--tool-search (issue 15): a short list, a search over the rest, every tool still works."""

from __future__ import annotations

import json
from pathlib import Path

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import fails, ok


async def test_only_the_core_tools_and_the_search_are_listed(ws: Path) -> None:
    (ws / "a.txt").write_text("hello\n")
    async with open_client(Settings(root=str(ws), tool_search=True)) as client:
        listed = sorted(t.name for t in await client.list_tools())
        assert listed == sorted(
            [
                "read_file",
                "write_file",
                "edit_file",
                "grep",
                "list_files",
                "search_tools",
                "call_tool",
            ]
        )
        found = json.loads(await ok(client, "search_tools", query="git diff of the working tree"))
        assert "git_diff" in [tool["name"] for tool in found]
        # Hidden tools work through the proxy and directly, with our answers and errors.
        via_proxy = await ok(client, "call_tool", name="file_info", arguments={"path": "a.txt"})
        assert "regular file" in via_proxy or "size" in via_proxy
        assert "default" in await ok(client, "workspace_list")
        assert await fails(client, "call_tool", name="read_file", arguments={"path": "../x"}) == (
            "path outside workspace root: ../x"
        )


async def test_profiles_keep_their_own_core_names(ws: Path) -> None:
    settings = Settings(root=str(ws), tool_search=True, profile="coding-agent")
    async with open_client(settings) as client:
        listed = {t.name for t in await client.list_tools()}
    assert "search_text" in listed and "grep" not in listed


async def test_the_proxy_names_an_unknown_or_hidden_tool(ws: Path) -> None:
    """Issue 28 item 13: `internal error in call_tool (NotFoundError)` before."""
    async with open_client(Settings(root=str(ws), tool_search=True, read_only=True)) as client:
        hidden = await fails(client, "call_tool", name="write_file", arguments={"path": "a"})
        assert hidden == "write_file is off: the server is read-only (--read-only)"
        unknown = await fails(client, "call_tool", name="nosuch", arguments={})
        assert unknown.startswith("unknown tool 'nosuch'") and "internal" not in unknown
    assert not (ws / "a").exists()
