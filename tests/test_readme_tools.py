"""The README's tool tables are generated from the registered tools (issue 29): a tool
added, renamed or re-described without regenerating them fails here."""

from __future__ import annotations

from pathlib import Path

from agent_workspace_mcp import toolsdoc

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_tool_tables_are_the_registered_tools() -> None:
    text = README.read_text(encoding="utf-8")
    assert toolsdoc.rewrite(text, toolsdoc.tables()) == text, (
        "README.md's tool tables are stale: regenerate them with "
        "`python -m agent_workspace_mcp.toolsdoc`"
    )


def test_every_registered_tool_has_a_row() -> None:
    documented = "\n".join(toolsdoc.tables().values())
    for tool in toolsdoc._tools():
        assert f"| `{tool.name}` |" in documented, f"{tool.name} is in no README section"
    rows = [line for line in documented.splitlines() if line.startswith("| `")]
    assert len(rows) == len(toolsdoc._tools())  # and none twice


def test_a_changed_description_is_drift() -> None:
    text = README.read_text(encoding="utf-8")
    stale = text.replace("Read a text file as numbered lines", "Read a file", 1)
    assert stale != text and toolsdoc.rewrite(stale, toolsdoc.tables()) == text
