"""Canaries for the official git server's November 2026 advisories (issue 28).

Each plants, in a repository inside the workspace, a payload that writes a canary file
if git ever runs it: Git LFS filter and transfer programs in the repository config,
maintenance and gc hooks, a lazy fetch from a promisor remote, a config include from
outside the root, and a `.git` file or `commondir` naming another repository. Every
read-only git tool is called; the canary must stay absent, whether or not our calls
reach the payload today.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import call

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


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


def committed(ws: Path) -> None:
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("one\n")
    (ws / "b.bin").write_text("binary-ish\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "first")
    (ws / "a.txt").write_text("two\n")  # a change for diff, status and textconv


def touch(canary: Path) -> str:
    return f"sh -c 'echo ran > {canary}'"


async def run_every_git_tool(ws: Path) -> list[str]:
    answers = []
    async with open_client(Settings(root=str(ws))) as client:
        for tool, args in (
            ("git_status", {}),
            ("git_diff", {}),
            ("git_diff", {"stat": True}),
            ("git_diff", {"staged": True}),
            ("git_log", {}),
            ("git_log", {"path": "a.txt"}),
        ):
            answer = await call(client, tool, **args)
            answers.append(answer.text)
    return answers


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    return tmp_path / "CANARY"


async def test_lfs_programs_in_the_repository_config(ws: Path, canary: Path) -> None:
    committed(ws)
    (ws / ".gitattributes").write_text("* filter=lfs diff=lfs merge=lfs\n")
    for key in (
        "filter.lfs.process",
        "filter.lfs.smudge",
        "filter.lfs.clean",
        "lfs.customtransfer.evil.path",
        "lfs.standalonetransferagent",
        "diff.lfs.textconv",
        "core.askPass",
    ):
        git(ws, "config", key, touch(canary))
    git(ws, "config", "filter.lfs.required", "true")
    git(ws, "config", "lfs.url", "ext::" + touch(canary))
    await run_every_git_tool(ws)
    assert not canary.exists()


async def test_maintenance_and_gc_hooks(ws: Path, canary: Path) -> None:
    committed(ws)
    hooks = ws / ".git" / "hooks"
    for name in ("pre-auto-gc", "post-checkout", "post-index-change", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho ran > {canary}\n")
        (hooks / name).chmod(0o755)
    for key, value in (
        ("gc.auto", "1"),
        ("gc.autoPackLimit", "1"),
        ("gc.autoDetach", "false"),
        ("maintenance.auto", "true"),
        ("maintenance.strategy", "incremental"),
        ("core.hooksPath", str(hooks)),
        ("fetch.writeCommitGraph", "true"),
    ):
        git(ws, "config", key, value)
    for i in range(60):  # loose objects, so an automatic gc would want to run
        (ws / f"loose{i}.txt").write_text(f"{i}\n")
        git(ws, "hash-object", "-w", f"loose{i}.txt")
    await run_every_git_tool(ws)
    assert not canary.exists()


async def test_lazy_fetch_from_a_promisor_remote(ws: Path, canary: Path) -> None:
    committed(ws)
    git(ws, "config", "extensions.partialClone", "origin")
    git(ws, "config", "remote.origin.promisor", "true")
    git(ws, "config", "remote.origin.url", "ext::" + touch(canary))
    git(ws, "config", "protocol.ext.allow", "always")
    git(ws, "config", "core.repositoryformatversion", "1")
    # The committed blob of a.txt goes missing: diff and log -p would fetch it lazily.
    blob = git(ws, "rev-parse", "HEAD:a.txt").strip()
    (ws / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    await run_every_git_tool(ws)
    assert not canary.exists()


async def test_a_config_include_from_outside(ws: Path, outside: Path, canary: Path) -> None:
    committed(ws)
    included = outside / "evil.gitconfig"
    included.write_text(
        "[core]\n\tfsmonitor = " + touch(canary) + "\n\tpager = " + touch(canary) + "\n"
        '[filter "evil"]\n\tsmudge = ' + touch(canary) + "\n\tclean = " + touch(canary) + "\n"
        '[diff "evil"]\n\ttextconv = ' + touch(canary) + "\n\tcommand = " + touch(canary) + "\n"
        "[diff]\n\texternal = " + touch(canary) + "\n"
    )
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n")
    git(ws, "config", "include.path", str(included))
    git(ws, "config", f"includeIf.gitdir:{ws}/.path", str(included))
    await run_every_git_tool(ws)
    assert not canary.exists()


async def test_a_git_file_or_commondir_naming_another_repository(
    ws: Path, outside: Path, canary: Path
) -> None:
    other = outside / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "config", "core.fsmonitor", touch(canary))
    (other / ".git" / "hooks" / "post-index-change").write_text(f"#!/bin/sh\necho ran > {canary}\n")
    (other / ".git" / "hooks" / "post-index-change").chmod(0o755)
    (ws / "a.txt").write_text("one\n")
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    answers = await run_every_git_tool(ws)
    assert all("refused" in text for text in answers), answers
    (ws / ".git").unlink()
    committed(ws)
    (ws / ".git" / "commondir").write_text(str(other / ".git") + "\n")
    answers = await run_every_git_tool(ws)
    assert not canary.exists()
