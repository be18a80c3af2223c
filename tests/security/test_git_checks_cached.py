"""The repository check and the filter-driver list are kept between git calls (issue 36)
and never trusted past a change: each attack here is planted *after* a first call on
the same server warmed the cache, and must be seen by the next call.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import call
from tests.security.test_git_canaries import committed, git, touch

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

TOOLS = (("git_status", {}), ("git_diff", {}), ("git_log", {}))


async def each_tool(client) -> list:
    return [await call(client, tool, **args) for tool, args in TOOLS]


async def test_a_filter_driver_added_after_a_call(ws: Path, tmp_path: Path) -> None:
    canary = tmp_path / "CANARY"
    committed(ws)
    async with open_client(Settings(root=str(ws))) as client:
        await each_tool(client)
        (ws / ".gitattributes").write_text("* filter=evil\n")
        git(ws, "config", "filter.evil.clean", touch(canary))
        git(ws, "config", "filter.evil.smudge", touch(canary))
        git(ws, "config", "filter.evil.required", "true")
        await each_tool(client)
    assert not canary.exists()


async def test_a_git_file_swapped_in_after_a_call(ws: Path, outside: Path, tmp_path: Path) -> None:
    canary = tmp_path / "CANARY"
    committed(ws)
    other = outside / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "config", "core.fsmonitor", touch(canary))
    async with open_client(Settings(root=str(ws))) as client:
        first = await each_tool(client)
        assert not any(answer.is_error for answer in first)
        shutil.rmtree(ws / ".git")
        (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
        answers = await each_tool(client)
    assert all(answer.is_error for answer in answers), [a.text for a in answers]
    assert "resolves outside" in answers[0].text
    assert not canary.exists()


async def test_a_repository_planted_between_calls_in_a_subdirectory(ws: Path) -> None:
    """A `.git` created below the work tree's top changes which repository a workspace
    in that directory is in: the next call sees the new one."""
    committed(ws)
    sub = ws / "sub"
    sub.mkdir()
    (sub / "x.txt").write_text("x\n")
    async with open_client(Settings(root=str(sub))) as client:
        before = (await call(client, "git_status")).text
        git(sub, "init", "-q", "-b", "other")
        after = (await call(client, "git_status")).text
    assert "main" in before and "other" in after, (before, after)


async def test_another_programs_git_status_keeps_the_checks(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's `git status` rewrites the index (index.lock comes and goes in the git
    directory, whose times change): the checks stay kept, as nothing they read changed;
    a change to what they read (here the config) is seen at once."""
    from agent_workspace_mcp.core.gitread import GitReader

    committed(ws)
    (ws / "a.txt").write_text("changed\n")
    checks: list[int] = []
    original = GitReader._repository

    def counted(self, *args):
        checks.append(1)
        return original(self, *args)

    monkeypatch.setattr(GitReader, "_repository", counted)
    async with open_client(Settings(root=str(ws))) as client:
        await each_tool(client)
        for _ in range(3):
            git(ws, "status")  # another program, with optional locks: writes the index
            await each_tool(client)
        assert len(checks) == 1
        git(ws, "config", "user.name", "someone else")
        await each_tool(client)
    assert len(checks) == 2
