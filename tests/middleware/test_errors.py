"""One error layer: tool bodies just raise, the middleware shapes and nothing logs a
traceback for an agent's mistake; the answer budget is middleware too."""

from __future__ import annotations

import logging
from pathlib import Path

from fastmcp import Client

from tests.helpers import fails


async def test_expected_failures_are_one_sentence_without_a_traceback(
    client: Client, ws: Path, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    assert await fails(client, "read_file", path="missing.txt") == "not found: missing.txt"
    (ws / "dir").mkdir()
    text = await fails(client, "read_file", path="dir")
    assert text.startswith("dir: ") and "Error calling tool" not in text
    tracebacks = [r for r in caplog.records if r.exc_info and r.name.startswith("fastmcp")]
    assert tracebacks == []


async def test_a_validation_failure_names_the_argument(client: Client, ws: Path) -> None:
    text = await fails(client, "read_file", path="a", offset="not a number")
    assert text.startswith("invalid arguments for read_file: 'offset'")


async def test_unknown_tools_say_what_to_do(client: Client) -> None:
    assert await fails(client, "run_command", command=["ls"]) == (
        "run_command is off: the operator enables it with --shell (or --shell-any)"
    )
    assert await fails(client, "bash", command="ls") == (
        "bash is off: the operator enables it with --shell-any (or --unconfined)"
    )
    assert (
        await fails(client, "read_flie", path="a")
        == "unknown tool 'read_flie': did you mean read_file?"
    )
    assert await fails(client, "zzz") == "unknown tool 'zzz': tools/list shows the available tools"


async def test_shape_errors_show_an_example_and_nested_fields(ws: Path) -> None:
    from agent_workspace_mcp import Settings
    from tests.conftest import open_client

    async with open_client(Settings(root=str(ws), shell_mode="allowlist")) as c:
        assert await fails(c, "run_command", command="npm --version") == (
            "invalid arguments for run_command: 'command' must be a JSON array, "
            'e.g. ["npm", "--version"]'
        )
        await c.call_tool("change_create", {"title": "Try"})
        text = await fails(
            c, "task_update", updates=[{"taskId": "T1", "status": "done", "bogus": 1}]
        )
        assert text == (
            "invalid arguments for task_update: unknown argument 'updates[0].bogus' "
            "(valid: taskId, status, note)"
        )
