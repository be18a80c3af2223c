"""Settings come from one declaration: every source parsed alike, errors name the source,
`--help` and the README table are generated from it (issue 12)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import create_server
from agent_workspace_mcp.configuration import build_parser, markdown_table, settings_from_sources
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.settings import Settings, options

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            [],
            {"WORKSPACE_MCP_READ_ONLY": "ture"},
            "WORKSPACE_MCP_READ_ONLY: 'ture' is not a boolean (use true or false)",
        ),
        (
            [],
            {"WORKSPACE_MCP_LOG_LEVEL": "foo"},
            "WORKSPACE_MCP_LOG_LEVEL: 'foo' is not one of DEBUG, INFO, WARNING, ERROR",
        ),
        ([], {"WORKSPACE_MCP_PORT": "80a"}, "WORKSPACE_MCP_PORT: '80a' is not a whole number"),
        (["--port", "80a"], {}, "--port: '80a' is not a whole number"),
        (["--port", "70000"], {}, "--port: input should be less than or equal to 65535"),
        (
            [],
            {"WORKSPACE_MCP_PORT": "0"},
            "WORKSPACE_MCP_PORT: input should be greater than or equal to 1",
        ),
        (
            [],
            {"WORKSPACE_MCP_PROMOTE_AFTER_MS": "-5"},
            "WORKSPACE_MCP_PROMOTE_AFTER_MS: input should be greater than or equal to 1",
        ),
        (
            [],
            {"WORKSPACE_MCP_SANDBOX": "docker"},
            "WORKSPACE_MCP_SANDBOX: 'docker' is not one of auto, bwrap, none",
        ),
        (
            [],
            {"WORKSPACE_MCP_SHELL_MODE": "all"},
            "WORKSPACE_MCP_SHELL_MODE: 'all' is not one of allowlist, any",
        ),
        ([], {"WORKSPACE_MCP_SHELL": "maybe"}, "WORKSPACE_MCP_SHELL: 'maybe' is not a boolean"),
        (["--rate-limit", "0"], {}, "--rate-limit: input should be greater than 0"),
        (
            [],
            {"WORKSPACE_MCP_API_KEYS": "alice-secret-token"},
            "WORKSPACE_MCP_API_KEYS expects SUBJECT=TOKEN",
        ),
        (["--workspace", "noequals"], {}, '--workspace expects NAME=DIR, got "noequals"'),
    ],
)
def test_a_bad_value_from_any_source_names_the_source(argv, env, message) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_sources(argv, environ=env, dotenv_path="/nonexistent/.env")
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text and "secret-token" not in text


def test_dotenv_values_are_named_as_such(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("WORKSPACE_MCP_TASKS=sometimes\n")
    with pytest.raises(ConfigError, match=r"^\.env WORKSPACE_MCP_TASKS: 'sometimes' is not"):
        settings_from_sources([], environ={}, dotenv_path=str(dotenv))


def test_every_source_gives_the_same_value() -> None:
    none = "/nonexistent/.env"
    assert settings_from_sources(["--shell"], {}, none).shell_mode == "allowlist"
    assert settings_from_sources([], {"WORKSPACE_MCP_SHELL": "yes"}, none).shell_mode == "allowlist"
    assert settings_from_sources([], {"WORKSPACE_MCP_SHELL_MODE": "any"}, none).shell_mode == "any"
    assert (
        settings_from_sources(
            ["--shell-any"], {"WORKSPACE_MCP_SHELL_MODE": "allowlist"}, none
        ).shell_mode
        == "any"
    )
    assert settings_from_sources(["--no-audit"], {}, none).audit is False
    assert settings_from_sources([], {"WORKSPACE_MCP_NO_AUDIT": "true"}, none).audit is False
    assert (
        settings_from_sources([], {"WORKSPACE_MCP_LOG_LEVEL": "debug"}, none).log_level == "DEBUG"
    )
    flags = settings_from_sources(["--tools", "a,b", "--tools", "c"], {}, none)
    env = settings_from_sources([], {"WORKSPACE_MCP_TOOLS": "a, b,c"}, none)
    assert flags.tools == env.tools == ("a", "b", "c")
    keys = settings_from_sources([], {"WORKSPACE_MCP_API_KEYS": "a=t1,b=t2"}, none)
    assert keys.api_keys == (("a", "t1"), ("b", "t2"))
    assert settings_from_sources([], {}, none) == Settings()


def test_the_readme_table_is_the_declaration() -> None:
    text = README.read_text()
    match = re.search(r"<!-- settings:start -->\n(.*?)\n<!-- settings:end -->", text, re.S)
    assert match, "README.md lacks the generated settings table markers"
    assert match.group(1) == markdown_table(), (
        "README.md's settings table is stale: regenerate it with "
        "`python -m agent_workspace_mcp.configuration`"
    )


def test_help_lists_every_flag_and_variable() -> None:
    text = build_parser().format_help()
    for opt, _ in options().values():
        extra = tuple(opt.extra.get("env_values", {}))
        for name in (opt.flag, *(flag for flag, _, _ in opt.consts), *opt.env, *extra):
            if name:
                assert name in text, name


def test_a_bad_configuration_is_refused_before_fastmcp_is_imported(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from agent_workspace_mcp.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(code, 'fastmcp' in sys.modules)\n"
    )
    for argv in (["--root", str(tmp_path / "nope")], ["--http", "--root", str(tmp_path)]):
        out = subprocess.run(
            [sys.executable, "-c", probe, *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert out.stdout.strip() == "2 False", (out.stdout, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1


def test_positional_directories_are_workspaces(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "Web App").mkdir()
    settings = settings_from_sources(
        [str(tmp_path / "api"), str(tmp_path / "Web App")], {}, "/nonexistent/.env"
    )
    assert settings.root == str(tmp_path / "api")
    assert settings.workspaces == (("web-app", str(tmp_path / "Web App")),)
    both = settings_from_sources(["--root", str(tmp_path), str(tmp_path / "api")], {}, "x/.env")
    assert both.root == str(tmp_path) and both.workspaces == (("api", str(tmp_path / "api")),)


def test_a_missing_root_says_what_it_resolved_to(tmp_path: Path, monkeypatch) -> None:
    from agent_workspace_mcp.configuration import preflight

    monkeypatch.chdir(tmp_path)
    settings = settings_from_sources(["--root", "proj"], {}, "/nonexistent/.env")
    with pytest.raises(ConfigError) as caught:
        preflight(settings)
    assert str(caught.value) == (
        f'workspace "default" does not exist or is not a directory: proj '
        f"(resolved to {tmp_path / 'proj'})"
    )


def test_contradictions_and_bad_urls_are_said(tmp_path: Path) -> None:
    from agent_workspace_mcp.cli import contradictions
    from agent_workspace_mcp.configuration import preflight

    none = "/nonexistent/.env"
    both = settings_from_sources(["--shell", "--read-only"], {}, none)
    assert contradictions(both) == [
        "--read-only turns off the command tools that --shell/--tasks asked for"
    ]
    assert contradictions(settings_from_sources(["--sandbox", "bwrap"], {}, none)) == [
        "--sandbox has no effect: no command tool is enabled"
    ]
    assert contradictions(settings_from_sources(["--shell"], {}, none)) == []
    bad = settings_from_sources(
        ["--root", str(tmp_path), "--http", "--jwks-url", "notaurl", "--jwt-audience", "a"],
        {},
        none,
    )
    with pytest.raises(ConfigError, match=r"^--jwks-url must be an http\(s\) URL, got 'notaurl'$"):
        preflight(bad)


def test_mistyped_flags_and_directories_get_a_suggestion(tmp_path: Path, capsys) -> None:
    from agent_workspace_mcp.configuration import preflight

    with pytest.raises(SystemExit) as stopped:
        settings_from_sources(["--read-onyl"], {}, "/nonexistent/.env")
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "agent-workspace-mcp: error: unrecognized arguments: --read-onyl; "
        "did you mean --read-only? (see --help)"
    )
    (tmp_path / "project").mkdir()
    settings = settings_from_sources(["--root", str(tmp_path / "projcet")], {}, "x/.env")
    with pytest.raises(ConfigError, match=r"; did you mean .*/project\?$"):
        preflight(settings)


def test_unknown_environment_variables_are_warned_about() -> None:
    from agent_workspace_mcp.configuration import unknown_environment

    assert unknown_environment(
        {"WORKSPACE_MCP_REDONLY": "1", "WORKSPACE_MCP_ROOT": "/x", "HOME": "/root"}
    ) == [
        "WORKSPACE_MCP_REDONLY is not a setting and is ignored; did you mean WORKSPACE_MCP_READ_ONLY?"
    ]
    assert unknown_environment({"CODING_AGENT_MCP_API_KEYS": "a=b"}) == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["claude"], "unknown client 'claude'; did you mean claude-code or claude-desktop?"),
        (["curser", "."], "unknown client 'curser'; did you mean cursor?"),
        (
            ["zed"],
            "unknown client 'zed'; choose claude-desktop, cursor, claude-code, opencode, codex, "
            "vscode",
        ),
        (
            ["--root", "."],
            "config needs a client first: claude-desktop, cursor, claude-code, "
            "opencode, codex, vscode (then the server's options)",
        ),
    ],
)
def test_config_names_the_client_it_did_not_know(argv: list[str], said: str, capsys) -> None:
    from agent_workspace_mcp import config

    assert config.main(argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"agent-workspace-mcp: error: {said}\n"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tools": ("read_fil",)}, "--tools: unknown tool 'read_fil'; did you mean read_file?"),
        (
            {"disable_tools": ("nosuch",)},
            "--disable-tools: unknown tool 'nosuch'; see --list-profiles",
        ),
        (
            {"tools": ("run_command",)},
            "--tools run_command: not served: the operator enables it with --shell",
        ),
        (
            {"profile": "coding-agent", "tools": ("read_file", "git_status")},
            "--tools git_status: not served: the coding-agent profile does not serve it",
        ),
    ],
)
def test_tool_selection_says_what_it_did(tmp_path: Path, overrides: dict, message: str) -> None:
    """Issue 29: `--tools read_fil` served 0 tools and `--disable-tools nosuch` passed."""
    with pytest.raises(ConfigError) as caught:
        create_server(Settings(root=str(tmp_path), **overrides))
    assert str(caught.value).startswith(message)


async def test_tools_narrow_the_profile_under_either_spelling(tmp_path: Path) -> None:
    settings = Settings(root=str(tmp_path), profile="coding-agent", tools=("read_file", "grep"))
    async with Client(create_server(settings)) as client:
        assert sorted(t.name for t in await client.list_tools()) == ["read_file", "search_text"]
    renamed = Settings(root=str(tmp_path), profile="coding-agent", disable_tools=("grep",))
    async with Client(create_server(renamed)) as client:
        names = {t.name for t in await client.list_tools()}
    assert "search_text" not in names and "read_file" in names


def _choice_settings():
    from agent_workspace_mcp.configuration import _kind
    from agent_workspace_mcp.settings import options

    found = []
    for opt, info in options().values():
        kind, detail = _kind(info.annotation)
        if kind in ("choice", "choices") and opt.flag:
            found.append((opt.flag, [str(c) for c in detail]))
    return found


@pytest.mark.parametrize(("flag", "choices"), _choice_settings())
def test_every_choice_error_names_the_value_and_the_choices(flag: str, choices: list[str]) -> None:
    """Issue 44, item 5: `--confirm-via carrier-pigeon` said "input should be 'console' or
    'client'" without naming what was given."""
    with pytest.raises(ConfigError) as caught:
        settings_from_sources([flag, "carrier-pigeon"], environ={}, dotenv_path="/dev/null")
    message = str(caught.value)
    assert "'carrier-pigeon'" in message and flag in message, message
    assert all(choice in message for choice in choices), message
