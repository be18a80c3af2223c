"""The review panel's data pages (issue 43, item 16): a session that changed 120 files
was cut at ~80 KiB by the answer backstop into invalid JSON, and the panel showed
nothing. Every page is whole JSON under the budget, and the pages hold every file."""

from __future__ import annotations

import json
from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import limits
from tests.helpers import ok


async def test_a_big_review_comes_in_whole_json_pages(tmp_path: Path) -> None:
    body = "".join(f"line {i} of some ordinary source text\n" for i in range(60))
    async with Client(create_server(Settings(root=str(tmp_path), audit=False))) as client:
        for i in range(120):
            await ok(client, "write_file", path=f"src/f{i:03}.py", content=body)
        seen: list[str] = []
        after, pages = 0, 0
        while after is not None:
            text = await ok(client, "review_changes_data", after=after)
            assert len(text.encode()) <= limits.ANSWER_BYTES
            page = json.loads(text)  # whole JSON, every page
            seen += [f["path"] for f in page["files"]]
            after, pages = page["next"], pages + 1
            assert page["total"] == 121  # and the folder they were written into
    assert pages > 1 and seen == ["src", *(f"src/f{i:03}.py" for i in range(120))]


async def test_a_folder_made_for_a_file_is_named_as_one(tmp_path: Path) -> None:
    """Issue 44, item 4: the folder was labelled `kind  src  +0 -0`."""
    async with Client(create_server(Settings(root=str(tmp_path), audit=False))) as client:
        await ok(client, "write_file", path="src/a.py", content="a\n")
        text = await ok(client, "review_changes")
    assert "changed 1 file and 1 other path (folders, links):" in text, text
    assert "created dir  src  (first #" in text and "kind" not in text
