"""State files planted or damaged in shapes a parser chokes on (issue 43, item 21).

A `seen/writers` record nested a few thousand levels deep made every write_file change
the file and answer "internal error (RecursionError)"; a deeply nested `symbols.json`,
or a signature of `1e400`, made find_symbol fail on every call; a damaged
`approvals.json` failed closed with a raw Python message. Each now reads as damaged:
the call answers as usual and the record starts afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import limits
from tests.helpers import ok

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("class Alpha:\n    pass\n")
    state = tmp_path / ".workspace-mcp"
    (state / "seen").mkdir(parents=True)
    (state / "seen" / "writers.jsonl").write_text('{"a.py": ' + DEEP + "}\n")
    return tmp_path


async def test_a_deep_writers_record_costs_nothing(root: Path) -> None:
    async with Client(create_server(Settings(root=str(root), audit=False))) as client:
        wrote = await ok(client, "write_file", path="a.py", content="class Beta:\n    pass\n")
        assert wrote.startswith("Updated a.py"), wrote
        undone = await ok(client, "undo")
        assert undone.startswith("Undid 1 call"), undone
    journal = (root / ".workspace-mcp" / "journal.jsonl").read_text().splitlines()
    assert all('"ok"' in line or '"outcome"' not in line for line in journal), journal
    assert '"paths":["a.py"]' in journal[0]


@pytest.mark.parametrize(
    "index", [DEEP, '{"version": 1, "files": {"a.py": [[1e400, 1, 1, 1, 1], ["Alpha"]]}}']
)
async def test_a_damaged_symbol_index_still_answers(root: Path, index: str) -> None:
    (root / ".workspace-mcp" / "symbols.json").write_text(index)
    async with Client(create_server(Settings(root=str(root), audit=False))) as client:
        found = await ok(client, "find_symbol", name="Alpha")
    assert "a.py:1" in found, found


@pytest.mark.parametrize(
    "approvals", [DEEP, '{"approvals": {"ap-1": {"id": "ap-1", "created": "x", "expires": 1e400}}}']
)
async def test_a_damaged_approvals_file_asks_in_one_sentence(
    root: Path, approvals: str, monkeypatch
) -> None:
    monkeypatch.setattr(limits, "CONFIRM_WAIT_SECONDS", 0.06)
    (root / ".workspace-mcp" / "approvals.json").write_text(approvals)
    settings = Settings(
        root=str(root), audit=False, confirm=("destructive",), confirm_via=("console",)
    )
    async with Client(create_server(settings)) as client:
        answer = await ok(client, "delete_path", path="a.py")
    assert answer.startswith("Not run yet") and (root / "a.py").exists(), answer
    kept = json.loads((root / ".workspace-mcp" / "approvals.json").read_text())
    assert "ap-1" not in kept["approvals"]
