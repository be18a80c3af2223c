"""The allowlist resolves what will really run; tasks map to fixed argv."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_workspace_mcp.core.errors import InvalidArgumentError
from agent_workspace_mcp.core.exec.commands import Policy, safe_path_dirs, task_argv


def make_exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(0o755)
    return path


def test_path_entries_inside_a_workspace_or_relative_are_ignored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_exe(ws / "bin" / "node")
    system = make_exe(tmp_path / "sys" / "node").parent
    path_env = os.pathsep.join([str(ws / "bin"), ".", "", "bin", str(system)])
    dirs = safe_path_dirs(path_env, [str(ws)])
    assert dirs == [str(system)]
    policy = Policy("allowlist", frozenset({"node"}), tuple(dirs))
    assert policy.resolve("node", str(ws)) == str(system / "node")
    with pytest.raises(InvalidArgumentError, match="is not the node found on PATH"):
        policy.resolve("./bin/node", str(ws))
    assert policy.resolve(str(system / "node"), str(ws)) == str(system / "node")


def test_a_symlink_to_the_real_program_is_the_real_program(tmp_path: Path) -> None:
    real = make_exe(tmp_path / "sys" / "tool")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "tool").symlink_to(real)
    policy = Policy("allowlist", frozenset({"tool"}), (str(real.parent),))
    assert policy.resolve("./tool", str(tmp_path / "ws")) == str(real)


def test_any_mode_still_needs_an_existing_program(tmp_path: Path) -> None:
    policy = Policy("any", frozenset(), (str(Path(shutil.which("sh")).parent),))
    assert policy.resolve("sh", str(tmp_path)).endswith("sh")
    with pytest.raises(InvalidArgumentError, match="command not found on PATH: nope-xyz"):
        policy.resolve("nope-xyz", str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="not an executable file"):
        policy.resolve("./missing", str(tmp_path))


@pytest.mark.parametrize(
    ("runner", "task", "paths", "argv"),
    [
        ("pytest", "test", ["tests/a.py"], ["python3", "-m", "pytest", "-q", "./tests/a.py"]),
        ("npm", "test", ["-rf"], ["npm", "test", "--", "./-rf"]),
        ("go", "test", [], ["go", "test", "./..."]),
        ("cargo", "lint", [], ["cargo", "clippy"]),
        ("maven", "build", [], ["mvn", "-B", "package", "-DskipTests"]),
    ],
)
def test_task_argv(runner: str, task: str, paths: list[str], argv: list[str]) -> None:
    assert task_argv(runner, task, paths) == argv
