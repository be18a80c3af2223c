"""Every input bounded (issue 19): argument limits checked before any work, errors that
quote input clipped, "Available:" lists bounded, state lines safe for line splitters."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings
from agent_workspace_mcp.core import limits
from agent_workspace_mcp.core.echo import bounded, echo, listing
from tests.conftest import open_client
from tests.helpers import call, fails, ok, tree


def string_arguments(node: dict, defs: dict, name: str | None = None) -> set[str]:
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    found = {name} if node.get("type") == "string" and name else set()
    for option in node.get("anyOf", []):
        found |= string_arguments(option, defs, name)
    if node.get("type") == "array":
        found |= string_arguments(node.get("items", {}), defs, name)
    for key, prop in node.get("properties", {}).items():
        found |= string_arguments(prop, defs, key)
    return found


@pytest.fixture
async def everything(tmp_path: Path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    settings = Settings(
        root=str(tmp_path / "one"),
        workspaces=(("api", str(tmp_path / "two")),),
        shell_mode="any",
        tasks=True,
    )
    async with open_client(settings) as client:
        yield client, tmp_path / "one"


async def test_every_string_argument_has_a_documented_limit(everything) -> None:
    client, _ = everything
    names: set[str] = set()
    for tool in await client.list_tools():
        names |= string_arguments(tool.input_schema, tool.input_schema.get("$defs", {}))
    assert len(names) > 30
    undocumented = names - set(limits.ARGUMENT_CHARS)
    assert not undocumented, f"add these to limits.ARGUMENT_CHARS: {sorted(undocumented)}"


@pytest.mark.parametrize(
    ("tool", "argument", "extra"),
    [
        ("read_file", "path", {}),
        ("write_file", "content", {"path": "big.txt"}),
        ("list_files", "pattern", {}),
        ("grep", "pattern", {}),
        ("edit_file", "oldString", {"path": "a.txt", "newString": "x"}),
        ("remember", "text", {}),
        ("rename_path", "newName", {"path": "a.txt"}),
        ("run_command", "command", {}),
        ("read_file", "workspace", {"path": "a.txt"}),
    ],
)
async def test_one_past_the_limit_is_refused_before_any_work(everything, tool, argument, extra):
    client, root = everything
    (root / "a.txt").write_text("alpha\n")
    before = tree(root)
    limit = limits.ARGUMENT_CHARS[argument]
    value = "a" * (limit + 1)
    arguments = {**extra, argument: [value] if argument == "command" else value}
    text = await fails(client, tool, **arguments)
    assert text == (
        f"invalid arguments for {tool}: '{argument}' is {limit + 1:,} characters long; "
        f"the limit is {limit:,}"
    )
    assert tree(root) == before


async def test_at_the_limit_the_tool_itself_decides(everything) -> None:
    client, _ = everything
    text = await fails(client, "read_file", path="a" * limits.PATH_MAX_CHARS)
    assert "limit is" not in text  # not the bounds check: the file does not exist
    pattern = "a" * limits.GLOB_MAX_CHARS
    assert "no files found" in await ok(client, "list_files", pattern=pattern)


async def test_depth_items_and_argument_names_are_bounded(everything) -> None:
    client, _ = everything
    deep: object = "x"
    for _ in range(limits.ARGUMENT_MAX_DEPTH + 1):
        deep = [deep]
    assert "nests deeper than" in await fails(client, "read_files", paths=deep)
    many = ["a.txt"] * (limits.ARGUMENT_MAX_ITEMS + 1)
    assert "items; the limit is" in await fails(client, "read_files", paths=many)
    text = await fails(client, "read_file", path="a.txt", **{"k" * 1_000_000: 1})
    assert "an argument name is longer than" in text and "(1,000,000 characters)" in text


async def test_lone_surrogates_are_refused_before_any_work(everything) -> None:
    client, _ = everything
    # Found by the fuzz: the OS cannot encode "\udecb", and delete_path ended in an
    # internal error. Over the wire the frame check refuses it; in-process, this does.
    text = await fails(client, "delete_path", path="a\udecbb")
    assert text == (
        "invalid arguments for delete_path: 'path' holds a lone surrogate (\\udecb); "
        "arguments must be valid Unicode"
    )
    assert "lone surrogate" in await fails(client, "run_command", command=["echo", "\ud800"])


async def test_errors_that_quote_input_are_clipped(everything) -> None:
    client, _ = everything
    for tool, arguments in [
        ("skill", {"name": "s" * 150}),
        ("job_status", {"jobId": "j" * 150}),
        ("change_status", {"changeId": "c" * 150}),
        ("run_task", {"runner": "r" * 150, "task": "test"}),
        ("read_file", {"path": "a.txt", "workspace": "w" * 150}),
        ("work_log", {"since": "t" * 150}),
    ]:
        text = await fails(client, tool, **arguments)
        assert "… (150 characters)" in text, (tool, text)
    unknown_tool = await call(client, "x" * 100_000)
    assert unknown_tool.is_error and len(unknown_tool.text) < 300, unknown_tool.text


async def test_resource_uris_and_prompt_names_are_bounded(everything) -> None:
    client, _ = everything
    # FastMCP quotes a URI or prompt name it cannot find whole: 100 KB in, 100 KB out.
    with pytest.raises(Exception) as refused:
        await client.read_resource("skill://" + "s" * 100_000 + "/SKILL.md")
    assert str(refused.value) == (
        f"the resource URI is 100,017 characters long; the limit is {limits.RESOURCE_URI_MAX_CHARS}"
    )
    with pytest.raises(Exception) as refused:
        await client.get_prompt("p" * 100_000)
    assert len(str(refused.value)) < 100 and "the limit is" in str(refused.value)
    assert await client.read_resource("resource://skills")  # still answering


async def test_available_lists_are_bounded(everything) -> None:
    client, _ = everything
    for n in range(limits.ECHO_LISTED + 5):
        await ok(client, "change_create", title=f"change number {n}")
    text = await fails(client, "change_status", changeId="no-such-change")
    assert text.endswith(" and 5 more"), text


async def test_a_brace_bomb_glob_is_refused_at_once(everything) -> None:
    client, _ = everything
    started = time.monotonic()
    text = await fails(client, "list_files", pattern="{a,b}" * 100)
    assert text == (
        f"glob expands to more than {limits.GLOB_MAX_EXPANSIONS} patterns (braces multiply); "
        "use fewer {a,b} groups"
    )
    assert time.monotonic() - started < 5  # was 0.9 s and an internal error


async def test_state_lines_survive_line_splitters(client: Client, ws: Path) -> None:
    note = "before\u2028between\u2029after"
    await ok(client, "remember", text=note)
    await ok(client, "write_file", path="odd\u2028name.txt", content="x")
    for name in ("notes.jsonl", "journal.jsonl"):
        raw = (ws / ".workspace-mcp" / name).read_text()
        assert "\u2028" not in raw and "\u2029" not in raw
        assert len(raw.splitlines()) == raw.count("\n")
        records = [json.loads(line) for line in raw.splitlines()]
        assert any(
            r.get("text") == note or "odd\u2028name.txt" in r.get("paths", ()) for r in records
        )
    # recall shows line separators escaped, so a note can never fake a second line
    assert "before\\u2028between\\u2029after" in await ok(client, "recall")


async def test_non_utf8_file_names_are_shown_escaped(client: Client, ws: Path) -> None:
    try:
        (ws / os.fsdecode(b"\xffodd.txt")).write_text("hello\n")
    except OSError:
        pytest.skip("this file system refuses file names that are not UTF-8")
    # Before: the answer held U+DCFF, could not be serialized, and the client got no reply.
    assert await ok(client, "list_files") == "\\xffodd.txt"
    assert (await ok(client, "grep", pattern="hello")).startswith("\\xffodd.txt:1: hello")


def test_echo_listing_and_bounded() -> None:
    assert echo("short") == "short"
    assert echo("a\x00\u2028\udc80") == "a\\x00\\u2028\\udc80"
    clipped = echo("p" * 5000)
    assert clipped.endswith("… (5,000 characters)") and len(clipped) < 160
    assert listing([]) == "none"
    assert listing(range(12)) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"
    message = bounded("not found: " + "d/" * 3000)
    assert len(message) <= limits.ERROR_MAX_CHARS and message.startswith("not found: d/d/")
    assert (
        bounded("x " * 1000).endswith("…") and len(bounded("x " * 1000)) == limits.ERROR_MAX_CHARS
    )


def test_the_readme_limits_table_is_generated() -> None:
    from agent_workspace_mcp.core.bounds import limits_table

    text = (Path(__file__).parents[2] / "README.md").read_text()
    match = re.search(r"<!-- limits:start -->\n(.*?)\n<!-- limits:end -->", text, re.S)
    assert match, "README.md lacks the generated input-limits table markers"
    assert match.group(1) == limits_table(), (
        "README.md's input-limits table is stale: regenerate it with "
        "`python -m agent_workspace_mcp.configuration`"
    )
