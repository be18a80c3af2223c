"""`review_changes` (issue 33): the text every client gets, the panel's data and undo
tools, and the panel resource itself (small, declared as an MCP App)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from tests.helpers import call, ok

PANEL = "ui://agent-workspace-mcp/review"


async def test_the_text_summary_lists_files_counts_and_how_to_undo(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    async with Client(create_server(Settings(root=str(tmp_path), audit=False))) as client:
        await ok(client, "edit_file", path="a.txt", old_string="two", new_string="2")
        await ok(client, "edit_file", path="a.txt", old_string="one", new_string="1")
        await ok(client, "write_file", path="b.txt", content="<script>x</script>\n")
        text = await ok(client, "review_changes")
        data = json.loads(await ok(client, "review_changes_data"))
        assert text.startswith("This session changed 2 files:")
        assert "modified  a.txt  +2 -2" in text and "created   b.txt  +1 -0" in text
        assert "restore_file" in text  # how to continue
        assert [f["path"] for f in data["files"]] == ["a.txt", "b.txt"]  # one net diff each
        a = data["files"][0]
        assert "-one" in a["lines"] and "+1" in a["lines"] and a["first"] in data["ids"]
        # Undo one file: a preview first, then only that file goes back.
        preview = await ok(client, "review_undo", ids=data["ids"], path="a.txt", dryRun=True)
        assert "a.txt" in preview and "b.txt" not in preview
        await ok(client, "review_undo", ids=data["ids"], path="a.txt")
        assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
        assert (tmp_path / "b.txt").exists()
        # The whole set: the same refusal rules as undo (a.txt changed since, by that
        # undo), and force on request.
        refused = await call(client, "review_undo", ids=data["ids"])
        assert refused.is_error and "a.txt was also changed by" in refused.text
        await ok(client, "review_undo", ids=data["ids"], force=True)
        assert not (tmp_path / "b.txt").exists()
        assert "changed no recorded file" in await ok(client, "review_changes")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_panel_is_a_small_declared_app(tmp_path: Path, mode: str) -> None:
    from mcp.client import advertise

    apps = [advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html;profile=mcp-app"]})]
    server = create_server(Settings(root=str(tmp_path), audit=False))
    async with Client(server, mode=mode) as plain:  # shows no apps: its model sees no panel tools
        names = {t.name for t in await plain.list_tools()}
        assert "review_changes" in names and not names & {"review_changes_data", "review_undo"}
    async with Client(server, mode=mode, extensions=apps) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert tools["review_changes"].meta["ui"]["resourceUri"] == PANEL
        for name in ("review_changes_data", "review_undo"):  # for the panel, not the model
            assert tools[name].meta["ui"]["visibility"] == ["app"]
        [content] = await client.read_resource(PANEL)
        assert content.mime_type == "text/html;profile=mcp-app"
        assert len(content.text.encode()) < 8_192  # loads at once (docs/PERFORMANCE.md)
        assert "textContent" in content.text and "innerHTML" not in content.text


async def test_review_needs_something_to_review_on_a_sessionless_call(tmp_path: Path) -> None:
    async with Client(create_server(Settings(root=str(tmp_path), audit=False))) as client:
        answer = await call(client, "review_changes", since="nope")
    assert answer.is_error and "nope" in answer.text


async def test_the_panel_lists_this_sessions_waiting_approvals(tmp_path: Path, monkeypatch) -> None:
    from agent_workspace_mcp.core import limits

    monkeypatch.setattr(limits, "CONFIRM_WAIT_SECONDS", 0.06)
    (tmp_path / "a.txt").write_text("x\n")
    settings = Settings(root=str(tmp_path), audit=False, confirm=("destructive",))
    async with Client(create_server(settings)) as client:
        assert (await ok(client, "delete_path", path="a.txt")).startswith("Not run yet")
        data = json.loads(await ok(client, "review_changes_data"))
    [waiting] = data["approvals"]
    assert waiting["tool"] == "delete_path" and "removes a.txt" in waiting["summary"]
