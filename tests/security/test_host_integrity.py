"""The agent cannot plant code the user's git runs, nor break or redirect the server's
own state (issue 11, items 4 and 5): real `.git` directories, FIFOs and hard links."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings
from tests.conftest import open_client
from tests.helpers import call, fails, ok
from tests.security.test_sandbox import needs_bwrap

GIT_REFUSED = (
    "writing inside .git is refused (hooks and config there run as the user); the operator "
    "can allow it with --allow-git-writes"
)
STATE_REFUSED = (
    ".workspace-mcp/ holds the server's own journal and notes and is read-only to file "
    "tools; use remember or the change tools"
)


@pytest.fixture
def repo(ws: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("a\n")
    return ws


def git_tree(repo: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted((repo / ".git").rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(repo))] = path.read_bytes()
    return out


async def test_every_mutating_tool_refuses_git_internals(client: Client, repo: Path) -> None:
    before = git_tree(repo)
    (repo / "sub").mkdir()
    os.symlink(".git/hooks", repo / "hooks-link")
    attempts = [
        ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho pwned\n"}),
        ("write_file", {"path": ".git/config", "content": "[core]\n\tfsmonitor = evil\n"}),
        ("write_file", {"path": "hooks-link/post-checkout", "content": "evil"}),
        ("write_file", {"path": "sub/.git", "content": "gitdir: /tmp/elsewhere\n"}),
        ("write_file", {"path": "./.GIT/config", "content": "x"}),
        ("write_binary_file", {"path": ".git/hooks/pre-push", "contentBase64": "ZXZpbA=="}),
        ("edit_file", {"path": ".git/config", "oldString": "[core]", "newString": "[x]"}),
        (
            "apply_patch",
            {"patch": "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+evil\n"},
        ),
        ("make_directory", {"path": ".git/hooks/new"}),
        ("make_directory", {"path": "hooks-link/made/by/link"}),
        ("delete_path", {"path": ".git", "recursive": True}),
        ("delete_path", {"path": ".git/HEAD"}),
        ("move_path", {"source": "a.txt", "destination": ".git/hooks/pre-commit"}),
        ("move_path", {"source": ".git/HEAD", "destination": "HEAD"}),
        ("rename_path", {"path": "sub", "newName": ".git"}),
    ]
    for tool, arguments in attempts:
        text = await fails(client, tool, **arguments)
        assert text.endswith(GIT_REFUSED), (tool, text)
    assert git_tree(repo) == before
    assert not (repo / "sub" / ".git").exists() and not (repo / ".GIT").exists()
    # Reading .git stays allowed.
    assert "[core]" in await ok(client, "read_file", path=".git/config")


async def test_allow_git_writes_lifts_the_refusal(repo: Path) -> None:
    async with open_client(Settings(root=str(repo), allow_git_writes=True)) as client:
        await ok(client, "write_file", path=".git/info/exclude", content="*.log\n")
    assert (repo / ".git" / "info" / "exclude").read_text() == "*.log\n"


async def test_file_tools_cannot_touch_the_state_directory(client: Client, ws: Path) -> None:
    await ok(client, "remember", text="first note")
    await ok(client, "write_file", path="j.txt", content="journaled\n")
    journal = ws / ".workspace-mcp" / "journal.jsonl"
    notes = ws / ".workspace-mcp" / "notes.jsonl"
    before = (journal.read_bytes(), notes.read_bytes())
    for tool, arguments in [
        ("write_file", {"path": ".workspace-mcp/journal.jsonl", "content": "forged\n"}),
        ("delete_path", {"path": ".workspace-mcp", "recursive": True}),
        ("delete_path", {"path": ".workspace-mcp/notes.jsonl"}),
        ("move_path", {"source": ".workspace-mcp/notes.jsonl", "destination": "n.jsonl"}),
        (
            "edit_file",
            {"path": ".workspace-mcp/notes.jsonl", "oldString": "first", "newString": "forged"},
        ),
    ]:
        text = await fails(client, tool, **arguments)
        assert text.endswith(STATE_REFUSED), (tool, text)
    assert notes.read_bytes() == before[1]
    assert journal.read_bytes().startswith(before[0])  # only appended to
    assert "first note" in await ok(client, "read_file", path=".workspace-mcp/notes.jsonl")
    assert "first note" in await ok(client, "recall")


@pytest.mark.parametrize("name", ["journal.jsonl", "notes.jsonl"])
async def test_a_fifo_at_a_state_file_cannot_hang_the_server(
    client: Client, ws: Path, name: str, capfd
) -> None:
    state = ws / ".workspace-mcp"
    await ok(client, "remember", text="make the state directory")
    await ok(client, "write_file", path="x.txt", content="zero\n")  # starts the journal
    (state / name).unlink()
    os.mkfifo(state / name)
    # Each call must answer promptly; before the fix the first append blocked forever.
    async with asyncio.timeout(20):
        await ok(client, "write_file", path="x.txt", content="one\n")
        await ok(client, "remember", text="after the fifo")
        await ok(client, "write_file", path="x.txt", content="two\n")
        assert "after the fifo" in await ok(client, "recall")
        assert (await call(client, "work_log")).is_error is False
    assert (state / name).is_file() and not (state / name).is_symlink()
    assert (ws / "x.txt").read_text() == "two\n"
    err = capfd.readouterr().err
    assert f"{name}: was a FIFO" in err and err.count(f"{name}: was a FIFO") == 1


@pytest.mark.parametrize("name", ["journal.jsonl", "notes.jsonl"])
async def test_a_hard_link_at_a_state_file_cannot_write_outside(
    client: Client, ws: Path, outside: Path, name: str
) -> None:
    state = ws / ".workspace-mcp"
    await ok(client, "remember", text="make the state directory")
    await ok(client, "write_file", path="x.txt", content="zero\n")  # starts the journal
    (state / name).unlink()
    victim = outside / "victim.jsonl"
    victim.write_text('{"ts":"2026-01-01T00:00:00Z","text":"outside record","tags":[]}\n')
    os.link(victim, state / name)
    before = victim.read_bytes()
    await ok(client, "write_file", path="x.txt", content="one\n")
    await ok(client, "remember", text="lands inside")
    recalled = await ok(client, "recall")
    assert "outside record" not in recalled and "lands inside" in recalled
    assert victim.read_bytes() == before
    assert os.stat(state / name).st_nlink == 1


async def test_a_symlinked_state_file_is_replaced_not_followed(
    client: Client, ws: Path, outside: Path
) -> None:
    await ok(client, "remember", text="make the state directory")
    notes = ws / ".workspace-mcp" / "notes.jsonl"
    notes.unlink()
    os.symlink(outside / "secret.txt", notes)
    await ok(client, "remember", text="safe")
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not notes.is_symlink()


@needs_bwrap
async def test_sandboxed_commands_cannot_write_git_internals(repo: Path) -> None:
    settings = Settings(root=str(repo), shell_mode="any", sandbox="bwrap")
    async with open_client(settings) as client:
        text = await ok(client, "bash", command="echo evil > .git/hooks/pre-commit; echo rc=$?")
        assert "rc=1" in text and "Read-only file system" in text
        text = await ok(client, "bash", command="echo fine > ok.txt && cat ok.txt")
        assert "fine" in text
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    allowed = Settings(root=str(repo), shell_mode="any", sandbox="bwrap", allow_git_writes=True)
    async with open_client(allowed) as client:
        await ok(client, "bash", command="echo ok > .git/info/exclude")
    assert (repo / ".git" / "info" / "exclude").read_text() == "ok\n"
