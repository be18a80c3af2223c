"""Argument repair and validation errors, through the real client."""

from __future__ import annotations

from pathlib import Path

from fastmcp import Client

from agent_workspace_mcp import Settings
from agent_workspace_mcp.middleware.arguments import snake_to_camel
from tests.conftest import open_client
from tests.helpers import call, fails, ok


def test_snake_to_camel() -> None:
    assert snake_to_camel("old_string") == "oldString"
    assert snake_to_camel("replace_all") == "replaceAll"
    assert snake_to_camel("path") == "path"


async def test_array_sent_as_json_string_is_accepted(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    answer = await ok(client, "read_files", paths='["a.txt"]')
    assert answer.startswith("==> a.txt <==\n1: a\n(sha256 ")
    # A string that is not a JSON array stays a validation error.
    message = await fails(client, "read_files", paths="a.txt")
    assert message == (
        "invalid arguments for read_files: 'paths' must be a JSON array, "
        'e.g. ["src/a.py", "src/b.py"]'
    )


async def test_snake_case_spelling_is_accepted_but_not_advertised(client: Client, ws: Path) -> None:
    (ws / "a.txt").write_text("a")
    assert (
        await ok(client, "rename_path", path="a.txt", new_name="b.txt") == "Renamed a.txt -> b.txt"
    )
    tools = {t.name: t for t in await client.list_tools()}
    assert "new_name" not in tools["rename_path"].input_schema["properties"]
    # Both spellings at once: the camelCase one wins and the extra is reported.
    message = await fails(client, "rename_path", path="b.txt", newName="c.txt", new_name="d.txt")
    assert "unknown argument 'new_name'" in message


async def test_validation_errors_are_one_sentence(client: Client) -> None:
    assert (
        await fails(client, "read_file")
        == "invalid arguments for read_file: missing required argument 'path'"
    )
    assert await fails(client, "read_file", path="x", offset=0) == (
        "invalid arguments for read_file: 'offset': input should be greater than or equal to 1"
    )
    message = await fails(client, "read_file", path="x", bogus=1)
    assert message == (
        "invalid arguments for read_file: unknown argument 'bogus'"
        " (valid: path, offset, limit, workspace)"
    )
    assert (await call(client, "no_such_tool")).is_error


async def test_renamed_tools_get_the_same_sentences_and_repair(tmp_path: Path) -> None:
    # Found by the fuzz: FastMCP's transformed (renamed) tools raise a TypeError for a
    # missing or unknown argument, which read "internal error in search_text".
    (tmp_path / "a.txt").write_text("Alpha\n")
    settings = Settings(root=str(tmp_path), profile="coding-agent")
    async with open_client(settings) as client:
        assert await fails(client, "search_text") == (
            "invalid arguments for search_text: missing required argument 'pattern'"
        )
        message = await fails(client, "search_text", patern="x")
        assert message.startswith(
            "invalid arguments for search_text: unknown argument 'patern' (valid: pattern,"
        )
        # ...and the snake_case repair reaches them too.
        assert "a.txt:1: Alpha" in await ok(
            client, "search_text", pattern="alpha", ignore_case=True
        )
