"""Ready-made tool schemas (issue 15, cold start): the server they build is the server
FastMCP would build, and the shipped table is current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import schemagen
from agent_workspace_mcp.configuration import settings_from_sources
from agent_workspace_mcp.server import build
from agent_workspace_mcp.tools import schemas
from tests.helpers import fails, ok


def _settings(argv: list[str], root: Path):
    return settings_from_sources(
        [arg.format(root=root) for arg in argv], environ={}, dotenv_path=""
    )


async def _surface(argv: list[str], root: Path) -> tuple[list[dict], list[dict]]:
    """Each registered tool as FastMCP holds it, and the tool list as a client reads it."""
    app, _ = build(_settings(argv, root))
    held = [
        # Functions compare by identity: each build makes its own.
        tool.model_dump(exclude={"fn", "forwarding_fn", "parent_tool"})
        for tool in sorted(await app.list_tools(run_middleware=False), key=lambda t: t.name)
    ]
    async with Client(app) as client:
        wire = [tool.model_dump() for tool in await client.list_tools()]
    return held, wire


def test_the_table_is_current() -> None:
    assert schemas.TABLE.read_text(encoding="utf-8") == schemagen.render(schemagen.generate()), (
        "tools/schemas.json is stale: regenerate it with "
        "`python -m agent_workspace_mcp.schemagen --write`"
    )


@pytest.mark.parametrize("argv", schemagen.GENERATED_FROM, ids=" ".join)
async def test_same_server_with_and_without_the_table(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the unconfined profile's workspace
    built = []  # tools FastMCP had to build: none while the table is current
    from_function = schemas.FunctionTool.from_function
    monkeypatch.setattr(
        schemas.FunctionTool,
        "from_function",
        lambda fn, **kw: built.append(fn.__name__) or from_function(fn, **kw),
    )
    with_table = await _surface(argv, tmp_path)
    assert built == []
    monkeypatch.setattr(schemas, "_table", {})  # every tool built by FastMCP alone
    assert await _surface(argv, tmp_path) == with_table
    assert with_table[0]


async def test_listed_schemas_have_every_definition_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clients that cannot resolve a `$ref` (VS Code Copilot) still get whole schemas, now
    that FastMCP no longer inlines them on each list: from the table, or built at start."""
    monkeypatch.chdir(tmp_path)
    listed = set()
    for table in (None, {}):  # the shipped table, then none: every tool built by FastMCP
        if table is not None:
            monkeypatch.setattr(schemas, "_table", table)
        for argv in schemagen.GENERATED_FROM:
            _, wire = await _surface(argv, tmp_path)
            text = json.dumps([tool["input_schema"] for tool in wire])
            assert "$ref" not in text and "$defs" not in text, argv
            listed |= {tool["name"] for tool in wire}
    # The tools whose arguments are models (pydantic writes those as $defs and $ref).
    assert {"patch", "task_update", "edit"} <= listed


async def test_ready_made_tools_still_validate_and_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    app, _ = build(_settings(["--root", "{root}", "--shell", "--shell-allow", "ls"], tmp_path))
    async with Client(app) as client:
        assert "two" in await ok(client, "read_file", path="a.txt", offset=2)
        assert "offset" in await fails(client, "read_file", path="a.txt", offset=0)
        # run_command takes a Context; that it is injected is test_shell's progress test.
        assert "a.txt" in await ok(client, "run_command", command=["ls"])


def test_a_changed_signature_is_built_the_usual_way(monkeypatch: pytest.MonkeyPatch) -> None:
    def read_file(path: str, offset: int = 1) -> str:  # same name, other signature
        return path

    monkeypatch.setattr(read_file, "__module__", "agent_workspace_mcp.tools.files")
    monkeypatch.setattr(read_file, "__qualname__", "read_file")
    assert schemas._cached(read_file) is None
    tool = schemas.function_tool(
        read_file, title=None, description="d", annotations=None, tags=set()
    )
    assert set(tool.parameters["properties"]) == {"path", "offset"}
