"""The real Claude Code, Codex and opencode programs connect to the server with exactly
what `agent-workspace-mcp config` prints (issue 29), over stdio and over Streamable HTTP
with a bearer token that each client reads from its environment.

Each client runs offline with a throw-away HOME and no login, through the one command it
offers that connects to its MCP servers without a model: `claude mcp add` (the printed
command, run by a shell) then `claude mcp get`, Codex's `app-server` and its
`mcpServerStatus/list` request, and `opencode mcp list`. Over HTTP the server is started
with the command `config` prints on stderr, and a wrong token must leave each client
unconnected, so the header is shown to be the one that counts.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.http_server import free_port
from tests.e2e.npm import installed
from tests.helpers import raw_stdio_session

pytestmark = pytest.mark.slow

PACKAGES = [
    "node@22",
    "@anthropic-ai/claude-code@2.1.332",
    "@openai/codex@0.171.0",
    "opencode-ai@1.18.33",
]
CLI = [sys.executable, "-m", "agent_workspace_mcp"]
TOKEN = "tok-real-clients-0123456789"
CORE = {"read_file", "write_file", "edit_file", "grep", "list_files"}


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    return installed("clients-2026-12", PACKAGES, "opencode")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "hello.txt").write_text("hello from a real client\n")
    return root


def client_env(bin_dir: Path, home: Path, token: str | None) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE", "CODEX", "OPENAI", "ANTHROPIC", "OPENCODE"))
    }
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}:{env['PATH']}",
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
        CODEX_HOME=str(home / ".codex"),
        DISABLE_AUTOUPDATER="1",
        NO_COLOR="1",
    )
    env.pop("AGENT_WORKSPACE_TOKEN", None)
    if token is not None:
        env["AGENT_WORKSPACE_TOKEN"] = token
    return env


def config(client: str, *args: str) -> tuple[str, list[str]]:
    """What `config` prints: the entry (stdout) and its advice lines (stderr)."""
    out = subprocess.run(
        [*CLI, "config", client, *args], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    advice = [line.removeprefix("agent-workspace-mcp: ") for line in out.stderr.splitlines()]
    return out.stdout, advice


class HttpServer:
    """The server started with the command line `config --http` printed, as a shell runs it."""

    def __init__(self, advice: list[str], log: Path) -> None:
        line = next(a for a in advice if a.startswith("start the server with: "))
        command = line.removeprefix("start the server with: ")
        env = {**os.environ, "AGENT_WORKSPACE_TOKEN": TOKEN}
        self.proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )
        deadline = time.monotonic() + 30
        while "listening" not in log.read_text() and "serving" not in log.read_text():
            assert self.proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


@pytest.fixture(params=["stdio", "http"])
def transport(request) -> str:
    return request.param


def entry_for(client: str, project: Path, transport: str, tmp_path: Path):
    """(entry, server or None) for this transport, from exactly what `config` prints."""
    if transport == "stdio":
        return config(client, str(project))[0], None
    port = str(free_port())
    entry, advice = config(client, str(project), "--http", "--port", port, "--token", TOKEN)
    return entry, HttpServer(advice, tmp_path / f"server-{client}.log")


# --- Claude Code ------------------------------------------------------------------


def claude_mcp_get(project: Path, env: dict[str, str], entry: str) -> subprocess.CompletedProcess:
    """`claude mcp get`, asked once more when its tools/list missed Claude Code's fixed
    5 s budget. A fresh install's first start answers tools/list once FastMCP has loaded,
    which a CI machine running three test workers has taken over 5 s to do, twice in a row
    (2026-12-07): Claude Code stopped the server before it kept its answers. So the
    configured command is then started once here, as any earlier start would have been,
    and keeps them (core.answercache); the second answer stands."""

    def ask() -> subprocess.CompletedProcess:
        return subprocess.run(
            ["claude", "mcp", "get", "agent-workspace"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    got = ask()
    if "tools fetch failed" in got.stdout and "Request timed out" in got.stdout:
        if " -- " in entry:  # stdio: what follows is the command Claude Code starts
            started_once(shlex.split(entry.split(" -- ", 1)[1]), env, project)
        got = ask()
    return got


def started_once(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    """A stdio server started, asked initialize and tools/list, and stopped once both are
    answered (stdin open until then, as a client keeps it)."""
    raw_stdio_session(argv, [("tools/list", {})], stderr=subprocess.DEVNULL, env=env, cwd=cwd)


def test_claude_code(bin_dir: Path, project: Path, tmp_path: Path, transport: str) -> None:
    entry, server = entry_for("claude-code", project, transport, tmp_path)
    try:
        home = tmp_path / "home"
        added = subprocess.run(
            ["bash", "-c", entry],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            env=client_env(bin_dir, home, None),
        )
        assert added.returncode == 0, added.stdout + added.stderr
        for token, connected in ((TOKEN, True), ("not-the-token", transport == "stdio")):
            got = claude_mcp_get(project, client_env(bin_dir, home, token), entry)
            assert ("✔ Connected" in got.stdout) is connected, got.stdout + got.stderr
        assert TOKEN not in (home / ".claude.json").read_text()  # read at connect time
        # Its MCP log records what the server offered.
        logs = "".join(p.read_text() for p in home.glob(".cache/claude-cli-nodejs/*/mcp-logs-*/*"))
        assert '\\"hasTools\\":true' in logs or '"hasTools":true' in logs, logs[-2000:]
    finally:
        if server:
            server.stop()


# --- Codex ------------------------------------------------------------------------


def codex_status(bin_dir: Path, home: Path, token: str | None) -> dict:
    """Codex's own view of its MCP servers, through its app-server protocol."""
    proc = subprocess.Popen(
        ["codex", "app-server"],
        cwd=home,
        env=client_env(bin_dir, home, token),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()

    def ask(ident: int, method: str, params: dict) -> dict:
        proc.stdin.write(json.dumps({"id": ident, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while True:
            message = json.loads(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == ident:
                assert "result" in message, message
                return message["result"]

    try:
        ask(1, "initialize", {"clientInfo": {"name": "agent-workspace-tests", "version": "0"}})
        proc.stdin.write(json.dumps({"method": "initialized"}) + "\n")
        for attempt in range(30):
            servers = {s["name"]: s for s in ask(2 + attempt, "mcpServerStatus/list", {})["data"]}
            status = servers["agent-workspace"]
            if status["tools"] or status.get("toolsError"):
                return status
            time.sleep(1)
        return status
    finally:
        proc.kill()
        proc.wait()


def test_codex(bin_dir: Path, project: Path, tmp_path: Path, transport: str) -> None:
    entry, server = entry_for("codex", project, transport, tmp_path)
    try:
        home = tmp_path / "home"
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text(entry)
        status = codex_status(bin_dir, home, TOKEN)
        assert set(status["tools"]) >= CORE, status
        assert status["toolsError"] is None
        if transport == "http":
            assert status["authStatus"] == "bearerToken"
            refused = codex_status(bin_dir, home, "not-the-token")
            assert not refused["tools"] and refused["toolsError"], refused
    finally:
        if server:
            server.stop()


# --- opencode ---------------------------------------------------------------------


def test_opencode(bin_dir: Path, project: Path, tmp_path: Path, transport: str) -> None:
    entry, server = entry_for("opencode", project, transport, tmp_path)
    try:
        (project / "opencode.json").write_text(entry)
        home = tmp_path / "home"
        for token, connected in ((TOKEN, True), ("not-the-token", transport == "stdio")):
            got = subprocess.run(
                ["opencode", "mcp", "list"],
                cwd=project,
                capture_output=True,
                text=True,
                timeout=120,
                env=client_env(bin_dir, home, token),
            )
            screen = re.sub(r"\x1b\[[0-9;]*m", "", got.stdout + got.stderr)
            assert bool(re.search(r"✓ agent-workspace\s+connected", screen)) is connected, screen
    finally:
        if server:
            server.stop()
