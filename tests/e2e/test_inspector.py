"""The official MCP Inspector CLI drives the real server over stdio and over Streamable
HTTP with a bearer token (issue 14): tools/list, a tools/call, resources/read,
prompts/list, as a user of the Inspector would.

The Inspector needs Node 22 or newer. The `node@22` npm package provides that binary, so
the fixture installs both with npm into a cache directory once (about a minute) and
reuses them (tests/e2e/npm.py). Without npm or the registry the module is skipped with the
reason, except in CI (`CI` set), where a missing Inspector is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.http_server import RunningServer, start
from tests.e2e.npm import CACHE_ROOT, installed
from tests.helpers import missing

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NODE = "node@22"
CACHE = CACHE_ROOT / "inspector-2.12.0"
TOKEN = "tok-inspector-0123456789"


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    bin_dir = installed(CACHE.name, [NODE, INSPECTOR], "inspector")
    node = bin_dir / "node"
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True)
    if version.returncode != 0 or int(version.stdout.lstrip("v").split(".")[0]) < 22:
        missing(f"the node@22 package gave no Node 22 ({version.stdout.strip()})")
    # The Inspector's launcher runs `node` from PATH: put Node 22 first.
    return [str(node), str(bin_dir / "inspector"), "--cli"]


TOOL_IS_ERROR = 5  # the Inspector CLI's exit code for a tool answer with isError: true


def run_inspector(inspector: list[str], *args: str, code: int = 0) -> dict:
    env = {**os.environ, "PATH": f"{Path(inspector[0]).parent}:{os.environ['PATH']}"}
    env["MCP_CATALOG_PATH"] = str(CACHE / "catalog.json")  # not the user's ~/.mcp-inspector
    out = subprocess.run([*inspector, *args], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == code, (
        f"inspector {args} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    )
    return json.loads(out.stdout)


def exercise(inspector: list[str], target: list[str]) -> None:
    tools = run_inspector(inspector, *target, "--method", "tools/list")["tools"]
    names = {tool["name"] for tool in tools}
    assert {"read_file", "write_file", "edit_file", "grep", "list_files"} <= names
    assert all(tool["description"] and tool["inputSchema"]["type"] == "object" for tool in tools)

    called = run_inspector(
        inspector,
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        "path=hello.txt",
    )
    assert called["isError"] is False
    assert called["content"][0]["text"].startswith("1: hello from the inspector\n(sha256 ")

    refused = run_inspector(
        inspector,
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        "path=../x",
        code=TOOL_IS_ERROR,
    )
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "path outside workspace root: ../x"

    read = run_inspector(
        inspector, *target, "--method", "resources/read", "--uri", "resource://skills"
    )
    assert "workspace-session — " in read["contents"][0]["text"]

    prompts = run_inspector(inspector, *target, "--method", "prompts/list")["prompts"]
    assert {"resume", "new_skill", "plan_change"} <= {p["name"] for p in prompts}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.txt").write_text("hello from the inspector\n")
    return root


def test_inspector_over_stdio(inspector: list[str], project: Path) -> None:
    exercise(inspector, [sys.executable, "-m", "agent_workspace_mcp", str(project)])


def test_inspector_over_http_with_a_bearer_token(inspector: list[str], project: Path) -> None:
    server: RunningServer = start(project, "--token", TOKEN)
    try:
        exercise(
            inspector,
            [server.url, "--transport", "http", "--header", f"Authorization: Bearer {TOKEN}"],
        )
        env = {**os.environ, "PATH": f"{Path(inspector[0]).parent}:{os.environ['PATH']}"}
        env["MCP_CATALOG_PATH"] = str(CACHE / "catalog.json")
        denied = subprocess.run(
            [*inspector, server.url, "--transport", "http", "--method", "tools/list"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert denied.returncode != 0 and "read_file" not in denied.stdout
    finally:
        assert server.stop() == 0
