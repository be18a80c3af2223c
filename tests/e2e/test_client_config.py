"""`agent-workspace-mcp config CLIENT`: each snippet parses as its client reads it and names
a command that really starts the server (issue 14)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.cli import main

CLI = [sys.executable, "-m", "agent_workspace_mcp"]


def command_of(client: str, text: str, name: str = "agent-workspace") -> list[str]:
    if client in ("claude-desktop", "cursor"):
        entry = json.loads(text)["mcpServers"][name]
        return [entry["command"], *entry["args"]]
    if client == "opencode":
        return json.loads(text)["mcp"][name]["command"]
    if client == "vscode":
        entry = json.loads(text)["servers"][name]
        assert entry["type"] == "stdio"
        return [entry["command"], *entry["args"]]
    if client == "codex":
        entry = tomllib.loads(text)["mcp_servers"][name]
        return [entry["command"], *entry["args"]]
    argv = shlex.split(text)
    assert argv[:5] == ["claude", "mcp", "add", name, "--"]
    return argv[5:]


@pytest.mark.parametrize(
    "client", ["claude-desktop", "cursor", "claude-code", "opencode", "codex", "vscode"]
)
def test_each_snippet_parses_and_starts_the_server(tmp_path: Path, client: str) -> None:
    (tmp_path / "proj").mkdir()
    out = run_config(client, "proj", "--read-only", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    argv = command_of(client, out.stdout.decode())
    assert Path(argv[0]).is_absolute() and Path(argv[0]).exists()
    assert argv[-3:] == ["--root", str(tmp_path / "proj"), "--read-only"]
    # Started from anywhere (stdin closed at once), it serves and stops cleanly.
    started = subprocess.run(
        argv, cwd="/", stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 0, started.stderr
    assert "19 tools (+1 for hosts with MCP Apps)" in started.stderr
    assert str(tmp_path / "proj") in started.stderr


def test_config_refuses_what_would_not_start_and_keeps_secrets_out(tmp_path: Path) -> None:
    out = subprocess.run(
        [*CLI, "config", "cursor", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert "does not exist" in out.stderr
    env_out = subprocess.run(
        [*CLI, "config", "cursor", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "MCP_TOKEN": "tok-secret-value-123456"},
    )
    assert env_out.returncode == 0 and "tok-secret" not in env_out.stdout


def test_check_passes_and_fails_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.txt").write_text("hello\n")
    out = subprocess.run(
        [*CLI, "check", str(tmp_path / "proj")], capture_output=True, text=True, timeout=120
    )
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stdout + out.stderr
    assert [line.split(":")[0] for line in lines] == [
        "ok  start and initialize",
        "ok  tools/list",
        "ok  list_files",
        "ok  read_file a.txt",
        "    agent-workspace-mcp",  # the server's own start-up line, nothing else of its stderr
    ]
    served = len(anyio.run(create_server(Settings(root=str(tmp_path / "proj"))).list_tools))
    assert lines[1].startswith(f"ok  tools/list: {served} tools (")
    assert "audit:" not in out.stdout + out.stderr
    # A tool the profile does not serve is skipped, not failed (issue 29) ...
    narrowed = subprocess.run(
        [*CLI, "check", str(tmp_path / "proj"), "--tools", "grep"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert narrowed.returncode == 0, narrowed.stdout
    assert "ok  list_files: not served by this profile" in narrowed.stdout
    # ... and an empty listing is no file to read ("no files found" was read as a name).
    (tmp_path / "empty").mkdir()
    empty = subprocess.run(
        [*CLI, "check", str(tmp_path / "empty")], capture_output=True, text=True, timeout=120
    )
    assert empty.returncode == 0, empty.stdout
    assert "ok  read_file: nothing to read (no files in the workspace)" in empty.stdout


def test_check_fails_at_the_step_with_the_servers_last_lines(capsys) -> None:
    """A server that stops before answering: exit 1, the step that failed, and the last
    lines of its stderr, where the reason usually is (at most CHECK_LOG_LINES)."""
    from agent_workspace_mcp.check import _check
    from agent_workspace_mcp.core.limits import CHECK_LOG_LINES

    said = "".join(f"line {n}\\n" for n in range(CHECK_LOG_LINES + 5)) + "the reason\\n"
    stops = [sys.executable, "-c", f"import sys; sys.stderr.write('{said}'); sys.exit(3)"]
    assert anyio.run(_check, stops, []) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("FAIL start and initialize: ")
    assert lines[1:] == [
        *(f"    server: line {n}" for n in range(6, CHECK_LOG_LINES + 5)),
        "    server: the reason",
    ]


def run_config(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`config` run in this process, as its own process would run it (what it prints,
    its exit code): it starts nothing and reads no environment, so the ~60 calls here
    need not pay an interpreter each. The snippets' commands are still started for
    real (test_each_snippet_parses_and_starts_the_server), and so is one refusal
    (test_config_refuses_what_would_not_start_and_keeps_secrets_out)."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["config", *args])
    finally:
        os.chdir(before)
    encode = functools.partial(str.encode, encoding="utf-8", errors="surrogateescape")
    return subprocess.CompletedProcess(args, code, encode(out.getvalue()), encode(err.getvalue()))


def test_config_paths_are_absolute_quoted_or_refused(tmp_path: Path) -> None:
    """Issue 28 item 16: a non-UTF-8 root printed TOML Codex could not parse; a relative
    --audit-log stayed relative (the client starts the server elsewhere)."""
    odd = tmp_path / 'we"ird\\ \x7f\tname'
    odd.mkdir()
    out = run_config("codex", str(odd), "--audit-log", "audit.log", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    argv = command_of("codex", out.stdout.decode("utf-8"))
    assert argv[-4:] == ["--root", str(odd), "--audit-log", str(tmp_path / "audit.log")]
    for client in ("cursor", "claude-code", "opencode"):
        listed = run_config(client, str(odd), "--audit-log", "audit.log", cwd=tmp_path)
        assert command_of(client, listed.stdout.decode("utf-8"))[-4:] == argv[-4:]
    raw = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(raw)
    for client in ("codex", "cursor"):
        refused = subprocess.run([*CLI, "config", client, raw], capture_output=True, timeout=60)
        assert refused.returncode == 2 and refused.stdout == b""
        message = refused.stderr.decode()
        assert "not valid UTF-8" in message and message.count("\n") == 1, message


def test_check_escapes_what_it_prints(tmp_path: Path) -> None:
    """A file name holding OSC 52 (set the clipboard) and BEL must not reach the terminal."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "\x1b]52;c;cHduZWQ=\x07.txt").write_text("x\n")
    out = subprocess.run([*CLI, "check", str(tmp_path / "proj")], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert b"\x1b" not in out.stdout and b"\x07" not in out.stdout
    assert b"\\x1b]52;c;cHduZWQ=\\x07.txt" in out.stdout


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "opencode", "codex", "vscode"])
def test_the_server_name_is_one_no_client_reserves(tmp_path: Path, client: str) -> None:
    """Issue 29: Claude Code refuses `workspace` ("this name is reserved")."""
    default = run_config(client, str(tmp_path), cwd=tmp_path)
    assert default.returncode == 0
    command_of(client, default.stdout.decode(), "agent-workspace")
    named = run_config(client, str(tmp_path), "--name", "my-proj_2", cwd=tmp_path)
    assert command_of(client, named.stdout.decode(), "my-proj_2")[-2:] == ["--root", str(tmp_path)]
    for bad in ("workspace", "has space", "a.b", ""):
        refused = run_config(client, str(tmp_path), "--name", bad, cwd=tmp_path)
        assert refused.returncode == 2 and refused.stdout == b"", bad
        assert refused.stderr.decode().count("\n") == 1


def remote_of(client: str, text: str, name: str = "agent-workspace") -> tuple[str, str | None]:
    """(url, where the token comes from) as the client reads its entry."""
    if client == "codex":
        entry = tomllib.loads(text)["mcp_servers"][name]
        return entry["url"], entry.get("bearer_token_env_var")
    if client == "claude-code":
        argv = shlex.split(text)
        assert argv[:6] == ["claude", "mcp", "add", "--transport", "http", name], argv
        header = argv[argv.index("--header") + 1] if "--header" in argv else None
        return argv[6], header
    config = json.loads(text)
    entry = {
        "cursor": lambda: config["mcpServers"],
        "opencode": lambda: config["mcp"],
        "vscode": lambda: config["servers"],
    }[client]()[name]
    assert entry.get("type", "http") in ("http", "remote")
    return entry["url"], entry.get("headers", {}).get("Authorization")


TOKEN_FORMS = {
    "codex": "AGENT_WORKSPACE_TOKEN",
    "claude-code": "Authorization: Bearer ${AGENT_WORKSPACE_TOKEN}",
    "cursor": "Bearer ${env:AGENT_WORKSPACE_TOKEN}",
    "opencode": "Bearer {env:AGENT_WORKSPACE_TOKEN}",
    "vscode": "Bearer ${input:agent-workspace-token}",
}


@pytest.mark.parametrize("client", sorted(TOKEN_FORMS))
def test_config_http_prints_the_remote_form(tmp_path: Path, client: str) -> None:
    """Issue 29: `config CLIENT DIR --http --token T` printed a stdio entry with --http."""
    secret = "tok-0123456789abcdef"
    out = run_config(
        client, str(tmp_path), "--http", "--port", "4111", "--token", secret, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert secret not in (out.stdout + out.stderr).decode()
    assert remote_of(client, out.stdout.decode()) == (
        "http://127.0.0.1:4111/mcp",
        TOKEN_FORMS[client],
    )
    start = out.stderr.decode().splitlines()[0]
    assert start.endswith(f'--root {tmp_path} --http --port 4111 --token "$AGENT_WORKSPACE_TOKEN"')
    # Behind a proxy, with another variable; without auth, no header at all.
    proxied = run_config(
        client,
        "--http",
        "--api-key",
        f"ci={secret}",
        "--url",
        "https://ws.example.test/mcp",
        "--token-env",
        "CI_TOKEN",
        cwd=tmp_path,
    )
    url, token = remote_of(client, proxied.stdout.decode())
    assert url == "https://ws.example.test/mcp"
    assert client == "vscode" or "CI_TOKEN" in token
    bare = run_config(client, "--http", "--no-auth", cwd=tmp_path)
    assert remote_of(client, bare.stdout.decode()) == ("http://127.0.0.1:3333/mcp", None)


@pytest.mark.parametrize(
    "args",
    [
        ["claude-desktop", "--http", "--no-auth"],  # its file starts local servers only
        ["codex", "--http", "--host", "0.0.0.0", "--token", "tok-0123456789abcdef"],
        ["codex", "--http"],  # no auth given: the server would not start
        ["codex", "--url", "http://127.0.0.1:1/mcp"],  # a remote option without --http
        ["codex", "--http", "--no-auth", "--url", "ftp://x"],
        ["codex", "--http", "--no-auth", "--token-env", "1BAD"],
    ],
)
def test_config_http_refuses_what_cannot_work_in_one_line(tmp_path: Path, args) -> None:
    out = run_config(*args, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().count("\n") == 1, out.stderr
