"""What tools/list sends (issue 15): lean on the wire, the same calls accepted."""

from __future__ import annotations

import json
from pathlib import Path

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import ok


async def listing(settings: Settings) -> dict:
    async with open_client(settings) as client:
        result = await client.list_tools_mcp()
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_no_null_unions_no_framework_meta_no_single_workspace_argument(ws: Path) -> None:
    payload = await listing(Settings(root=str(ws)))
    text = json.dumps(payload)
    assert '{"type": "null"}' not in text and '"default": null' not in text
    # Only what a tool declares itself goes out: the MCP Apps `ui` entry of the review
    # tool (hosts need it to render the panel), never FastMCP's own tags; the panel's
    # app-only tools only to a client that declares MCP Apps (tests/tools/test_review.py).
    metas = {t["name"]: t["_meta"] for t in payload["tools"] if "_meta" in t}
    assert metas == {"review_changes": {"ui": {"resourceUri": "ui://agent-workspace-mcp/review"}}}
    assert '"additionalProperties"' not in text
    grep = next(t for t in payload["tools"] if t["name"] == "grep")
    assert grep["inputSchema"]["properties"]["path"] == {
        "type": "string",
        "description": "Directory or file (default: the root).",
    }
    assert not any("workspace" in t["inputSchema"]["properties"] for t in payload["tools"])
    # The default surface stays within the budget (bench/overhead.py reports it).
    assert len(json.dumps(payload, separators=(",", ":"))) / len(payload["tools"]) <= 550


async def test_several_workspaces_keep_the_argument(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    settings = Settings(root=str(tmp_path / "one"), workspaces=(("api", str(tmp_path / "two")),))
    payload = await listing(settings)
    read = next(t for t in payload["tools"] if t["name"] == "read_file")
    assert read["inputSchema"]["properties"]["workspace"] == {
        "type": "string",
        "description": "Workspace name from workspace_list; omit for the primary workspace.",
        "x-mcp-header": "Workspace",  # routable (SEP-2243): tests/e2e/test_param_headers.py
    }


async def test_the_same_inputs_are_still_accepted(ws: Path) -> None:
    """Leaner advertising, unchanged validation: an explicit null and a `workspace` that
    names the only workspace still work; an unknown argument is still refused."""
    (ws / "a.txt").write_text("x\n")
    async with open_client(Settings(root=str(ws))) as client:
        assert "1: x" in await ok(client, "read_file", path="a.txt", workspace="default")
        assert "a.txt:1: x" in await ok(client, "grep", pattern="x", path=None, include=None)
        refused = await client.call_tool(
            "read_file", {"path": "a.txt", "nope": 1}, raise_on_error=False
        )
        assert refused.is_error and "nope" in refused.content[0].text
