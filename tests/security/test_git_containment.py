"""Git tools never show anything outside the workspace (issue 11, escape 2).

Real repositories: a monorepo with the workspace as one of its folders, a `.git` file
and a `core.worktree` that point elsewhere, a planted index entry and alternates, and
a server environment full of secrets that the git child must not inherit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import fails, ok

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

REFUSED = (
    "the repository's git directory or work tree is declared inside the workspace but "
    "resolves outside it; git tools are refused"
)


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="T",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="T",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    return out.stdout.decode()


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    """A repository whose folder `pkg` is the workspace; `other/` holds private work."""
    top = tmp_path / "mono"
    (top / "pkg").mkdir(parents=True)
    (top / "other").mkdir()
    (top / "pkg" / "mine.txt").write_text("mine\n")
    (top / "other" / "private.txt").write_text("private v1\n")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "initial import")
    (top / "other" / "private.txt").write_text("private SECRET-CHANGE\n")
    (top / "other" / "untracked-secret.txt").write_text("x\n")
    git(top, "add", "other")
    git(top, "commit", "-q", "-m", "other: SECRET-SUBJECT")
    (top / "other" / "private.txt").write_text("private SECRET-DIFF\n")
    (top / "other" / "new-secret.txt").write_text("y\n")
    (top / "pkg" / "mine.txt").write_text("mine changed\n")
    return top


async def test_a_monorepo_folder_sees_only_itself(monorepo: Path) -> None:
    async with open_client(Settings(root=str(monorepo / "pkg"))) as client:
        status = await ok(client, "git_status")
        assert status == "branch: main\n M mine.txt", status
        diff = await ok(client, "git_diff")
        assert "SECRET" not in diff and "other/" not in diff
        assert "a/mine.txt b/mine.txt" in diff and "+mine changed" in diff
        stat = await ok(client, "git_diff", stat=True)
        assert stat.splitlines()[0].strip().startswith("mine.txt |"), stat
        log = await ok(client, "git_log")
        assert "SECRET-SUBJECT" not in log and log.endswith("initial import")


async def test_pathspec_magic_cannot_reach_the_repository_top(monorepo: Path) -> None:
    (monorepo / "pkg" / ":(top)").mkdir()
    async with open_client(Settings(root=str(monorepo / "pkg"))) as client:
        assert "SECRET" not in await ok(client, "git_diff", path=":(top)")
        assert "SECRET" not in await ok(client, "git_log", path=":(top)")


async def test_git_file_pointing_elsewhere_is_refused(tmp_path: Path, ws: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "main")
    (elsewhere / "secret.txt").write_text("committed secret\n")
    git(elsewhere, "add", ".")
    git(elsewhere, "commit", "-q", "-m", "SECRET-SUBJECT")
    (ws / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    async with open_client(Settings(root=str(ws))) as client:
        for tool in ("git_status", "git_diff", "git_log"):
            assert await fails(client, tool) == REFUSED


async def test_core_worktree_pointing_outside_is_refused(
    tmp_path: Path, ws: Path, outside: Path
) -> None:
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "core.worktree", str(outside))
    async with open_client(Settings(root=str(ws))) as client:
        text = await fails(client, "git_status")
        assert "secret" not in text and "outside the workspace" in text


async def test_planted_index_cannot_show_an_outside_file(ws: Path, outside: Path) -> None:
    """The classic: core.worktree=/outside plus an index entry makes diff print the file."""
    git(ws, "init", "-q", "-b", "main")
    (ws / "secret.txt").write_text("harmless\n")
    git(ws, "add", "secret.txt")
    git(ws, "commit", "-q", "-m", "c")
    git(ws, "config", "core.worktree", str(outside))
    async with open_client(Settings(root=str(ws))) as client:
        for tool in ("git_status", "git_diff"):
            text = (await client.call_tool(tool, {}, raise_on_error=False)).content[0].text
            assert "top secret" not in text and text.startswith("the repository")


async def test_alternates_outside_are_refused(tmp_path: Path, ws: Path) -> None:
    other = tmp_path / "other-repo"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(ws, "init", "-q", "-b", "main")
    info = ws / ".git" / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(str(other / ".git" / "objects") + "\n")
    async with open_client(Settings(root=str(ws))) as client:
        assert await fails(client, "git_log") == REFUSED


async def test_a_bare_repository_planted_in_the_root_is_not_used(ws: Path, outside: Path) -> None:
    """HEAD, objects/, refs/ and a config in the root make it a bare repository to git."""
    bare = ws.parent / "bare-src"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    for item in bare.iterdir():
        target = ws / item.name
        if item.is_dir():
            shutil.copytree(item, target)
        else:
            shutil.copy(item, target)
    with (ws / "config").open("a") as handle:
        handle.write(f"[core]\n\tworktree = {outside}\n\tbare = false\n")
    async with open_client(Settings(root=str(ws))) as client:
        text = await fails(client, "git_status")
        assert "secret" not in text


async def test_a_repository_inside_the_root_still_works(ws: Path) -> None:
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("one\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "first")
    (ws / "a.txt").write_text("two\n")
    (ws / "we ird\nname.txt").write_text("odd\n")
    async with open_client(Settings(root=str(ws))) as client:
        status = await ok(client, "git_status")
        assert status.splitlines() == ["branch: main", " M a.txt", '?? "we ird\\nname.txt"']
        assert "+two" in await ok(client, "git_diff")


async def test_git_child_gets_the_scrubbed_environment_and_a_safe_path(
    ws: Path, tmp_path: Path, monkeypatch
) -> None:
    """No secret reaches git, and a `git` inside the workspace is never what runs."""
    git(ws, "init", "-q", "-b", "main")
    probe = tmp_path / "env-seen"
    real_git = shutil.which("git")
    assert real_git
    spy_dir = ws / "bin"
    spy_dir.mkdir()
    (spy_dir / "git").write_text(f'#!/bin/sh\ntouch {tmp_path}/spy-ran\nexec {real_git} "$@"\n')
    (spy_dir / "git").chmod(0o755)
    # What git sees is recorded by a wrapper outside the workspace, later on PATH.
    wrapper_dir = tmp_path / "wrapper"
    wrapper_dir.mkdir()
    (wrapper_dir / "git").write_text(f'#!/bin/sh\nenv > {probe}\nexec {real_git} "$@"\n')
    (wrapper_dir / "git").chmod(0o755)
    monkeypatch.setenv(
        "PATH", f"{spy_dir}{os.pathsep}{wrapper_dir}{os.pathsep}{os.environ['PATH']}"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "svc-secret")
    settings = Settings(root=str(ws), http=False, token="server-own-token")
    monkeypatch.setenv("SOMETHING_INNOCENT", "server-own-token")
    async with open_client(settings) as client:
        await ok(client, "git_status")
    seen = probe.read_text()
    assert not (tmp_path / "spy-ran").exists()
    for secret in ("sk-ant-secret", "ghp-secret", "svc-secret", "server-own-token"):
        assert secret not in seen
    path_line = next(line for line in seen.splitlines() if line.startswith("PATH="))
    assert str(spy_dir) not in path_line


async def test_a_symlinked_alternates_file_is_judged_by_its_target_not_read(
    tmp_path: Path, ws: Path
) -> None:
    """`objects/info/alternates` as a link to an outside file: refused without reading it."""
    git(ws, "init", "-q", "-b", "main")
    planted = tmp_path / "elsewhere-alternates"
    planted.write_text(str(ws / ".git" / "objects") + "\n")  # would pass if it were read
    info = ws / ".git" / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").symlink_to(planted)
    async with open_client(Settings(root=str(ws))) as client:
        assert await fails(client, "git_log") == REFUSED
