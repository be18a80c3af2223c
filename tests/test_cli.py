"""The command line: help, version, validation exits, configuration precedence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_workspace_mcp.cli import settings_from_sources
from agent_workspace_mcp.core.errors import ConfigError

CLI = [sys.executable, "-m", "agent_workspace_mcp"]


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def test_help_and_version() -> None:
    out = run_cli("--help")
    assert out.returncode == 0 and "--workspace NAME=DIR" in out.stdout
    out = run_cli("--version")
    from importlib.metadata import version

    assert (
        out.returncode == 0
        and out.stdout.strip() == f"agent-workspace-mcp {version('agent-workspace-mcp')}"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workspace", "noequals"], '--workspace expects NAME=DIR, got "noequals"'),
        (["--workspace", "Bad=."], 'invalid workspace name "Bad"'),
        (["--workspace", "a=.", "--workspace", "a=."], 'duplicate workspace name "a"'),
        (["--root", ".", "--workspace", "default=."], 'duplicate workspace name "default"'),
        (["--workspace", "a=/definitely/not/here"], 'workspace "a" does not exist'),
        (["--root", "/definitely/not/here"], 'workspace "default" does not exist'),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = run_cli(*args, cwd=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("agent-workspace-mcp: error: ") and message in lines[0]
    assert out.stdout == ""


def test_flags_override_environment_which_overrides_dotenv(tmp_path: Path, monkeypatch) -> None:
    for name in ("flag", "env", "dotenv"):
        (tmp_path / name).mkdir()
    (tmp_path / ".env").write_text(
        f"WORKSPACE_MCP_ROOT={tmp_path / 'dotenv'}\nWORKSPACE_MCP_READ_ONLY=1\n"
    )
    monkeypatch.chdir(tmp_path)
    assert settings_from_sources([], environ={}).root == str(tmp_path / "dotenv")
    assert settings_from_sources([], environ={}).read_only is True
    env = {"WORKSPACE_MCP_ROOT": str(tmp_path / "env"), "WORKSPACE_MCP_READ_ONLY": "0"}
    assert settings_from_sources([], environ=env).root == str(tmp_path / "env")
    assert settings_from_sources([], environ=env).read_only is False
    assert settings_from_sources(["--root", str(tmp_path / "flag")], environ=env).root == str(
        tmp_path / "flag"
    )
    env = {"WORKSPACE_MCP_WORKSPACES": f"a={tmp_path / 'env'}, b={tmp_path / 'flag'}"}
    assert settings_from_sources([], environ=env).workspaces == (
        ("a", str(tmp_path / "env")),
        ("b", str(tmp_path / "flag")),
    )


def test_unconfined_refuses_workspace_flags() -> None:
    with pytest.raises(ConfigError, match="cannot be combined"):
        settings_from_sources(["--unconfined", "--root", "."], environ={})


@pytest.mark.parametrize(
    ("args", "env", "warning"),
    [
        (["--shell-any"], {}, "WARNING: --shell-any: the connected agent can run any program"),
        (["--unconfined"], {}, "WARNING: --unconfined: every path on this machine"),
    ],
)
def test_dangerous_modes_warn_loudly_on_stderr(
    tmp_path: Path, args: list[str], env: dict, warning: str
) -> None:
    root_args = [] if "--unconfined" in args else ["--root", str(tmp_path)]
    out = run_cli(
        *root_args, *args, cwd=tmp_path, env=env
    )  # stdin is /dev/null: starts, then stops
    assert out.returncode == 0, out.stderr
    assert warning in out.stderr
    assert out.stdout == ""


def test_unconfined_enters_workspace_cwd(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    out = run_cli("--unconfined", cwd=tmp_path, env={"WORKSPACE_CWD": str(target / "missing")})
    assert out.returncode == 2
    assert "WORKSPACE_CWD cannot be entered" in out.stderr


def test_every_command_has_help() -> None:
    """Issue 29: --help never named check and config; `config --help` was an error."""
    main = run_cli("--help")
    assert "config CLIENT DIR" in main.stdout and "check DIR" in main.stdout
    for command in ("config", "check"):
        out = run_cli(command, "--help")
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"usage: agent-workspace-mcp {command} ")


def test_an_empty_root_is_refused_and_wide_roots_are_named(tmp_path: Path) -> None:
    """Issue 29: `--root ''` (an unset variable) served the cwd: from /, the whole disk."""
    empty = run_cli("--root", "", cwd=Path("/"))
    assert empty.returncode == 2
    assert empty.stderr.strip().splitlines() == [
        'agent-workspace-mcp: error: workspace "default" is empty (an unset variable in a '
        "client config?); name the project directory"
    ]
    assert run_cli("--workspace", "api=", cwd=tmp_path).returncode == 2
    slash = run_cli(cwd=Path("/"))  # stdin closed: starts, warns, stops
    assert slash.returncode == 0
    assert "WARNING: workspace default is / : the agent can read and write the whole" in (
        slash.stderr
    )
    home = run_cli("--root", str(tmp_path), env={"HOME": str(tmp_path)})
    assert f"workspace default is your home directory ({tmp_path})" in home.stderr
    project = tmp_path / "proj"
    project.mkdir()
    assert "WARNING" not in run_cli("--root", str(project), env={"HOME": str(tmp_path)}).stderr


def test_profile_constraints_are_said_in_the_profile_s_words(tmp_path: Path) -> None:
    """Issue 29: `--profile persona --root P` blamed an --unconfined nobody typed, and
    `check --profile persona` failed on a list_files that profile does not have."""
    out = run_cli("--profile", "persona", "--root", str(tmp_path))
    assert out.returncode == 2
    message = out.stderr.strip()
    assert message.startswith("agent-workspace-mcp: error: --profile persona serves the whole")
    assert "--unconfined" not in message and message.count("\n") == 0
    assert (
        "--unconfined cannot be combined" in run_cli("--unconfined", "--root", str(tmp_path)).stderr
    )
    checked = run_cli("check", "--profile", "persona", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok  list_files: not served by this profile" in checked.stdout
