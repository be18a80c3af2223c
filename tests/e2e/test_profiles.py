"""`--profile`: each source document's tool names and argument names, through the real CLI
over stdio and a real client (issue 13)."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from agent_workspace_mcp.configuration import settings_from_sources
from agent_workspace_mcp.profiles import PROFILES

NO_DOTENV = "/nonexistent/.env"


def cli_client(root: Path, *args: str) -> Client:
    argv = ["-m", "agent_workspace_mcp", *args]
    return Client(StdioTransport(sys.executable, argv, cwd=str(root)))


async def call(client: Client, tool: str, **arguments):
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    text = "\n".join(getattr(b, "text", "") for b in result.content)
    return result.is_error, text


async def test_persona_profile(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "img.bin").write_bytes(b"\x00\x01binary\xff")
    async with cli_client(root, "--profile", "persona") as client:
        names = {tool.name for tool in await client.list_tools()}
        assert names == {"read", "write", "edit", "bash", "skill"}
        resources = {str(r.uri) for r in await client.list_resources()}
        assert {"resource://cwd", "resource://skills"} <= resources
        # Unconfined: an absolute path anywhere this user can reach.
        target = tmp_path / "notes.txt"
        assert not (await call(client, "write", path=str(target), content="one\ntwo\nthree\n"))[0]
        error, text = await call(client, "read", path=str(target), offset=2, limit=1)
        assert not error and text.splitlines()[0] == "2: two"
        error, text = await call(client, "read", path="img.bin")
        assert not error and text.endswith(base64.b64encode(b"\x00\x01binary\xff").decode())
        error, text = await call(
            client,
            "edit",
            path=str(target),
            edits=[
                {"old_string": "one", "new_string": "1"},
                {"old_string": "1\ntwo", "new_string": "1\n2"},
            ],
        )
        assert not error, text
        assert target.read_text() == "1\n2\nthree\n"
        # All or nothing: the second edit fails, the first is not written either.
        error, text = await call(
            client,
            "edit",
            path=str(target),
            edits=[
                {"old_string": "three", "new_string": "3"},
                {"old_string": "missing", "new_string": "x"},
            ],
        )
        assert error and "edit[1] failed" in text and target.read_text() == "1\n2\nthree\n"
        error, text = await call(client, "bash", command="echo $((6*7)) && pwd")
        assert not error and "42" in text


async def test_coding_agent_profile(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def needle():\n    pass\n")
    async with cli_client(root, "--profile", "coding-agent", "--root", str(root)) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert names == set(PROFILES["coding-agent"].tools)
        error, text = await call(client, "search_text", pattern="needle")
        assert not error and text.startswith("a.py:1: def needle():")
        error, text = await call(client, "read_file", path="a.py")
        assert not error and text.startswith("1: def needle():")
        error, text = await call(client, "grep", pattern="needle")
        assert error and "grep" in text


def test_profile_defaults_yield_to_explicit_settings() -> None:
    persona = settings_from_sources(["--profile", "persona"], {}, NO_DOTENV)
    assert persona.unconfined is True and persona.http is False
    assert persona.allow_remote_exec is True  # its only gate is JWT auth
    served = settings_from_sources(["--profile", "persona", "--port", "9100"], {}, NO_DOTENV)
    assert served.http is True and served.port == 9100
    explicit = settings_from_sources(
        ["--profile", "persona"], {"WORKSPACE_MCP_UNCONFINED": "false"}, NO_DOTENV
    )
    assert explicit.unconfined is False
    coding = settings_from_sources(
        [],
        {
            "WORKSPACE_MCP_PROFILE": "coding-agent",
            "CODING_AGENT_MCP_API_KEYS": "ci=tok-1234567890",
            "CODING_AGENT_MCP_EXECUTION_BACKEND": "local",
        },
        NO_DOTENV,
    )
    assert coding.tasks is True and coding.allow_remote_exec is True
    assert coding.api_keys == (("ci", "tok-1234567890"),)


def test_list_profiles_prints_one_line_each() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", "--list-profiles"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0 and len(lines) == len(PROFILES)
    assert lines[1] == "persona (persona-mcp-workspace.md): read, write, edit, bash, skill"
