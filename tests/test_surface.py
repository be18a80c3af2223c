"""The served surface has one home (issue 30): surface.compute decides what tools/list
shows, what --list-profiles prints, and why a tool that is not served is off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp.configuration import settings_from_sources
from agent_workspace_mcp.profiles import PROFILES
from agent_workspace_mcp.server import build, describe_surfaces
from tests.helpers import fails


def settings_for(root: Path, *argv: str):
    profile = argv[argv.index("--profile") + 1] if "--profile" in argv else "workspace-mcp"
    where = [] if PROFILES[profile].defaults.get("unconfined") else ["--root", str(root)]
    return settings_from_sources([*argv, *where], environ={}, dotenv_path=os.devnull)


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("--profile", "persona"),
        ("--profile", "coding-agent"),
        ("--profile", "coding-agent", "--tools", "read_file,grep,run_task"),
        ("--read-only", "--disable-tools", "grep"),
        ("--tasks", "--tools", "read_file,write_file,run_task", "--read-only"),
    ],
)
async def test_tools_list_is_the_computed_surface(tmp_path: Path, argv) -> None:
    from mcp.client import advertise

    app, services = build(settings_for(tmp_path, *argv))
    apps = [advertise("io.modelcontextprotocol/ui", {})]  # a host that renders MCP Apps
    async with Client(app, extensions=apps) as client:
        listed = [tool.name for tool in await client.list_tools()]
    assert services.surface is not None and sorted(listed) == sorted(services.surface.served)
    # A client without apps is not shown the tools only the review panel calls.
    async with Client(app) as client:
        plain = [tool.name for tool in await client.list_tools()]
    panel_only = {"review_changes_data", "review_undo"}
    assert sorted(plain) == sorted(set(services.surface.served) - panel_only)


def test_list_profiles_prints_the_same_surfaces(tmp_path: Path) -> None:
    lines = describe_surfaces().splitlines()
    for line, (name, profile) in zip(lines, PROFILES.items(), strict=True):
        _, services = build(settings_for(tmp_path, "--profile", name, "--no-audit"))
        assert line == f"{name} ({profile.source}): {', '.join(services.surface.served)}"


@pytest.mark.parametrize(
    ("argv", "tool", "why"),
    [
        (("--read-only",), "write_file", "the server is read-only (--read-only)"),
        (("--disable-tools", "grep"), "grep", "the operator turned it off (--disable-tools)"),
        (("--tools", "read_file"), "grep", "the operator's --tools leaves it out"),
        ((), "run_command", "the operator enables it with --shell (or --shell-any)"),
        (
            ("--profile", "coding-agent"),
            "grep",
            "this server serves it as search_text (the coding-agent profile)",
        ),
        (("--profile", "coding-agent"), "git_status", "the coding-agent profile does not serve it"),
    ],
)
async def test_an_agent_is_told_why_a_tool_is_off(tmp_path: Path, argv, tool, why) -> None:
    app, services = build(settings_for(tmp_path, *argv))
    assert services.surface.why_not(tool) == why
    async with Client(app) as client:
        assert await fails(client, tool, path="x") == f"{tool} is off: {why}"


@pytest.mark.parametrize(
    ("argv", "tool", "why"),
    [
        (
            ("--profile", "coding-agent", "--disable-tools", "search_text"),
            "grep",
            "the operator turned it off (--disable-tools)",
        ),
        (
            ("--http", "--no-auth"),
            "run_command",
            "the operator enables it with --shell (or --shell-any) and --allow-remote-exec",
        ),
        (
            ("--http", "--no-auth", "--shell"),
            "run_command",
            "command tools are off over HTTP unless the operator passes --allow-remote-exec",
        ),
    ],
)
def test_the_reason_follows_the_whole_configuration(tmp_path: Path, argv, tool, why) -> None:
    _, services = build(settings_for(tmp_path, *argv))
    assert services.surface.why_not(tool) == why
