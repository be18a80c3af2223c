"""Read-only git tools on real repositories, including one that tries to run programs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import fails, ok

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_AUTHOR_NAME": "T",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "T",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
        }
    )
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(ws: Path) -> Path:
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("one\n")
    (ws / "b.txt").write_text("bee\n")
    (ws / "-p").write_text("a file named like a flag\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "first commit")
    return ws


async def test_status(client: Client, repo: Path) -> None:
    assert await ok(client, "git_status") == "branch: main\nworking tree clean"
    (repo / "a.txt").write_text("two\n")
    (repo / "new.txt").write_text("n\n")
    git(repo, "add", "new.txt")
    (repo / "untracked.txt").write_text("u\n")
    assert await ok(client, "git_status") == "branch: main\n M a.txt\nA  new.txt\n?? untracked.txt"


async def test_diff_unstaged_staged_stat_and_path(client: Client, repo: Path) -> None:
    assert await ok(client, "git_diff") == "(no changes)"
    (repo / "a.txt").write_text("two\n")
    (repo / "b.txt").write_text("BEE\n")
    git(repo, "add", "b.txt")
    unstaged = await ok(client, "git_diff")
    assert "-one\n+two" in unstaged and "b.txt" not in unstaged
    staged = await ok(client, "git_diff", staged=True)
    assert "-bee\n+BEE" in staged and "a.txt" not in staged
    assert (
        await ok(client, "git_diff", stat=True)
        == " a.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)"
    )
    assert await ok(client, "git_diff", path="b.txt") == "(no changes)"
    assert "+two" in await ok(client, "git_diff", path="a.txt")
    assert await fails(client, "git_diff", path="../x") == "path outside workspace root: ../x"
    # A path that looks like an option is still a path (it goes after `--`).
    (repo / "-p").write_text("changed\n")
    assert "+changed" in await ok(client, "git_diff", path="-p")


async def test_diff_output_is_capped_head_and_tail(client: Client, repo: Path) -> None:
    (repo / "a.txt").write_text("".join(f"line {i} " + "x" * 60 + "\n" for i in range(3000)))
    text = await ok(client, "git_diff")
    assert "bytes omitted] ..." in text and len(text.encode()) < 66 * 1024
    assert text.splitlines()[0].startswith("diff --git") and "line 2999" in text


async def test_log(client: Client, repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "second commit")
    lines = (await ok(client, "git_log")).splitlines()
    assert (
        len(lines) == 2
        and lines[0].endswith("T  second commit")
        and lines[1].endswith("T  first commit")
    )
    assert (await ok(client, "git_log", path="b.txt")).endswith("first commit")
    assert len((await ok(client, "git_log", limit=1)).splitlines()) == 1


async def test_not_a_repository_and_git_missing(client: Client, ws: Path, monkeypatch) -> None:
    assert await fails(client, "git_status") == "the workspace is not a git repository"
    monkeypatch.setenv("PATH", str(ws / "no-such-dir"))
    assert await fails(client, "git_diff") == "git is not installed (not found on PATH)"


async def test_repository_config_cannot_run_programs(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    marker.mkdir()
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}/$(basename "$0")-$1-$$\ncat\n')
    script.chmod(0o755)
    hooks = repo / ".git" / "hooks"
    for hook in (
        "post-checkout",
        "pre-commit",
        "post-index-change",
        "reference-transaction",
        "fsmonitor-watchman",
    ):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}/hook-{hook}\n")
        (hooks / hook).chmod(0o755)
    git(repo, "config", "core.fsmonitor", f"{script} fsmonitor")
    git(repo, "config", "core.pager", f"{script} pager")
    git(repo, "config", "diff.external", f"{script} external")
    git(repo, "config", "diff.evil.textconv", f"{script} textconv")
    git(repo, "config", "diff.evil.command", f"{script} command")
    git(repo, "config", "filter.evil.clean", f"{script} clean")
    git(repo, "config", "filter.evil.smudge", f"{script} smudge")
    git(repo, "config", "filter.evil.process", f"{script} process")
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "core.hooksPath", str(hooks))
    (repo / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    (repo / "a.txt").write_text("changed\n")
    os.utime(repo / "b.txt", None)  # racily clean: status would normally re-run the filter
    async with open_client(Settings(root=str(repo))) as client:
        await ok(client, "git_status")
        await ok(client, "git_diff")
        await ok(client, "git_diff", staged=True)
        await ok(client, "git_diff", stat=True)
        await ok(client, "git_log")
    assert sorted(p.name for p in marker.iterdir()) == []


async def test_caller_git_environment_is_ignored(
    client: Client, repo: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/false")
    (repo / "a.txt").write_text("two\n")
    assert "+two" in await ok(client, "git_diff")
